/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "kv_array.h"
#include "kv_master_metrics.h"

#define KEYS    "master_key_count"
#define REJECTS "mooncake_tenant_quota_reject_total"
#define EVICTS  "mooncake_tenant_evict_bytes_total"

enum mkv_err kv_quota_rejects_copy(kv_quota_rejects *dst, const kv_quota_rejects *src)
{
	dst->n = 0;
	dst->overflow = src->overflow;
	void *v = dst->v;
	enum mkv_err rc = kv_table_copy(&v, &dst->cap, &dst->names, src->v, src->n, sizeof(*src->v), &src->names);
	dst->v = v;
	dst->n = rc == MKV_OK ? src->n : 0;
	return rc;
}

void kv_quota_rejects_free(kv_quota_rejects *r)
{
	free(r->v);
	mkv_buf_free(&r->names);
	memset(r, 0, sizeof(*r));
}

void kv_metrics_reader_init(kv_metrics_reader *r, size_t max_rejects)
{
	memset(r, 0, sizeof(*r));
	mkv_buf_init(&r->line);
	mkv_buf_init(&r->rejects.names);
	mkv_buf_init(&r->evictions.names);
	r->max_rejects = max_rejects;
}

void kv_metrics_reader_reset(kv_metrics_reader *r)
{
	mkv_buf_reset(&r->line);
	mkv_buf_reset(&r->rejects.names);
	r->rejects.n = 0;
	r->rejects.overflow = 0;
	mkv_buf_reset(&r->evictions.names);
	r->evictions.n = 0;
	r->evictions.overflow = 0;
	r->skipping = r->bad = r->has_keys = r->no_memory = false;
	r->keys = 0;
}

void kv_metrics_reader_free(kv_metrics_reader *r)
{
	mkv_buf_free(&r->line);
	kv_quota_rejects_free(&r->rejects);
	kv_quota_rejects_free(&r->evictions);
}

/* The sample's value after its name and labels. */
static bool sample_value(const char *p, const char *end, double *v)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	char num[64];
	size_t n = 0;
	while (p < end && *p != ' ' && *p != '\t' && *p != '\r' && n < sizeof(num) - 1)
		num[n++] = *p++;
	num[n] = '\0';
	char *e;
	double d = strtod(num, &e);
	if (!n || *e || isnan(d))
		return false;
	*v = d;
	return true;
}

/* One label of the set at *pp ('{' or ',' before it): its name, and its
 * value unescaped into out (at most cap bytes).  Advances *pp past it;
 * false at the set's end or on a malformed label. */
static bool next_label(const char **pp, const char *end, const char **name, size_t *name_len, char *out, size_t cap,
		       size_t *out_len)
{
	const char *p = *pp;
	if (p >= end || (*p != '{' && *p != ','))
		return false;
	p++;
	*name = p;
	while (p < end && *p != '=' && *p != '}')
		p++;
	if (p >= end || *p != '=' || p + 1 >= end || p[1] != '"')
		return false;
	*name_len = (size_t)(p - *name);
	p += 2;
	size_t n = 0;
	for (; p < end && *p != '"'; p++) {
		char c = *p;
		if (c == '\\' && p + 1 < end) {
			c = *++p == 'n' ? '\n' : *p;
		}
		if (n >= cap)
			return false;
		out[n++] = c;
	}
	if (p >= end)
		return false;
	*out_len = n;
	*pp = p + 1;
	return true;
}

/* One sample of a per-tenant counter into q: its tenant_id and, with_reason,
 * its reason. */
static void tenant_sample(kv_metrics_reader *r, kv_quota_rejects *q, const char *labels, const char *end,
			  bool with_reason)
{
	char tenant[256], reason[64], value[256];
	size_t tl = 0, rl = 0, vl;
	bool has_t = false, has_r = false;
	const char *p = labels, *name;
	size_t nl;
	while (next_label(&p, end, &name, &nl, value, sizeof(value), &vl)) {
		if (nl == 9 && !memcmp(name, "tenant_id", 9) && vl <= sizeof(tenant)) {
			memcpy(tenant, value, vl), tl = vl, has_t = true;
		} else if (nl == 6 && !memcmp(name, "reason", 6) && vl <= sizeof(reason)) {
			memcpy(reason, value, vl), rl = vl, has_r = true;
		}
	}
	double v;
	/* a counter below 0 is no counter: the answer is bad, as for a sample that is no number */
	if (p >= end || *p != '}' || !has_t || (with_reason && !has_r) || !sample_value(p + 1, end, &v) || v < 0) {
		r->bad = true;
		return;
	}
	if (!with_reason)
		rl = 0;
	if (q->n >= r->max_rejects) {
		q->overflow++;
		return;
	}
	if (q->n == q->cap) {
		kv_quota_reject *g = kv_array_grow(q->v, &q->cap, sizeof(*g), 16, r->max_rejects);
		if (!g) {
			r->no_memory = true; /* the answer is lost */
			return;
		}
		q->v = g;
	}
	kv_quota_reject *e = &q->v[q->n++];
	e->tenant_at = q->names.len;
	e->tenant_len = (uint32_t)tl;
	mkv_buf_add(&q->names, tenant, tl);
	mkv_buf_addc(&q->names, '\0'); /* each name a C string too, for the renderer */
	e->reason_at = q->names.len;
	e->reason_len = (uint32_t)rl;
	mkv_buf_add(&q->names, reason, rl);
	mkv_buf_addc(&q->names, '\0');
	e->count = v;
}

static void line(kv_metrics_reader *r, const char *p, size_t n)
{
	const char *end = p + n;
	if (n > sizeof(KEYS) - 1 && !memcmp(p, KEYS, sizeof(KEYS) - 1) &&
	    (p[sizeof(KEYS) - 1] == ' ' || p[sizeof(KEYS) - 1] == '{')) {
		const char *v = p + sizeof(KEYS) - 1;
		if (*v == '{')
			v = memchr(v, '}', (size_t)(end - v)); /* upstream's labels hold no '}' */
		double d;
		if (!v || !sample_value(*v == '}' ? v + 1 : v, end, &d)) {
			r->bad = true;
			return;
		}
		r->keys += d;
		r->has_keys = true;
	} else if (n > sizeof(REJECTS) - 1 && !memcmp(p, REJECTS, sizeof(REJECTS) - 1) &&
		   p[sizeof(REJECTS) - 1] == '{') {
		tenant_sample(r, &r->rejects, p + sizeof(REJECTS) - 1, end, true);
	} else if (n > sizeof(EVICTS) - 1 && !memcmp(p, EVICTS, sizeof(EVICTS) - 1) && p[sizeof(EVICTS) - 1] == '{') {
		tenant_sample(r, &r->evictions, p + sizeof(EVICTS) - 1, end, false);
	}
}

enum mkv_err kv_metrics_reader_feed(kv_metrics_reader *r, const void *data, size_t n)
{
	const char *p = data, *end = p + n;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		if (!r->skipping) {
			if (r->line.len + (size_t)(e - p) > KV_METRICS_MAX_LINE) {
				r->skipping = r->bad = true;
				mkv_buf_reset(&r->line);
			} else if (nl && !r->line.len) {
				line(r, p, (size_t)(e - p)); /* whole in this piece: no copy */
			} else {
				mkv_buf_add(&r->line, p, (size_t)(e - p));
				if (nl) {
					line(r, mkv_buf_str(&r->line), r->line.len);
					mkv_buf_reset(&r->line);
				}
			}
		}
		if (nl)
			r->skipping = false;
		p = nl ? nl + 1 : end;
	}
	r->no_memory |= !mkv_buf_ok(&r->line) || !mkv_buf_ok(&r->rejects.names) || !mkv_buf_ok(&r->evictions.names);
	return r->no_memory ? MKV_ENOMEM : MKV_OK;
}

enum mkv_poll_error kv_metrics_reader_end(kv_metrics_reader *r)
{
	if (r->line.len && !r->skipping)
		line(r, r->line.data, r->line.len);
	mkv_buf_reset(&r->line);
	if (r->no_memory || !mkv_buf_ok(&r->rejects.names) || !mkv_buf_ok(&r->evictions.names))
		return MKV_POLL_NO_MEMORY;
	return r->has_keys && !r->bad ? MKV_POLL_OK : MKV_POLL_FIELD;
}

static uint64_t name_hash(const char *p, size_t n)
{
	return XXH3_64bits(p, n);
}

enum mkv_err kv_tenant_index_build(kv_tenant_index *ix, const kv_quota_rejects *t)
{
	size_t cap = 16;
	while (cap < t->n * 2)
		cap *= 2;
	memset(ix, 0, sizeof(*ix));
	if (!(ix->slot = calloc(cap, sizeof(*ix->slot))))
		return MKV_ENOMEM;
	ix->mask = cap - 1;
	for (size_t i = 0; i < t->n; i++) {
		size_t j = name_hash(t->names.data + t->v[i].tenant_at, t->v[i].tenant_len) & ix->mask;
		while (ix->slot[j])
			j = (j + 1) & ix->mask;
		ix->slot[j] = (uint32_t)i + 1;
	}
	return MKV_OK;
}

bool kv_tenant_index_get(const kv_tenant_index *ix, const kv_quota_rejects *t, const char *tenant, size_t len,
			 double *value)
{
	for (size_t j = name_hash(tenant, len) & ix->mask; ix->slot && ix->slot[j]; j = (j + 1) & ix->mask) {
		const kv_quota_reject *e = &t->v[ix->slot[j] - 1];
		if (e->tenant_len == len && !memcmp(t->names.data + e->tenant_at, tenant, len)) {
			*value = e->count;
			return true;
		}
	}
	return false;
}

void kv_tenant_index_free(kv_tenant_index *ix)
{
	free(ix->slot);
	ix->slot = NULL;
}
