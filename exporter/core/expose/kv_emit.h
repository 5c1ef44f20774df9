/* SPDX-License-Identifier: Apache-2.0 */
/* What a render keeps while it writes (render.c), shared with the protobuf
 * exposition (render_proto.c): the text worked out once, and where one
 * family's samples go.  Private to expose/. */
#ifndef KV_EMIT_H
#define KV_EMIT_H

#include <stdbool.h>
#include <stddef.h>

#include <mooncake_kv/buf.h>

#include "kv_family.h"
#include "kv_fmt.h"

/* What a render works out once for all its samples: every tenant's scope
 * labels escaped (most samples are a tenant's), each source's key group
 * names escaped, the lifetime buckets' le values.  A sample is then a few
 * copies into room made once. */
typedef struct kv_text {
	size_t at, len; /* in kv_render_cache.text */
} kv_text;

typedef struct kv_render_cache {
	mkv_buf text;
	kv_text *tenant; /* per source, its tenants from tenant_base[source] */
	kv_text *group;  /* per source, its group names from group_base[source] */
	size_t *tenant_base, *group_base;
	/* a lifetime bucket's le, with what closes its line's labels: ,le="2.5"} */
	char life_le[KV_LIFE_BUCKETS + 1][24];
	size_t life_le_len[KV_LIFE_BUCKETS + 1];
	/* OpenMetrics: the value of every _created sample, the exporter's start */
	char created[KV_FMT_MAX];
	size_t created_len;
} kv_render_cache;

/* A single-label sample's label is one of the program's own words (a
 * literal or a name table's: kv_family.h), and a family gives the same few
 * for every entity: each is escaped once per family, ,name="value", and
 * copied after.  Known by its two pointers, which a render's words keep. */
#define MEMO_MAX  24
#define MEMO_TEXT 1024
typedef struct kv_memo {
	size_t n, used;
	struct kv_memo_word {
		const char *name, *value;
		size_t at, len; /* in text */
	} v[MEMO_MAX];
	char text[MEMO_TEXT];
} kv_memo;

/* Where one family's samples go: the family, and the entity they describe,
 * with the entity's scope labels written once for all its samples. */
struct kv_emit {
	mkv_buf *b;
	const kv_family *f;
	size_t name_len;
	size_t family_len; /* of the name the format gives the family (kv_expo_family_name_len) */
	bool created;      /* each sample followed by its _created (kv_expo_created) */
	const kv_render_cache *c;
	size_t si;         /* the source's index */
	size_t ti;         /* the tenant's index in its source */
	kv_at at;          /* the entity being described */
	const char *scope; /* its scope labels, escaped, without braces */
	size_t scope_len;  /* 0: it has none */
	mkv_buf *scratch;  /* where they are written when no cache holds them */
	kv_memo memo;      /* the family's single labels */
	/* the protobuf exposition (render_proto.c): samples are Metric
	 * messages of the family's MetricFamily, which opens at family_at */
	bool proto;
	size_t family_at, family_keep, metrics;
};

/* The protobuf exposition (render_proto.c): a family's MetricFamily opened
 * and closed (left out when it has no sample, as client libraries do), an
 * entity's scope labels, and its samples. */
/* The render's cache of every tenant's scope labels, and every key group
 * name's label, encoded.  Returns MKV_OK or MKV_ENOMEM. */
/* The cache's tables, one entry per tenant and key group name of x (their
 * text written by the format's builder).  Returns MKV_OK or MKV_ENOMEM. */
enum mkv_err kv_render_cache_alloc(kv_render_cache *c, const kv_exporter_snap *x);
enum mkv_err kv_proto_cache_build(kv_render_cache *c, const kv_exporter_snap *x);
void kv_proto_family_begin(kv_emit *e, const kv_exporter_snap *x);
void kv_proto_family_end(kv_emit *e);
void kv_proto_enter(kv_emit *e);
void kv_proto_sample(kv_emit *e, const kv_label *extra, size_t n, double v);
void kv_proto_hist(kv_emit *e, const kv_hist *h);
void kv_proto_life(kv_emit *e, const kv_life_hist *h);

#endif
