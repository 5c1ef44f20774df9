/* SPDX-License-Identifier: Apache-2.0 */
/* A member's connection and dialect, owned by the store and driven through
 * the public interface alone (include/mooncake_kv/store.h), as the daemon
 * drives it: the subscriber's events in (connected, disconnected, a message
 * received), the store's decisions out (a reconnect or not, connected now,
 * ready, the dialect to read in) and what a scrape shows of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/store_fixture.h"

#define MS ((int64_t)(T0 * 1000))

/* The value of the one sample whose text starts with series, -1 when absent. */
static double sample(mkv_store *s, const char *series)
{
	mkv_buf out = render(s);
	const char *at = strstr(out.data, series);
	double v = at ? strtod(at + strlen(series), NULL) : -1;
	mkv_buf_free(&out);
	return v;
}

#define CONNECTED(m)    "mooncake_kv_subscriber_connected{source=\"m\"" m "} "
#define RECONNECTS(m)   "mooncake_kv_subscriber_reconnects_total{source=\"m\"" m "} "
#define TENANT          "source=\"m\",backend_id=\"" B "\",tenant_id=\"default\""
#define RECONNECT_STALE "mooncake_kv_state_stale_reason{" TENANT ",reason=\"reconnect\"} "

/* One member through its connection's life: the first handshake is no
 * reconnect; a drop is seen at once; the next handshake is one, counted. */
static void test_one_member_connects_drops_reconnects(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 1, false);
	assert_non_null(s);
	mkv_poll_news n;
	poll(&f, 0, 0, NULL, &n);
	assert_true(n.leads);
	assert_false(mkv_store_is_connected(s, 0));
	assert_false(mkv_store_ready(s)); /* polled, serving, never connected */
	assert_true(sample(s, CONNECTED("")) == 0);

	assert_false(mkv_store_note_connect(s, 0, MS)); /* the first connection */
	assert_true(mkv_store_is_connected(s, 0));
	assert_true(mkv_store_ready(s));
	assert_true(sample(s, CONNECTED("")) == 1);
	assert_true(sample(s, RECONNECTS("")) == 0);

	mkv_store_note_disconnect(s, 0);
	assert_false(mkv_store_is_connected(s, 0));
	assert_true(mkv_store_ready(s)); /* it was connected once: a drop does not take it out */
	assert_true(sample(s, CONNECTED("")) == 0);
	assert_true(sample(s, RECONNECTS("")) == 0);

	assert_true(mkv_store_note_connect(s, 0, MS + 1000)); /* back: a reconnect */
	assert_true(mkv_store_is_connected(s, 0));
	assert_true(sample(s, CONNECTED("")) == 1);
	assert_true(sample(s, RECONNECTS("")) == 1);
	mkv_store_note_disconnect(s, 0);
	assert_true(mkv_store_note_connect(s, 0, MS + 2000));
	assert_true(sample(s, RECONNECTS("")) == 2);
	mkv_store_free(s);
}

/* A reconnect is judged by what the stream shows around it: a gap between
 * the drop and the next message turns the tenants stale for `reconnect`;
 * a stream that follows on does not. */
static void test_reconnect_judged_by_the_stream(void **state)
{
	(void)state;
	for (int lost = 0; lost <= 1; lost++) {
		fixture f;
		mkv_store *s = make(&f, 1, false);
		mkv_poll_news n;
		poll(&f, 0, 0, NULL, &n);
		mkv_store_note_connect(s, 0, MS);
		assert_int_equal(put(s, 0, 1, 0, 2, NULL), MKV_OK);
		mkv_store_note_disconnect(s, 0);
		assert_true(mkv_store_note_connect(s, 0, MS + 500));
		mkv_ingest_report rep;
		assert_int_equal(put(s, 0, lost ? 4 : 2, 2, 1, &rep), MKV_OK);
		assert_int_equal(rep.verdict, lost ? MKV_SEQ_GAP : MKV_SEQ_NEXT);
		assert_true(sample(s, RECONNECT_STALE) == (lost ? 1 : -1)); /* a reason not held is not shown */
		mkv_store_free(s);
	}
}

/* Two masters: each member's connection is its own; the source is ready
 * once the serving one connected, a standby needing no connection; after a
 * failover, not until the new leader connected. */
static void test_members_apart_and_readiness(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 2, false);
	mkv_poll_news n;
	poll(&f, 0, 0, "serving\n", &n);
	poll(&f, 1, 0, "standby\n", &n);
	assert_false(mkv_store_ready(s));
	assert_false(mkv_store_note_connect(s, 1, MS)); /* the standby's first: not member 0's */
	assert_false(mkv_store_ready(s));               /* the leader has not connected */
	assert_false(mkv_store_is_connected(s, 0));
	assert_false(mkv_store_note_connect(s, 0, MS));
	assert_true(mkv_store_ready(s));
	mkv_store_note_disconnect(s, 1);
	assert_true(mkv_store_is_connected(s, 0));
	assert_false(mkv_store_is_connected(s, 1));
	assert_true(sample(s, CONNECTED(",member=\"127.0.0.1:1\"")) == 1);
	assert_true(sample(s, CONNECTED(",member=\"127.0.0.1:2\"")) == 0);
	mkv_store_free(s);

	/* the leader moves to a member that never connected */
	s = make(&f, 2, false);
	poll(&f, 0, 0, "serving\n", &n);
	poll(&f, 1, 0, "standby\n", &n);
	mkv_store_note_connect(s, 0, MS);
	assert_true(mkv_store_ready(s));
	poll_view(&f, 0, 0, "standby\n", 4, &n);
	poll_view(&f, 1, 0, "serving\n", 4, &n);
	assert_int_equal(mkv_store_leader(s), 1);
	assert_false(mkv_store_ready(s));
	assert_false(mkv_store_note_connect(s, 1, MS + 1000));
	assert_true(mkv_store_ready(s));
	mkv_store_free(s);
}

/* The dialect the ingest thread waits for: undecided until the status
 * answer; once a poll decided it, a give-up changes nothing (the waiter
 * that the decision woke logs nothing); with no answer, the give-up
 * decides the guide's.  Decided stays decided. */
static void test_dialect_decided_once(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 1, false);
	mkv_dialect_info d;
	mkv_store_dialect(s, 0, &d);
	assert_false(d.decided);
	mkv_poll_news n;
	poll(&f, 0, 0, NULL, &n);
	assert_int_equal(n.dialect_news, MKV_DIALECT_DECIDED);
	assert_true(n.dialect.decided);
	mkv_store_dialect(s, 0, &d);
	assert_true(d.decided);
	assert_string_equal(d.name, "object");
	assert_int_equal(mkv_store_dialect_give_up(s, 0, &d), MKV_DIALECT_SAME);
	assert_string_equal(d.name, "object");
	assert_string_equal(d.basis, "status_fields");
	mkv_store_free(s);

	s = make(&f, 1, false); /* the master does not answer in time */
	assert_int_equal(mkv_store_dialect_give_up(s, 0, &d), MKV_DIALECT_DECIDED);
	assert_true(d.decided);
	assert_string_equal(d.name, "media");
	assert_string_equal(d.basis, "no_status_answer");
	assert_int_equal(mkv_store_dialect_give_up(s, 0, &d), MKV_DIALECT_SAME);
	mkv_store_note_disconnect(s, 0); /* a connection's life does not undecide it */
	mkv_store_note_connect(s, 0, MS);
	mkv_store_dialect(s, 0, &d);
	assert_true(d.decided);
	mkv_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_member_connects_drops_reconnects),
		cmocka_unit_test(test_reconnect_judged_by_the_stream),
		cmocka_unit_test(test_members_apart_and_readiness),
		cmocka_unit_test(test_dialect_decided_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
