/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "kv_master_json.h"
#include "kv_master_keys.h"
#include "kv_reconcile_plan.h"
#include "kv_utf8.h"

void kv_listing_init(kv_listing *l, uint64_t max_keys)
{
	memset(l, 0, sizeof(*l));
	l->max_keys = max_keys;
	mkv_buf_init(&l->carry);
}

void kv_listing_reset(kv_listing *l)
{
	mkv_buf_reset(&l->carry);
	l->skipping = false;
	l->listed = l->unaskable = 0;
	l->too_long = false;
}

void kv_listing_free(kv_listing *l)
{
	mkv_buf_free(&l->carry);
}

enum mkv_err kv_listing_feed(kv_listing *l, const void *p, size_t n)
{
	mkv_buf_add(&l->carry, p, n);
	return mkv_buf_ok(&l->carry) ? MKV_OK : MKV_ENOMEM;
}

bool kv_listing_split(kv_listing *l, bool at_end, kv_listing_key_fn fn, void *ctx)
{
	if (!l->carry.len)
		return true; /* nothing held (and no buffer yet, for an empty listing) */
	char *p = l->carry.data, *end = p + l->carry.len;
	bool go = true;
	while (go && p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl && !at_end) {
			if ((size_t)(end - p) > KV_KEYS_MAX_KEY_BYTES) { /* an overlong line: skip to its end */
				if (!l->skipping && ++l->listed > l->max_keys) {
					l->too_long = true;
					go = false;
				}
				l->unaskable += !l->skipping;
				l->skipping = true;
				p = end;
			}
			break;
		}
		char *e = nl ? nl : end;
		size_t n = (size_t)(e - p);
		if (l->skipping) {
			l->skipping = false;
		} else if (n) {
			if (++l->listed > l->max_keys) {
				l->too_long = true;
				go = false;
			} else if (memchr(p, ',', n) || n > KV_KEYS_MAX_KEY_BYTES || !mkv_label_value_clean(p, n))
				l->unaskable++;
			else
				go = fn(p, n, ctx);
		}
		p = nl ? nl + 1 : end;
	}
	size_t left = (size_t)(end - p);
	if (left && p != l->carry.data)
		memmove(l->carry.data, p, left);
	l->carry.len = left;
	return go;
}

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
	       c == '_' || c == '~';
}

static void add_encoded(mkv_buf *b, const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];
		if (unreserved(c))
			mkv_buf_addc(b, (char)c);
		else
			mkv_buf_printf(b, "%%%02X", c);
	}
}

void kv_keys_at_init(kv_keys_at *k)
{
	memset(k, 0, sizeof(*k));
	mkv_buf_init(&k->listing);
	mkv_buf_init(&k->query);
}

void kv_keys_at_free(kv_keys_at *k)
{
	mkv_buf_free(&k->listing);
	mkv_buf_free(&k->query);
}

/* upstream's TenantId::IsValid (mooncake-store/include/tenant_id.h) */
bool kv_keys_tenant_nameable(mkv_str t)
{
	if (!t.len || t.ptr[0] == '_')
		return false;
	for (uint32_t i = 0; i < t.len; i++)
		if ((unsigned char)t.ptr[i] < 0x20 || t.ptr[i] == 0x7f)
			return false;
	return true;
}

enum mkv_err kv_keys_at_set(kv_keys_at *k, const char *base, mkv_str tenant)
{
	mkv_buf_reset(&k->listing);
	mkv_buf_reset(&k->query);
	k->tenant = (mkv_str){NULL, 0};
	if (kv_tenant_is_default(tenant)) {
		mkv_buf_printf(&k->listing, "%s/get_all_keys", base);
		mkv_buf_printf(&k->query, "%s/batch_query_keys?keys=", base);
	} else {
		if (!kv_keys_tenant_nameable(tenant))
			return MKV_EINVAL;
		k->tenant = tenant;
		mkv_buf_printf(&k->listing, "%s/api/v1/tenant_keys?tenant_id=", base);
		add_encoded(&k->listing, tenant.ptr, tenant.len);
		mkv_buf_printf(&k->query, "%s/api/v1/tenant_batch_query_keys?tenant_id=", base);
		add_encoded(&k->query, tenant.ptr, tenant.len);
		mkv_buf_adds(&k->query, "&keys=");
	}
	return mkv_buf_ok(&k->listing) && mkv_buf_ok(&k->query) ? MKV_OK : MKV_ENOMEM;
}

static bool names(const kv_keys_at *k, const char *v, size_t n)
{
	return v && n == k->tenant.len && !memcmp(v, k->tenant.ptr, n);
}

enum kv_listed kv_keys_listed(const kv_keys_at *k, long http, const char *tenant_header)
{
	if (http == 503)
		return KV_LISTED_STANDBY;
	if (!k->tenant.ptr)
		return http == 200 ? KV_LISTED_TAKE : KV_LISTED_REFUSED;
	if (http == 404 || http == 405 || http == 501)
		return KV_LISTED_DEFAULT_ONLY;
	if (http != 200)
		return KV_LISTED_REFUSED;
	return names(k, tenant_header, tenant_header ? strlen(tenant_header) : 0) ? KV_LISTED_TAKE
										  : KV_LISTED_DEFAULT_ONLY;
}

void kv_key_batch_init(kv_key_batch *b)
{
	mkv_buf_init(&b->url);
	mkv_buf_init(&b->keys);
	b->n = 0;
}

void kv_key_batch_reset(kv_key_batch *b)
{
	mkv_buf_reset(&b->url);
	mkv_buf_reset(&b->keys);
	b->n = 0;
}

void kv_key_batch_free(kv_key_batch *b)
{
	mkv_buf_free(&b->url);
	mkv_buf_free(&b->keys);
	b->n = 0;
}

bool kv_key_batch_full(const kv_key_batch *b, const kv_keys_at *at, size_t len)
{
	return b->n && (b->url.len + 3 * len > KV_KEYS_QUERY_BYTES + at->query.len || b->n == KV_KEYS_BATCH_MAX);
}

enum mkv_err kv_key_batch_add(kv_key_batch *b, const kv_keys_at *at, const char *key, size_t len)
{
	if (!b->n)
		mkv_buf_add(&b->url, at->query.data, at->query.len);
	else
		mkv_buf_addc(&b->url, ',');
	add_encoded(&b->url, key, len);
	b->key_at[b->n++] = (uint32_t)b->keys.len;
	mkv_buf_add(&b->keys, key, len);
	mkv_buf_addc(&b->keys, '\0');
	return mkv_buf_ok(&b->url) && mkv_buf_ok(&b->keys) ? MKV_OK : MKV_ENOMEM;
}

static unsigned media_of(const json_t *entry)
{
	static const char *const disk[] = {"disk_values", "local_disk_values", "nof_values"};
	unsigned m = 0;
	if (json_array_size(json_object_get(entry, "values")))
		m |= MKV_MEDIUM_CPU;
	for (size_t i = 0; i < 3; i++)
		if (json_array_size(json_object_get(entry, disk[i])))
			m |= MKV_MEDIUM_DISK;
	return m;
}

enum mkv_poll_error kv_key_batch_parse(const kv_key_batch *b, const kv_keys_at *at, const char *body, size_t len,
				       unsigned *media, uint64_t *unknown)
{
	enum mkv_poll_error rc;
	json_t *root = kv_master_json(body, len, &rc);
	if (!root)
		return rc;
	const json_t *data = json_object_get(root, "data");
	if (!json_is_true(json_object_get(root, "success")) || !json_is_object(data)) {
		json_decref(root);
		return MKV_POLL_PARSE;
	}
	const json_t *tenant = json_object_get(root, "tenant_id");
	if (at->tenant.ptr &&
	    !(json_is_string(tenant) && names(at, json_string_value(tenant), json_string_length(tenant)))) {
		json_decref(root);
		return MKV_POLL_FIELD;
	}
	for (size_t i = 0; i < b->n; i++) {
		const json_t *e = json_object_get(data, kv_key_batch_key(b, i));
		const json_t *error = json_object_get(e, "error");
		media[i] = 0;
		if (json_is_true(json_object_get(e, "ok")))
			media[i] = media_of(e);
		else if (!json_is_string(error) || strcmp(json_string_value(error), "OBJECT_NOT_FOUND"))
			++*unknown;
	}
	json_decref(root);
	return MKV_POLL_OK;
}
