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
static double sample(kv_store *s, const char *series)
{
	kv_buf out = render(s);
	const char *at = strstr(out.data, series);
	double v = at ? strtod(at + strlen(series), NULL) : -1;
	kv_buf_free(&out);
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
	kv_store *s = make(&f, 1, false);
	assert_non_null(s);
	kv_poll_news n;
	poll(&f, 0, 0, NULL, &n);
	assert_true(n.leads);
	assert_false(kv_store_is_connected(s, 0));
	assert_false(kv_store_ready(s)); /* polled, serving, never connected */
	assert_true(sample(s, CONNECTED("")) == 0);

	assert_false(kv_store_connected(s, 0, MS)); /* the first connection */
	assert_true(kv_store_is_connected(s, 0));
	assert_true(kv_store_ready(s));
	assert_true(sample(s, CONNECTED("")) == 1);
	assert_true(sample(s, RECONNECTS("")) == 0);

	kv_store_disconnected(s, 0);
	assert_false(kv_store_is_connected(s, 0));
	assert_true(kv_store_ready(s)); /* it was connected once: a drop does not take it out */
	assert_true(sample(s, CONNECTED("")) == 0);
	assert_true(sample(s, RECONNECTS("")) == 0);

	assert_true(kv_store_connected(s, 0, MS + 1000)); /* back: a reconnect */
	assert_true(kv_store_is_connected(s, 0));
	assert_true(sample(s, CONNECTED("")) == 1);
	assert_true(sample(s, RECONNECTS("")) == 1);
	kv_store_disconnected(s, 0);
	assert_true(kv_store_connected(s, 0, MS + 2000));
	assert_true(sample(s, RECONNECTS("")) == 2);
	kv_store_free(s);
}

/* A reconnect is judged by what the stream shows around it: a gap between
 * the drop and the next message turns the tenants stale for `reconnect`;
 * a stream that follows on does not. */
static void test_reconnect_judged_by_the_stream(void **state)
{
	(void)state;
	for (int lost = 0; lost <= 1; lost++) {
		fixture f;
		kv_store *s = make(&f, 1, false);
		kv_poll_news n;
		poll(&f, 0, 0, NULL, &n);
		kv_store_connected(s, 0, MS);
		assert_int_equal(put(s, 0, 1, 0, 2, NULL), KV_OK);
		kv_store_disconnected(s, 0);
		assert_true(kv_store_connected(s, 0, MS + 500));
		kv_ingest_report rep;
		assert_int_equal(put(s, 0, lost ? 4 : 2, 2, 1, &rep), KV_OK);
		assert_int_equal(rep.verdict, lost ? KV_SEQ_GAP : KV_SEQ_NEXT);
		assert_true(sample(s, RECONNECT_STALE) == (lost ? 1 : -1)); /* a reason not held is not shown */
		kv_store_free(s);
	}
}

/* Two masters: each member's connection is its own; the source is ready
 * once the serving one connected, a standby needing no connection; after a
 * failover, not until the new leader connected. */
static void test_members_apart_and_readiness(void **state)
{
	(void)state;
	fixture f;
	kv_store *s = make(&f, 2, false);
	kv_poll_news n;
	poll(&f, 0, 0, "serving\n", &n);
	poll(&f, 1, 0, "standby\n", &n);
	assert_false(kv_store_ready(s));
	assert_false(kv_store_connected(s, 1, MS)); /* the standby's first: not member 0's */
	assert_false(kv_store_ready(s));            /* the leader has not connected */
	assert_false(kv_store_is_connected(s, 0));
	assert_false(kv_store_connected(s, 0, MS));
	assert_true(kv_store_ready(s));
	kv_store_disconnected(s, 1);
	assert_true(kv_store_is_connected(s, 0));
	assert_false(kv_store_is_connected(s, 1));
	assert_true(sample(s, CONNECTED(",member=\"127.0.0.1:1\"")) == 1);
	assert_true(sample(s, CONNECTED(",member=\"127.0.0.1:2\"")) == 0);
	kv_store_free(s);

	/* the leader moves to a member that never connected */
	s = make(&f, 2, false);
	poll(&f, 0, 0, "serving\n", &n);
	poll(&f, 1, 0, "standby\n", &n);
	kv_store_connected(s, 0, MS);
	assert_true(kv_store_ready(s));
	poll_view(&f, 0, 0, "standby\n", 4, &n);
	poll_view(&f, 1, 0, "serving\n", 4, &n);
	assert_int_equal(kv_store_leader(s), 1);
	assert_false(kv_store_ready(s));
	assert_false(kv_store_connected(s, 1, MS + 1000));
	assert_true(kv_store_ready(s));
	kv_store_free(s);
}

/* The dialect the ingest thread waits for: undecided until the status
 * answer; once a poll decided it, a give-up changes nothing (the waiter
 * that the decision woke logs nothing); with no answer, the give-up
 * decides the guide's.  Decided stays decided. */
static void test_dialect_decided_once(void **state)
{
	(void)state;
	fixture f;
	kv_store *s = make(&f, 1, false);
	kv_dialect_info d;
	kv_store_dialect(s, 0, &d);
	assert_false(d.decided);
	kv_poll_news n;
	poll(&f, 0, 0, NULL, &n);
	assert_int_equal(n.dialect_news, KV_DIALECT_DECIDED);
	assert_true(n.dialect.decided);
	kv_store_dialect(s, 0, &d);
	assert_true(d.decided);
	assert_string_equal(d.name, "object");
	assert_int_equal(kv_store_dialect_give_up(s, 0, &d), KV_DIALECT_SAME);
	assert_string_equal(d.name, "object");
	assert_string_equal(d.basis, "status_fields");
	kv_store_free(s);

	s = make(&f, 1, false); /* the master does not answer in time */
	assert_int_equal(kv_store_dialect_give_up(s, 0, &d), KV_DIALECT_DECIDED);
	assert_true(d.decided);
	assert_string_equal(d.name, "media");
	assert_string_equal(d.basis, "no_status_answer");
	assert_int_equal(kv_store_dialect_give_up(s, 0, &d), KV_DIALECT_SAME);
	kv_store_disconnected(s, 0); /* a connection's life does not undecide it */
	kv_store_connected(s, 0, MS);
	kv_store_dialect(s, 0, &d);
	assert_true(d.decided);
	kv_store_free(s);
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
