/* SPDX-License-Identifier: Apache-2.0 */
/* The status page against /metrics, through the public interface: every
 * figure the page shows (each number cell names its family and labels) is
 * the sample mkv_scrape_render writes from the same scrape, for an HA store
 * of two masters whose tenants a gap made stale. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kv_fmt.h"
#include "kv_status_page.h"
#include "kv_utf8.h"

#include <cmocka.h>

#include "support/store_fixture.h"

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The value of attribute name in the tag [p, end), or "" (out holds len). */
static void attr_of(const char *p, const char *end, const char *name, char *out, size_t len)
{
	char key[32];
	snprintf(key, sizeof(key), " %s=\"", name);
	*out = '\0';
	const char *a = strstr(p, key);
	if (!a || a > end)
		return;
	a += strlen(key);
	size_t n = strcspn(a, "\"");
	snprintf(out, len, "%.*s", (int)n, a);
}

typedef struct where {
	char source[64], member[64], backend[96], tenant[96];
} where;

/* Whether the render has the sample family{labels} value, the labels in the
 * render's order: the scope's, then the figure's own. */
static bool has_sample(const char *text, const char *family, const where *w, bool member, const char *extra,
		       const char *value)
{
	char line[768], labels[512] = "";
	size_t n = 0;
#define ADD(...) n += (size_t)snprintf(labels + n, sizeof(labels) - n, __VA_ARGS__)
	if (*w->source)
		ADD("%ssource=\"%s\"", n ? "," : "", w->source);
	if (member && *w->member)
		ADD("%smember=\"%s\"", n ? "," : "", w->member);
	if (*w->tenant)
		ADD("%sbackend_id=\"%s\",tenant_id=\"%s\"", n ? "," : "", w->backend, w->tenant);
	if (*extra) {
		char name[64];
		size_t eq = strcspn(extra, "=");
		snprintf(name, sizeof(name), "%.*s", (int)eq, extra);
		ADD("%s%s=\"%s\"", n ? "," : "", name, extra + eq + 1);
	}
#undef ADD
	if (n)
		snprintf(line, sizeof(line), "\n%s{%s} %s\n", family, labels, value);
	else
		snprintf(line, sizeof(line), "\n%s %s\n", family, value);
	return strstr(text, line) != NULL;
}

/* Walks the page's tags: each figure (data-m) is found in the render with
 * the labels of where it stands (a source's section, a member's or a
 * tenant's row, a member's span).  Returns how many it checked. */
static size_t every_figure_in(const char *html, const char *text)
{
	where section = {0}, row = {0};
	char span_member[64] = "";
	int depth = 0, member_depth = -1;
	size_t checked = 0;
	for (const char *p = strchr(html, '<'); p; p = strchr(p + 1, '<')) {
		const char *end = strchr(p, '>');
		assert_non_null(end);
		if (!strncmp(p, "<section", 8)) {
			attr_of(p, end, "data-source", section.source, sizeof(section.source));
		} else if (!strncmp(p, "</section>", 10)) {
			section = (where){0};
		} else if (!strncmp(p, "<tr", 3) && p[3] != 'o') {
			row = (where){0};
			attr_of(p, end, "data-source", row.source, sizeof(row.source));
			attr_of(p, end, "data-member", row.member, sizeof(row.member));
			attr_of(p, end, "data-backend", row.backend, sizeof(row.backend));
			attr_of(p, end, "data-tenant", row.tenant, sizeof(row.tenant));
		} else if (!strncmp(p, "</tr>", 5)) {
			row = (where){0};
		} else if (!strncmp(p, "</span>", 7)) {
			if (--depth == member_depth)
				member_depth = -1, *span_member = '\0';
		}
		if (!strncmp(p, "<span", 5)) {
			char m[64];
			attr_of(p, end, "data-member", m, sizeof(m));
			if (*m && member_depth < 0) {
				member_depth = depth;
				snprintf(span_member, sizeof(span_member), "%s", m);
			}
			depth++;
		}
		char family[96], extra[96], value[64];
		attr_of(p, end, "data-m", family, sizeof(family));
		if (!*family)
			continue;
		attr_of(p, end, "data-l", extra, sizeof(extra));
		attr_of(p, end, "data-v", value, sizeof(value));
		assert_true(*value);
		where w = *row.source ? row : section;
		if (!*row.source && *span_member)
			snprintf(w.member, sizeof(w.member), "%s", span_member);
		if (!has_sample(text, family, &w, true, extra, value) &&
		    !has_sample(text, family, &w, false, extra, value))
			fail_msg("the page's %s{%s %s %s %s %s} = %s is not in /metrics", family, w.source, w.member,
				 w.tenant, extra, "", value);
		checked++;
	}
	return checked;
}

/* An HA store of two masters, tenants made stale by a gap: the page of one
 * scrape shows every figure as that scrape's exposition gives it. */
static void test_page_equals_metrics(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 2, true);
	mkv_poll_news news;
	assert_non_null(s);
	poll(&f, 0, 0, "serving\n", &news);
	poll(&f, 1, 0, "standby\n", &news);
	assert_int_equal(put_in(s, 0, 1, "default", 0, 3, NULL), MKV_OK);
	assert_int_equal(put_in(s, 0, 2, "t-a", 0, 5, NULL), MKV_OK);
	assert_int_equal(put_in(s, 0, 5, "t-b", 0, 2, NULL), MKV_OK); /* a gap of 2 */
	assert_int_equal(put_in(s, 1, 1, "t-c", 0, 1, NULL), MKV_OK); /* from the standby */
	poll(&f, 0, 5, "serving\n", &news);
	poll(&f, 1, 1, "standby\n", &news);
	mkv_scrape *sc = mkv_scrape_new(1);
	assert_non_null(sc);
	mkv_store_note_connect(s, 0, 1795982164000); /* the standby's publisher is not there */
	assert_int_equal(mkv_scrape_store(sc, 0, s, NULL), MKV_OK);
	mkv_exporter_info x = {.version = "t", .revision = "t", .budget = &f.budget, .now_ms = 1795982164612};
	mkv_buf text, html;
	mkv_buf_init(&text);
	mkv_buf_init(&html);
	/* every series: the page shows a 0 that /metrics serves only with
	 * --metrics.all-series (a counter of rare events before its first) */
	assert_int_equal(mkv_scrape_render_as(sc, &x, &(mkv_expo_opts){.all_series = true}, &text), MKV_OK);
	mkv_status_opts o = {.limit = mkv_status_limit(NULL)};
	assert_int_equal(mkv_scrape_status_html(sc, &x, &o, &html), MKV_OK);
	size_t checked = every_figure_in(html.data, text.data);
	assert_true(checked > 80);
	/* the figures an operator asks for first are there */
	assert_non_null(strstr(html.data, "data-m=\"mooncake_kv_state_stale_reason\" data-l=\"reason=gap\""));
	assert_non_null(strstr(html.data, "data-m=\"mooncake_kv_state_stale_since_timestamp_seconds\""));
	assert_non_null(
		strstr(html.data, "<td class=\"n sum\" data-m=\"mooncake_kv_sequence_missing_total\" data-v=\"2\""));
	/* loss by cause reads as the total and its parts, in that order, as
	 * queue + transport + unattributed = missing (docs/design.md) */
	const char *head = strstr(html.data, ">missing</th>"), *q = strstr(html.data, ">= queue</th>"),
		   *t = strstr(html.data, ">+ transport</th>"), *u = strstr(html.data, ">+ unattributed</th>");
	assert_true(head && q && t && u && head < q && q < t && t < u);
	assert_non_null(strstr(html.data, "data-m=\"mooncake_kv_master_role\" data-l=\"role=leader\""));
	assert_non_null(strstr(html.data, "data-m=\"mooncake_kv_publisher_dialect\""));
	/* both members published (the standby too): neither stamped a model,
	 * said once for both in the source's heading, not on each row */
	assert_int_equal(count(html.data, "<small title=\"mooncake_kv_publisher_model_info\">model <span "
					  "class=\"none\">none named on its events</span></small> <small>(every "
					  "master)</small> "),
			 1);
	assert_int_equal(count(html.data, "mooncake_kv_publisher_model_info"), 1);
	assert_non_null(strstr(html.data, "data-m=\"mooncake_kv_reconciliations_total\" data-l=\"result=ok\""));
	assert_non_null(strstr(html.data, "data-m=\"mooncake_kv_objects\" data-v=\"5\""));
	assert_int_equal(count(html.data, " data-tenant=\""), 4);
	mkv_buf_free(&text);
	mkv_buf_free(&html);
	mkv_scrape_free(sc);
	mkv_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_equals_metrics),
	};
	return cmocka_run_group_tests_name("status_page_metrics", tests, NULL, NULL);
}
