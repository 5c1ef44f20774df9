/* SPDX-License-Identifier: Apache-2.0 */
/* What a scrape serves of each family, decided from its row as the
 * renderer writes it (render.c): its header in the format asked for (the
 * text format 0.0.4, or OpenMetrics 1.0), and whether an operator left it
 * out (the family filter).  Also what the scraper's Accept asks for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <mooncake_kv/scrape.h>

#include "kv_common.h"
#include "kv_family.h"
#include "kv_fmt.h"
#include "kv_regex.h"
#include "kv_render.h"

static const char *const kind_names[] = {
	[KV_GAUGE] = "gauge",
	[KV_COUNTER] = "counter",
	[KV_HISTOGRAM] = "histogram",
};

const char *kv_kind_name(enum kv_kind k)
{
	return (unsigned)k < sizeof(kind_names) / sizeof(kind_names[0]) ? kind_names[k] : "untyped";
}

const kv_family_table *const kv_family_tables[] = {
	&kv_stream_families,    &kv_tenant_families,     &kv_key_group_families, &kv_residency_families,
	&kv_master_families,    &kv_leadership_families, &kv_quota_families,     &kv_reconcile_families,
	&kv_bootstrap_families, &kv_self_families,       &kv_http_families,
};
const size_t kv_family_tables_n = sizeof(kv_family_tables) / sizeof(kv_family_tables[0]);

const kv_family *kv_family_find(const char *name, size_t len, size_t *index)
{
	size_t k = 0;
	for (size_t t = 0; t < kv_family_tables_n; t++)
		for (size_t i = 0; i < kv_family_tables[t]->n; i++, k++) {
			const kv_family *f = &kv_family_tables[t]->v[i];
			if (strlen(f->name) == len && !memcmp(f->name, name, len)) {
				*index = k;
				return f;
			}
		}
	return NULL;
}

static const char *const scope_labels[] = {
	[KV_SCOPE_EXPORTER] = "",
	[KV_SCOPE_SOURCE] = "source",
	[KV_SCOPE_MEMBER] = "source",
	[KV_SCOPE_TENANT] = "source,backend_id,tenant_id",
	[KV_SCOPE_GROUP] = "source,backend_id,tenant_id,key_group",
	[KV_SCOPE_QUOTA] = "source,tenant_id",
};

void kv_family_label_names(const kv_family *f, mkv_buf *out)
{
	mkv_buf_reset(out);
	mkv_buf_adds(out, scope_labels[f->scope]);
	if (f->scope == KV_SCOPE_MEMBER)
		mkv_buf_adds(out, f->flags & KV_FAM_MEMBER_ALWAYS ? ",member" : ",(member)");
	if (f->labels) {
		if (out->len)
			mkv_buf_addc(out, ',');
		mkv_buf_adds(out, f->labels);
	}
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n >= k && !memcmp(s + n - k, suffix, k);
}

size_t kv_expo_family_name_len(const kv_family *f, bool openmetrics)
{
	size_t n = strlen(f->name);
	/* OpenMetrics names a counter's family without the _total its samples keep */
	return openmetrics && f->kind == KV_COUNTER && ends_with(f->name, n, "_total") ? n - 6 : n;
}

bool kv_expo_created(const kv_family *f, const mkv_expo_opts *o)
{
	return o && o->openmetrics && o->created > 0 && f->kind == KV_COUNTER && !(f->flags & KV_FAM_MIRRORED) &&
	       !kv_scope_per_tenant(f->scope);
}

/* HELP text in OpenMetrics escapes the double quote too. */
static void add_help_om(mkv_buf *out, const char *s)
{
	for (const char *q; (q = strchr(s, '"')); s = q + 1) {
		mkv_buf_add(out, s, (size_t)(q - s));
		mkv_buf_adds(out, "\\\"");
	}
	mkv_buf_adds(out, s);
}

void kv_expo_family_header(mkv_buf *out, const kv_family *f, bool openmetrics)
{
	const char *kind = kv_kind_name(f->kind);
	if (!openmetrics) {
		mkv_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, kind);
		return;
	}
	int n = (int)kv_expo_family_name_len(f, true);
	mkv_buf_printf(out, "# HELP %.*s ", n, f->name);
	add_help_om(out, f->help);
	mkv_buf_addc(out, '\n');
	/* a name with a unit's suffix says its unit */
	const char *unit = ends_with(f->name, (size_t)n, "_seconds") ? "seconds"
			   : ends_with(f->name, (size_t)n, "_bytes") ? "bytes"
								     : NULL;
	if (unit)
		mkv_buf_printf(out, "# UNIT %.*s %s\n", n, f->name, unit);
	mkv_buf_printf(out, "# TYPE %.*s %s\n", n, f->name, kind);
}

bool mkv_expo_wants_openmetrics(const char *accept)
{
	for (const char *p = accept; p && (p = strstr(p, "application/openmetrics-text")); p++) {
		const char *end = p + strcspn(p, ",");
		const char *q = strstr(p, "q=");
		if (!q || q > end || strtod(q + 2, NULL) > 0)
			return true;
	}
	return false;
}

/* The q of one media range of Accept, p[0..n): 1 without one, 0 for a
 * malformed one. */
static double quality(const char *p, size_t n)
{
	for (const char *q = p; q < p + n && (q = memchr(q, ';', (size_t)(p + n - q))); q++) {
		const char *v = q + 1;
		while (v < p + n && *v == ' ')
			v++;
		if (p + n - v >= 2 && (v[0] == 'q' || v[0] == 'Q') && v[1] == '=') {
			char *end;
			double d = strtod(v + 2, &end);
			return end > v + 2 && d >= 0 && d <= 1 ? d : 0;
		}
	}
	return 1;
}

/* Whether the media range p[0..n) has the parameter name=value (its case
 * ignored, spaces around it too). */
static bool has_param(const char *p, size_t n, const char *param)
{
	size_t l = strlen(param);
	for (const char *q = p; q < p + n && (q = memchr(q, ';', (size_t)(p + n - q))); q++) {
		const char *v = q + 1;
		while (v < p + n && *v == ' ')
			v++;
		const char *end = v + strcspn(v, ";,");
		while (end > v && end[-1] == ' ')
			end--;
		if ((size_t)(end - v) == l && !strncasecmp(v, param, l))
			return true;
	}
	return false;
}

static bool type_is(const char *p, size_t n, const char *type)
{
	size_t l = strlen(type), t = strcspn(p, ";,");
	while (t > 0 && p[t - 1] == ' ')
		t--;
	return t <= n && t == l && !strncasecmp(p, type, l);
}

bool mkv_expo_wants_protobuf(const char *accept)
{
	double proto = 0, other = 0; /* the best q of each */
	bool proto_first = false;
	for (const char *p = accept; p && *p;) {
		while (*p == ' ' || *p == ',')
			p++;
		size_t n = strcspn(p, ",");
		if (!n)
			break;
		double q = quality(p, n);
		if (type_is(p, n, "application/vnd.google.protobuf")) {
			if (has_param(p, n, "proto=io.prometheus.client.MetricFamily") &&
			    has_param(p, n, "encoding=delimited") && q > proto) {
				proto = q;
				proto_first = q > other; /* listed before any equal other */
			}
		} else if (type_is(p, n, "application/openmetrics-text") || type_is(p, n, "text/plain") ||
			   type_is(p, n, "text/*") || type_is(p, n, "*/*")) {
			if (q > other)
				other = q;
		}
		p += n;
	}
	return proto > 0 && (proto > other || (proto == other && proto_first));
}

/* --- which families are served --- */

/* Each family's fate is decided once, when the filter is built: a scrape
 * looks it up by the family's number (kv_family.h). */
struct mkv_family_filter {
	pcre2_code *exclude;
	bool tenant_summary;
	size_t n;
	bool drops[]; /* by family number */
};

static bool excluded(const mkv_family_filter *f, const char *name, size_t len)
{
	if (!f->exclude)
		return false;
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(f->exclude, NULL);
	if (!md)
		return false; /* out of memory: serve it rather than lose it */
	int rc = pcre2_match(f->exclude, (PCRE2_SPTR)name, len, 0, 0, md, NULL);
	pcre2_match_data_free(md);
	return rc >= 0;
}

mkv_family_filter *mkv_family_filter_new(const char *exclude, bool tenant_summary, char *err, size_t errlen)
{
	size_t n = 0;
	for (size_t t = 0; t < kv_family_tables_n; t++)
		n += kv_family_tables[t]->n;
	mkv_family_filter *f = calloc(1, sizeof(*f) + n * sizeof(f->drops[0]));
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	f->tenant_summary = tenant_summary;
	f->n = n;
	/* the whole name must match: anchored at both ends */
	if (exclude && !(f->exclude = kv_regex_compile(exclude, PCRE2_ANCHORED | PCRE2_ENDANCHORED, err, errlen))) {
		free(f);
		return NULL;
	}
	size_t k = 0;
	for (size_t t = 0; t < kv_family_tables_n; t++)
		for (size_t i = 0; i < kv_family_tables[t]->n; i++, k++) {
			const kv_family *fam = &kv_family_tables[t]->v[i];
			f->drops[k] = (tenant_summary && (fam->flags & KV_FAM_TENANT_DETAIL)) ||
				      excluded(f, fam->name, strlen(fam->name));
		}
	return f;
}

void mkv_family_filter_free(mkv_family_filter *f)
{
	if (!f)
		return;
	pcre2_code_free(f->exclude);
	free(f);
}

bool kv_family_filter_drops_at(const mkv_family_filter *f, size_t index)
{
	return f && index < f->n && f->drops[index];
}

bool kv_expo_serves(const kv_family *f, size_t k, const kv_exporter_snap *x, const mkv_expo_opts *o)
{
	if ((f->flags & KV_FAM_ALL_SERIES) && !(o && o->all_series))
		return false;
	return (!f->shown || f->shown(x)) && !kv_family_filter_drops_at(o ? o->families : NULL, k);
}

bool mkv_family_filter_drops(const char *name, size_t len, const mkv_family_filter *f)
{
	size_t k;
	if (f && kv_family_find(name, len, &k))
		return f->drops[k];
	return f && excluded(f, name, len); /* no family of ours: only the regex can say */
}
