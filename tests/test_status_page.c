/* SPDX-License-Identifier: Apache-2.0 */
/* The status page (mkv_scrape_status_html) from hand-made snapshots: ids
 * from the wire escaped; stale tenants first, then by objects; the filter
 * and the limit, and what they left out said; self-contained HTML5.  That
 * every figure it shows is the sample /metrics renders:
 * test_status_page_metrics.c. */
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

/* ---- hand-made snapshots ---- */

typedef struct tn {
	const char *backend, *tenant;
	unsigned stale;
	uint64_t objects;
} tn;

/* A source of n tenants (the array is the caller's; drop() before
 * kv_source_snap_release, which would free it). */
static void source_of(kv_source_snap *s, const char *name, kv_tenant_snap *v, const tn *t, size_t n)
{
	*s = (kv_source_snap){.name = name, .residency = true};
	assert_int_equal(kv_snapshot_members(s, 1), MKV_OK);
	for (size_t i = 0; i < n; i++) {
		v[i] = (kv_tenant_snap){.backend_id = t[i].backend,
					.tenant_id = t[i].tenant,
					.backend_len = (uint32_t)strlen(t[i].backend),
					.tenant_len = (uint32_t)strlen(t[i].tenant),
					.stale = t[i].stale,
					.stale_since_ms = t[i].stale ? 1795982104612 : 0};
		v[i].counts.placement[MKV_PLACE_CPU_ONLY] = t[i].objects;
	}
	s->tenants = v;
	s->n_tenants = n;
}

static void drop(kv_source_snap *s)
{
	s->tenants = NULL;
	s->n_tenants = 0;
	kv_source_snap_release(s);
}

static mkv_buf page(const kv_source_snap *src, size_t n, const char *filter, size_t limit)
{
	kv_exporter_snap x = {.info = {.version = "1.2.3", .revision = "abc", .now_ms = 1795982164612},
			      .sources = src,
			      .n_sources = n};
	mkv_status_opts o = {.filter = filter, .limit = limit};
	mkv_buf out;
	mkv_buf_init(&out);
	assert_int_equal(kv_status_render(&out, &x, &o), MKV_OK);
	return out;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The text of element id's content: <b id="id">text</b>. */
static long id_value(const mkv_buf *b, const char *id)
{
	char open[64];
	snprintf(open, sizeof(open), "id=\"%s\">", id);
	const char *p = strstr(b->data, open);
	assert_non_null(p);
	return strtol(p + strlen(open), NULL, 10);
}

/* The tenant ids of the rows, in order, joined by commas. */
static void rows(const mkv_buf *b, char *out, size_t len)
{
	*out = '\0';
	for (const char *p = b->data; (p = strstr(p, " data-tenant=\"")); p++) {
		p += strlen(" data-tenant=\"");
		size_t n = strcspn(p, "\"");
		if (*out)
			strncat(out, ",", len - strlen(out) - 1);
		strncat(out, p, n < len - strlen(out) - 1 ? n : len - strlen(out) - 1);
	}
}

static void test_escaping(void **state)
{
	(void)state;
	tn t[] = {{"be<\"&'>", "<script>alert('x')</script>&\"", 0, 5},
		  {"b", "bad\xff\xfeutf8 nul\x01 cr\r", 1, 4},
		  {"b", "\xce\xba\xce\xbb", 0, 3}};
	kv_tenant_snap v[3];
	kv_source_snap s;
	source_of(&s, "s\"<1>", v, t, 3);
	mkv_buf b = page(&s, 1, NULL, 100);
	assert_null(strstr(b.data, "<script"));
	assert_null(strstr(b.data, "s\"<1>"));
	assert_non_null(strstr(b.data, "data-tenant=\"&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;\""));
	assert_non_null(
		strstr(b.data, "<th scope=\"row\">&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;</th>"));
	assert_non_null(strstr(b.data, "data-backend=\"be&lt;&quot;&amp;&#39;&gt;\""));
	assert_non_null(strstr(b.data, "data-source=\"s&quot;&lt;1&gt;\""));
	/* bytes that are no UTF-8, and controls HTML forbids: U+FFFD */
	assert_non_null(strstr(b.data, "bad\xef\xbf\xbd\xef\xbf\xbdutf8 nul\xef\xbf\xbd cr\xef\xbf\xbd"));
	assert_non_null(strstr(b.data, "\xce\xba\xce\xbb"));
	assert_true(mkv_label_value_clean(b.data, b.len));
	mkv_buf_free(&b);
	/* the filter echoed in the form, escaped */
	b = page(&s, 1, "<x>\"&", 100);
	assert_non_null(strstr(b.data, "value=\"&lt;x&gt;&quot;&amp;\""));
	assert_null(strstr(b.data, "<x>"));
	mkv_buf_free(&b);
	drop(&s);
}

/* Each member's model, as its publisher stamps it: escaped, with its LoRA
 * adapter; nothing before its first event. */
static void test_member_model(void **state)
{
	(void)state;
	tn t[] = {{"b", "t", 0, 1}};
	kv_tenant_snap v[1];
	kv_source_snap s[2];
	source_of(&s[0], "m0", v, t, 1);
	source_of(&s[1], "m1", NULL, NULL, 0);
	kv_model_ctx *c = &s[0].members[0].model;
	c->seen = c->has_model = c->has_lora = true;
	strcpy(c->model_name, "<b>llama</b>&\xff");
	strcpy(c->lora_name, "sql\"x");
	s[0].members[0].label = "10.0.0.1:9003";
	mkv_buf b = page(s, 2, NULL, 100);
	assert_non_null(strstr(b.data, "<small title=\"mooncake_kv_publisher_model_info\">model "
				       "&lt;b&gt;llama&lt;/b&gt;&amp;\xef\xbf\xbd, LoRA sql&quot;x</small>"));
	assert_null(strstr(b.data, "<b>llama"));
	assert_int_equal(count(b.data, "mooncake_kv_publisher_model_info"), 1); /* m1: no event, no model */
	assert_true(mkv_label_value_clean(b.data, b.len));
	mkv_buf_free(&b);
	/* two masters: the model on each row while they differ, said once in
	 * the heading when they agree */
	kv_source_snap_release(&s[1]);
	s[1] = (kv_source_snap){.name = "ha"};
	assert_int_equal(kv_snapshot_members(&s[1], 2), MKV_OK);
	s[1].members[0].model = s[1].members[1].model = *c;
	strcpy(s[1].members[1].model.lora_name, "other");
	b = page(&s[1], 1, NULL, 100);
	assert_int_equal(count(b.data, "<br><small title=\"mooncake_kv_publisher_model_info\">"), 2);
	mkv_buf_free(&b);
	strcpy(s[1].members[1].model.lora_name, c->lora_name);
	b = page(&s[1], 1, NULL, 100);
	assert_int_equal(count(b.data, "mooncake_kv_publisher_model_info"), 1);
	assert_non_null(strstr(b.data, "LoRA sql&quot;x</small> <small>(every master)</small> "));
	mkv_buf_free(&b);
	drop(&s[0]);
	drop(&s[1]);
}

/* Stale first, then by objects, then by source, backend and tenant. */
static void test_order(void **state)
{
	(void)state;
	tn a[] = {{"b", "small-exact", 0, 1}, {"b", "big-exact", 0, 900}, {"b", "small-stale", 2, 2},
		  {"b", "big-stale", 1, 50},  {"b", "tie-b", 0, 7},       {"a", "tie-z", 0, 7}};
	tn c[] = {{"b", "other-stale", 8, 50}, {"b", "other-big", 0, 1000}};
	kv_tenant_snap va[6], vc[2];
	kv_source_snap s[2];
	source_of(&s[0], "m0", va, a, 6);
	source_of(&s[1], "m1", vc, c, 2);
	mkv_buf b = page(s, 2, NULL, 100);
	char got[512];
	rows(&b, got, sizeof(got));
	assert_string_equal(got, "big-stale,other-stale,small-stale,other-big,big-exact,tie-z,tie-b,small-exact");
	assert_int_equal(id_value(&b, "tenants-matching"), 8);
	assert_int_equal(id_value(&b, "tenants-stale"), 3);
	assert_int_equal(id_value(&b, "tenants-left-out"), 0);
	mkv_buf_free(&b);
	/* a source whose one master stands by has no tenant figures */
	s[1].leadership.dropped = true;
	b = page(s, 2, NULL, 100);
	rows(&b, got, sizeof(got));
	assert_string_equal(got, "big-stale,small-stale,big-exact,tie-z,tie-b,small-exact");
	assert_non_null(strstr(b.data, "stands by"));
	mkv_buf_free(&b);
	drop(&s[0]);
	drop(&s[1]);
}

static void test_filter(void **state)
{
	(void)state;
	tn a[] = {{"be-x", "tenant-1", 0, 1}, {"be-x", "Tenant-10", 1, 2}, {"be-y", "t-2", 0, 3}};
	tn c[] = {{"be-z", "alpha", 0, 4}};
	kv_tenant_snap va[3], vc[1];
	kv_source_snap s[2];
	source_of(&s[0], "east", va, a, 3);
	source_of(&s[1], "west", vc, c, 1);
	char got[256];
	mkv_buf b = page(s, 2, "TENANT-1", 100); /* any case */
	rows(&b, got, sizeof(got));
	assert_string_equal(got, "Tenant-10,tenant-1");
	assert_int_equal(id_value(&b, "tenants-matching"), 2);
	assert_non_null(strstr(b.data, "tenants that match"));
	mkv_buf_free(&b);
	b = page(s, 2, "be-y", 100); /* a backend */
	rows(&b, got, sizeof(got));
	assert_string_equal(got, "t-2");
	mkv_buf_free(&b);
	b = page(s, 2, "WEST", 100); /* a source: all its tenants */
	rows(&b, got, sizeof(got));
	assert_string_equal(got, "alpha");
	mkv_buf_free(&b);
	b = page(s, 2, "nothing", 100);
	rows(&b, got, sizeof(got));
	assert_string_equal(got, "");
	assert_int_equal(id_value(&b, "tenants-matching"), 0);
	/* the sources are shown whatever the filter */
	assert_non_null(strstr(b.data, "data-source=\"east\""));
	assert_non_null(strstr(b.data, "data-source=\"west\""));
	mkv_buf_free(&b);
	drop(&s[0]);
	drop(&s[1]);
}

/* A column that would say the same on every row is said once, above the
 * table: the backend where every tenant shown has the same, the source
 * where they are all of one of several; the column where they differ. */
static void test_same_column_once(void **state)
{
	(void)state;
	tn a[] = {{"be-x", "t1", 0, 1}, {"be-x", "t2", 1, 2}};
	tn c[] = {{"be-x", "t3", 0, 4}, {"be-<y>", "t4", 0, 5}};
	kv_tenant_snap va[2], vc[2];
	kv_source_snap s[2];
	source_of(&s[0], "east", va, a, 2);
	source_of(&s[1], "west", vc, c, 2);
	const char *backend_col = "<th scope=\"col\">Backend</th>", *source_col = "<th scope=\"col\">Source</th>";
	mkv_buf b = page(s, 1, NULL, 100); /* one source, one backend */
	assert_null(strstr(b.data, backend_col));
	assert_null(strstr(b.data, source_col));
	assert_non_null(strstr(b.data, " All are of backend <code id=\"tenants-backend\">be-x</code>.</p>"));
	assert_int_equal(count(b.data, "<td class=\"id\">"), 0);
	assert_int_equal(count(b.data, " data-backend=\"be-x\""), 2); /* still on each row */
	/* the group heading spans Tenant, State, Stale since and Objects */
	assert_non_null(strstr(b.data, "<th colspan=\"4\"></th><th colspan=\"2\">By medium</th>"));
	mkv_buf_free(&b);
	b = page(s, 2, NULL, 100); /* two sources, two backends: both columns */
	assert_non_null(strstr(b.data, backend_col));
	assert_non_null(strstr(b.data, source_col));
	assert_null(strstr(b.data, "tenants-backend"));
	assert_null(strstr(b.data, "tenants-source"));
	assert_int_equal(count(b.data, "<td class=\"id\">"), 8);
	assert_non_null(strstr(b.data, "<td class=\"id\">be-&lt;y&gt;</td>"));
	assert_non_null(strstr(b.data, "<th colspan=\"6\"></th><th colspan=\"2\">By medium</th>"));
	mkv_buf_free(&b);
	b = page(s, 2, "east", 100); /* two sources, those shown of one: said once, both */
	assert_null(strstr(b.data, backend_col));
	assert_null(strstr(b.data, source_col));
	assert_non_null(strstr(b.data, " All are of source <code id=\"tenants-source\">east</code>, backend "
				       "<code id=\"tenants-backend\">be-x</code>.</p>"));
	mkv_buf_free(&b);
	b = page(s, 2, "t4", 100); /* one row */
	assert_non_null(strstr(b.data, " It is of source <code id=\"tenants-source\">west</code>, backend "
				       "<code id=\"tenants-backend\">be-&lt;y&gt;</code>.</p>"));
	mkv_buf_free(&b);
	drop(&s[0]);
	drop(&s[1]);
}

static void test_limit(void **state)
{
	(void)state;
	assert_int_equal(mkv_status_limit(NULL), MKV_STATUS_LIMIT_DEFAULT);
	assert_int_equal(mkv_status_limit(""), MKV_STATUS_LIMIT_DEFAULT);
	assert_int_equal(mkv_status_limit("12x"), MKV_STATUS_LIMIT_DEFAULT);
	assert_int_equal(mkv_status_limit("-1"), MKV_STATUS_LIMIT_DEFAULT);
	assert_int_equal(mkv_status_limit("7"), 7);
	assert_int_equal(mkv_status_limit("0"), 0);
	assert_int_equal(mkv_status_limit("2001"), MKV_STATUS_LIMIT_MAX);
	assert_int_equal(mkv_status_limit("99999999999999999999999999"), MKV_STATUS_LIMIT_MAX);
	/* read strictly, as /status reads it: a whole number from 0 to 2000
	 * (docs/operating.md, "The status page"), anything else refused with
	 * one line that says why */
	const char *good[] = {NULL, "0", "7", "007", "2000"},
		   *bad[] = {"banana", "", "12x", "-1", "+5", " 5", "1.5", "2001", "99999999999999999999999999"};
	size_t want[] = {100, 0, 7, 7, 2000}, n;
	const char *why, *words[] = {"not a whole", "empty",       "not a whole", "not a whole", "not a whole",
				     "not a whole", "not a whole", "over 2000",   "over 2000"};
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		assert_int_equal(mkv_status_limit_parse(good[i], &n, &why), MKV_OK);
		assert_int_equal(n, want[i]);
		assert_null(why);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		assert_int_equal(mkv_status_limit_parse(bad[i], &n, &why), MKV_EINVAL);
		assert_int_equal(n, MKV_STATUS_LIMIT_DEFAULT);
		assert_true(why && strstr(why, words[i]) && strstr(why, "bad limit") && !strchr(why, '\n'));
	}

	tn a[] = {{"b", "t1", 0, 10}, {"b", "t2", 0, 20}, {"b", "t3", 4, 1}, {"b", "t4", 0, 40}, {"b", "t5", 0, 30}};
	kv_tenant_snap v[5];
	kv_source_snap s;
	source_of(&s, "m0", v, a, 5);
	char got[256];
	mkv_buf b = page(&s, 1, NULL, 2);
	rows(&b, got, sizeof(got));
	assert_string_equal(got, "t3,t4");
	assert_int_equal(id_value(&b, "tenants-shown"), 2);
	assert_int_equal(id_value(&b, "tenants-matching"), 5);
	assert_int_equal(id_value(&b, "tenants-left-out"), 3);
	mkv_buf_free(&b);
	b = page(&s, 1, NULL, 0); /* the sources alone */
	rows(&b, got, sizeof(got));
	assert_string_equal(got, "");
	assert_int_equal(id_value(&b, "tenants-left-out"), 5);
	mkv_buf_free(&b);
	b = page(&s, 1, NULL, 1000000); /* above the most: the most */
	assert_non_null(strstr(b.data, "max=\"2000\" value=\"2000\""));
	mkv_buf_free(&b);
	drop(&s);
}

/* The page's order of (stale, objects) pairs: stale first, more objects first. */
static int by_page_order(const void *a, const void *b)
{
	const tn *x = a, *y = b;
	if ((x->stale != 0) != (y->stale != 0))
		return x->stale ? -1 : 1;
	return x->objects > y->objects ? -1 : x->objects < y->objects ? 1 : 0;
}

/* 20,000 tenants: the page holds the first `limit` of them, the right ones,
 * whatever order the snapshot has them in. */
static void test_many(void **state)
{
	(void)state;
	size_t n = 20000;
	tn *t = test_calloc(n, sizeof(*t)), *want = test_calloc(n, sizeof(*t));
	kv_tenant_snap *v = test_calloc(n, sizeof(*v));
	char(*ids)[16] = test_calloc(n, sizeof(*ids));
	for (size_t i = 0; i < n; i++) {
		snprintf(ids[i], sizeof(ids[i]), "t%05zu", i);
		/* objects a permutation of 0..n-1 (7919 is prime to n); every 1000th stale */
		t[i] = (tn){"b", ids[i], i % 1000 == 999 ? 2u : 0u, (i * 7919) % n};
	}
	memcpy(want, t, n * sizeof(*t));
	qsort(want, n, sizeof(*want), by_page_order);
	kv_source_snap s;
	source_of(&s, "m0", v, t, n);
	mkv_buf b = page(&s, 1, NULL, 100);
	assert_int_equal(count(b.data, " data-tenant=\""), 100);
	assert_int_equal(id_value(&b, "tenants-shown"), 100);
	assert_int_equal(id_value(&b, "tenants-left-out"), 19900);
	assert_int_equal(id_value(&b, "tenants-stale"), 20);
	const char *p = b.data, *key = "data-m=\"mooncake_kv_objects\" data-v=\"";
	for (size_t k = 0; k < 100; k++) {
		p = strstr(p, key);
		assert_non_null(p);
		p += strlen(key);
		assert_int_equal(strtoull(p, NULL, 10), want[k].objects);
	}
	assert_null(strstr(p, key));
	mkv_buf_free(&b);
	drop(&s);
	test_free(ids);
	test_free(v);
	test_free(want);
	test_free(t);
}

/* Self-contained HTML5 a person can read: a doctype, the viewport, no
 * script, nothing fetched from elsewhere; tables whose rows close. */
static void test_document(void **state)
{
	(void)state;
	tn a[] = {{"b", "t1", 1, 10}, {"b", "t2", 0, 20}};
	kv_tenant_snap v[2];
	kv_source_snap s;
	source_of(&s, "m0", v, a, 2);
	mkv_buf b = page(&s, 1, NULL, 100);
	assert_int_equal(strncmp(b.data, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">", 60), 0);
	assert_non_null(strstr(b.data, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"));
	assert_non_null(strstr(b.data, "<title>"));
	assert_null(strstr(b.data, "<script"));
	assert_null(strstr(b.data, "<link"));
	assert_null(strstr(b.data, "<img"));
	assert_null(strstr(b.data, "src="));
	assert_null(strstr(b.data, "url("));
	assert_null(strstr(b.data, "@import"));
	assert_null(strstr(b.data, "//"));
	assert_int_equal(count(b.data, "<tr"), count(b.data, "</tr>"));
	assert_int_equal(count(b.data, "<table"), count(b.data, "</table>"));
	assert_int_equal(count(b.data, "<td"), count(b.data, "</td>"));
	assert_int_equal(count(b.data, "<section"), count(b.data, "</section>"));
	assert_int_equal(count(b.data, "<span"), count(b.data, "</span>"));
	assert_non_null(strstr(b.data, "</body></html>\n"));
	/* numbers right-aligned, big ones grouped for the eye, exact in data-v */
	assert_non_null(strstr(b.data, ".n,.t{text-align:right"));
	mkv_buf_free(&b);
	drop(&s);
	a[1].objects = 12345678;
	source_of(&s, "m0", v, a, 2);
	b = page(&s, 1, NULL, 100);
	assert_non_null(strstr(b.data, "data-v=\"12345678\">12\xe2\x80\xaf"
				       "345\xe2\x80\xaf"
				       "678</td>"));
	mkv_buf_free(&b);
	drop(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_member_model),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_same_column_once),
		cmocka_unit_test(test_document),
	};
	return cmocka_run_group_tests_name("status_page", tests, NULL, NULL);
}
