/* SPDX-License-Identifier: Apache-2.0 */
/* The choice of a member's dialect (kv_dialect.h): a flag fixes it, auto
 * waits for the master's status fields, falls back to the guide's without
 * them, and a later answer that disagrees with what events were read in is
 * a switch.  Then the same through a store (its public interface), as the
 * daemon drives it: every status shape the publishers answer, one that
 * lacks a field, and a master upgraded in place (docs/guide.md, "Which
 * dialect a master speaks"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_dialect.h"

#include <cmocka.h>

#include "support/store_fixture.h"

static void test_flag_fixes_it(void **state)
{
	(void)state;
	kv_dialect_choice c;
	kv_dialect_init(&c, MKV_DIALECT_OBJECT, true);
	assert_true(c.decided && c.fixed);
	assert_int_equal(c.dialect, MKV_DIALECT_OBJECT);
	assert_int_equal(c.basis, KV_DIALECT_BY_FLAG);
	assert_int_equal(kv_dialect_observe(&c, MKV_DIALECT_MEDIA, true), MKV_DIALECT_SAME);
	assert_int_equal(kv_dialect_give_up(&c), MKV_DIALECT_SAME);
	assert_int_equal(c.dialect, MKV_DIALECT_OBJECT);
	kv_dialect_init(&c, MKV_DIALECT_MEDIA, false);
	assert_int_equal(c.dialect, MKV_DIALECT_MEDIA);
	assert_int_equal(kv_dialect_observe(&c, MKV_DIALECT_OBJECT, false), MKV_DIALECT_SAME);
}

static void test_auto_without_status_url_is_the_guide(void **state)
{
	(void)state;
	kv_dialect_choice c;
	kv_dialect_init(&c, MKV_DIALECT_AUTO, false);
	assert_true(c.decided && !c.fixed);
	assert_int_equal(c.dialect, MKV_DIALECT_MEDIA);
	assert_string_equal(kv_dialect_basis_name(c.basis), "no_status_url");
}

/* Ingest waits: the first answer decides, whichever it says. */
static void test_auto_first_answer_decides(void **state)
{
	(void)state;
	for (int d = 0; d < MKV_DIALECT__COUNT; d++) {
		kv_dialect_choice c;
		kv_dialect_init(&c, MKV_DIALECT_AUTO, true);
		assert_false(c.decided);
		assert_int_equal(kv_dialect_observe(&c, (enum mkv_dialect)d, false), MKV_DIALECT_DECIDED);
		assert_true(c.decided);
		assert_int_equal(c.dialect, d);
		assert_int_equal(c.basis, KV_DIALECT_BY_STATUS);
		assert_int_equal(kv_dialect_give_up(&c), MKV_DIALECT_SAME); /* the wait ends: nothing to do */
		assert_int_equal(kv_dialect_observe(&c, (enum mkv_dialect)d, true), MKV_DIALECT_SAME);
		assert_int_equal(c.switches, 0);
	}
}

/* No answer in time: the guide's for now; an answer that says object
 * after events were read is a switch, and back again. */
static void test_fallback_then_switch_both_ways(void **state)
{
	(void)state;
	kv_dialect_choice c;
	kv_dialect_init(&c, MKV_DIALECT_AUTO, true);
	assert_int_equal(kv_dialect_give_up(&c), MKV_DIALECT_DECIDED);
	assert_int_equal(c.dialect, MKV_DIALECT_MEDIA);
	assert_string_equal(kv_dialect_basis_name(c.basis), "no_status_answer");
	assert_int_equal(kv_dialect_observe(&c, MKV_DIALECT_OBJECT, true), MKV_DIALECT_SWITCHED);
	assert_int_equal(c.dialect, MKV_DIALECT_OBJECT);
	assert_int_equal(kv_dialect_observe(&c, MKV_DIALECT_OBJECT, true), MKV_DIALECT_SAME);
	/* the master was upgraded in place */
	assert_int_equal(kv_dialect_observe(&c, MKV_DIALECT_MEDIA, true), MKV_DIALECT_SWITCHED);
	assert_int_equal(c.dialect, MKV_DIALECT_MEDIA);
	assert_int_equal(c.switches, 2);
}

/* A fallback under which nothing was read (a standby, which publishes
 * nothing) is corrected without a switch: no figure was read wrongly. */
static void test_fallback_corrected_before_any_event(void **state)
{
	(void)state;
	kv_dialect_choice c;
	kv_dialect_init(&c, MKV_DIALECT_AUTO, true);
	kv_dialect_give_up(&c);
	assert_int_equal(kv_dialect_observe(&c, MKV_DIALECT_OBJECT, false), MKV_DIALECT_DECIDED);
	assert_int_equal(c.dialect, MKV_DIALECT_OBJECT);
	assert_int_equal(c.switches, 0);
	/* the same word as the fallback's, before any event: nothing to say */
	kv_dialect_init(&c, MKV_DIALECT_AUTO, true);
	kv_dialect_give_up(&c);
	assert_int_equal(kv_dialect_observe(&c, MKV_DIALECT_MEDIA, false), MKV_DIALECT_SAME);
	assert_int_equal(c.basis, KV_DIALECT_BY_STATUS);
}

/* --- through a store --- */

#define COUNTERS "\"enabled\":true,\"published_batches\":%u,\"published_events\":%u,\"dropped_events\":0"
/* The three publishers' status answers (docs/upstream.md): main at 3b5a594
 * and v0.3.12; the guide's, main's since PR #3818; dev/conductor at 19ffa6e. */
static const char MAIN[] = "{" COUNTERS ",\"skipped_unparsed_keys\":0}";
static const char GUIDE[] = "{" COUNTERS ",\"skipped_keyless_events\":0}";
static const char CONDUCTOR[] = "{" COUNTERS ",\"skipped_unparsed_keys\":0,\"invalid_event_hashes\":0}";

/* One poll of the member: its status answer (a format of two %u, the
 * publisher's messages), no /ha_status. */
static void answer(fixture *f, const char *fmt, unsigned batches, mkv_poll_news *n)
{
	snprintf(f->body, sizeof(f->body), fmt, batches, batches);
	mkv_poll_answers a = {.t0 = T0, .t1 = T0 + 0.01, .interval = 5, .status = ok(f->body)};
	a.ha = (mkv_answer){.err = MKV_POLL_HTTP_STATUS, .http = 404};
	a.leader = (mkv_answer){.err = MKV_POLL_CONNECT};
	mkv_store_poll_begin(f->s, 0);
	mkv_store_poll_answers(f->s, 0, &a, n);
}

static bool has(mkv_store *s, const char *line)
{
	mkv_buf out = render(s);
	char want[512];
	snprintf(want, sizeof(want), "\n%s\n", line);
	bool found = strstr(out.data, want) != NULL;
	mkv_buf_free(&out);
	return found;
}

#define OBJECTS "mooncake_kv_objects{source=\"m\",backend_id=\"" B "\",tenant_id=\"default\"} "

/* Every shape decides at the first answer, as the guide's table says; a
 * main answer with a field added is no longer main's. */
static void test_store_each_shape(void **state)
{
	(void)state;
	static const struct {
		const char *body, *want;
	} cases[] = {
		{MAIN, "object"},
		{GUIDE, "media"},
		{CONDUCTOR, "media"},
		{"{" COUNTERS ",\"skipped_unparsed_keys\":0,\"queue_depth\":0}", "media"},
		{"{" COUNTERS ",\"skipped_unparsed_keys\":0,\"skipped_keyless_events\":0}", "media"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fixture f;
		mkv_store *s = make(&f, 1, false);
		mkv_poll_news n;
		print_message("case %zu: %s\n", i, cases[i].body);
		answer(&f, cases[i].body, 0, &n);
		assert_int_equal(n.err, MKV_POLL_OK);
		assert_int_equal(n.dialect_news, MKV_DIALECT_DECIDED);
		assert_string_equal(n.dialect.name, cases[i].want);
		assert_string_equal(n.dialect.basis, "status_fields");
		mkv_store_free(s);
	}
}

/* A status that lacks a field is no answer: it decides nothing (ingest
 * keeps waiting), is counted as a field error, and when the wait ends the
 * guide's dialect is read until a valid answer says otherwise. */
static void test_store_lacking_fields(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 1, false);
	mkv_poll_news n;
	mkv_dialect_info d;
	static const char *const lacking[] = {
		"{\"published_batches\":%u,\"published_events\":%u,\"dropped_events\":0,\"skipped_unparsed_keys\":0}",
		"{" COUNTERS "}",
		"{" COUNTERS ",\"invalid_event_hashes\":0}",
	};
	for (size_t i = 0; i < sizeof(lacking) / sizeof(lacking[0]); i++) {
		answer(&f, lacking[i], 0, &n);
		assert_int_equal(n.err, MKV_POLL_FIELD);
		assert_int_equal(n.dialect_news, MKV_DIALECT_SAME);
		mkv_store_dialect(s, 0, &d);
		assert_false(d.decided);
	}
	assert_true(has(s, "mooncake_kv_master_poll_errors_total{source=\"m\",reason=\"field\"} 3"));
	assert_int_equal(mkv_store_dialect_give_up(s, 0, &d), MKV_DIALECT_DECIDED);
	assert_string_equal(d.name, "media");
	assert_string_equal(d.basis, "no_status_answer");
	assert_int_equal(put(s, 0, 1, 0, 2, NULL), MKV_OK);
	answer(&f, MAIN, 1, &n);
	assert_int_equal(n.dialect_news, MKV_DIALECT_SWITCHED);
	assert_string_equal(n.dialect.name, "object");
	assert_true(has(s, "mooncake_kv_stale_tenants{source=\"m\",reason=\"dialect\"} 1"));
	mkv_store_free(s);
}

/* One message of the member: a stored or removed event per key. */
static void events(mkv_store *s, uint64_t seq, uint64_t eid, const char *type, const char *medium, const char *key)
{
	ev_spec e;
	ev_init(&e, EV_SPEC, type, eid, B, "default", medium, key);
	msg m;
	msg_init(&m);
	msg_build(&m, seq, (int64_t)(T0 * 1000), &e, 1);
	assert_int_equal(mkv_store_ingest(s, 0, m.frames, 3, (int64_t)(T0 * 1000), NULL), MKV_OK);
	msg_destroy(&m);
}

/* A master upgraded in place: the same endpoint, a new process of the
 * other build, numbering from 1 again.  Its first answer switches the
 * member's dialect (each way: main to the guide, the guide back to main),
 * counts the restart, turns the tenants stale for the dialect, and from then
 * on a removed is read by the new build's rule. */
static void test_store_upgrade_in_place(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 1, false);
	mkv_poll_news n;
	answer(&f, MAIN, 0, &n);
	assert_string_equal(n.dialect.name, "object");
	events(s, 1, 1, "stored", "cpu", "a");
	events(s, 2, 2, "stored", "disk", "a");
	events(s, 3, 3, "removed", "cpu", "a"); /* main: the whole object */
	assert_true(has(s, OBJECTS "0"));
	answer(&f, MAIN, 3, &n);
	assert_int_equal(n.dialect_news, MKV_DIALECT_SAME);

	/* upgraded to a build of the guide: its first message, then its answer */
	events(s, 1, 1, "stored", "cpu", "b");
	answer(&f, GUIDE, 1, &n);
	assert_int_equal(n.dialect_news, MKV_DIALECT_SWITCHED);
	assert_string_equal(n.dialect.name, "media");
	assert_int_equal(n.restarts, 1);
	assert_true(has(s, "mooncake_kv_publisher_dialect{source=\"m\",member=\"127.0.0.1:1\",dialect=\"media\"} 1"));
	assert_true(has(s, "mooncake_kv_stale_tenants{source=\"m\",reason=\"dialect\"} 1"));
	events(s, 2, 2, "stored", "disk", "b");
	events(s, 3, 3, "removed", "cpu", "b"); /* the guide: that medium only */
	assert_true(has(s, OBJECTS "1"));

	/* and back: a build of main again, answering before its first message */
	answer(&f, MAIN, 0, &n);
	assert_int_equal(n.dialect_news, MKV_DIALECT_SWITCHED);
	assert_string_equal(n.dialect.name, "object");
	events(s, 1, 1, "stored", "cpu", "b");
	events(s, 2, 2, "removed", "disk", "b"); /* main: the whole object, whatever its medium */
	assert_true(has(s, OBJECTS "0"));
	mkv_dialect_info d;
	mkv_store_dialect(s, 0, &d);
	assert_string_equal(d.name, "object");
	mkv_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flag_fixes_it),
		cmocka_unit_test(test_auto_without_status_url_is_the_guide),
		cmocka_unit_test(test_auto_first_answer_decides),
		cmocka_unit_test(test_fallback_then_switch_both_ways),
		cmocka_unit_test(test_fallback_corrected_before_any_event),
		cmocka_unit_test(test_store_each_shape),
		cmocka_unit_test(test_store_lacking_fields),
		cmocka_unit_test(test_store_upgrade_in_place),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
