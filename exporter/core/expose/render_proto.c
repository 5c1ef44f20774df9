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

static char *varint_at(char *w, uint64_t v)
{
	while (v >= 0x80) {
		*w++ = (char)(v | 0x80);
		v >>= 7;
	}
	*w++ = (char)v;
	return w;
}

static void varint(B *b, uint64_t v)
{
	char *w = mkv_buf_room(b, 10);
	if (w)
		mkv_buf_used(b, (size_t)(varint_at(w, v) - w));
}

static void tag(B *b, unsigned field, unsigned wire)
{
	varint(b, (uint64_t)field << 3 | wire);
}

static void field_varint(B *b, unsigned field, uint64_t v)
{
	tag(b, field, WIRE_VARINT);
	varint(b, v);
}

static uint64_t zigzag(int64_t v)
{
	return v < 0 ? ~((uint64_t)v << 1) : (uint64_t)v << 1;
}

static void field_double(B *b, unsigned field, double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof(u));
	tag(b, field, WIRE_FIXED64);
	char *w = mkv_buf_room(b, 8);
	if (!w)
		return;
	for (int i = 0; i < 8; i++) /* little-endian, whatever the machine's */
		w[i] = (char)(u >> (8 * i));
	mkv_buf_used(b, 8);
}

/* A length-delimited field opened: its tag, and `keep` bytes kept for its
 * length.  Returns where they are. */
static size_t open_len(B *b, unsigned field, size_t keep)
{
	if (field)
		tag(b, field, WIRE_LEN);
	size_t at = b->len;
	char *w = mkv_buf_room(b, keep);
	if (w)
		mkv_buf_used(b, keep);
	return at;
}

/* Closes what open_len opened at `at`: its length written where it was
 * kept, the message moved when it takes another number of bytes. */
static void close_len(B *b, size_t at, size_t keep)
{
	if (!mkv_buf_ok(b))
		return;
	size_t len = b->len - at - keep, n = varint_len(len);
	if (n > keep && !mkv_buf_room(b, n - keep))
		return;
	if (n != keep) {
		memmove(b->data + at + n, b->data + at + keep, len);
		b->len = b->len + n - keep;
	}
	varint_at(b->data + at, len);
}

static void field_bytes(B *b, unsigned field, const char *s, size_t n)
{
	tag(b, field, WIRE_LEN);
	varint(b, n);
	mkv_buf_add(b, s, n);
}

/* A string, with every byte that does not start a valid UTF-8 character
 * (and NUL) made U+FFFD when sanitize, as the text's label values are. */
static void field_text(B *b, unsigned field, const char *s, size_t n, bool sanitize)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, l = 0;
	while (sanitize && i < n && (l = kv_utf8_seq_len(p + i, n - i)) != 0)
		i += l;
	if (!sanitize || i == n) { /* the usual: valid, copied */
		field_bytes(b, field, s, n);
		return;
	}
	size_t at = open_len(b, field, 1);
	for (i = 0; i < n; i += l ? l : 1) {
		l = kv_utf8_seq_len(p + i, n - i);
		if (l)
			mkv_buf_add(b, s + i, l);
		else
			mkv_buf_adds(b, "\xef\xbf\xbd");
	}
	close_len(b, at, 1);
}

static void label(B *b, const char *name, const char *value, size_t n, bool sanitize)
{
	size_t at = open_len(b, METRIC_LABEL, 1);
	field_bytes(b, LABEL_NAME, name, strlen(name));
	field_text(b, LABEL_VALUE, value, n, sanitize);
	close_len(b, at, 1);
}

void kv_proto_family_begin(kv_emit *e)
{
	const kv_family *f = e->f;
	B *b = e->b;
	e->family_at = b->len;
	e->metrics = 0;
	/* most families are under 2 MiB: three bytes of length */
	size_t at = open_len(b, 0, 3);
	(void)at;
	field_bytes(b, FAMILY_NAME, f->name, strlen(f->name));
	field_bytes(b, FAMILY_HELP, f->help, strlen(f->help));
	field_varint(b, FAMILY_TYPE,
		     f->kind == KV_COUNTER ? TYPE_COUNTER : f->kind == KV_HISTOGRAM ? TYPE_HISTOGRAM : TYPE_GAUGE);
}

void kv_proto_family_end(kv_emit *e)
{
	B *b = e->b;
	if (!e->metrics) { /* no sample: no family (Prometheus reads a family's first Metric) */
		if (mkv_buf_ok(b))
			b->len = e->family_at;
		return;
	}
	close_len(b, e->family_at, 3);
}

/* The entity's scope labels, encoded once into the scratch buffer for all
 * its samples (render.c's enter() in the text). */
void kv_proto_enter(kv_emit *e)
{
	const kv_family *f = e->f;
	const kv_at *a = &e->at;
	const kv_source_snap *s = a->s;
	B *b = e->scratch;
	mkv_buf_reset(b);
	if (f->scope != KV_SCOPE_EXPORTER)
		label(b, "source", s->name, strlen(s->name), true);
	if (f->scope == KV_SCOPE_MEMBER && a->m->label && (s->ha || (f->flags & KV_FAM_MEMBER_ALWAYS)))
		label(b, "member", a->m->label, strlen(a->m->label), true);
	if (f->scope == KV_SCOPE_TENANT || f->scope == KV_SCOPE_GROUP) {
		const kv_tenant_snap *t = a->t;
		label(b, "backend_id", t->backend_id, t->backend_len, t->labels_unclean);
		label(b, "tenant_id", t->tenant_id, t->tenant_len, t->labels_unclean);
	}
	if (f->scope == KV_SCOPE_GROUP) {
		bool named = a->g->id < s->n_group_names;
		label(b, "key_group", named ? s->group_names[a->g->id].ptr : "",
		      named ? s->group_names[a->g->id].len : 0, true);
	}
	if (f->scope == KV_SCOPE_QUOTA)
		label(b, "tenant_id", s->quotas.names.data + a->q->name_at, a->q->name_len, true);
	if (!mkv_buf_ok(b))
		e->b->failed = true; /* a sample without its scope would be wrong */
}

/* A Metric opened: its scope's labels and the extra ones. */
static size_t metric_open(kv_emit *e, const kv_label *extra, size_t n)
{
	B *b = e->b;
	size_t at = open_len(b, FAMILY_METRIC, 2);
	mkv_buf_add(b, e->scratch->data, e->scratch->len);
	for (size_t i = 0; i < n && i < KV_LABELS_MAX; i++)
		if (extra[i].name)
			label(b, extra[i].name, extra[i].value, strlen(extra[i].value), true);
	e->metrics++;
	return at;
}

void kv_proto_sample(kv_emit *e, const kv_label *extra, size_t n, double v)
{
	B *b = e->b;
	size_t at = metric_open(e, extra, n);
	size_t in = open_len(b, e->f->kind == KV_COUNTER ? METRIC_COUNTER : METRIC_GAUGE, 1);
	field_double(b, VALUE, v);
	close_len(b, in, 1);
	close_len(b, at, 2);
}

/* The native buckets: the schema, the zero bucket, and the positive ones as
 * spans of consecutive buckets (a run of more than two empty ones ends a
 * span; shorter ones are cheaper as zero deltas) and each bucket's count as
 * the difference from the one before. */
static void native(B *b, const kv_native *h)
{
	field_varint(b, HIST_SCHEMA, zigzag(kv_native_schema(h)));
	field_double(b, HIST_ZERO_THRESHOLD, KV_NATIVE_ZERO_THRESHOLD);
	field_varint(b, HIST_ZERO_COUNT, h->zero);
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
		size_t at = open_len(b, HIST_POSITIVE_SPAN, 1);
		field_varint(b, SPAN_OFFSET, zigzag(offset));
		field_varint(b, SPAN_LENGTH, span[i].to - span[i].from);
		close_len(b, at, 1);
		prev_to = span[i].to;
	}
	uint64_t prev = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t k = span[i].from; k < span[i].to; k++) {
			field_varint(b, HIST_POSITIVE_DELTA, zigzag((int64_t)(h->counts[k] - prev)));
			prev = h->counts[k];
		}
}

static void histogram(kv_emit *e, uint64_t count, double sum, const uint64_t *counts, size_t n_bounds,
		      double (*bound)(const void *, size_t), const void *arg, const kv_native *nh)
{
	B *b = e->b;
	size_t at = metric_open(e, NULL, 0);
	size_t in = open_len(b, METRIC_HISTOGRAM, 2);
	field_varint(b, HIST_COUNT, count);
	field_double(b, HIST_SUM, sum);
	uint64_t cum = 0;
	for (size_t k = 0; k < n_bounds; k++) {
		size_t bu = open_len(b, HIST_BUCKET, 1);
		field_varint(b, BUCKET_CUMULATIVE, cum += counts[k]);
		field_double(b, BUCKET_UPPER, bound(arg, k));
		close_len(b, bu, 1);
	}
	native(b, nh);
	close_len(b, in, 2);
	close_len(b, at, 2);
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
