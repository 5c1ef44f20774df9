/* SPDX-License-Identifier: Apache-2.0 */
/* The exposition as served (kv_render with mkv_expo_opts): the text format,
 * OpenMetrics 1.0 when asked (the spec's family names, UNIT, _created and
 * # EOF), and the families an operator turned off left out, each decided
 * as the family is written.  tests/check_render_golden.py holds every
 * mode's bytes over the captures; this says what they must mean. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <mooncake_kv/scrape.h>

#include "kv_common.h"
#include "kv_render.h"

#define CREATED 1700000000.5

/* One source m0 of one member with a master, one tenant with one key
 * group, residency on, the process known: every kind of family shows (a
 * member's counter, a source's, a tenant's, a key group's, a mirrored one,
 * the exporter's own, histograms, units). */
static kv_source_snap src;
static kv_exporter_snap snap;

static int setup(void **state)
{
	(void)state;
	src = (kv_source_snap){.name = "m0", .residency = true, .has_groups = true};
	assert_int_equal(kv_snapshot_members(&src, 1), MKV_OK);
	kv_member_snap *m = &src.members[0];
	m->connected = true;
	m->stats.messages = 6;
	kv_hist_init(&m->stats.lag_seconds, kv_lag_bounds, kv_lag_bounds_n);
	kv_hist_init(&m->stats.batch_events, kv_batch_bounds, kv_batch_bounds_n);
	m->has_master = true;
	m->master.have_status = true;
	m->master.status.published_batches = 9;
	src.table_bytes = 4096;
	src.tenants = calloc(1, sizeof(*src.tenants));
	src.group_pool = calloc(1, sizeof(*src.group_pool));
	src.group_names = calloc(1, sizeof(*src.group_names));
	assert_true(src.tenants && src.group_pool && src.group_names);
	src.tenants[0] = (kv_tenant_snap){
		.backend_id = "b", .tenant_id = "t", .backend_len = 1, .tenant_len = 1, .n_groups = 1};
	src.tenants[0].counts.events[MKV_EV_STORED] = 3;
	src.n_tenants = 1;
	src.group_names[0] = (mkv_str){"g", 1};
	src.n_group_names = 1;
	snap = (kv_exporter_snap){
		.info = {.version = "1", .revision = "r", .process = {.ok = true, .cpu_seconds = 1.5}},
		.sources = &src,
		.n_sources = 1};
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	kv_source_snap_release(&src);
	return 0;
}

static char *served(const mkv_expo_opts *o)
{
	mkv_buf out;
	mkv_buf_init(&out);
	assert_int_equal(kv_render(&out, &snap, o), MKV_OK);
	size_t n;
	char *s = mkv_buf_steal(&out, &n);
	assert_non_null(s);
	return s;
}

/* The line of s that starts with `start` (the whole line, in line[]), or
 * NULL; next: the line after it. */
static const char *find_line(const char *s, const char *start, char *line, size_t cap, const char **next)
{
	size_t n = strlen(start);
	for (const char *p = s; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (len >= n && !memcmp(p, start, n)) {
			snprintf(line, cap, "%.*s", (int)len, p);
			if (next)
				*next = nl ? nl + 1 : p + len;
			return line;
		}
		p += len + (nl != NULL);
	}
	return NULL;
}

static bool has_line(const char *s, const char *whole)
{
	char line[1024];
	return find_line(s, whole, line, sizeof(line), NULL) && !strcmp(line, whole);
}

static void test_text(void **state)
{
	(void)state;
	char *plain = served(NULL), *zero = served(&(mkv_expo_opts){.created = CREATED});
	/* the text format is the same with or without options that do not ask for more */
	assert_string_equal(plain, zero);
	assert_true(has_line(plain, "# HELP mooncake_kv_messages_received_total Multipart messages received from the "
				    "publisher, valid or not."));
	assert_true(has_line(plain, "# TYPE mooncake_kv_messages_received_total counter"));
	assert_true(has_line(plain, "mooncake_kv_messages_received_total{source=\"m0\"} 6"));
	assert_true(has_line(plain, "# TYPE mooncake_kv_event_lag_seconds histogram"));
	assert_null(strstr(plain, "_created"));
	assert_null(strstr(plain, "# UNIT"));
	assert_null(strstr(plain, "# EOF"));
	/* a help text with quotes is written as it is */
	assert_non_null(strstr(plain, "(--key.group-regex; \"\" when it does not match, \"__overflow__\" beyond"));
	free(plain);
	free(zero);
}

/* Every counter family of an OpenMetrics text: its TYPE names it without
 * _total, and each of its samples is name_total or name_created. */
static size_t check_counters(const char *s)
{
	size_t counters = 0;
	for (const char *p = s; (p = strstr(p, "# TYPE ")); p++) {
		const char *name = p + 7, *sp = strchr(name, ' ');
		if (strncmp(sp, " counter\n", 9))
			continue;
		size_t n = (size_t)(sp - name);
		assert_false(n > 6 && !memcmp(sp - 6, "_total", 6));
		counters++;
		for (const char *l = sp + 9; *l && *l != '#'; l = strchr(l, '\n') + 1) {
			assert_memory_equal(l, name, n);
			assert_true(!strncmp(l + n, "_total", 6) || !strncmp(l + n, "_created", 8));
		}
	}
	return counters;
}

static void test_openmetrics(void **state)
{
	(void)state;
	char *s = served(&(mkv_expo_opts){.openmetrics = true, .created = CREATED});
	size_t len = strlen(s);
	/* # EOF ends it, once */
	assert_true(len > 6 && !strcmp(s + len - 6, "# EOF\n"));
	assert_ptr_equal(strstr(s, "# EOF"), s + len - 6);
	assert_true(check_counters(s) > 30);
	/* a member's counter that started with the exporter: _created with its labels, after each sample */
	char line[1024];
	const char *next;
	assert_non_null(
		find_line(s, "mooncake_kv_messages_received_total{source=\"m0\"} 6", line, sizeof(line), &next));
	assert_true(!strncmp(next, "mooncake_kv_messages_received_created{source=\"m0\"} 1700000000.5\n", 64));
	assert_true(has_line(s, "# TYPE mooncake_kv_messages_received counter"));
	assert_true(has_line(s, "# HELP mooncake_kv_messages_received Multipart messages received from the publisher, "
				"valid or not."));
	/* one per value of an extra label */
	assert_non_null(find_line(s, "mooncake_kv_decode_errors_total{source=\"m0\",reason=\"unknown_medium\"} 0", line,
				  sizeof(line), &next));
	assert_true(!strncmp(
		next, "mooncake_kv_decode_errors_created{source=\"m0\",reason=\"unknown_medium\"} 1700000000.5\n", 80));
	/* the exporter's own, without labels */
	assert_non_null(strstr(s, "\nprocess_cpu_seconds_total 1.5\nprocess_cpu_seconds_created 1700000000.5\n"));
	/* none for a tenant's counter (it started when the tenant was first
	 * seen), nor a key group's, nor one mirrored from the master (it started
	 * with the master's process) */
	assert_true(has_line(s, "mooncake_kv_events_received_total{source=\"m0\",backend_id=\"b\",tenant_id=\"t\","
				"event_type=\"stored\"} 3"));
	assert_null(strstr(s, "mooncake_kv_events_received_created"));
	assert_null(strstr(s, "mooncake_kv_key_group_events_created"));
	assert_true(has_line(s, "mooncake_kv_master_published_batches_total{source=\"m0\"} 9"));
	assert_null(strstr(s, "mooncake_kv_master_published_batches_created"));
	/* UNIT for a name with a unit's suffix, between HELP and TYPE */
	assert_non_null(strstr(s,
			       "\n# UNIT mooncake_kv_object_table_bytes bytes\n# TYPE mooncake_kv_object_table_bytes "
			       "gauge\nmooncake_kv_object_table_bytes{source=\"m0\"} 4096\n"));
	assert_non_null(strstr(s,
			       "\n# UNIT mooncake_kv_event_lag_seconds seconds\n# TYPE mooncake_kv_event_lag_seconds "
			       "histogram\n"));
	assert_non_null(strstr(s, "\n# UNIT process_cpu_seconds seconds\n# TYPE process_cpu_seconds counter\n"));
	assert_null(strstr(s, "# UNIT mooncake_kv_objects "));
	/* HELP escapes the double quote too */
	assert_non_null(strstr(s, "(--key.group-regex; \\\"\\\" when it does not match, \\\"__overflow__\\\" beyond"));
	free(s);

	/* no start given: no _created */
	s = served(&(mkv_expo_opts){.openmetrics = true});
	assert_null(strstr(s, "_created"));
	assert_true(check_counters(s) > 30);
	free(s);
}

/* The families of a text, by their TYPE lines, each with a space on
 * either side. */
static void families_of(const char *s, char *out, size_t cap)
{
	snprintf(out, cap, " ");
	for (const char *p = s; (p = strstr(p, "# TYPE ")); p++) {
		size_t n = strcspn(p + 7, " ");
		size_t used = strlen(out);
		snprintf(out + used, cap - used, "%.*s ", (int)n, p + 7);
	}
}

static void test_filters(void **state)
{
	(void)state;
	char err[200], all[8192], kept[8192], gone[8192] = "";
	char *s = served(&(mkv_expo_opts){.all_series = true}); /* every family */
	families_of(s, all, sizeof(all));
	free(s);

	/* the summary leaves out a tenant's detail: per tenant only objects, the
	 * medium mix and staleness; per key group only objects (the
	 * --metrics.tenant-summary of docs/reference.md) */
	mkv_family_filter *f = mkv_family_filter_new(NULL, true, err, sizeof(err));
	assert_non_null(f);
	s = served(&(mkv_expo_opts){.families = f, .all_series = true});
	families_of(s, kept, sizeof(kept));
	for (const char *p = all + 1; *p;) {
		size_t n = strcspn(p, " ");
		char name[128];
		snprintf(name, sizeof(name), " %.*s ", (int)n, p);
		if (!strstr(kept, name))
			snprintf(gone + strlen(gone), sizeof(gone) - strlen(gone), "%s", name + 1);
		p += n + 1;
	}
	assert_string_equal(gone,
			    "mooncake_kv_events_received_total mooncake_kv_objects_by_placement "
			    "mooncake_kv_state_stale_reason mooncake_kv_tenant_clears_total "
			    "mooncake_kv_stored_duplicates_total mooncake_kv_removed_unknown_total "
			    "mooncake_kv_tenant_objects_overflow_total mooncake_kv_objects_by_key_group_medium "
			    "mooncake_kv_key_group_events_total mooncake_kv_object_lifetime_seconds "
			    "mooncake_kv_object_lifetime_unobserved_total mooncake_kv_object_age_mean_seconds "
			    "mooncake_kv_object_age_tracked_objects mooncake_kv_key_group_object_lifetime_seconds "
			    "mooncake_kv_key_group_object_lifetime_unobserved_total ");
	assert_true(has_line(s, "mooncake_kv_objects{source=\"m0\",backend_id=\"b\",tenant_id=\"t\"} 0"));
	assert_true(mkv_family_filter_drops("mooncake_kv_events_received_total", 33, f));
	assert_false(mkv_family_filter_drops("mooncake_kv_objects", 19, f));
	free(s);
	mkv_family_filter_free(f);

	/* the regex matches whole names only, and takes a family's _created with it */
	assert_non_null(
		f = mkv_family_filter_new("mooncake_kv_object_table_bytes|process_.*", false, err, sizeof(err)));
	s = served(&(mkv_expo_opts){.openmetrics = true, .created = CREATED, .families = f});
	assert_null(strstr(s, "object_table_bytes"));
	assert_null(strstr(s, "process_"));
	assert_non_null(strstr(s, "\nmooncake_kv_objects{"));
	assert_true(check_counters(s) > 30);
	free(s);
	assert_true(mkv_family_filter_drops("process_anything", 16, f)); /* no family of ours: the regex alone */
	assert_false(mkv_family_filter_drops("mooncake_kv_objects", 19, f));
	mkv_family_filter_free(f);
	assert_non_null(f = mkv_family_filter_new("mooncake_kv_object", false, err, sizeof(err)));
	s = served(&(mkv_expo_opts){.families = f});
	char *plain = served(NULL);
	assert_string_equal(s, plain); /* a prefix is no match */
	free(s);
	free(plain);
	mkv_family_filter_free(f);
	assert_false(mkv_family_filter_drops("mooncake_kv_objects", 19, NULL));

	assert_null(mkv_family_filter_new("(unclosed", false, err, sizeof(err)));
	assert_non_null(strstr(err, "at offset"));
}

static void test_accept(void **state)
{
	(void)state;
	/* Prometheus 2.42's default */
	assert_true(
		mkv_expo_wants_openmetrics("application/openmetrics-text;version=1.0.0,application/"
					   "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;"
					   "q=0.1"));
	assert_true(mkv_expo_wants_openmetrics("text/plain;q=0.5, application/openmetrics-text; q=0.9"));
	assert_false(mkv_expo_wants_openmetrics("application/openmetrics-text;q=0, text/plain"));
	assert_false(mkv_expo_wants_openmetrics("text/plain;version=0.0.4"));
	assert_false(mkv_expo_wants_openmetrics("*/*"));
	assert_false(mkv_expo_wants_openmetrics(NULL));
}

#define PROTO "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

/* The protobuf exposition when Accept prefers it, by q, its parameters all
 * there. */
static void test_accept_protobuf(void **state)
{
	(void)state;
	/* Prometheus 2.42 with --enable-feature=native-histograms */
	assert_true(mkv_expo_wants_protobuf(PROTO
					    ",application/openmetrics-text;version=1.0.0;q=0.8,application/"
					    "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/"
					    "*;q=0.1"));
	/* and without: no protobuf */
	assert_false(mkv_expo_wants_protobuf(
		"application/openmetrics-text;version=1.0.0,application/"
		"openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
	/* q decides, not the order; equal q: the first listed */
	assert_false(mkv_expo_wants_protobuf(PROTO ";q=0.5,text/plain;q=0.9"));
	assert_true(mkv_expo_wants_protobuf("text/plain;q=0.4, " PROTO ";q=0.5"));
	assert_true(mkv_expo_wants_protobuf(PROTO ";q=0.5,text/plain;q=0.5"));
	assert_false(mkv_expo_wants_protobuf("text/plain;q=0.5," PROTO ";q=0.5"));
	assert_false(mkv_expo_wants_protobuf(PROTO ";q=0"));
	/* spaces and case as HTTP allows */
	assert_true(mkv_expo_wants_protobuf("Application/Vnd.Google.Protobuf; proto=io.prometheus.client.MetricFamily; "
					    "encoding=delimited; q=1.0, text/plain; q=0.9"));
	/* another message or encoding is not ours */
	assert_false(mkv_expo_wants_protobuf(
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text"));
	assert_false(mkv_expo_wants_protobuf("application/vnd.google.protobuf;encoding=delimited"));
	assert_false(mkv_expo_wants_protobuf(NULL));
	assert_false(mkv_expo_wants_protobuf(""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_openmetrics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_filters, setup, teardown),
		cmocka_unit_test(test_accept),
		cmocka_unit_test(test_accept_protobuf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
