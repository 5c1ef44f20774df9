/* SPDX-License-Identifier: Apache-2.0 */
/* The status body parser and what successive polls mean
 * (exporter/core/master/master_status.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "kv_master_status.h"

#include <cmocka.h>
struct parse_case {
	const char *name, *body;
	enum mkv_poll_error want;
};

static const struct parse_case parse_cases[] = {
	{"spec body",
	 "{\"enabled\":true,\"published_batches\":10,\"published_events\":21,\"dropped_events\":0,\"skipped_keyless_"
	 "events\":4}",
	 MKV_POLL_OK},
	{"upstream name",
	 "{\"enabled\":true,\"published_batches\":10,\"published_events\":21,\"dropped_events\":0,\"skipped_unparsed_"
	 "keys\":4}",
	 MKV_POLL_OK},
	{"extra fields",
	 "{\"enabled\":false,\"published_batches\":0,\"published_events\":0,\"dropped_events\":0,\"skipped_keyless_"
	 "events\":0,\"x\":[1]}",
	 MKV_POLL_OK},
	{"u64 near int64 max",
	 "{\"enabled\":true,\"published_batches\":9223372036854775807,\"published_events\":1,\"dropped_events\":0,"
	 "\"skipped_keyless_events\":0}",
	 MKV_POLL_OK},
	{"above int64",
	 "{\"enabled\":true,\"published_batches\":9223372036854775808,\"published_events\":1,\"dropped_events\":0,"
	 "\"skipped_keyless_events\":0}",
	 MKV_POLL_PARSE},
	{"missing dropped",
	 "{\"enabled\":true,\"published_batches\":1,\"published_events\":1,\"skipped_keyless_events\":0}",
	 MKV_POLL_FIELD},
	{"missing skipped", "{\"enabled\":true,\"published_batches\":1,\"published_events\":1,\"dropped_events\":0}",
	 MKV_POLL_FIELD},
	/* a status that lacks a field is no answer, whatever else it holds:
	 * it decides no dialect (docs/guide.md, "Which dialect a master speaks") */
	{"main without enabled",
	 "{\"published_batches\":1,\"published_events\":1,\"dropped_events\":0,\"skipped_unparsed_keys\":0}",
	 MKV_POLL_FIELD},
	{"the guide without published_events",
	 "{\"enabled\":true,\"published_batches\":1,\"dropped_events\":0,\"skipped_keyless_events\":0}",
	 MKV_POLL_FIELD},
	{"conductor without its skipped counter",
	 "{\"enabled\":true,\"published_batches\":1,\"published_events\":1,\"dropped_events\":0,"
	 "\"invalid_event_hashes\":0}",
	 MKV_POLL_FIELD},
	{"unknown fields only", "{\"queue_depth\":4,\"healthy\":true}", MKV_POLL_FIELD},
	{"empty object", "{}", MKV_POLL_FIELD},
	{"skipped counter null",
	 "{\"enabled\":true,\"published_batches\":1,\"published_events\":1,\"dropped_events\":0,"
	 "\"skipped_unparsed_keys\":null}",
	 MKV_POLL_FIELD},
	{"enabled as int",
	 "{\"enabled\":1,\"published_batches\":1,\"published_events\":1,\"dropped_events\":0,\"skipped_keyless_"
	 "events\":0}",
	 MKV_POLL_FIELD},
	{"count as string",
	 "{\"enabled\":true,\"published_batches\":\"1\",\"published_events\":1,\"dropped_events\":0,\"skipped_keyless_"
	 "events\":0}",
	 MKV_POLL_FIELD},
	{"negative count",
	 "{\"enabled\":true,\"published_batches\":-1,\"published_events\":1,\"dropped_events\":0,\"skipped_keyless_"
	 "events\":0}",
	 MKV_POLL_FIELD},
	{"float count",
	 "{\"enabled\":true,\"published_batches\":1.5,\"published_events\":1,\"dropped_events\":0,\"skipped_keyless_"
	 "events\":0}",
	 MKV_POLL_FIELD},
	{"array", "[1,2]", MKV_POLL_PARSE},
	{"truncated", "{\"enabled\":tr", MKV_POLL_PARSE},
	{"html", "<html>503</html>", MKV_POLL_PARSE},
	{"empty", "", MKV_POLL_PARSE},
	{"duplicate keys",
	 "{\"enabled\":true,\"enabled\":false,\"published_batches\":1,\"published_events\":1,\"dropped_events\":0,"
	 "\"skipped_keyless_events\":0}",
	 MKV_POLL_PARSE},
};

static void test_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		kv_master_status st;
		print_message("case: %s\n", parse_cases[i].name);
		assert_string_equal(
			mkv_poll_error_name(kv_master_parse(parse_cases[i].body, strlen(parse_cases[i].body), &st)),
			mkv_poll_error_name(parse_cases[i].want));
	}
	kv_master_status st;
	const char *b = parse_cases[1].body;
	assert_int_equal(kv_master_parse(b, strlen(b), &st), MKV_POLL_OK);
	assert_true(st.enabled);
	assert_int_equal(st.published_batches, 10);
	assert_int_equal(st.published_events, 21);
	assert_int_equal(st.skipped_unparsed_keys, 4);
	assert_false(st.has_keyless);
}

static kv_master_status S(uint64_t batches, uint64_t events, uint64_t dropped)
{
	return (kv_master_status){.enabled = true,
				  .published_batches = batches,
				  .published_events = events,
				  .dropped_events = dropped,
				  .has_unparsed = true};
}

static const kv_stream_pos no_stream = {0};

static void test_restarts_and_standby(void **state)
{
	(void)state;
	kv_master m = {0};
	kv_master_status s = S(10, 100, 0);
	kv_master_record(&m, 1000, 0.01, MKV_POLL_OK, 200, &s, &no_stream);
	assert_true(m.polled && m.up && m.have_status && !m.standby);
	assert_int_equal(m.last_sequence, 10);
	s = S(20, 200, 5);
	kv_master_record(&m, 1005, 0.01, MKV_POLL_OK, 200, &s, &no_stream);
	assert_int_equal(m.loss.restarts, 0);
	assert_int_equal(m.last_sequence, 25);
	s = S(1, 5, 0); /* counters went back: the master restarted */
	kv_master_record(&m, 1010, 0.01, MKV_POLL_OK, 200, &s, &no_stream);
	assert_int_equal(m.loss.restarts, 1);
	assert_int_equal(m.status.published_events, 5);
	/* 503: standby, reachable, not an error; the last counters stay */
	kv_master_record(&m, 1015, 0.01, MKV_POLL_HTTP_STATUS, 503, NULL, &no_stream);
	assert_true(m.up && m.standby);
	assert_int_equal(m.poll_errors[MKV_POLL_HTTP_STATUS], 0);
	/* failures are counted by reason and take the master down */
	kv_master_record(&m, 1020, 2.0, MKV_POLL_TIMEOUT, 0, NULL, &no_stream);
	kv_master_record(&m, 1025, 0.0, MKV_POLL_CONNECT, 0, NULL, &no_stream);
	kv_master_record(&m, 1030, 0.1, MKV_POLL_HTTP_STATUS, 500, NULL, &no_stream);
	kv_master_record(&m, 1035, 0.1, MKV_POLL_PARSE, 200, NULL, &no_stream);
	assert_false(m.up);
	assert_false(m.standby);
	assert_int_equal(m.poll_errors[MKV_POLL_TIMEOUT], 1);
	assert_int_equal(m.poll_errors[MKV_POLL_CONNECT], 1);
	assert_int_equal(m.poll_errors[MKV_POLL_HTTP_STATUS], 1);
	assert_int_equal(m.poll_errors[MKV_POLL_PARSE], 1);
	assert_int_equal(m.last_poll_time, 1035);
	assert_true(m.have_status); /* the last good counters are still shown */
}

/* The dialect from the status's fields (docs/guide.md, "Which dialect a
 * master speaks"): Mooncake main's exact set is the object dialect
 * (master_admin_service.cpp, HttpKvEventsStatusResponse, at 3b5a594 and
 * v0.3.12); the guide's set (main since PR #3818), dev/conductor's six
 * (19ffa6e: main's five and invalid_event_hashes), or any other set is the
 * media dialect; a set that lacks a field is no answer (test_parse). */
#define COUNTERS "\"enabled\":true,\"published_batches\":1,\"published_events\":3,\"dropped_events\":0"
static void test_dialect_from_fields(void **state)
{
	(void)state;
	static const struct {
		const char *name, *body;
		enum mkv_dialect want;
	} cases[] = {
		{"main 3b5a594 / v0.3.12", "{" COUNTERS ",\"skipped_unparsed_keys\":2}", MKV_DIALECT_OBJECT},
		{"main, publisher off",
		 "{\"enabled\":false,\"published_batches\":0,\"published_events\":0,\"dropped_events\":0,"
		 "\"skipped_unparsed_keys\":0}",
		 MKV_DIALECT_OBJECT},
		{"main, another field order",
		 "{\"skipped_unparsed_keys\":2,\"dropped_events\":0,\"published_events\":3,\"published_batches\":1,"
		 "\"enabled\":true}",
		 MKV_DIALECT_OBJECT},
		{"the guide (main since #3818)", "{" COUNTERS ",\"skipped_keyless_events\":0}", MKV_DIALECT_MEDIA},
		{"dev/conductor 19ffa6e", "{" COUNTERS ",\"skipped_unparsed_keys\":2,\"invalid_event_hashes\":0}",
		 MKV_DIALECT_MEDIA},
		{"the guide and invalid_event_hashes",
		 "{" COUNTERS ",\"skipped_keyless_events\":0,\"invalid_event_hashes\":0}", MKV_DIALECT_MEDIA},
		{"both skipped counters", "{" COUNTERS ",\"skipped_unparsed_keys\":2,\"skipped_keyless_events\":0}",
		 MKV_DIALECT_MEDIA},
		{"main and an unknown field", "{" COUNTERS ",\"skipped_unparsed_keys\":2,\"something_new\":1}",
		 MKV_DIALECT_MEDIA},
		{"main and an unknown null", "{" COUNTERS ",\"skipped_unparsed_keys\":2,\"x\":null}",
		 MKV_DIALECT_MEDIA},
		{"the guide and an unknown field", "{" COUNTERS ",\"skipped_keyless_events\":0,\"queue_depth\":4}",
		 MKV_DIALECT_MEDIA},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kv_master_status st;
		print_message("case: %s\n", cases[i].name);
		assert_int_equal(kv_master_parse(cases[i].body, strlen(cases[i].body), &st), MKV_POLL_OK);
		assert_string_equal(mkv_dialect_name(st.dialect), mkv_dialect_name(cases[i].want));
	}
	kv_master_status st;
	assert_int_equal(kv_master_parse(cases[4].body, strlen(cases[4].body), &st), MKV_POLL_OK);
	assert_true(st.has_invalid_hashes);
}

/* What a poll outcome tells of the publisher (issue 21): absent for a
 * standby, a master down or unreachable, or enabled=false; a bad answer
 * tells nothing. */
static void test_publisher_seen(void **state)
{
	(void)state;
	kv_master_status on = S(1, 1, 0), off = on;
	off.enabled = false;
	assert_int_equal(kv_master_publisher_seen(MKV_POLL_OK, 200, &on), KV_PUBLISHER_PUBLISHING);
	assert_int_equal(kv_master_publisher_seen(MKV_POLL_OK, 200, &off), KV_PUBLISHER_ABSENT);
	assert_int_equal(kv_master_publisher_seen(MKV_POLL_HTTP_STATUS, 503, NULL), KV_PUBLISHER_ABSENT);
	assert_int_equal(kv_master_publisher_seen(MKV_POLL_CONNECT, 0, NULL), KV_PUBLISHER_ABSENT);
	assert_int_equal(kv_master_publisher_seen(MKV_POLL_TIMEOUT, 0, NULL),
			 KV_PUBLISHER_UNKNOWN); /* slow is not gone */
	assert_int_equal(kv_master_publisher_seen(MKV_POLL_HTTP_STATUS, 500, NULL), KV_PUBLISHER_UNKNOWN);
	assert_int_equal(kv_master_publisher_seen(MKV_POLL_PARSE, 200, NULL), KV_PUBLISHER_UNKNOWN);
	assert_int_equal(kv_master_publisher_seen(MKV_POLL_FIELD, 200, NULL), KV_PUBLISHER_UNKNOWN);
	assert_int_equal(kv_master_publisher_seen(MKV_POLL_BODY_TOO_LARGE, 200, NULL), KV_PUBLISHER_UNKNOWN);
}

static void test_skipped_fields_kept_apart(void **state)
{
	(void)state;
	kv_master_status st;
	const char *up = "{\"enabled\":true,\"published_batches\":1,\"published_events\":3,\"dropped_events\":0,"
			 "\"skipped_unparsed_keys\":2}";
	assert_int_equal(kv_master_parse(up, strlen(up), &st), MKV_POLL_OK);
	assert_true(st.has_unparsed && !st.has_keyless);
	assert_int_equal(st.skipped_unparsed_keys, 2);
	const char *both = "{\"enabled\":true,\"published_batches\":1,\"published_events\":3,\"dropped_events\":0,"
			   "\"skipped_unparsed_keys\":2,\"skipped_keyless_events\":7}";
	assert_int_equal(kv_master_parse(both, strlen(both), &st), MKV_POLL_OK);
	assert_true(st.has_unparsed && st.has_keyless);
	assert_int_equal(st.skipped_keyless_events, 7);
	assert_int_equal(st.skipped_unparsed_keys, 2);
}

static void test_drop_ratio_window(void **state)
{
	(void)state;
	kv_master m = {0};
	kv_master_status s = S(0, 0, 0);
	kv_master_record(&m, 0, 0, MKV_POLL_OK, 200, &s, &no_stream);
	assert_true(m.drop_ratio == 0.0);
	/* 900 published and 100 dropped in the first 30 s */
	s = S(0, 900, 100);
	kv_master_record(&m, 30, 0, MKV_POLL_OK, 200, &s, &no_stream);
	assert_true(m.drop_ratio > 0.0999 && m.drop_ratio < 0.1001);
	/* then 60 s without drops: the window forgets them */
	for (int t = 35; t <= 95; t += 5) {
		s.published_events += 1000;
		kv_master_record(&m, t, 0, MKV_POLL_OK, 200, &s, &no_stream);
	}
	assert_true(m.drop_ratio == 0.0);
	/* a restart starts a new window */
	s = S(0, 10, 10);
	kv_master_record(&m, 100, 0, MKV_POLL_OK, 200, &s, &no_stream);
	assert_int_equal(m.loss.restarts, 1);
	assert_true(m.drop_ratio == 0.0);
	s = S(0, 20, 20);
	kv_master_record(&m, 105, 0, MKV_POLL_OK, 200, &s, &no_stream);
	assert_true(m.drop_ratio == 0.5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_restarts_and_standby),
		cmocka_unit_test(test_skipped_fields_kept_apart),
		cmocka_unit_test(test_dialect_from_fields),
		cmocka_unit_test(test_publisher_seen),
		cmocka_unit_test(test_drop_ratio_window),
	};
	return cmocka_run_group_tests_name("master_status", tests, NULL, NULL);
}
