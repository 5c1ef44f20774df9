/* SPDX-License-Identifier: Apache-2.0 */
/* Reconciliation runs (exporter/core/store/reconcile_run.c, the next step
 * chosen by reconcile_next.c) driven through the core's public interface
 * alone (mooncake_kv/reconcile.h), the shell's callbacks played by the test:
 * tenant default at upstream's listing, and every tenant of a master that
 * lists tenants, found out from its answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mooncake_kv/reconcile.h>

#include <cmocka.h>

#include "support/store_fixture.h"

/* The shell of a reconciliation, played by the test: the lock counts its
 * holders (never two, never left held), the batch query answers from a
 * table. */
typedef struct shell {
	int held, locks;
	unsigned gets;
	const char *answer;
	const char *url; /* what the batch queries begin with; NULL: tenant default's */
	double now;      /* the clock, 0: T0 + 2 */
} shell;

static void io_lock(void *ctx)
{
	shell *sh = ctx;
	assert_int_equal(sh->held, 0);
	sh->held++;
	sh->locks++;
}

static void io_unlock(void *ctx)
{
	shell *sh = ctx;
	assert_int_equal(sh->held, 1);
	sh->held--;
}

static mkv_answer io_get(void *ctx, const char *url)
{
	shell *sh = ctx;
	assert_int_equal(sh->held, 0); /* never across a request */
	const char *want = sh->url ? sh->url : "http://127.0.0.1:1/batch_query_keys?keys=";
	assert_memory_equal(url, want, strlen(want));
	sh->gets++;
	return ok(sh->answer);
}

static double io_now(void *ctx)
{
	const shell *sh = ctx;
	return sh->now ? sh->now : T0 + 2;
}

static void test_reconcile_run(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 1, true);
	mkv_poll_news n;
	poll(&f, 0, 1, NULL, &n);
	mkv_recon_job job;
	assert_int_equal(mkv_store_recon_next(s, T0 + 1, &job), MKV_RECON_WAIT); /* no event: which backend? */
	assert_non_null(job.why);
	/* the stream saw k0..k2 since it joined; the master holds k1, k2, k9 */
	assert_int_equal(put(s, 0, 1, 0, 3, NULL), MKV_OK);
	assert_int_equal(mkv_store_recon_next(s, T0 + 1, &job), MKV_RECON_GO);
	assert_string_equal(job.backend, B);
	assert_string_equal(job.cause, "startup");
	assert_int_equal(job.leader, 0);

	shell sh = {.answer = "{\"success\":true,\"data\":{\"k1\":{\"ok\":true,\"values\":[{}]},"
			      "\"k2\":{\"ok\":true,\"values\":[{}],\"local_disk_values\":[{}]},"
			      "\"k9\":{\"ok\":true,\"disk_values\":[{}]},"
			      "\"k20\":{\"ok\":true,\"values\":[{}]}}}"};
	mkv_recon_io io = {.ctx = &sh, .lock = io_lock, .unlock = io_unlock, .get = io_get, .now = io_now};
	mkv_recon_run *r = mkv_recon_run_new(s, &io, 1000, 1000);
	assert_non_null(r);
	assert_int_equal(mkv_recon_begin(r, &job, "http://127.0.0.1:1"), MKV_OK);
	/* an event arrives while the listing is read (the master listed it too):
	 * replayed at the cut-over */
	assert_int_equal(put(s, 0, 2, 20, 1, NULL), MKV_OK);
	static const char listing[] = "k1\nk2\nk9\nk20\n";
	assert_int_equal(mkv_recon_listing_feed(r, listing, 4), MKV_OK); /* in pieces, as it arrives */
	assert_true(mkv_recon_listing_drain(r, false));
	assert_int_equal(mkv_recon_listing_feed(r, listing + 4, sizeof(listing) - 5), MKV_OK);
	assert_true(mkv_recon_listing_drain(r, true));
	assert_false(mkv_recon_listing_full(r));
	double next = 0;
	assert_int_equal(mkv_recon_end(r, MKV_LISTING_DONE, NULL, &next), MKV_RECON_OK);
	assert_true(next == T0 + 2); /* ask the plan again at once: another tenant may be due */
	assert_int_equal(sh.held, 0);
	assert_int_equal(sh.gets, 1);
	mkv_recon_summary sum;
	mkv_recon_summary_of(r, &sum);
	assert_int_equal(sum.keys, 4);
	assert_int_equal(sum.added, 1);   /* k9 */
	assert_int_equal(sum.removed, 1); /* k0 */
	assert_int_equal(sum.medium, 1);  /* k2 is on disk too */
	assert_null(sum.why);

	mkv_buf out = render(s);
	const char *text = out.data;
	const char *L = "{source=\"m\",backend_id=\"" B "\",tenant_id=\"default\"";
	char want[256];
	snprintf(want, sizeof(want), "mooncake_kv_objects%s} 4", L); /* k1 k2 k9 k20 */
	assert_non_null(strstr(text, want));
	/* cpu k1 k2 k20, disk k2 k9: one on both, cpu + disk - objects (by_placement: --metrics.all-series) */
	snprintf(want, sizeof(want), "mooncake_kv_objects_by_medium%s,medium=\"cpu\"} 3", L);
	assert_non_null(strstr(text, want));
	snprintf(want, sizeof(want), "mooncake_kv_objects_by_medium%s,medium=\"disk\"} 2", L);
	assert_non_null(strstr(text, want));
	assert_non_null(strstr(text, "mooncake_kv_reconciliations_total{source=\"m\",result=\"ok\"} 1"));
	mkv_buf_free(&out);
	mkv_recon_job later;
	assert_int_equal(mkv_store_recon_next(s, T0 + 3, &later), MKV_RECON_NOT_NOW); /* the interval holds */

	/* a master that stands by: nothing counted, and the attempt leaves no recording behind */
	assert_int_equal(mkv_recon_begin(r, &job, "http://127.0.0.1:1"), MKV_OK);
	assert_int_equal(mkv_recon_end(r, MKV_LISTING_STANDBY, NULL, &next), MKV_RECON_NOT_COUNTED);
	/* a failed listing is counted, with the shell's reason */
	assert_int_equal(mkv_recon_begin(r, &job, "http://127.0.0.1:1"), MKV_OK);
	assert_int_equal(mkv_recon_end(r, MKV_LISTING_FAILED, "listing: timeout", &next), MKV_RECON_FAILED);
	mkv_recon_summary_of(r, &sum);
	assert_string_equal(sum.why, "listing: timeout");
	assert_int_equal(sh.held, 0);
	mkv_recon_run_free(r);
	mkv_store_free(s);
}

/* A listing answered as the shell saw it: the status, the tenant header,
 * and the body when it was taken. */
static bool listing_answered(mkv_recon_run *r, long http, const char *hdr, const char *body)
{
	if (!mkv_recon_listing_answer(r, http, hdr))
		return false;
	assert_int_equal(mkv_recon_listing_feed(r, body, strlen(body)), MKV_OK);
	return mkv_recon_listing_drain(r, true);
}

static bool has(mkv_store *s, const char *line)
{
	mkv_buf out = render(s);
	bool found = strstr(out.data, line) != NULL;
	mkv_buf_free(&out);
	return found;
}

/* Tenant default's turn at now, reconciled at upstream's listing: the
 * master lists the keys of listing, and the attempt ends ok. */
static void reconcile_default(mkv_store *s, mkv_recon_run *r, double now, const char *listing)
{
	mkv_recon_job job;
	assert_int_equal(mkv_store_recon_next(s, now, &job), MKV_RECON_GO);
	assert_string_equal(job.tenant, "default");
	assert_int_equal(mkv_recon_begin(r, &job, "http://127.0.0.1:1"), MKV_OK);
	assert_true(listing_answered(r, 200, NULL, listing));
	double next;
	assert_int_equal(mkv_recon_end(r, MKV_LISTING_DONE, NULL, &next), MKV_RECON_OK);
}

/* Every tenant reconciled where the master lists tenants; none but default
 * where it does not, found out from its answer and never taken for
 * another's keys. */
static void test_reconcile_tenants(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 1, true);
	mkv_poll_news n;
	poll(&f, 0, 1, NULL, &n);
	assert_int_equal(put(s, 0, 1, 0, 2, NULL), MKV_OK);
	assert_int_equal(put_in(s, 0, 2, "tenant-1", 0, 3, NULL), MKV_OK); /* k0..k2 of tenant-1 */
	shell sh = {.answer = "{\"success\":true,\"data\":{\"k0\":{\"ok\":true,\"values\":[{}]},"
			      "\"k1\":{\"ok\":true,\"values\":[{}]}}}"};
	mkv_recon_io io = {.ctx = &sh, .lock = io_lock, .unlock = io_unlock, .get = io_get, .now = io_now};
	mkv_recon_run *r = mkv_recon_run_new(s, &io, 1000, 1000);
	assert_non_null(r);
	const char *base = "http://127.0.0.1:1";
	double next;
	mkv_recon_summary sum;

	/* tenant default first, at upstream's listing */
	mkv_recon_job job;
	assert_int_equal(mkv_store_recon_next(s, T0 + 2, &job), MKV_RECON_GO);
	assert_string_equal(job.tenant, "default");
	assert_int_equal(mkv_recon_begin(r, &job, base), MKV_OK);
	assert_string_equal(mkv_recon_listing_url(r), "http://127.0.0.1:1/get_all_keys");
	assert_true(listing_answered(r, 200, NULL, "k0\nk1\n"));
	assert_int_equal(mkv_recon_end(r, MKV_LISTING_DONE, NULL, &next), MKV_RECON_OK);

	/* then the stale tenant: the master is asked whether it lists tenants */
	assert_int_equal(mkv_store_recon_next(s, T0 + 2, &job), MKV_RECON_GO);
	assert_string_equal(job.tenant, "tenant-1");
	assert_string_equal(job.cause, "stale");
	const char *L1 = "{source=\"m\",backend_id=\"" B "\",tenant_id=\"tenant-1\"";
	char exact1[256];
	snprintf(exact1, sizeof(exact1), "mooncake_kv_state_stale%s} 0", L1);
	/* an old master: no such path */
	assert_int_equal(mkv_recon_begin(r, &job, base), MKV_OK);
	assert_string_equal(mkv_recon_listing_url(r), "http://127.0.0.1:1/api/v1/tenant_keys?tenant_id=tenant-1");
	assert_false(listing_answered(r, 404, NULL, ""));
	assert_int_equal(mkv_recon_end(r, MKV_LISTING_FAILED, NULL, &next), MKV_RECON_NOT_COUNTED);
	mkv_recon_summary_of(r, &sum);
	assert_true(sum.default_only);
	assert_string_equal(sum.tenant, "tenant-1");
	assert_true(has(s, "mooncake_kv_master_lists_tenants{source=\"m\",member=\"127.0.0.1:1\"} 0"));
	assert_true(has(s, "mooncake_kv_reconciliations_total{source=\"m\",result=\"ok\"} 1"));
	assert_true(has(s, "mooncake_kv_reconciliations_total{source=\"m\",result=\"failed\"} 0"));
	assert_false(has(s, exact1));
	/* not asked again: not for an hour, unless its publisher restarts */
	assert_int_equal(mkv_store_recon_next(s, T0 + 100, &job), MKV_RECON_NOT_NOW);
	sh.now = T0 + 2 + 3601;
	reconcile_default(s, r, sh.now, "k0\nk1\n"); /* periodic, and first */
	assert_int_equal(mkv_store_recon_next(s, sh.now, &job), MKV_RECON_GO);
	assert_string_equal(job.tenant, "tenant-1");
	/* a master that answers the path but names no tenant (or another): the
	 * body is never read as tenant-1's keys */
	assert_int_equal(mkv_recon_begin(r, &job, base), MKV_OK);
	assert_false(listing_answered(r, 200, "default", "k0\n"));
	assert_int_equal(mkv_recon_end(r, MKV_LISTING_FAILED, NULL, &next), MKV_RECON_NOT_COUNTED);
	assert_false(has(s, exact1));
	assert_int_equal(sh.gets, 2); /* default's batches only */

	/* the master restarts (its publisher numbers from 1 again), upgraded:
	 * it lists tenant-1, whose answers name it */
	assert_int_equal(put_in(s, 0, 1, "tenant-1", 5, 1, NULL), MKV_OK); /* k5: now held by tenant-1 too */
	sh.now += 100;
	reconcile_default(s, r, sh.now, "k0\nk1\n"); /* the restart made default stale too */
	assert_int_equal(mkv_store_recon_next(s, sh.now, &job), MKV_RECON_GO);
	assert_string_equal(job.tenant, "tenant-1");
	assert_int_equal(mkv_recon_begin(r, &job, base), MKV_OK);
	sh.url = "http://127.0.0.1:1/api/v1/tenant_batch_query_keys?tenant_id=tenant-1&keys=";
	sh.answer = "{\"success\":true,\"tenant_id\":\"tenant-1\",\"data\":{\"k1\":{\"ok\":true,\"values\":[{}]},"
		    "\"k5\":{\"ok\":true,\"values\":[{}],\"disk_values\":[{}]},\"k7\":{\"ok\":true,\"values\":[{}]}}}";
	assert_true(listing_answered(r, 200, "tenant-1", "k1\nk5\nk7\n"));
	assert_int_equal(mkv_recon_end(r, MKV_LISTING_DONE, NULL, &next), MKV_RECON_OK);
	mkv_recon_summary_of(r, &sum);
	assert_false(sum.default_only);
	assert_int_equal(sum.keys, 3);
	assert_int_equal(sum.added, 1);   /* k7 */
	assert_int_equal(sum.removed, 2); /* k0, k2 */
	assert_int_equal(sum.medium, 1);  /* k5 */
	assert_true(has(s, exact1));
	assert_true(has(s, "mooncake_kv_master_lists_tenants{source=\"m\",member=\"127.0.0.1:1\"} 1"));
	char objects[256];
	snprintf(objects, sizeof(objects), "mooncake_kv_objects%s} 3", L1);
	assert_true(has(s, objects));
	assert_true(has(s, "mooncake_kv_reconcile_listed_keys{source=\"m\"} 2")); /* default's */
	/* exact now: not before the periodic turn, an interval at the least */
	assert_int_equal(mkv_store_recon_next(s, sh.now + 1, &job), MKV_RECON_NOT_NOW);
	assert_int_equal(mkv_store_recon_next(s, sh.now + 6 * 60 + 1, &job), MKV_RECON_GO);
	assert_string_equal(job.cause, "periodic");
	mkv_recon_run_free(r);
	mkv_store_free(s);
}

/* Every tenant exact and the master never asked whether it lists tenants
 * (an empty store proven; or a state taken over from a peer): the periodic
 * turn of a tenant other than default asks, so that a master that lists
 * tenants has them all checked, not only default. */
static void test_periodic_turn_asks(void **state)
{
	(void)state;
	fixture f;
	mkv_store *s = make(&f, 1, true);
	mkv_poll_news n;
	poll(&f, 0, 0, NULL, &n);
	keys_read(s, 0, 0, NULL);
	poll(&f, 0, 0, NULL, &n);
	assert_true(n.proved_empty);
	assert_int_equal(put(s, 0, 1, 0, 2, NULL), MKV_OK);
	assert_int_equal(put_in(s, 0, 2, "tenant-1", 0, 3, NULL), MKV_OK);
	assert_false(has(s, "mooncake_kv_master_lists_tenants{"));
	shell sh = {.now = T0 + 2,
		    .answer = "{\"success\":true,\"data\":{\"k0\":{\"ok\":true,\"values\":[{}]},"
			      "\"k1\":{\"ok\":true,\"values\":[{}]}}}"};
	mkv_recon_io io = {.ctx = &sh, .lock = io_lock, .unlock = io_unlock, .get = io_get, .now = io_now};
	mkv_recon_run *r = mkv_recon_run_new(s, &io, 1000, 1000);
	assert_non_null(r);
	double next;
	mkv_recon_job job;
	/* default, at once */
	reconcile_default(s, r, sh.now, "k0\nk1\n");
	assert_int_equal(mkv_store_recon_next(s, sh.now, &job), MKV_RECON_NOT_NOW); /* tenant-1 exact: not yet */
	sh.now += 6 * 60 + 1;
	reconcile_default(s, r, sh.now, "k0\nk1\n");
	assert_int_equal(mkv_store_recon_next(s, sh.now, &job), MKV_RECON_GO);
	assert_string_equal(job.tenant, "tenant-1");
	assert_string_equal(job.cause, "periodic");
	/* an upstream master: it lists default only, and is not asked again for an hour */
	assert_int_equal(mkv_recon_begin(r, &job, "http://127.0.0.1:1"), MKV_OK);
	assert_false(listing_answered(r, 404, NULL, ""));
	assert_int_equal(mkv_recon_end(r, MKV_LISTING_FAILED, NULL, &next), MKV_RECON_NOT_COUNTED);
	assert_true(has(s, "mooncake_kv_master_lists_tenants{source=\"m\",member=\"127.0.0.1:1\"} 0"));
	assert_true(has(s, "mooncake_kv_reconciliations_total{source=\"m\",result=\"failed\"} 0"));
	assert_int_equal(mkv_store_recon_next(s, sh.now + 6 * 60 + 1, &job), MKV_RECON_GO);
	assert_string_equal(job.tenant, "default");
	mkv_recon_run_free(r);
	mkv_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reconcile_run),
		cmocka_unit_test(test_reconcile_tenants),
		cmocka_unit_test(test_periodic_turn_asks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
