/* SPDX-License-Identifier: Apache-2.0 */
/* The core driven through its public interface alone (include/mooncake_kv/),
 * as the daemon drives it: frames and the master's answers into a store,
 * and the scrape's text out.  Nothing here includes a core-private header
 * (reconciliation runs: test_reconcile_run.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/store_fixture.h"

static void test_frames_and_status(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 1, false);
	assert_non_null(s);
	mkv_dialect_info d;
	mkv_store_dialect(s, 0, &d);
	assert_false(d.decided); /* auto with a status URL: the answer tells */
	mkv_store_note_connect(s, 0, (int64_t)(T0 * 1000));
	assert_false(mkv_store_ready(s)); /* not polled yet */

	mkv_poll_news n;
	poll(&f, 0, 0, NULL, &n);
	assert_int_equal(n.err, MKV_POLL_OK);
	assert_int_equal(n.change, MKV_POLL_RECOVERED);
	assert_int_equal(n.dialect_news, MKV_DIALECT_DECIDED);
	assert_string_equal(n.dialect.name, "object");
	assert_true(n.leads); /* no /ha_status: a 200 serves */
	assert_int_equal(mkv_store_leader(s), 0);
	assert_true(mkv_store_ready(s));

	mkv_ingest_report rep;
	assert_int_equal(put(s, 0, 1, 0, 3, &rep), MKV_OK);
	assert_int_equal(rep.verdict, MKV_SEQ_FIRST);
	assert_int_equal(rep.events, 3);
	assert_int_equal(put(s, 0, 4, 3, 2, &rep), MKV_OK);
	assert_int_equal(rep.verdict, MKV_SEQ_GAP);
	assert_int_equal(rep.missing, 2);
	assert_int_equal(mkv_store_breaks(s), 1);

	mkv_buf out = render(s);
	const char *text = out.data;
	assert_non_null(strstr(text, "mooncake_kv_objects{source=\"m\",backend_id=\"" B "\",tenant_id=\"default\"} 5"));
	assert_non_null(strstr(text, "mooncake_kv_sequence_gaps_total{source=\"m\"} 1"));
	mkv_buf_free(&out);

	/* the master stops answering: said once */
	mkv_poll_answers dead = {.t0 = T0 + 1, .t1 = T0 + 1, .interval = 5, .status = {.err = MKV_POLL_CONNECT}};
	mkv_store_poll_begin(s, 0);
	mkv_store_poll_answers(s, 0, &dead, &n);
	assert_int_equal(n.change, MKV_POLL_FAILED);
	assert_false(n.leads);
	mkv_store_poll_answers(s, 0, &dead, &n);
	assert_int_equal(n.change, MKV_POLL_SAME);
	mkv_store_free(s);
}

/* The shell times each scrape's hold of the store's lock; the next scrape
 * shows them as a histogram of the source. */
static void test_scrape_lock_hold(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 1, false);
	assert_non_null(s);
	mkv_buf out = render(s); /* no hold timed yet: an empty histogram */
	assert_non_null(strstr(out.data, "mooncake_kv_scrape_lock_hold_seconds_count{source=\"m\"} 0\n"));
	mkv_buf_free(&out);
	mkv_scrape_store_held(s, 0.0003);
	mkv_scrape_store_held(s, 0.2);
	out = render(s);
	const char *t = out.data;
	assert_non_null(strstr(t, "mooncake_kv_scrape_lock_hold_seconds_bucket{source=\"m\",le=\"0.00025\"} 0\n"));
	assert_non_null(strstr(t, "mooncake_kv_scrape_lock_hold_seconds_bucket{source=\"m\",le=\"0.0005\"} 1\n"));
	assert_non_null(strstr(t, "mooncake_kv_scrape_lock_hold_seconds_bucket{source=\"m\",le=\"0.1\"} 1\n"));
	assert_non_null(strstr(t, "mooncake_kv_scrape_lock_hold_seconds_bucket{source=\"m\",le=\"0.25\"} 2\n"));
	assert_non_null(strstr(t, "mooncake_kv_scrape_lock_hold_seconds_bucket{source=\"m\",le=\"+Inf\"} 2\n"));
	assert_non_null(strstr(t, "mooncake_kv_scrape_lock_hold_seconds_sum{source=\"m\"} 0.2003\n"));
	assert_non_null(strstr(t, "mooncake_kv_scrape_lock_hold_seconds_count{source=\"m\"} 2\n"));
	mkv_buf_free(&out);
	mkv_store_free(s);
}

static void test_failover(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 2, false);
	mkv_poll_news n;
	poll(&f, 0, 0, "serving\n", &n);
	assert_true(n.leads);
	assert_int_equal(n.leader, 0);
	poll(&f, 1, 0, "standby\n", &n);
	assert_false(n.leads);
	assert_int_equal(mkv_store_leader(s), 0);
	mkv_store_note_connect(s, 0, (int64_t)(T0 * 1000));
	assert_true(mkv_store_ready(s)); /* a standby has no publisher to connect to */

	/* member 0 stands down, member 1 takes over: the masters' view moves */
	poll_view(&f, 0, 0, "standby\n", 4, &n);
	unsigned news = n.leadership; /* whichever poll shows the move first says it */
	poll_view(&f, 1, 0, "serving\n", 4, &n);
	news |= n.leadership;
	assert_true(news & MKV_LEAD_FAILOVER);
	assert_int_equal(n.leader, 1);
	assert_true(n.leads);
	assert_int_equal(mkv_store_leader(s), 1);
	assert_false(mkv_store_ready(s)); /* the new leader has not connected */
	mkv_store_free(s);
}

static void test_streamed_answers(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 1, false);
	mkv_poll_news n;
	poll(&f, 0, 0, NULL, &n);
	static const char metrics[] = "# TYPE master_key_count gauge\nmaster_key_count 42\n"
				      "mooncake_tenant_quota_reject_total{tenant_id=\"t1\",reason=\"quota\"} 3\n";
	mkv_store_metrics_reset(s, 0);
	for (size_t i = 0; i + 1 < sizeof(metrics); i += 7) /* in pieces */
		assert_int_equal(mkv_store_metrics_feed(s, 0, metrics + i,
							sizeof(metrics) - 1 - i < 7 ? sizeof(metrics) - 1 - i : 7),
				 MKV_OK);
	mkv_read_news rn;
	mkv_store_metrics_end(s, 0, MKV_POLL_OK, &rn);
	assert_int_equal(rn.change, MKV_POLL_SAME);
	mkv_store_quotas_reset(s, 0);
	mkv_store_quotas_end(s, 0, MKV_POLL_HTTP_STATUS, 503, &rn); /* stood down: nothing said */
	assert_false(rn.quotas_off);
	assert_int_equal(rn.change, MKV_POLL_SAME);
	mkv_store_quotas_end(s, 0, MKV_POLL_HTTP_STATUS, 409, &rn); /* quotas off: said once, and no failure */
	assert_true(rn.quotas_off);
	assert_int_equal(rn.change, MKV_POLL_SAME);
	mkv_store_quotas_end(s, 0, MKV_POLL_HTTP_STATUS, 409, &rn);
	assert_false(rn.quotas_off);
	mkv_buf out = render(s);
	const char *text = out.data;
	assert_non_null(strstr(text, "mooncake_kv_master_keys{source=\"m\"} 42"));
	assert_non_null(strstr(
		text, "mooncake_kv_tenant_quota_rejects_total{source=\"m\",tenant_id=\"t1\",reason=\"quota\"} 3"));
	mkv_buf_free(&out);
	mkv_store_free(s);
}

/* A read of /metrics or the quotas that fails is told once (and counted
 * each time), its recovery once; a body the store cannot read is a failure
 * as much as a timeout is. */
static void test_failed_reads_told_once(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 1, false);
	mkv_poll_news n;
	poll(&f, 0, 0, NULL, &n);
	mkv_read_news rn;
	mkv_store_metrics_reset(s, 0);
	mkv_store_metrics_end(s, 0, MKV_POLL_TIMEOUT, &rn);
	assert_int_equal(rn.change, MKV_POLL_FAILED);
	assert_int_equal(rn.err, MKV_POLL_TIMEOUT);
	mkv_store_metrics_reset(s, 0);
	mkv_store_metrics_end(s, 0, MKV_POLL_TIMEOUT, &rn);
	assert_int_equal(rn.change, MKV_POLL_SAME); /* still failing: said already */
	assert_int_equal(keys_read(s, 0, 7, NULL).change, MKV_POLL_RECOVERED);

	static const char good[] = "{\"success\":true,\"data\":[]}";
	mkv_store_quotas_reset(s, 0);
	assert_int_equal(mkv_store_quotas_feed(s, 0, good, sizeof(good) - 1), MKV_OK);
	mkv_store_quotas_end(s, 0, MKV_POLL_OK, 200, &rn);
	assert_int_equal(rn.change, MKV_POLL_SAME);
	static const char bad[] = "{\"success\":true,\"data\":[";
	mkv_store_quotas_reset(s, 0);
	assert_int_equal(mkv_store_quotas_feed(s, 0, bad, sizeof(bad) - 1), MKV_OK);
	mkv_store_quotas_end(s, 0, MKV_POLL_OK, 200, &rn); /* the transfer went well; the body did not */
	assert_int_equal(rn.change, MKV_POLL_FAILED);
	assert_int_equal(rn.err, MKV_POLL_PARSE);
	mkv_store_quotas_end(s, 0, MKV_POLL_HTTP_STATUS, 503, &rn); /* stood down: no news either way */
	assert_int_equal(rn.change, MKV_POLL_SAME);
	mkv_store_quotas_reset(s, 0);
	assert_int_equal(mkv_store_quotas_feed(s, 0, good, sizeof(good) - 1), MKV_OK);
	mkv_store_quotas_end(s, 0, MKV_POLL_OK, 200, &rn);
	assert_int_equal(rn.change, MKV_POLL_RECOVERED);
	mkv_buf out = render(s);
	assert_non_null(
		strstr(out.data, "mooncake_kv_master_quota_poll_errors_total{source=\"m\",reason=\"parse\"} 1\n"));
	assert_non_null(
		strstr(out.data, "mooncake_kv_master_keys_poll_errors_total{source=\"m\",reason=\"timeout\"} 2\n"));
	mkv_buf_free(&out);
	mkv_store_free(s);
}

/* The leader's /metrics with its key count (and an eviction counter). */
static size_t metrics(mkv_store *s, unsigned keys, const char *evictions)
{
	return keys_read(s, 0, keys, evictions).evicted;
}

static double gauge(mkv_store *s, const char *series)
{
	mkv_buf out = render(s);
	const char *at = strstr(out.data, series);
	double v = at ? strtod(at + strlen(series), NULL) : -1;
	mkv_buf_free(&out);
	return v;
}

#define STALE(t) "mooncake_kv_state_stale{source=\"m\",backend_id=\"" B "\",tenant_id=\"" t "\"} "
#define WATCHED  "mooncake_kv_watched_from_empty{source=\"m\"} "

/* A status answer with nothing published, the key count 0, another status
 * answer with nothing published: the store was empty before the publisher's
 * first message, and every event from it is all there is. */
static void test_empty_store_proven(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 1, false);
	mkv_poll_news n;
	poll(&f, 0, 0, NULL, &n);
	assert_false(n.proved_empty);
	assert_int_equal(metrics(s, 0, NULL), 0);
	poll(&f, 0, 0, NULL, &n);
	assert_true(n.proved_empty);
	assert_true(gauge(s, WATCHED) == 1);
	poll(&f, 0, 0, NULL, &n); /* again: said once */
	assert_false(n.proved_empty);
	/* every tenant from here is born exact */
	assert_int_equal(put(s, 0, 1, 0, 3, NULL), MKV_OK);
	assert_true(gauge(s, STALE("default")) == 0);
	/* a loss: every tenant stale, and the next one born stale */
	assert_int_equal(put(s, 0, 5, 3, 1, NULL), MKV_OK);
	assert_true(gauge(s, STALE("default")) == 1);
	assert_true(gauge(s, WATCHED) == 0);
	mkv_store_free(s);
}

/* Highly available masters: what the old leader's stream left in the state
 * is gone once the new leader proves its store empty before its publisher's
 * first message (the tenant exact again, cause empty_store). */
static void test_empty_store_after_failover(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 2, false);
	mkv_poll_news n;
	poll_view(&f, 0, 5, "serving\n", 3, &n);
	poll_view(&f, 1, 0, "standby\n", 3, &n);
	assert_int_equal(put(s, 0, 1, 0, 4, NULL), MKV_OK);
	poll_view(&f, 0, 5, "standby\n", 4, &n);
	poll_view(&f, 1, 0, "serving\n", 4, &n); /* the failover; the new leader's first quiet status */
	assert_false(n.proved_empty);
	assert_true(gauge(s, STALE("default")) == 1);
	f.s = s;
	keys_read(s, 1, 0, NULL); /* the new leader's key count */
	poll_view(&f, 1, 0, "serving\n", 4, &n);
	assert_true(n.proved_empty);
	assert_true(gauge(s, STALE("default")) == 0);
	assert_true(gauge(s, "mooncake_kv_objects{source=\"m\",backend_id=\"" B "\",tenant_id=\"default\"} ") == 0);
	assert_true(gauge(s, "mooncake_kv_tenant_exact_transitions_total{source=\"m\",cause=\"empty_store\"} ") == 1);
	mkv_store_free(s);
}

/* What must prove nothing: the key count before any quiet status, a key
 * count above 0 (a leader restored from a snapshot publishes from 1 all the
 * same), a message between the count and the next status (the race one
 * way), something published by the time of the next status (the race the
 * other way), a disconnect (a restart), a publisher process after another. */
static void test_empty_store_not_proven(void **state)
{
	(void)state;
	mkv_poll_news n;
	fixture f;
	/* the count before any status, then one status: two are needed around it */
	mkv_store *s = make(&f, 1, false);
	assert_int_equal(metrics(s, 0, NULL), 0);
	poll(&f, 0, 0, NULL, &n);
	assert_false(n.proved_empty);
	mkv_store_free(s);
	/* a restored leader: objects, nothing published */
	s = make(&f, 1, false);
	poll(&f, 0, 0, NULL, &n);
	metrics(s, 250, NULL);
	poll(&f, 0, 0, NULL, &n);
	assert_false(n.proved_empty);
	metrics(s, 250, NULL);
	poll(&f, 0, 0, NULL, &n);
	assert_false(n.proved_empty);
	assert_true(gauge(s, WATCHED) == 0);
	mkv_store_free(s);
	/* a message arrives between the count and the next status */
	s = make(&f, 1, false);
	poll(&f, 0, 0, NULL, &n);
	metrics(s, 0, NULL);
	assert_int_equal(put(s, 0, 1, 0, 1, NULL), MKV_OK);
	poll(&f, 0, 0, NULL, &n); /* answered before the master counted the batch */
	assert_false(n.proved_empty);
	assert_true(gauge(s, STALE("default")) == 1);
	mkv_store_free(s);
	/* published by the time of the next status (its message still on the way) */
	s = make(&f, 1, false);
	poll(&f, 0, 0, NULL, &n);
	metrics(s, 0, NULL);
	poll(&f, 0, 1, NULL, &n);
	assert_false(n.proved_empty);
	mkv_store_free(s);
	/* the publisher's connection dropped: its master may have restarted from a snapshot */
	s = make(&f, 1, false);
	poll(&f, 0, 0, NULL, &n);
	metrics(s, 0, NULL);
	mkv_store_note_disconnect(s, 0);
	poll(&f, 0, 0, NULL, &n);
	assert_false(n.proved_empty);
	mkv_store_free(s);
	/* a second publisher process: the stream saw the first one's messages */
	s = make(&f, 1, false);
	assert_int_equal(put(s, 0, 1, 0, 2, NULL), MKV_OK);
	poll(&f, 0, 0, NULL, &n); /* the new process has published nothing yet */
	metrics(s, 0, NULL);
	poll(&f, 0, 0, NULL, &n);
	assert_false(n.proved_empty);
	assert_true(gauge(s, STALE("default")) == 1);
	mkv_store_free(s);
}

/* One poll of member 0 answering `status` (a format with the batches
 * twice), no /ha_status. */
static void poll_status(fixture *f, const char *status, unsigned batches, mkv_poll_news *n)
{
	snprintf(f->body, sizeof(f->body), status, batches, batches);
	mkv_poll_answers a = {.t0 = T0, .t1 = T0 + 0.01, .interval = 5, .status = ok(f->body)};
	a.ha = (mkv_answer){.err = MKV_POLL_HTTP_STATUS, .http = 404};
	a.leader = (mkv_answer){.err = MKV_POLL_CONNECT};
	mkv_store_poll_begin(f->s, 0);
	mkv_store_poll_answers(f->s, 0, &a, n);
}

/* the status of Mooncake main since #3818 (the guide's five fields), of
 * dev/conductor (invalid_event_hashes besides) */
static const char STATUS_3818[] = "{\"enabled\":true,\"published_batches\":%u,\"published_events\":%u,"
				  "\"dropped_events\":0,\"skipped_keyless_events\":0}";
static const char STATUS_CONDUCTOR[] = "{\"enabled\":true,\"published_batches\":%u,\"published_events\":%u,"
				       "\"dropped_events\":0,\"skipped_keyless_events\":0,\"invalid_event_hashes\":0}";

/* A media-dialect store whose master answers `status`: default's quota
 * eviction after three stored events; whether default turned stale. */
static bool media_eviction_stale(const char *status)
{
	fixture f;
	mkv_store *s = make(&f, 1, false);
	mkv_poll_news n;
	poll_status(&f, status, 0, &n);
	assert_string_equal(n.dialect.name, "media");
	metrics(s, 0, "mooncake_tenant_evict_bytes_total{tenant_id=\"default\"} 0\n");
	poll_status(&f, status, 0, &n);
	assert_true(n.proved_empty);
	assert_int_equal(put(s, 0, 1, 0, 3, NULL), MKV_OK);
	poll_status(&f, status, 1, &n);
	assert_true(gauge(s, STALE("default")) == 0);
	size_t turned = metrics(s, 2, "mooncake_tenant_evict_bytes_total{tenant_id=\"default\"} 4096\n");
	bool stale = gauge(s, STALE("default")) == 1;
	assert_int_equal(turned, stale ? 1 : 0);
	if (stale)
		assert_true(gauge(s, "mooncake_kv_stale_tenants{source=\"m\",reason=\"quota_eviction\"} ") == 1);
	mkv_store_free(s);
	return stale;
}

/* The leader's mooncake_tenant_evict_bytes_total: the first answer is the
 * baseline; a rise turns that tenant stale where the master's quota
 * eviction erases objects without an event: release v0.3.12 (the object
 * dialect) and main since #3818 (media, the guide's five status fields, for
 * the objects it empties), not dev/conductor (media, invalid_event_hashes:
 * it publishes each). */
static void test_quota_eviction_reason(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 1, false);
	mkv_poll_news n;
	poll(&f, 0, 0, NULL, &n); /* object dialect */
	metrics(s, 0, "mooncake_tenant_evict_bytes_total{tenant_id=\"default\"} 4096\n");
	poll(&f, 0, 0, NULL, &n);
	assert_true(n.proved_empty);
	assert_int_equal(put(s, 0, 1, 0, 3, NULL), MKV_OK);
	/* unchanged: nothing erased since */
	assert_int_equal(metrics(s, 3, "mooncake_tenant_evict_bytes_total{tenant_id=\"default\"} 4096\n"), 0);
	assert_true(gauge(s, STALE("default")) == 0);
	/* another tenant's counter appears: not one we hold */
	assert_int_equal(metrics(s, 3,
				 "mooncake_tenant_evict_bytes_total{tenant_id=\"default\"} 4096\n"
				 "mooncake_tenant_evict_bytes_total{tenant_id=\"other\"} 8192\n"),
			 0);
	/* default's rises: stale, for that reason */
	assert_int_equal(metrics(s, 2, "mooncake_tenant_evict_bytes_total{tenant_id=\"default\"} 8192\n"), 1);
	assert_true(gauge(s, STALE("default")) == 1);
	assert_true(gauge(s, "mooncake_kv_stale_tenants{source=\"m\",reason=\"quota_eviction\"} ") == 1);
	assert_true(gauge(s, "mooncake_kv_tenant_stale_transitions_total{source=\"m\",reason=\"quota_eviction\"} ") ==
		    1);
	assert_true(gauge(s, "mooncake_kv_tenant_evicted_bytes_total{source=\"m\",tenant_id=\"default\"} ") == 8192);
	mkv_store_free(s);

	assert_true(media_eviction_stale(STATUS_3818));       /* main since #3818: silent for what it empties */
	assert_false(media_eviction_stale(STATUS_CONDUCTOR)); /* dev/conductor: each eviction published */
}

/* A failed /ha_status or /leader read is told once, its recovery once; a
 * master without HA (404) never fails; a master that did not answer its
 * status was not asked. */
static void test_ha_reads_told_once(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 2, false);
	mkv_poll_news n;
	poll(&f, 0, 0, "serving\n", &n);
	assert_int_equal(n.ha_change, MKV_POLL_SAME);
	assert_int_equal(n.ha_err, MKV_POLL_OK);

	mkv_poll_answers a = {.t0 = T0, .t1 = T0 + 0.01, .interval = 5, .status = ok(f.body)};
	a.ha = (mkv_answer){.err = MKV_POLL_TIMEOUT};
	a.leader = (mkv_answer){.err = MKV_POLL_CONNECT};
	mkv_store_poll_begin(s, 0);
	mkv_store_poll_answers(s, 0, &a, &n);
	assert_int_equal(n.ha_change, MKV_POLL_FAILED);
	assert_int_equal(n.ha_err, MKV_POLL_TIMEOUT);
	a.ha = ok("serving\n");
	a.leader = ok("{\"present\":true,\"view_version\":"); /* cut short */
	mkv_store_poll_begin(s, 0);
	mkv_store_poll_answers(s, 0, &a, &n);
	assert_int_equal(n.ha_change, MKV_POLL_SAME); /* still failing: said already */
	assert_int_equal(n.ha_err, MKV_POLL_PARSE);
	a.status = (mkv_answer){.err = MKV_POLL_CONNECT}; /* the master is gone: HA not asked */
	mkv_store_poll_begin(s, 0);
	mkv_store_poll_answers(s, 0, &a, &n);
	assert_int_equal(n.ha_change, MKV_POLL_SAME);
	poll(&f, 0, 0, "serving\n", &n);
	assert_int_equal(n.ha_change, MKV_POLL_RECOVERED);
	poll(&f, 0, 0, "serving\n", &n);
	assert_int_equal(n.ha_change, MKV_POLL_SAME);

	poll(&f, 1, 0, NULL, &n); /* no /ha_status (404): no HA, no failure */
	assert_int_equal(n.ha_change, MKV_POLL_SAME);
	assert_int_equal(n.ha_err, MKV_POLL_OK);
	mkv_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames_and_status),          cmocka_unit_test(test_failover),
		cmocka_unit_test(test_streamed_answers),           cmocka_unit_test(test_empty_store_proven),
		cmocka_unit_test(test_empty_store_after_failover), cmocka_unit_test(test_empty_store_not_proven),
		cmocka_unit_test(test_quota_eviction_reason),      cmocka_unit_test(test_scrape_lock_hold),
		cmocka_unit_test(test_failed_reads_told_once),     cmocka_unit_test(test_ha_reads_told_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
