/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "kv_master_json.h"
#include "kv_master_keys.h"
#include "kv_utf8.h"

void kv_listing_init(kv_listing *l, uint64_t max_keys)
{
	memset(l, 0, sizeof(*l));
	l->max_keys = max_keys;
	kv_buf_init(&l->carry);
}

void kv_listing_reset(kv_listing *l)
{
	kv_buf_reset(&l->carry);
	l->skipping = false;
	l->listed = l->unaskable = 0;
	l->too_long = false;
}

void kv_listing_free(kv_listing *l)
{
	kv_buf_free(&l->carry);
}

int kv_listing_feed(kv_listing *l, const void *p, size_t n)
{
	kv_buf_add(&l->carry, p, n);
	return kv_buf_ok(&l->carry) ? KV_OK : KV_ENOMEM;
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
			} else if (memchr(p, ',', n) || n > KV_KEYS_MAX_KEY_BYTES || !kv_label_value_clean(p, n))
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

void kv_key_batch_init(kv_key_batch *b)
{
	kv_buf_init(&b->url);
	kv_buf_init(&b->keys);
	b->n = 0;
}

void kv_key_batch_reset(kv_key_batch *b)
{
	kv_buf_reset(&b->url);
	kv_buf_reset(&b->keys);
	b->n = 0;
}

void kv_key_batch_free(kv_key_batch *b)
{
	kv_buf_free(&b->url);
	kv_buf_free(&b->keys);
	b->n = 0;
}

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
	       c == '_' || c == '~';
}

bool kv_key_batch_full(const kv_key_batch *b, const char *base, size_t len)
{
	return b->n && (b->url.len + 3 * len > KV_KEYS_QUERY_BYTES + strlen(base) + 32 || b->n == KV_KEYS_BATCH_MAX);
}

int kv_key_batch_add(kv_key_batch *b, const char *base, const char *key, size_t len)
{
	if (!b->n)
		kv_buf_printf(&b->url, "%s/batch_query_keys?keys=", base);
	else
		kv_buf_addc(&b->url, ',');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];
		if (unreserved(c))
			kv_buf_addc(&b->url, (char)c);
		else
			kv_buf_printf(&b->url, "%%%02X", c);
	}
	b->key_at[b->n++] = (uint32_t)b->keys.len;
	kv_buf_add(&b->keys, key, len);
	kv_buf_addc(&b->keys, '\0');
	return kv_buf_ok(&b->url) && kv_buf_ok(&b->keys) ? KV_OK : KV_ENOMEM;
}

static unsigned media_of(const json_t *entry)
{
	static const char *const disk[] = {"disk_values", "local_disk_values", "nof_values"};
	unsigned m = 0;
	if (json_array_size(json_object_get(entry, "values")))
		m |= KV_MEDIUM_CPU;
	for (size_t i = 0; i < 3; i++)
		if (json_array_size(json_object_get(entry, disk[i])))
			m |= KV_MEDIUM_DISK;
	return m;
}

enum kv_poll_error kv_key_batch_parse(const kv_key_batch *b, const char *body, size_t len, unsigned *media,
				      uint64_t *unknown)
{
	enum kv_poll_error rc;
	json_t *root = kv_master_json(body, len, &rc);
	if (!root)
		return rc;
	const json_t *data = json_object_get(root, "data");
	if (!json_is_true(json_object_get(root, "success")) || !json_is_object(data)) {
		json_decref(root);
		return KV_POLL_PARSE;
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
	return KV_POLL_OK;
}
