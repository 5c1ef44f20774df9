/* SPDX-License-Identifier: Apache-2.0 */
/* The exposition as served: the renderer's text (format 0.0.4) with the
 * families an operator turned off left out, and, when the scraper asks for
 * it, turned into OpenMetrics 1.0.  One pass over the text; pure.  Keeping
 * this apart from the renderer keeps the renderer one format's, and the
 * family filter in one place whatever the format. */
#ifndef KV_EXPOSITION_H
#define KV_EXPOSITION_H

#include <stdbool.h>
#include <stddef.h>

#include "kv_buf.h"

#define KV_CONTENT_TYPE_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"

/* Says whether a family (its name as the text format's TYPE line gives it)
 * is left out. */
typedef bool (*kv_family_drop_fn)(const char *name, size_t len, void *ctx);

typedef struct kv_expo_opts {
	bool openmetrics;
	/* unix seconds the exporter started: the _created of every counter that
	 * started with it (not a tenant's, which starts when the tenant is
	 * first seen); 0 for none */
	double created;
	kv_family_drop_fn drop; /* NULL: keep every family */
	void *drop_ctx;
} kv_expo_opts;

/* Appends text[0..len) (a whole 0.0.4 exposition, HELP and TYPE before
 * each family's samples) to out as o asks.  Returns 0 or KV_ENOMEM. */
int kv_expo_write(kv_buf *out, const char *text, size_t len, const kv_expo_opts *o);

/* Which families an operator turned off: --metrics.exclude (a PCRE2 regex
 * that must match a family's whole name, as its TYPE line gives it) and
 * --metrics.tenant-summary (per tenant only objects, the medium mix and
 * staleness; per key group only objects).  Immutable once built: scrapes
 * share it. */
typedef struct kv_family_filter kv_family_filter;

/* NULL with a reason in err when the regex does not compile or memory
 * runs out. */
kv_family_filter *kv_family_filter_new(const char *exclude, bool tenant_summary, char *err, size_t errlen);
void kv_family_filter_free(kv_family_filter *f);
/* A kv_family_drop_fn: ctx is the kv_family_filter. */
bool kv_family_filter_drops(const char *name, size_t len, void *ctx);

/* Accept asks for OpenMetrics (any version, a q above 0): Prometheus 2.x
 * and 3.x do by default.  NULL: no. */
bool kv_expo_wants_openmetrics(const char *accept);

#endif
