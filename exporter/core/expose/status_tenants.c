/* SPDX-License-Identifier: Apache-2.0 */
/* The status page's tenants (kv_status_page.h): those the filter matches,
 * stale first, then by objects, the first `limit` of them kept by one pass
 * with a heap of `limit` entries (n log limit, not a sort of every tenant:
 * 20,000 tenants cost a pass over the snapshot), then their table. */
#include <stdlib.h>
#include <string.h>

#include "kv_family.h" /* kv_any_residency */
#include "kv_fmt.h"
#include "kv_status_page.h"

typedef struct mkv_buf B;

#define TEXT_(n) #n
#define TEXT(n)  TEXT_(n)
#define MAX_TEXT TEXT(MKV_STATUS_LIMIT_MAX)

enum mkv_err mkv_status_limit_parse(const char *text, size_t *limit, const char **why)
{
	*limit = MKV_STATUS_LIMIT_DEFAULT;
	*why = NULL;
	if (!text) /* not asked: the default */
		return MKV_OK;
	size_t v = 0;
	if (!*text)
		*why = "bad limit: empty; give a whole number from 0 to " MAX_TEXT;
	for (const char *p = text; *p && !*why; p++) {
		if (*p < '0' || *p > '9')
			*why = "bad limit: not a whole number; give one from 0 to " MAX_TEXT;
		else if ((v = v * 10 + (size_t)(*p - '0')) > MKV_STATUS_LIMIT_MAX) /* and no overflow however long */
			*why = "bad limit: over " MAX_TEXT ", the most tenants the page shows";
	}
	if (*why)
		return MKV_EINVAL;
	*limit = v;
	return MKV_OK;
}

size_t mkv_status_limit(const char *text)
{
	size_t v;
	const char *why;
	if (mkv_status_limit_parse(text, &v, &why) == MKV_OK)
		return v;
	/* the lenient reading of old: digits over the most are the most */
	for (const char *p = text; *p; p++)
		if (*p < '0' || *p > '9')
			return MKV_STATUS_LIMIT_DEFAULT;
	return *text ? MKV_STATUS_LIMIT_MAX : MKV_STATUS_LIMIT_DEFAULT;
}

static unsigned char lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* s[0..n) holds f[0..fn) (ASCII letters in either case). */
static bool holds(const char *s, size_t n, const char *f, size_t fn)
{
	for (size_t i = 0; i + fn <= n; i++) {
		size_t j = 0;
		while (j < fn && lower((unsigned char)s[i + j]) == lower((unsigned char)f[j]))
			j++;
		if (j == fn)
			return true;
	}
	return false;
}

typedef struct pick {
	const kv_tenant_snap *t;
	uint32_t si;
	uint64_t objects;
} pick;

/* a comes before b on the page: stale first, then more objects, then by
 * source, backend_id and tenant_id (a total order: the page is the same
 * for the same snapshot). */
static bool before(const pick *a, const pick *b)
{
	if ((a->t->stale != 0) != (b->t->stale != 0))
		return a->t->stale != 0;
	if (a->objects != b->objects)
		return a->objects > b->objects;
	if (a->si != b->si)
		return a->si < b->si;
	int c = strcmp(a->t->backend_id, b->t->backend_id);
	if (c)
		return c < 0;
	return strcmp(a->t->tenant_id, b->t->tenant_id) < 0;
}

static int cmp(const void *a, const void *b)
{
	return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

/* A heap whose root is the last of the picks so far (the first to go). */
static void sift_down(pick *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, last = i;
		if (l < n && before(&h[last], &h[l]))
			last = l;
		if (r < n && before(&h[last], &h[r]))
			last = r;
		if (last == i)
			return;
		pick tmp = h[i];
		h[i] = h[last];
		h[last] = tmp;
		i = last;
	}
}

static void sift_up(pick *h, size_t i)
{
	while (i) {
		size_t up = (i - 1) / 2;
		if (!before(&h[up], &h[i]))
			return;
		pick tmp = h[i];
		h[i] = h[up];
		h[up] = tmp;
		i = up;
	}
}

typedef struct selection {
	pick *v;
	size_t n;
	size_t matching, stale;
} selection;

/* The first `limit` tenants the filter matches, in the page's order. */
static enum mkv_err select_tenants(const kv_exporter_snap *x, const char *filter, size_t limit, selection *sel)
{
	size_t fn = filter ? strlen(filter) : 0;
	if (fn > MKV_STATUS_FILTER_MAX)
		fn = MKV_STATUS_FILTER_MAX;
	*sel = (selection){0};
	if (limit && !(sel->v = malloc(limit * sizeof(*sel->v))))
		return MKV_ENOMEM;
	for (size_t si = 0; si < x->n_sources; si++) {
		const kv_source_snap *s = &x->sources[si];
		if (s->leadership.dropped) /* no tenant figures while its master stands by */
			continue;
		bool all = !fn || holds(s->name, strlen(s->name), filter, fn);
		for (size_t i = 0; i < s->n_tenants; i++) {
			const kv_tenant_snap *t = &s->tenants[i];
			if (!all && !holds(t->tenant_id, t->tenant_len, filter, fn) &&
			    !holds(t->backend_id, t->backend_len, filter, fn))
				continue;
			sel->matching++;
			sel->stale += t->stale != 0;
			if (!limit)
				continue;
			pick p = {t, (uint32_t)si, kv_counts_objects(&t->counts)};
			if (sel->n < limit) {
				sel->v[sel->n] = p;
				sift_up(sel->v, sel->n++);
			} else if (before(&p, &sel->v[0])) {
				sel->v[0] = p;
				sift_down(sel->v, sel->n, 0);
			}
		}
	}
	if (sel->n > 1)
		qsort(sel->v, sel->n, sizeof(*sel->v), cmp);
	return MKV_OK;
}

/* The picks differ in their source (else in their backend). */
static bool differ(const selection *sel, bool source)
{
	for (size_t i = 1; i < sel->n; i++) {
		const pick *a = &sel->v[0], *p = &sel->v[i];
		if (source ? p->si != a->si
			   : p->t->backend_len != a->t->backend_len ||
				     memcmp(p->t->backend_id, a->t->backend_id, a->t->backend_len))
			return true;
	}
	return false;
}

static void form(B *b, const char *filter, size_t limit)
{
	mkv_buf_adds(b, "<form method=\"get\"><label>Tenant, backend or source holds "
			"<input type=\"search\" name=\"tenant\" value=\"");
	if (filter) {
		size_t fn = strlen(filter);
		kv_html_esc(b, filter, fn > MKV_STATUS_FILTER_MAX ? MKV_STATUS_FILTER_MAX : fn);
	}
	mkv_buf_printf(b,
		       "\" placeholder=\"any\"></label><label>Show at most "
		       "<input type=\"number\" name=\"limit\" min=\"0\" max=\"%d\" value=\"%zu\"></label>"
		       "<button type=\"submit\">Show</button></form>\n",
		       MKV_STATUS_LIMIT_MAX, limit);
}

static void labels(B *b, const kv_source_snap *s, const kv_tenant_snap *t)
{
	mkv_buf_adds(b, " data-source=\"");
	kv_html_escs(b, s->name);
	mkv_buf_adds(b, "\" data-backend=\"");
	kv_html_esc(b, t->backend_id, t->backend_len);
	mkv_buf_adds(b, "\" data-tenant=\"");
	kv_html_esc(b, t->tenant_id, t->tenant_len);
	mkv_buf_adds(b, "\"");
}

/* A tenant's row: its ids, exact or stale (why, since when), its objects
 * by medium and placement, its lives. */
static void tenant_row(B *b, const kv_exporter_snap *x, const kv_source_snap *s, const kv_tenant_snap *t, bool sources,
		       bool backends, bool residency)
{
	const kv_tenant_counts *c = &t->counts;
	mkv_buf_printf(b, "<tr class=\"%s\"", t->stale ? "stale" : "exact");
	labels(b, s, t);
	mkv_buf_adds(b, ">");
	if (sources) {
		mkv_buf_adds(b, "<td class=\"id\">");
		kv_html_escs(b, s->name);
		mkv_buf_adds(b, "</td>");
	}
	if (backends) {
		mkv_buf_adds(b, "<td class=\"id\">");
		kv_html_esc(b, t->backend_id, t->backend_len);
		mkv_buf_adds(b, "</td>");
	}
	mkv_buf_adds(b, "<th scope=\"row\">");
	kv_html_esc(b, t->tenant_id, t->tenant_len);
	mkv_buf_adds(b, "</th><td class=\"state\">");
	kv_html_fig_open(b, "span", t->stale ? "pill warn" : "pill ok", "mooncake_kv_state_stale", NULL, NULL,
			 t->stale ? "1" : "0");
	mkv_buf_adds(b, t->stale ? "stale</span> " : "exact</span>");
	for (unsigned r = 0; r < KV_STALE__BITS; r++)
		if ((t->stale >> r) & 1) {
			kv_html_fig_open(b, "span", "chip reason", "mooncake_kv_state_stale_reason", "reason",
					 kv_stale_reason_name(r), "1");
			mkv_buf_adds(b, kv_stale_reason_name(r));
			mkv_buf_adds(b, "</span> ");
		}
	mkv_buf_adds(b, "</td>");
	if (t->stale)
		kv_html_time(b, "mooncake_kv_state_stale_since_timestamp_seconds", t->stale_since_ms, x->info.now_ms,
			     false);
	else
		mkv_buf_adds(b, "<td class=\"none t\">&mdash;</td>");
	kv_html_u64(b, "td", "mooncake_kv_objects", NULL, NULL, kv_counts_objects(c));
	for (enum mkv_medium m = MKV_MEDIUM_CPU; m <= MKV_MEDIUM_DISK; m++)
		kv_html_u64(b, "td", "mooncake_kv_objects_by_medium", "medium", mkv_medium_name(m),
			    kv_counts_on_medium(c, m));
	for (int p = 0; p < MKV_PLACE__COUNT; p++)
		kv_html_u64(b, "td", "mooncake_kv_objects_by_placement", "placement",
			    mkv_placement_name((enum mkv_placement)p), c->placement[p]);
	if (residency && s->residency) {
		kv_html_u64(b, "td", "mooncake_kv_object_lifetime_seconds_count", NULL, NULL, c->life.count);
		kv_html_u64(b, "td", "mooncake_kv_object_lifetime_unobserved_total", NULL, NULL, c->life.unobserved);
	} else if (residency) {
		mkv_buf_adds(b, "<td class=\"none n\">&mdash;</td><td class=\"none n\">&mdash;</td>");
	}
	mkv_buf_adds(b, "</tr>\n");
}

/* The table's head: the source's and the backend's columns where the
 * rows differ in them. */
static void table_head(B *b, bool sources, bool backends, bool residency)
{
	mkv_buf_printf(
		b,
		"<div class=\"scroll\"><table class=\"tenants\"><thead><tr class=\"group\">"
		"<th colspan=\"%d\"></th><th colspan=\"2\">By medium</th><th colspan=\"3\">By placement</th>%s</tr>"
		"<tr>%s%s<th scope=\"col\">Tenant</th>"
		"<th scope=\"col\">State, and why</th><th scope=\"col\" class=\"t\">Stale since</th>"
		"<th scope=\"col\" class=\"n\">Objects</th><th scope=\"col\" class=\"n\">cpu</th>"
		"<th scope=\"col\" class=\"n\">disk</th><th scope=\"col\" class=\"n\">cpu_only</th>"
		"<th scope=\"col\" class=\"n\">disk_only</th><th scope=\"col\" class=\"n\">cpu_and_disk</th>%s</tr>"
		"</thead><tbody>\n",
		4 + sources + backends, residency ? "<th colspan=\"2\">Lives (residency)</th>" : "",
		sources ? "<th scope=\"col\">Source</th>" : "", backends ? "<th scope=\"col\">Backend</th>" : "",
		residency ? "<th scope=\"col\" class=\"n\">observed</th><th scope=\"col\" class=\"n\">unobserved"
			    "</th>"
			  : "");
}

enum mkv_err kv_status_tenants(B *b, const kv_exporter_snap *x, const mkv_status_opts *o)
{
	size_t limit = o->limit > MKV_STATUS_LIMIT_MAX ? MKV_STATUS_LIMIT_MAX : o->limit;
	const char *filter = o->filter && *o->filter ? o->filter : NULL;
	selection sel;
	if (select_tenants(x, filter, limit, &sel) != MKV_OK)
		return MKV_ENOMEM;
	mkv_buf_adds(b, "<h2 id=\"tenants\">Tenants <small>stale first, then by objects</small></h2>\n");
	form(b, filter, limit);
	mkv_buf_printf(
		b,
		"<p class=\"count\">Showing <b id=\"tenants-shown\">%zu</b> of <b id=\"tenants-matching\">%zu</b> "
		"tenants%s (<b id=\"tenants-stale\">%zu</b> stale); <b id=\"tenants-left-out\">%zu</b> left out "
		"by the limit.",
		sel.n, sel.matching, filter ? " that match" : "", sel.stale, sel.matching - sel.n);
	/* a column that would say the same on every row says it once, here */
	bool sources = x->n_sources > 1 && differ(&sel, true), backends = differ(&sel, false);
	bool one_source = sel.n && !sources && x->n_sources > 1, one_backend = sel.n && !backends;
	if (one_source || one_backend)
		mkv_buf_adds(b, sel.n == 1 ? " It is of " : " All are of ");
	if (one_source) {
		mkv_buf_adds(b, "source <code id=\"tenants-source\">");
		kv_html_escs(b, x->sources[sel.v[0].si].name);
		mkv_buf_adds(b, one_backend ? "</code>, " : "</code>.");
	}
	if (one_backend) {
		mkv_buf_adds(b, "backend <code id=\"tenants-backend\">");
		kv_html_esc(b, sel.v[0].t->backend_id, sel.v[0].t->backend_len);
		mkv_buf_adds(b, "</code>.");
	}
	mkv_buf_adds(b, "</p>\n");
	bool residency = kv_any_residency(x);
	table_head(b, sources, backends, residency);
	for (size_t i = 0; i < sel.n; i++)
		tenant_row(b, x, &x->sources[sel.v[i].si], sel.v[i].t, sources, backends, residency);
	mkv_buf_adds(b, "</tbody></table></div>\n");
	free(sel.v);
	return MKV_OK;
}
