/* SPDX-License-Identifier: Apache-2.0 */
/* One metric family of /metrics, described once: its name, kind and help,
 * the scope its samples describe (which fixes their labels), its flags,
 * when it is shown at all, and the accessor that emits its samples for one
 * entity of that scope.  The renderer (render.c) walks the tables, decides
 * per family from its row what a scrape serves (the format, the families
 * an operator left out), writes HELP and TYPE (and UNIT, in OpenMetrics),
 * walks the scope's entities and writes each sample's labels.  The
 * families live in families/, one file per feature, each with its table.
 *
 * To add a metric: a row in the table of its feature, with designated
 * initializers, and above the table its accessor: a function named after
 * the family (its name without mooncake_kv_), so that a grep of the name
 * finds both the row and where its value comes from. */
#ifndef KV_FAMILY_H
#define KV_FAMILY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mooncake_kv/buf.h>

#include "kv_snapshot.h"

enum kv_scope {
	KV_SCOPE_EXPORTER, /* no labels of its own */
	KV_SCOPE_SOURCE,   /* source */
	KV_SCOPE_MEMBER,   /* source, and member where the source has several masters */
	KV_SCOPE_TENANT,   /* source, backend_id, tenant_id (not of a dropped source) */
	KV_SCOPE_GROUP,    /* the tenant's, and key_group */
	KV_SCOPE_QUOTA,    /* source, tenant_id: the leader's quota answer */
};

/* What a family is, as its TYPE line says. */
enum kv_kind {
	KV_GAUGE,
	KV_COUNTER,
	KV_HISTOGRAM,
};

/* "gauge", "counter", "histogram". */
const char *kv_kind_name(enum kv_kind k);

/* The entity one call describes: the pointers its scope has. */
typedef struct kv_at {
	const kv_exporter_snap *x;
	const kv_source_snap *s;
	const kv_member_snap *m;
	const kv_tenant_snap *t;
	const kv_group_counts *g;
	const kv_quota *q;
	bool all_series; /* the scrape's mkv_expo_opts.all_series: read through kv_news */
} kv_at;

/* Whether a sample of value v carries news: served unless it is a 0 of a
 * counter of rare events (or of a state that does not hold) that no event
 * has moved yet, as a client library's labelled child appears at its first
 * use.  --metrics.all-series serves the 0 too. */
static inline bool kv_news(const kv_at *a, uint64_t v)
{
	return v != 0 || a->all_series;
}

typedef struct kv_emit kv_emit;

/* Emits the family's samples for one entity: none, one, or one per value
 * of an extra label. */
typedef void (*kv_samples_fn)(kv_emit *e, const kv_at *at);

#define KV_FAM_MEMBER_ALWAYS 1u /* the member label even for a one-master source (the HA families) */
#define KV_FAM_MIRRORED      2u /* a counter copied from the master: it started with the master's process, not ours */
/* A tenant's (or key group's) detail beyond its objects, its medium mix and
 * its staleness: left out by --metrics.tenant-summary. */
#define KV_FAM_TENANT_DETAIL 4u
/* What other families determine (mooncake_kv_objects_by_placement: from
 * the objects and the medium mix): served only with --metrics.all-series. */
#define KV_FAM_ALL_SERIES 8u

typedef struct kv_family {
	const char *name; /* as the text format gives it: a counter's ends with _total */
	enum kv_kind kind;
	const char *help;
	enum kv_scope scope;
	/* The labels each of its samples carries after its scope's, as its
	 * accessor writes them, comma-separated ("reason"); NULL for none.  A
	 * histogram's le is not one.  docs/reference.md lists them. */
	const char *labels;
	unsigned flags;                           /* KV_FAM_* */
	bool (*shown)(const kv_exporter_snap *x); /* NULL: always (HELP and TYPE even without samples) */
	kv_samples_fn samples;
} kv_family;

/* An extra label of a sample; name NULL for none.  Its value is escaped.
 * The single-label samples (kv_sample_u64, _double, _ms_as_s) take only
 * the program's own words, a literal or a name table's, never text built
 * in a buffer: the renderer knows a word by its pointers and escapes it
 * once per family.  Other text goes through kv_sample_labels. */
typedef struct kv_label {
	const char *name, *value;
} kv_label;

#define KV_NO_LABEL ((kv_label){NULL, NULL})

void kv_sample_u64(kv_emit *e, kv_label extra, uint64_t v);
void kv_sample_double(kv_emit *e, kv_label extra, double v);
/* ms milliseconds in seconds: the text kv_sample_double gives ms / 1000.0,
 * without printf (most are timestamps and sums of whole milliseconds). */
void kv_sample_ms_as_s(kv_emit *e, kv_label extra, int64_t ms);
/* With several extra labels (build information, quota rejects), at most
 * KV_LABELS_MAX: those after are not written. */
#define KV_LABELS_MAX 5
void kv_sample_labels(kv_emit *e, const kv_label *extra, size_t n, double v);
/* A histogram's _bucket (cumulative, le), _sum and _count. */
void kv_sample_hist(kv_emit *e, const kv_hist *h);
/* The same of a lifetime histogram, in seconds. */
void kv_sample_life(kv_emit *e, const kv_life_hist *h);
/* One sample per reason of a *_poll_errors_total family. */
void kv_sample_poll_errors(kv_emit *e, const uint64_t n[MKV_POLL__COUNT]);

/* Whether some source has `has`: a family's `shown`, for a feature a
 * source may have. */
bool kv_any_source(const kv_exporter_snap *x, bool (*has)(const kv_source_snap *s));
/* Whens shared by several features' families: some source has all its
 * members polled (the HA and quota families), has key groups on, keeps
 * residency. */
bool kv_any_polled(const kv_exporter_snap *x);
bool kv_any_groups(const kv_exporter_snap *x);
bool kv_any_residency(const kv_exporter_snap *x);

/* Every sample of a family of this scope has a tenant_id label. */
static inline bool kv_scope_per_tenant(enum kv_scope s)
{
	return s == KV_SCOPE_TENANT || s == KV_SCOPE_GROUP || s == KV_SCOPE_QUOTA;
}

/* The names of the labels of the family's samples, comma-separated, in the
 * order the renderer writes them: its scope's, then its own (`labels`);
 * "(member)" for the member label that only a source of several masters
 * has.  Into out, which it empties first. */
void kv_family_label_names(const kv_family *f, mkv_buf *out);

/* The tables, in the order the exposition gives them. */
typedef struct kv_family_table {
	const kv_family *v;
	size_t n;
} kv_family_table;

extern const kv_family_table kv_stream_families, kv_tenant_families, kv_key_group_families, kv_residency_families,
	kv_master_families, kv_leadership_families, kv_quota_families, kv_reconcile_families, kv_bootstrap_families,
	kv_self_families, kv_http_families;

/* All of them, in that order.  A family's number is its place in them,
 * counted over the tables in order: what a mkv_family_filter keeps its
 * decisions by. */
extern const kv_family_table *const kv_family_tables[];
extern const size_t kv_family_tables_n;

/* The family of that name (as the text format gives it), and its number
 * in *index; NULL for none. */
const kv_family *kv_family_find(const char *name, size_t len, size_t *index);

#define KV_FAMILY_TABLE(name, rows) const kv_family_table name = {rows, sizeof(rows) / sizeof(rows[0])}

#endif
