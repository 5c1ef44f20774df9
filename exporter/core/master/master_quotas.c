/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "kv_array.h"
#include "kv_master_json.h"
#include "kv_master_quotas.h"

static bool get_bool(const json_t *o, const char *name, bool *v)
{
	const json_t *j = json_object_get(o, name);
	if (!json_is_boolean(j))
		return false;
	*v = json_is_true(j);
	return true;
}

/* One entry of data[]; false when a field is missing or of the wrong type. */
static bool entry(const json_t *e, kv_quota *q, const char **name, size_t *name_len)
{
	const json_t *id = json_object_get(e, "tenant_id");
	if (!json_is_string(id) || json_string_length(id) > UINT32_MAX)
		return false;
	*name = json_string_value(id);
	*name_len = json_string_length(id);
	return kv_json_u64(e, "requested_quota_bytes", &q->requested) &&
	       kv_json_u64(e, "effective_quota_bytes", &q->effective) && kv_json_u64(e, "charged_bytes", &q->charged) &&
	       get_bool(e, "admission_closed", &q->admission_closed) && get_bool(e, "over_quota", &q->over_quota) &&
	       get_bool(e, "has_explicit_policy", &q->explicit_policy);
}

/* Room for one more tenant (the array kept as it was when it cannot grow). */
static bool room(kv_quotas *q, size_t max)
{
	if (q->n < q->cap)
		return true;
	kv_quota *v = kv_array_grow(q->v, &q->cap, sizeof(*v), 64, max);
	if (v)
		q->v = v;
	return v != NULL;
}

/* One element of data[], whole: parsed, checked, and kept while there is
 * room (checked all the same past the limit: a bad answer is not
 * half-taken). */
static void element(kv_quotas_reader *r, const char *p, size_t n)
{
	enum mkv_poll_error rc = MKV_POLL_FIELD;
	json_t *e = kv_master_json(p, n, &rc);
	kv_quota q = {0};
	const char *name;
	size_t name_len;
	if (!e || !entry(e, &q, &name, &name_len)) {
		r->st.err = rc == MKV_POLL_NO_MEMORY ? rc : MKV_POLL_FIELD;
	} else if (r->q.n >= r->max) {
		r->q.overflow++;
	} else if (!room(&r->q, r->max)) {
		r->st.err = MKV_POLL_NO_MEMORY;
	} else {
		q.name_at = r->q.names.len;
		q.name_len = (uint32_t)name_len;
		mkv_buf_add(&r->q.names, name, name_len);
		r->q.v[r->q.n++] = q;
	}
	json_decref(e);
}

void kv_quotas_reader_init(kv_quotas_reader *r, size_t max)
{
	memset(r, 0, sizeof(*r));
	mkv_buf_init(&r->q.names);
	mkv_buf_init(&r->buf);
	r->max = max;
}

void kv_quotas_reader_reset(kv_quotas_reader *r)
{
	memset(&r->st, 0, sizeof(r->st));
	r->q.n = 0;
	r->q.overflow = 0;
	r->q.mode = KV_QUOTAS_UNKNOWN;
	mkv_buf_reset(&r->q.names);
	mkv_buf_reset(&r->buf);
}

void kv_quotas_reader_free(kv_quotas_reader *r)
{
	kv_quotas_free(&r->q);
	mkv_buf_free(&r->buf);
}

/* The shape is {"success":true,"data":[{...},...]} in any key order; only
 * the top level is scanned here, each element is handed to jansson whole. */
enum { TOP_START, TOP_KEY, TOP_COLON, TOP_VALUE, TOP_NEXT, TOP_DONE };

static void scan(kv_quotas_reader *r, const char *p, size_t n)
{
	for (size_t i = 0; i < n && !r->st.err; i++) {
		char c = p[i];
		if (r->st.in_string) {
			if (r->st.capture)
				mkv_buf_addc(&r->buf, c);
			if (r->st.escape)
				r->st.escape = false;
			else if (c == '\\')
				r->st.escape = true;
			else if (c == '"')
				r->st.in_string = false;
			if (r->st.depth == 1 && r->st.top == TOP_KEY && !r->st.in_string)
				r->st.top = TOP_COLON;
			else if (r->st.depth == 1 && r->st.top == TOP_KEY && r->st.key_len < sizeof(r->st.key))
				r->st.key[r->st.key_len++] = c;
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			if (r->st.capture)
				mkv_buf_addc(&r->buf, c);
			continue;
		}
		if (r->st.top == TOP_START) {
			if (c != '{')
				r->st.err = MKV_POLL_PARSE;
			r->st.top = TOP_KEY;
			r->st.depth = 1;
			continue;
		}
		if (r->st.depth == 1) {
			switch (r->st.top) {
			case TOP_KEY:
				if (c == '}' && !r->st.any_key) {
					r->st.top = TOP_DONE, r->st.depth = 0;
				} else if (c == '"') {
					r->st.in_string = true, r->st.key_len = 0;
				} else {
					r->st.err = MKV_POLL_PARSE;
				}
				continue;
			case TOP_COLON:
				r->st.top = c == ':' ? TOP_VALUE : (r->st.err = MKV_POLL_PARSE, TOP_DONE);
				r->st.any_key = true;
				r->st.in_data = r->st.key_len == 4 && !memcmp(r->st.key, "data", 4);
				r->st.in_success = r->st.key_len == 7 && !memcmp(r->st.key, "success", 7);
				if ((r->st.in_data && r->st.seen_data) || (r->st.in_success && r->st.seen_success))
					r->st.err = MKV_POLL_PARSE; /* a key twice: which would be right? */
				r->st.seen_data |= r->st.in_data;
				r->st.seen_success |= r->st.in_success;
				r->st.literal_len = 0;
				continue;
			case TOP_VALUE:
				if (r->st.in_data && c != '[') {
					r->st.err = MKV_POLL_FIELD;
					continue;
				}
				r->st.top = TOP_NEXT;
				r->st.data_array = r->st.in_data;
				break; /* the value's first byte: below */
			case TOP_NEXT:
				if (c == ',' || c == '}') {
					if (r->st.in_success)
						r->st.success = r->st.literal_len == 4 &&
								!memcmp(r->st.literal, "true", 4);
					r->st.in_data = r->st.in_success = false;
					r->st.top = c == ',' ? TOP_KEY : TOP_DONE;
					r->st.depth = c == ',' ? 1 : 0;
					continue;
				}
				break;
			default:
				r->st.err = MKV_POLL_PARSE;
				continue;
			}
		}
		if (r->st.top == TOP_DONE) {
			r->st.err = MKV_POLL_PARSE; /* bytes after the document */
			continue;
		}
		/* inside a top-level value */
		if (r->st.depth == 1 && r->st.in_success && c != '{' && c != '[' && c != '"') {
			if (r->st.literal_len < sizeof(r->st.literal))
				r->st.literal[r->st.literal_len++] = c;
			continue;
		}
		if (r->st.depth == 2 && r->st.data_array && r->st.in_data) {
			if (c == ',' || c == ']') {
				if (c == ']')
					r->st.depth = 1, r->st.data_array = false;
				continue;
			}
			if (c != '{') {
				r->st.err = MKV_POLL_FIELD; /* an element that is no object */
				continue;
			}
			r->st.capture = true;
			mkv_buf_reset(&r->buf);
		}
		if (r->st.capture)
			mkv_buf_addc(&r->buf, c);
		if (c == '"') {
			r->st.in_string = true;
		} else if (c == '{' || c == '[') {
			r->st.depth++;
		} else if (c == '}' || c == ']') {
			r->st.depth--;
			if (r->st.capture && r->st.depth == 2) {
				r->st.capture = false;
				if (mkv_buf_ok(&r->buf))
					element(r, r->buf.data, r->buf.len);
				mkv_buf_reset(&r->buf);
			}
		}
		if (r->st.capture && r->buf.len > KV_QUOTAS_MAX_ELEMENT)
			r->st.err = MKV_POLL_FIELD;
	}
}

enum mkv_err kv_quotas_reader_feed(kv_quotas_reader *r, const void *p, size_t n)
{
	r->st.fed = r->st.fed || n;
	scan(r, p, n);
	return r->st.err == MKV_POLL_NO_MEMORY || !mkv_buf_ok(&r->buf) || !mkv_buf_ok(&r->q.names) ? MKV_ENOMEM
												   : MKV_OK;
}

enum mkv_poll_error kv_quotas_reader_end(kv_quotas_reader *r, kv_quotas *q)
{
	enum mkv_poll_error rc = r->st.err;
	if (!mkv_buf_ok(&r->buf) || !mkv_buf_ok(&r->q.names))
		rc = MKV_POLL_NO_MEMORY;
	else if (!rc && (!r->st.fed || r->st.top != TOP_DONE || r->st.in_string))
		rc = MKV_POLL_PARSE;
	else if (!rc && (!r->st.success || !r->st.seen_data))
		rc = MKV_POLL_FIELD;
	if (rc)
		return rc;
	/* the answer in, the old one's memory to the reader */
	kv_quotas t = *q;
	*q = r->q;
	q->mode = KV_QUOTAS_ON;
	r->q = t;
	r->q.mode = KV_QUOTAS_UNKNOWN;
	return MKV_POLL_OK;
}

enum mkv_poll_error kv_quotas_parse(kv_quotas *q, const char *body, size_t len, size_t max)
{
	kv_quotas_reader r;
	kv_quotas_reader_init(&r, max);
	kv_quotas_reader_feed(&r, body, len);
	enum mkv_poll_error rc = kv_quotas_reader_end(&r, q);
	kv_quotas_reader_free(&r);
	return rc;
}

enum mkv_err kv_quotas_copy(kv_quotas *dst, const kv_quotas *src)
{
	dst->mode = src->mode;
	dst->overflow = src->overflow;
	dst->n = 0;
	void *v = dst->v;
	enum mkv_err rc = kv_table_copy(&v, &dst->cap, &dst->names, src->v, src->n, sizeof(*src->v), &src->names);
	dst->v = v;
	dst->n = rc == MKV_OK ? src->n : 0;
	return rc;
}

void kv_quotas_free(kv_quotas *q)
{
	free(q->v);
	mkv_buf_free(&q->names);
	enum kv_quota_mode mode = q->mode;
	memset(q, 0, sizeof(*q));
	q->mode = mode;
}
