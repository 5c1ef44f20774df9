/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "kv_master_json.h"
#include "kv_master_quotas.h"

static bool get_u64(const json_t *o, const char *name, uint64_t *v)
{
	const json_t *j = json_object_get(o, name);
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return false;
	*v = (uint64_t)json_integer_value(j);
	return true;
}

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
	return get_u64(e, "requested_quota_bytes", &q->requested) &&
	       get_u64(e, "effective_quota_bytes", &q->effective) && get_u64(e, "charged_bytes", &q->charged) &&
	       get_bool(e, "admission_closed", &q->admission_closed) && get_bool(e, "over_quota", &q->over_quota) &&
	       get_bool(e, "has_explicit_policy", &q->explicit_policy);
}

enum kv_poll_error kv_quotas_parse(kv_quotas *q, const char *body, size_t len, size_t max)
{
	enum kv_poll_error rc = KV_POLL_FIELD;
	json_t *root = kv_master_json(body, len, &rc);
	if (!root)
		return rc;
	const json_t *ok = json_object_get(root, "success"), *data = json_object_get(root, "data");
	if (!json_is_true(ok) || !json_is_array(data))
		goto out;
	size_t n = json_array_size(data), keep = n < max ? n : max;
	kv_quota *v = keep ? calloc(keep, sizeof(*v)) : NULL;
	kv_buf names;
	kv_buf_init(&names);
	rc = KV_POLL_NO_MEMORY;
	if (keep && !v)
		goto out;
	rc = KV_POLL_FIELD;
	for (size_t i = 0; i < n; i++) {
		kv_quota e = {0};
		const char *name;
		size_t name_len;
		if (!entry(json_array_get(data, i), &e, &name, &name_len)) {
			free(v);
			kv_buf_free(&names);
			goto out;
		}
		if (i >= keep)
			continue; /* checked all the same: a bad answer is not half-taken */
		e.name_at = names.len;
		e.name_len = (uint32_t)name_len;
		kv_buf_add(&names, name, name_len);
		v[i] = e;
	}
	if (!kv_buf_ok(&names)) {
		free(v);
		kv_buf_free(&names);
		rc = KV_POLL_NO_MEMORY;
		goto out;
	}
	kv_quotas_free(q);
	q->mode = KV_QUOTAS_ON;
	q->v = v;
	q->n = q->cap = keep;
	q->names = names;
	q->overflow = n - keep;
	rc = KV_POLL_OK;
out:
	json_decref(root);
	return rc;
}

int kv_quotas_copy(kv_quotas *dst, const kv_quotas *src)
{
	dst->mode = src->mode;
	dst->overflow = src->overflow;
	dst->n = 0;
	kv_buf_reset(&dst->names);
	if (src->n > dst->cap) {
		kv_quota *p = realloc(dst->v, src->n * sizeof(*p));
		if (!p)
			return KV_ENOMEM;
		dst->v = p;
		dst->cap = src->n;
	}
	kv_buf_add(&dst->names, src->names.data, src->names.len);
	if (!kv_buf_ok(&dst->names)) {
		kv_buf_free(&dst->names);
		kv_buf_init(&dst->names);
		return KV_ENOMEM;
	}
	if (src->n)
		memcpy(dst->v, src->v, src->n * sizeof(*src->v));
	dst->n = src->n;
	return KV_OK;
}

void kv_quotas_free(kv_quotas *q)
{
	free(q->v);
	kv_buf_free(&q->names);
	enum kv_quota_mode mode = q->mode;
	memset(q, 0, sizeof(*q));
	q->mode = mode;
}
