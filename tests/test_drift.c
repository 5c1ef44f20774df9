/* SPDX-License-Identifier: Apache-2.0 */
/* Drift (exporter/core/master/drift.c): the state's objects against the
 * master's key count, poll by poll, and whom a drift blames. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kv_common.h"
#include "kv_drift.h"

#include "support/state_fixture.h"

struct store {
	mkv_budget budget;
	kv_state *st;
};

static int store_setup(void **state)
{
	struct store *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->st = state_open(&s->budget);
	*state = s;
	return 0;
}

static int store_teardown(void **state)
{
	struct store *s = *state;
	kv_state_free(s->st);
	free(s);
	return 0;
}

static void test_drift(void **state)
{
	struct store *s = *state;
	state_put(s->st, "default", 2000);
	kv_drift d = {0};
	/* within max(16, 1%): agreement */
	assert_false(kv_drift_observe(&d, true, 0, 2020, s->st));
	assert_int_equal(d.polls, 0);
	/* apart three polls in a row */
	assert_false(kv_drift_observe(&d, true, 0, 2021, s->st));
	assert_false(kv_drift_observe(&d, true, 0, 1979, s->st));
	assert_true(kv_drift_observe(&d, true, 0, 3000, s->st));
	assert_true(kv_drift_observe(&d, true, 0, 3000, s->st));
	/* a failed poll says nothing, and ends the streak */
	assert_false(kv_drift_observe(&d, false, 0, 3000, s->st));
	assert_int_equal(d.polls, 0);
	assert_false(kv_drift_observe(&d, true, 0, 3000, s->st));
	assert_false(kv_drift_observe(&d, true, 0, 3000, s->st));
	assert_true(kv_drift_observe(&d, true, 0, 3000, s->st));
	/* small stores: 16 objects of slack */
	assert_true(kv_drift_tolerance(100) == 16);
	assert_true(kv_drift_tolerance(1e6) == 1e4);
	/* objects outside tenant default: the master's count covers them, the
	 * listing does not; no judgement */
	state_put(s->st, "alice", 1);
	assert_false(kv_drift_observe(&d, true, 0, 9999, s->st));
	assert_int_equal(d.polls, 0);
	bool spare;
	assert_false(kv_drift_blame(&d, false, &spare));
}

/* Every tenant exact (an empty store proven): the sum of all tenants must be
 * the master's count, beyond the events in flight during the poll; a drift
 * that no reconciliation can mend blames the exact tenants. */
static void test_drift_over_exact_tenants(void **state)
{
	struct store *s = *state;
	kv_state_prove_empty(s->st);
	state_put(s->st, "alice", 300);
	state_put(s->st, "bob", 100);
	assert_true(kv_state_all_exact(s->st));
	kv_drift d = {0};
	bool spare;
	assert_false(kv_drift_observe(&d, true, 0, 400, s->st)); /* agreement */
	/* the master erased 80 of them silently */
	assert_false(kv_drift_observe(&d, true, 0, 320, s->st));
	assert_false(kv_drift_observe(&d, true, -1, 0, s->st)); /* in flight unknown: says nothing, ends nothing */
	assert_int_equal(d.polls, 1);
	/* 80 events may have been in flight: not apart beyond them, and the streak ends */
	assert_false(kv_drift_observe(&d, true, 80, 320, s->st));
	assert_int_equal(d.polls, 0);
	assert_false(kv_drift_observe(&d, true, 10, 320, s->st)); /* 10 in flight: apart all the same */
	assert_int_equal(d.polls, 1);
	assert_false(kv_drift_observe(&d, true, 0, 320, s->st));
	assert_true(kv_drift_observe(&d, true, 0, 320, s->st));
	/* without reconciliation nothing mends it: every exact tenant is to blame */
	assert_true(kv_drift_blame(&d, false, &spare));
	assert_false(spare);
	/* with it, tenant default is rebuilt first; then the rest are to blame */
	assert_false(kv_drift_blame(&d, true, &spare));
	kv_drift_reconciled(&d, true);
	assert_true(kv_drift_blame(&d, true, &spare));
	assert_true(spare);
	/* a failed reconciliation mends nothing: default is to blame too */
	kv_drift_reconciled(&d, false);
	assert_true(kv_drift_blame(&d, true, &spare));
	assert_false(spare);
	/* one stale tenant: the sum is no longer judged, the streak ends */
	assert_int_equal(kv_state_mark_tenant_stale(s->st, (mkv_str){"bob", 3}, KV_STALE_DRIFT), 1);
	assert_false(kv_drift_observe(&d, true, 0, 320, s->st));
	assert_int_equal(d.polls, 0);
	assert_false(kv_drift_blame(&d, false, &spare));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_drift_over_exact_tenants, store_setup, store_teardown),
		cmocka_unit_test_setup_teardown(test_drift, store_setup, store_teardown),
	};
	return cmocka_run_group_tests_name("drift", tests, NULL, NULL);
}
