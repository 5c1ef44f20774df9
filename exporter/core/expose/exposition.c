/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mooncake_kv/scrape.h>

#include "kv_common.h"
#include "kv_family.h"
#include "kv_fmt.h"
#include "kv_regex.h"

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n >= k && !memcmp(s + n - k, suffix, k);
}

typedef struct kv_expo_family family;

static void parse_type(const char *line, size_t n, family *f)
{
	/* "# TYPE name kind" */
	const char *name = line + 7, *sp = memchr(name, ' ', n - 7);
	f->name = name;
	f->len = sp ? (size_t)(sp - name) : n - 7;
	f->counter = sp && (size_t)(line + n - sp - 1) == 7 && !memcmp(sp + 1, "counter", 7);
	f->om_len = f->counter && ends_with(f->name, f->len, "_total") ? f->len - 6 : f->len;
	/* a tenant's family is known by its scope: no line of it need be
	 * searched for a tenant_id (add_created still looks, for the rest) */
	const kv_family *known = f->counter ? kv_family_find(f->name, f->len) : NULL;
	f->created = f->counter && !(known && ((known->flags & KV_FAM_MIRRORED) || kv_scope_per_tenant(known->scope)));
}

/* HELP text in OpenMetrics escapes the double quote too. */
static void add_help_om(kv_buf *out, const char *s, size_t n)
{
	size_t run = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '"') {
			kv_buf_add(out, s + run, i - run);
			kv_buf_adds(out, "\\\"");
			run = i + 1;
		}
	kv_buf_add(out, s + run, n - run);
}

/* HELP, UNIT (for a name with a unit suffix) and TYPE of a family in
 * OpenMetrics: a counter's family name drops _total. */
static void family_header_om(kv_buf *out, const family *f, const char *help, size_t help_len, const char *type_line,
			     size_t n)
{
	kv_buf_adds(out, "# HELP ");
	kv_buf_add(out, f->name, f->om_len);
	kv_buf_addc(out, ' ');
	add_help_om(out, help, help_len);
	kv_buf_addc(out, '\n');
	const char *unit = ends_with(f->name, f->om_len, "_seconds") ? "seconds"
			   : ends_with(f->name, f->om_len, "_bytes") ? "bytes"
								     : NULL;
	if (unit)
		kv_buf_printf(out, "# UNIT %.*s %s\n", (int)f->om_len, f->name, unit);
	kv_buf_adds(out, "# TYPE ");
	kv_buf_add(out, f->name, f->om_len);
	kv_buf_add(out, type_line + 7 + f->len, n - 7 - f->len); /* " kind" */
	kv_buf_addc(out, '\n');
}

/* The counter sample's _created, for a series that started with the
 * exporter: every one without a tenant_id label (a tenant's starts when it
 * is first seen), of a family not mirrored from the master. */
static void add_created(kv_buf *out, const family *f, const char *line, size_t n, double created)
{
	const char *lb = memchr(line, '{', n), *end = line + n;
	const char *rb = lb ? memchr(lb, '}', (size_t)(end - lb)) : NULL;
	if (lb && rb && memmem(lb, (size_t)(rb - lb), "tenant_id=\"", 11))
		return;
	kv_buf_add(out, f->name, f->om_len);
	kv_buf_adds(out, "_created");
	if (lb && rb)
		kv_buf_add(out, lb, (size_t)(rb - lb) + 1);
	kv_buf_addc(out, ' ');
	kv_buf_add_double(out, created);
	kv_buf_addc(out, '\n');
}

void kv_expo_begin(kv_expo_pass *p, const kv_expo_opts *o)
{
	*p = (kv_expo_pass){.o = *o};
}

int kv_expo_feed(kv_expo_pass *ps, kv_buf *out, const char *text, size_t len)
{
	const kv_expo_opts *o = &ps->o;
	family *f = &ps->family;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *line = p;
		p += n + (nl != NULL);
		if (n >= 7 && !memcmp(line, "# HELP ", 7)) {
			/* held until the TYPE line says what the family is */
			const char *sp = memchr(line + 7, ' ', n - 7);
			ps->help = sp ? sp + 1 : line + n;
			ps->help_len = (size_t)(line + n - ps->help);
			continue;
		}
		if (n >= 7 && !memcmp(line, "# TYPE ", 7)) {
			parse_type(line, n, f);
			f->drop = o->drop && o->drop(f->name, f->len, o->drop_ctx);
			if (f->drop)
				continue;
			if (o->openmetrics) {
				family_header_om(out, f, ps->help ? ps->help : "", ps->help_len, line, n);
			} else {
				if (ps->help) {
					kv_buf_adds(out, "# HELP ");
					kv_buf_add(out, f->name, f->len);
					kv_buf_addc(out, ' ');
					kv_buf_add(out, ps->help, ps->help_len);
					kv_buf_addc(out, '\n');
				}
				kv_buf_add(out, line, n);
				kv_buf_addc(out, '\n');
			}
			ps->help = NULL;
			continue;
		}
		if (f->drop || n == 0)
			continue;
		/* the line with its newline in one piece (the last may have none) */
		kv_buf_add(out, line, n + (nl != NULL));
		if (!nl)
			kv_buf_addc(out, '\n');
		if (o->openmetrics && f->created && o->created > 0)
			add_created(out, f, line, n, o->created);
	}
	return kv_buf_ok(out) ? KV_OK : KV_ENOMEM;
}

int kv_expo_end(kv_expo_pass *p, kv_buf *out)
{
	if (p->o.openmetrics)
		kv_buf_adds(out, "# EOF\n");
	return kv_buf_ok(out) ? KV_OK : KV_ENOMEM;
}

int kv_expo_write(kv_buf *out, const char *text, size_t len, const kv_expo_opts *o)
{
	kv_expo_pass p;
	kv_expo_begin(&p, o);
	kv_expo_feed(&p, out, text, len);
	return kv_expo_end(&p, out);
}

bool kv_expo_wants_openmetrics(const char *accept)
{
	for (const char *p = accept; p && (p = strstr(p, "application/openmetrics-text")); p++) {
		const char *end = p + strcspn(p, ",");
		const char *q = strstr(p, "q=");
		if (!q || q > end || strtod(q + 2, NULL) > 0)
			return true;
	}
	return false;
}

/* --- which families are served --- */

struct kv_family_filter {
	pcre2_code *exclude;
	bool tenant_summary;
};

/* What the summary leaves out: the per-tenant (and per tenant and key
 * group) families beyond objects (mooncake_kv_objects, _by_medium,
 * _by_key_group) and staleness (mooncake_kv_state_stale, its age). */
static const char *const per_tenant[] = {
	"mooncake_kv_events_received_total",
	"mooncake_kv_state_stale_reason",
	"mooncake_kv_objects_by_placement",
	"mooncake_kv_tenant_clears_total",
	"mooncake_kv_stored_duplicates_total",
	"mooncake_kv_removed_unknown_total",
	"mooncake_kv_tenant_objects_overflow_total",
	"mooncake_kv_objects_by_key_group_medium",
	"mooncake_kv_key_group_events_total",
	"mooncake_kv_object_lifetime_seconds",
	"mooncake_kv_object_lifetime_unobserved_total",
	"mooncake_kv_object_age_mean_seconds",
	"mooncake_kv_object_age_tracked_objects",
	"mooncake_kv_key_group_object_lifetime_seconds",
	"mooncake_kv_key_group_object_lifetime_unobserved_total",
};

kv_family_filter *kv_family_filter_new(const char *exclude, bool tenant_summary, char *err, size_t errlen)
{
	kv_family_filter *f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	f->tenant_summary = tenant_summary;
	/* the whole name must match: anchored at both ends */
	if (exclude && !(f->exclude = kv_regex_compile(exclude, PCRE2_ANCHORED | PCRE2_ENDANCHORED, err, errlen))) {
		free(f);
		return NULL;
	}
	return f;
}

void kv_family_filter_free(kv_family_filter *f)
{
	if (!f)
		return;
	pcre2_code_free(f->exclude);
	free(f);
}

bool kv_family_filter_drops(const char *name, size_t len, void *ctx)
{
	const kv_family_filter *f = ctx;
	if (f->tenant_summary)
		for (size_t i = 0; i < sizeof(per_tenant) / sizeof(per_tenant[0]); i++)
			if (strlen(per_tenant[i]) == len && !memcmp(per_tenant[i], name, len))
				return true;
	if (!f->exclude)
		return false;
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(f->exclude, NULL);
	if (!md)
		return false; /* out of memory: serve it rather than lose it */
	int rc = pcre2_match(f->exclude, (PCRE2_SPTR)name, len, 0, 0, md, NULL);
	pcre2_match_data_free(md);
	return rc >= 0;
}
