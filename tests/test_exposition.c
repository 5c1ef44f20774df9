/* SPDX-License-Identifier: Apache-2.0 */
/* The exposition as served (kv_expo): the text format passed through, the
 * families an operator turned off left out, OpenMetrics when asked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <mooncake_kv/scrape.h>

#include "kv_common.h"

static const char text[] =
	"# HELP mooncake_kv_messages_received_total Messages \"received\", valid or not.\n"
	"# TYPE mooncake_kv_messages_received_total counter\n"
	"mooncake_kv_messages_received_total{source=\"m0\"} 6\n"
	"# HELP mooncake_kv_object_table_bytes Bytes held.\n"
	"# TYPE mooncake_kv_object_table_bytes gauge\n"
	"mooncake_kv_object_table_bytes{source=\"m0\"} 4096\n"
	"# HELP mooncake_kv_events_received_total Events applied, by type.\n"
	"# TYPE mooncake_kv_events_received_total counter\n"
	"mooncake_kv_events_received_total{source=\"m0\",backend_id=\"b\",tenant_id=\"t\",event_type=\"stored\"} 3\n"
	"# HELP mooncake_kv_objects Live objects.\n"
	"# TYPE mooncake_kv_objects gauge\n"
	"mooncake_kv_objects{source=\"m0\",backend_id=\"b\",tenant_id=\"t\"} 2\n"
	"# HELP mooncake_kv_event_lag_seconds Lag.\n"
	"# TYPE mooncake_kv_event_lag_seconds histogram\n"
	"mooncake_kv_event_lag_seconds_bucket{source=\"m0\",le=\"+Inf\"} 1\n"
	"mooncake_kv_event_lag_seconds_sum{source=\"m0\"} 0.5\n"
	"mooncake_kv_event_lag_seconds_count{source=\"m0\"} 1\n"
	"# HELP mooncake_kv_master_published_batches_total Batches.\n"
	"# TYPE mooncake_kv_master_published_batches_total counter\n"
	"mooncake_kv_master_published_batches_total{source=\"m0\"} 9\n"
	"# HELP process_cpu_seconds_total CPU.\n"
	"# TYPE process_cpu_seconds_total counter\n"
	"process_cpu_seconds_total 1.5\n";

static char *shape(const kv_expo_opts *o)
{
	kv_buf out;
	kv_buf_init(&out);
	assert_int_equal(kv_expo_write(&out, text, strlen(text), o), KV_OK);
	size_t n;
	return kv_buf_steal(&out, &n);
}

static void test_text_passes_through(void **state)
{
	(void)state;
	kv_expo_opts o = {0};
	char *s = shape(&o);
	assert_string_equal(s, text);
	free(s);
}

static void test_openmetrics(void **state)
{
	(void)state;
	kv_expo_opts o = {.openmetrics = true, .created = 1700000000.5};
	char *s = shape(&o);
	static const char want[] = "# HELP mooncake_kv_messages_received Messages \\\"received\\\", valid or not.\n"
				   "# TYPE mooncake_kv_messages_received counter\n"
				   "mooncake_kv_messages_received_total{source=\"m0\"} 6\n"
				   "mooncake_kv_messages_received_created{source=\"m0\"} 1700000000.5\n"
				   "# HELP mooncake_kv_object_table_bytes Bytes held.\n"
				   "# UNIT mooncake_kv_object_table_bytes bytes\n"
				   "# TYPE mooncake_kv_object_table_bytes gauge\n"
				   "mooncake_kv_object_table_bytes{source=\"m0\"} 4096\n"
				   "# HELP mooncake_kv_events_received Events applied, by type.\n"
				   "# TYPE mooncake_kv_events_received counter\n"
				   /* a tenant's counter started when the tenant was first seen: no _created */
				   "mooncake_kv_events_received_total{source=\"m0\",backend_id=\"b\",tenant_id=\"t\","
				   "event_type=\"stored\"} 3\n"
				   "# HELP mooncake_kv_objects Live objects.\n"
				   "# TYPE mooncake_kv_objects gauge\n"
				   "mooncake_kv_objects{source=\"m0\",backend_id=\"b\",tenant_id=\"t\"} 2\n"
				   "# HELP mooncake_kv_event_lag_seconds Lag.\n"
				   "# UNIT mooncake_kv_event_lag_seconds seconds\n"
				   "# TYPE mooncake_kv_event_lag_seconds histogram\n"
				   "mooncake_kv_event_lag_seconds_bucket{source=\"m0\",le=\"+Inf\"} 1\n"
				   "mooncake_kv_event_lag_seconds_sum{source=\"m0\"} 0.5\n"
				   "mooncake_kv_event_lag_seconds_count{source=\"m0\"} 1\n"
				   /* mirrored from the master: its start is the master's, not ours */
				   "# HELP mooncake_kv_master_published_batches Batches.\n"
				   "# TYPE mooncake_kv_master_published_batches counter\n"
				   "mooncake_kv_master_published_batches_total{source=\"m0\"} 9\n"
				   "# HELP process_cpu_seconds CPU.\n"
				   "# UNIT process_cpu_seconds seconds\n"
				   "# TYPE process_cpu_seconds counter\n"
				   "process_cpu_seconds_total 1.5\n"
				   "process_cpu_seconds_created 1700000000.5\n"
				   "# EOF\n";
	assert_string_equal(s, want);
	free(s);
}

static void test_filters(void **state)
{
	(void)state;
	char err[200];
	/* the summary keeps a tenant's objects, leaves its event counters out */
	kv_family_filter *f = kv_family_filter_new(NULL, true, err, sizeof(err));
	assert_non_null(f);
	kv_expo_opts o = {.drop = kv_family_filter_drops, .drop_ctx = f};
	char *s = shape(&o);
	assert_null(strstr(s, "mooncake_kv_events_received"));
	assert_non_null(strstr(s, "\nmooncake_kv_objects{"));
	assert_non_null(strstr(s, "mooncake_kv_messages_received_total{"));
	free(s);
	kv_family_filter_free(f);

	/* the regex matches whole names only */
	assert_non_null(f = kv_family_filter_new("mooncake_kv_object_table_bytes|process_.*", false, err, sizeof(err)));
	o.drop_ctx = f;
	s = shape(&o);
	assert_null(strstr(s, "object_table_bytes"));
	assert_null(strstr(s, "process_cpu"));
	assert_non_null(strstr(s, "# TYPE mooncake_kv_objects gauge\nmooncake_kv_objects{"));
	free(s);
	kv_family_filter_free(f);
	assert_non_null(f = kv_family_filter_new("mooncake_kv_object", false, err, sizeof(err)));
	o.drop_ctx = f;
	s = shape(&o);
	assert_string_equal(s, text); /* a prefix is no match */
	free(s);
	kv_family_filter_free(f);

	assert_null(kv_family_filter_new("(unclosed", false, err, sizeof(err)));
	assert_non_null(strstr(err, "at offset"));
}

/* The pass fed in three pieces, cut at any two line ends, writes what it
 * writes over the whole text, in every mode: a piece may end between a HELP
 * and its TYPE, or between a family's TYPE and its samples. */
static void check_pieces(const char *t, const kv_expo_opts *o)
{
	size_t len = strlen(t);
	kv_buf whole;
	kv_buf_init(&whole);
	assert_int_equal(kv_expo_write(&whole, t, len, o), KV_OK);
	size_t cuts = 0;
	for (size_t a = 0; a <= len; a++) {
		if (a && t[a - 1] != '\n')
			continue;
		for (size_t b = a; b <= len; b++) {
			if (b > a && t[b - 1] != '\n')
				continue;
			kv_buf out;
			kv_buf_init(&out);
			kv_expo_pass p;
			kv_expo_begin(&p, o);
			assert_int_equal(kv_expo_feed(&p, &out, t, a), KV_OK);
			assert_int_equal(kv_expo_feed(&p, &out, t + a, b - a), KV_OK);
			assert_int_equal(kv_expo_feed(&p, &out, t + b, len - b), KV_OK);
			assert_int_equal(kv_expo_end(&p, &out), KV_OK);
			assert_int_equal(out.len, whole.len);
			assert_memory_equal(out.data, whole.data, whole.len);
			kv_buf_free(&out);
			cuts++;
		}
	}
	assert_true(cuts >= 276); /* every pair of the 23 lines' starts, at least */
	kv_buf_free(&whole);
}

static void test_pieces(void **state)
{
	(void)state;
	char err[200];
	kv_family_filter *f = kv_family_filter_new("mooncake_kv_object_table_bytes", true, err, sizeof(err));
	assert_non_null(f);
	kv_expo_opts modes[] = {
		{0},
		{.openmetrics = true, .created = 1700000000.5},
		{.drop = kv_family_filter_drops, .drop_ctx = f},
		{.openmetrics = true, .created = 1700000000.5, .drop = kv_family_filter_drops, .drop_ctx = f},
	};
	/* and a text whose last line has no newline */
	char *cut = strdup(text);
	assert_non_null(cut);
	cut[strlen(cut) - 1] = '\0';
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		check_pieces(text, &modes[i]);
		check_pieces(cut, &modes[i]);
	}
	free(cut);
	kv_family_filter_free(f);
}

static void test_accept(void **state)
{
	(void)state;
	/* Prometheus 2.42's default */
	assert_true(
		kv_expo_wants_openmetrics("application/openmetrics-text;version=1.0.0,application/"
					  "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;"
					  "q=0.1"));
	assert_true(kv_expo_wants_openmetrics("text/plain;q=0.5, application/openmetrics-text; q=0.9"));
	assert_false(kv_expo_wants_openmetrics("application/openmetrics-text;q=0, text/plain"));
	assert_false(kv_expo_wants_openmetrics("text/plain;version=0.0.4"));
	assert_false(kv_expo_wants_openmetrics("*/*"));
	assert_false(kv_expo_wants_openmetrics(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_passes_through),
		cmocka_unit_test(test_openmetrics),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_accept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
