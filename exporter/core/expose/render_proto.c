/* SPDX-License-Identifier: Apache-2.0 */
/* The protobuf exposition: each family one io.prometheus.client.MetricFamily
 * message, preceded by its length as a varint (encoding=delimited), each
 * sample one Metric with its labels, as Prometheus's client_model 0.3.0
 * defines them (metrics.proto).  Written field by field into the scrape's
 * buffer: a message's length goes before it, so room is kept for it and the
 * message moved when its length takes more or fewer bytes than kept.  A
 * histogram carries its classic buckets (the +Inf one implied, as client
 * libraries send them) and its native ones (kv_native.h) in one message.
 * The families, their labels and which are served are render.c's walk. */
#include <stdlib.h>
#include <string.h>

#include "kv_emit.h"
#include "kv_lifetime.h"
#include "kv_utf8.h"

typedef struct mkv_buf B;

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2 };

/* metrics.proto's field numbers */
enum {
	FAMILY_NAME = 1,
	FAMILY_HELP = 2,
	FAMILY_TYPE = 3,
	FAMILY_METRIC = 4,
	METRIC_LABEL = 1,
	METRIC_GAUGE = 2,
	METRIC_COUNTER = 3,
	METRIC_HISTOGRAM = 7,
	LABEL_NAME = 1,
	LABEL_VALUE = 2,
	VALUE = 1, /* Gauge's and Counter's */
	HIST_COUNT = 1,
	HIST_SUM = 2,
	HIST_BUCKET = 3,
	HIST_SCHEMA = 5,
	HIST_ZERO_THRESHOLD = 6,
	HIST_ZERO_COUNT = 7,
	HIST_POSITIVE_SPAN = 12,
	HIST_POSITIVE_DELTA = 13,
	BUCKET_CUMULATIVE = 1,
	BUCKET_UPPER = 2,
	SPAN_OFFSET = 1,
	SPAN_LENGTH = 2,
};

/* MetricType */
enum { TYPE_COUNTER = 0, TYPE_GAUGE = 1, TYPE_HISTOGRAM = 4 };

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Writers at w, into room made before; each returns the end. */
static char *varint(char *w, uint64_t v)
{
	while (v >= 0x80) {
		*w++ = (char)(v | 0x80);
		v >>= 7;
	}
	*w++ = (char)v;
	return w;
}

static char *tag(char *w, unsigned field, unsigned wire)
{
	return varint(w, (uint64_t)field << 3 | wire);
}

static char *field_varint(char *w, unsigned field, uint64_t v)
{
	return varint(tag(w, field, WIRE_VARINT), v);
}

static uint64_t zigzag(int64_t v)
{
	return v < 0 ? ~((uint64_t)v << 1) : (uint64_t)v << 1;
}

static char *field_double(char *w, unsigned field, double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof(u));
	w = tag(w, field, WIRE_FIXED64);
	for (int i = 0; i < 8; i++) /* little-endian, whatever the machine's */
		*w++ = (char)(u >> (8 * i));
	return w;
}

/* A length-delimited field opened at *w: its tag, and `keep` bytes kept
 * for its length; returns where they are. */
static char *open_len(char **w, unsigned field, size_t keep)
{
	char *at = field ? tag(*w, field, WIRE_LEN) : *w;
	*w = at + keep;
	return at;
}

/* Closes it at w: its length where it was kept, the message moved when the
 * length takes another number of bytes (room for one more byte than kept
 * was made).  Returns the end. */
static char *close_len(char *at, char *w, size_t keep)
{
	size_t len = (size_t)(w - at) - keep, n = varint_len(len);
	if (n != keep)
		memmove(at + n, at + keep, len);
	varint(at, len);
	return at + n + len;
}

static char *field_bytes(char *w, unsigned field, const char *s, size_t n)
{
	w = varint(tag(w, field, WIRE_LEN), n);
	memcpy(w, s, n);
	return w + n;
}

/* A string, with every byte that does not start a valid UTF-8 character
 * (and NUL) made U+FFFD when sanitize, as the text's label values are: at
 * most 3 bytes a byte, and 12 more. */
static char *field_text(char *w, unsigned field, const char *s, size_t n, bool sanitize)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, l = 0;
	while (sanitize && i < n && (l = kv_utf8_seq_len(p + i, n - i)) != 0)
		i += l;
	if (!sanitize || i == n) /* the usual: valid, copied */
		return field_bytes(w, field, s, n);
	char *at = open_len(&w, field, 1);
	for (i = 0; i < n; i += l ? l : 1) {
		l = kv_utf8_seq_len(p + i, n - i);
		if (l) {
			memcpy(w, s + i, l);
			w += l;
		} else {
			memcpy(w, "\xef\xbf\xbd", 3);
			w += 3;
		}
	}
	return close_len(at, w, 1);
}

#define LABEL_MAX(name_len, n) (2 * 10 + 3 + (name_len) + 3 * (n) + 12)

/* A label pair appended to b. */
static void label(B *b, const char *name, const char *value, size_t n, bool sanitize)
{
	size_t name_len = strlen(name);
	char *w0 = mkv_buf_room(b, LABEL_MAX(name_len, n)), *w = w0;
	if (!w)
		return;
	char *at = open_len(&w, METRIC_LABEL, 1);
	w = field_bytes(w, LABEL_NAME, name, name_len);
	w = field_text(w, LABEL_VALUE, value, n, sanitize);
	w = close_len(at, w, 1);
	mkv_buf_used(b, (size_t)(w - w0));
}

enum mkv_err kv_proto_cache_build(kv_render_cache *c, const kv_exporter_snap *x)
{
	if (kv_render_cache_alloc(c, x) != MKV_OK)
		return MKV_ENOMEM;
	size_t ti = 0, gi = 0;
	for (size_t si = 0; si < x->n_sources; si++) {
		const kv_source_snap *s = &x->sources[si];
		c->tenant_base[si] = ti;
		c->group_base[si] = gi;
		for (size_t i = 0; i < s->n_tenants; i++, ti++) {
			const kv_tenant_snap *t = &s->tenants[i];
			size_t at = c->text.len;
			label(&c->text, "source", s->name, strlen(s->name), true);
			label(&c->text, "backend_id", t->backend_id, t->backend_len, t->labels_unclean);
			label(&c->text, "tenant_id", t->tenant_id, t->tenant_len, t->labels_unclean);
			c->tenant[ti] = (kv_text){at, c->text.len - at};
		}
		for (size_t g = 0; g < s->n_group_names; g++, gi++) {
			size_t at = c->text.len;
			label(&c->text, "key_group", s->group_names[g].ptr, s->group_names[g].len, true);
			c->group[gi] = (kv_text){at, c->text.len - at};
		}
	}
	return mkv_buf_ok(&c->text) ? MKV_OK : MKV_ENOMEM;
}

/* The bytes kept for a family's length: a guess of its size from its
 * entities (a family whose length takes another number of bytes is moved
 * when it closes: once, and rarely). */
static size_t family_keep(const kv_family *f, const kv_exporter_snap *x)
{
	size_t entities = 0;
	for (size_t si = 0; si < x->n_sources; si++) {
		const kv_source_snap *s = &x->sources[si];
		if (f->scope == KV_SCOPE_TENANT)
			entities += s->n_tenants;
		else if (f->scope == KV_SCOPE_GROUP)
			for (size_t i = 0; i < s->n_tenants; i++)
				entities += s->tenants[i].n_groups;
	}
	return varint_len((uint64_t)entities * (f->kind == KV_HISTOGRAM ? 420 : 80) + 4096);
}

void kv_proto_family_begin(kv_emit *e, const kv_exporter_snap *x)
{
	const kv_family *f = e->f;
	B *b = e->b;
	size_t name_len = strlen(f->name), help_len = strlen(f->help);
	e->family_at = b->len;
	e->family_keep = family_keep(f, x);
	e->metrics = 0;
	char *w0 = mkv_buf_room(b, 5 + 2 * 11 + name_len + help_len + 11), *w = w0;
	if (!w)
		return;
	w += e->family_keep;
	w = field_bytes(w, FAMILY_NAME, f->name, name_len);
	w = field_bytes(w, FAMILY_HELP, f->help, help_len);
	w = field_varint(w, FAMILY_TYPE,
			 f->kind == KV_COUNTER     ? TYPE_COUNTER
			 : f->kind == KV_HISTOGRAM ? TYPE_HISTOGRAM
						   : TYPE_GAUGE);
	mkv_buf_used(b, (size_t)(w - w0));
}

void kv_proto_family_end(kv_emit *e)
{
	B *b = e->b;
	if (!mkv_buf_ok(b))
		return;
	if (!e->metrics) { /* no sample: no family (Prometheus reads a family's first Metric) */
		b->len = e->family_at;
		return;
	}
	size_t keep = e->family_keep, len = b->len - e->family_at - keep, n = varint_len(len);
	if (n > keep && !mkv_buf_room(b, n - keep))
		return;
	char *at = b->data + e->family_at;
	close_len(at, at + keep + len, keep);
	b->len = e->family_at + n + len;
}

/* The entity's scope labels: a tenant's from the render's cache
 * (kv_proto_cache_build), the others' encoded into the scratch buffer once
 * for all the entity's samples (render.c's enter() in the text). */
void kv_proto_enter(kv_emit *e)
{
	const kv_family *f = e->f;
	const kv_at *a = &e->at;
	const kv_source_snap *s = a->s;
	const kv_render_cache *c = e->c;
	B *b = e->scratch;
	if (f->scope == KV_SCOPE_TENANT) {
		kv_text t = c->tenant[c->tenant_base[e->si] + e->ti];
		e->scope = c->text.data + t.at;
		e->scope_len = t.len;
		return;
	}
	mkv_buf_reset(b);
	if (f->scope == KV_SCOPE_GROUP) {
		kv_text t = c->tenant[c->tenant_base[e->si] + e->ti];
		mkv_buf_add(b, c->text.data + t.at, t.len);
		if (a->g->id < s->n_group_names) {
			kv_text g = c->group[c->group_base[e->si] + a->g->id];
			mkv_buf_add(b, c->text.data + g.at, g.len);
		} else {
			label(b, "key_group", "", 0, false);
		}
	} else if (f->scope != KV_SCOPE_EXPORTER) {
		label(b, "source", s->name, strlen(s->name), true);
		if (f->scope == KV_SCOPE_MEMBER && a->m->label && (s->ha || (f->flags & KV_FAM_MEMBER_ALWAYS)))
			label(b, "member", a->m->label, strlen(a->m->label), true);
		if (f->scope == KV_SCOPE_QUOTA)
			label(b, "tenant_id", s->quotas.names.data + a->q->name_at, a->q->name_len, true);
	}
	if (!mkv_buf_ok(b))
		e->b->failed = true; /* a sample without its scope would be wrong */
	e->scope = b->data;
	e->scope_len = b->len;
}

/* A Metric opened at *w (room for metric_bound() made): its scope's labels
 * and the extra ones.  Returns where its length goes. */
static size_t metric_bound(const kv_emit *e, const kv_label *extra, size_t n, size_t body)
{
	size_t bound = 1 + 3 + e->scope_len + body + 1;
	for (size_t i = 0; i < n && i < KV_LABELS_MAX; i++)
		if (extra[i].name)
			bound += LABEL_MAX(strlen(extra[i].name), strlen(extra[i].value));
	return bound;
}

/* keep: the bytes kept for its length, varint_len(its bound) */
static char *metric_open(kv_emit *e, char **w, const kv_label *extra, size_t n, size_t keep)
{
	char *at = open_len(w, FAMILY_METRIC, keep);
	memcpy(*w, e->scope, e->scope_len);
	*w += e->scope_len;
	for (size_t i = 0; i < n && i < KV_LABELS_MAX; i++)
		if (extra[i].name) {
			char *l = open_len(w, METRIC_LABEL, 1);
			*w = field_bytes(*w, LABEL_NAME, extra[i].name, strlen(extra[i].name));
			*w = field_text(*w, LABEL_VALUE, extra[i].value, strlen(extra[i].value), true);
			*w = close_len(l, *w, 1);
		}
	e->metrics++;
	return at;
}

void kv_proto_sample(kv_emit *e, const kv_label *extra, size_t n, double v)
{
	size_t bound = metric_bound(e, extra, n, 2 + 9), keep = varint_len(bound);
	char *w0 = mkv_buf_room(e->b, bound), *w = w0;
	if (!w)
		return;
	char *at = metric_open(e, &w, extra, n, keep);
	char *in = open_len(&w, e->f->kind == KV_COUNTER ? METRIC_COUNTER : METRIC_GAUGE, 1);
	w = field_double(w, VALUE, v);
	w = close_len(in, w, 1);
	w = close_len(at, w, keep);
	mkv_buf_used(e->b, (size_t)(w - w0));
}

/* The native buckets: the schema, the zero bucket, and the positive ones as
 * spans of consecutive buckets (a run of more than two empty ones ends a
 * span; shorter ones are cheaper as zero deltas) and each bucket's count as
 * the difference from the one before.  At most NATIVE_MAX bytes. */
#define NATIVE_MAX (3 * 11 + 9 + KV_NATIVE_BUCKETS * (2 + 2 * 11) + KV_NATIVE_BUCKETS * 11)

static char *native(char *w, const kv_native *h)
{
	w = field_varint(w, HIST_SCHEMA, zigzag(kv_native_schema(h)));
	w = field_double(w, HIST_ZERO_THRESHOLD, KV_NATIVE_ZERO_THRESHOLD);
	w = field_varint(w, HIST_ZERO_COUNT, h->zero);
	struct span {
		size_t from, to; /* counts[from .. to) */
	} span[KV_NATIVE_BUCKETS];
	size_t n = 0;
	for (size_t k = 0; k < h->n; k++) {
		if (!h->counts[k])
			continue;
		if (n && k - span[n - 1].to <= 2)
			span[n - 1].to = k + 1; /* the empty ones between: zero deltas */
		else
			span[n++] = (struct span){k, k + 1};
	}
	size_t prev_to = 0;
	for (size_t i = 0; i < n; i++) {
		/* the first span's offset is its first bucket's index; the
		 * others' the empty buckets since the span before */
		int64_t offset = i ? (int64_t)(span[i].from - prev_to) : (int64_t)h->first + (int64_t)span[i].from;
		char *at = open_len(&w, HIST_POSITIVE_SPAN, 1);
		w = field_varint(w, SPAN_OFFSET, zigzag(offset));
		w = field_varint(w, SPAN_LENGTH, span[i].to - span[i].from);
		w = close_len(at, w, 1);
		prev_to = span[i].to;
	}
	uint64_t prev = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t k = span[i].from; k < span[i].to; k++) {
			w = field_varint(w, HIST_POSITIVE_DELTA, zigzag((int64_t)(h->counts[k] - prev)));
			prev = h->counts[k];
		}
	return w;
}

static void histogram(kv_emit *e, uint64_t count, double sum, const uint64_t *counts, size_t n_bounds,
		      double (*bound)(const void *, size_t), const void *arg, const kv_native *nh)
{
	size_t body = 3 + 11 + 9 + n_bounds * (2 + 11 + 9) + NATIVE_MAX;
	size_t most = metric_bound(e, NULL, 0, body), keep = varint_len(most), keep_in = varint_len(body);
	char *w0 = mkv_buf_room(e->b, most), *w = w0;
	if (!w)
		return;
	char *at = metric_open(e, &w, NULL, 0, keep);
	char *in = open_len(&w, METRIC_HISTOGRAM, keep_in);
	w = field_varint(w, HIST_COUNT, count);
	w = field_double(w, HIST_SUM, sum);
	uint64_t cum = 0;
	for (size_t k = 0; k < n_bounds; k++) {
		char *bu = open_len(&w, HIST_BUCKET, 1);
		w = field_varint(w, BUCKET_CUMULATIVE, cum += counts[k]);
		w = field_double(w, BUCKET_UPPER, bound(arg, k));
		w = close_len(bu, w, 1);
	}
	w = native(w, nh);
	w = close_len(in, w, keep_in);
	w = close_len(at, w, keep);
	mkv_buf_used(e->b, (size_t)(w - w0));
}

static double hist_bound(const void *arg, size_t k)
{
	return ((const kv_hist *)arg)->bounds[k];
}

static double life_bound(const void *arg, size_t k)
{
	(void)arg;
	return kv_life_bounds_ms[k] / 1000.0;
}

void kv_proto_hist(kv_emit *e, const kv_hist *h)
{
	histogram(e, h->count, h->sum, h->counts, h->n_bounds, hist_bound, h, &h->native);
}

void kv_proto_life(kv_emit *e, const kv_life_hist *h)
{
	histogram(e, h->count, (double)h->sum_ms / 1000.0, h->counts, KV_LIFE_BUCKETS, life_bound, NULL, &h->native);
}
