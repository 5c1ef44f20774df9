/* SPDX-License-Identifier: Apache-2.0 */
/* When a source reconciles, and why (kv_reconcile_plan.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "kv_reconcile_plan.h"

static void put(kv_state *st, const char *backend, const char *tenant, const char *key)
{
	kv_event ev = {.type = MKV_EV_STORED,
		       .medium = MKV_MEDIUM_CPU,
		       .has_key = true,
		       .tenant_id = {tenant, (uint32_t)strlen(tenant)},
		       .backend_id = {backend, (uint32_t)strlen(backend)},
		       .object_key = {key, (uint32_t)strlen(key)}};
	assert_int_equal(kv_state_apply(st, &ev, MKV_DIALECT_MEDIA), MKV_OK);
}

static void test_causes_in_order(void **state)
{
	(void)state;
	kv_reconcile_plan p;
	kv_reconcile_plan_init(&p, 10);
	/* until the first success, start-up is the cause, whatever else holds */
	assert_string_equal(kv_reconcile_cause(&p, true, true, 0), "startup");
	assert_true(kv_reconcile_done(&p, MKV_RECON_OK, 100, 103) == 110); /* from the start: a fixed rhythm */
	assert_null(kv_reconcile_cause(&p, false, false, 110));
	assert_string_equal(kv_reconcile_cause(&p, true, true, 110), "drift");
	assert_string_equal(kv_reconcile_cause(&p, false, true, 110), "stale");
	/* nothing calls for one: every KV_RECONCILE_IDLE_PERIODS intervals */
	assert_null(kv_reconcile_cause(&p, false, false, 103 + KV_RECONCILE_IDLE_PERIODS * 10 - 0.5));
	assert_string_equal(kv_reconcile_cause(&p, false, false, 103 + KV_RECONCILE_IDLE_PERIODS * 10), "periodic");
}

static void test_backoff(void **state)
{
	(void)state;
	kv_reconcile_plan p;
	kv_reconcile_plan_init(&p, 10);
	assert_true(kv_reconcile_done(&p, MKV_RECON_FAILED, 0, 1) == 1 + 2);
	assert_true(kv_reconcile_done(&p, MKV_RECON_ABORTED, 3, 4) == 4 + 4);
	assert_true(kv_reconcile_done(&p, MKV_RECON_SUPERSEDED, 8, 9) == 9 + 8);
	assert_true(kv_reconcile_done(&p, MKV_RECON_FAILED, 17, 18) == 18 + 10); /* never beyond the interval */
	for (int i = 0; i < 100; i++)
		assert_true(kv_reconcile_done(&p, MKV_RECON_FAILED, 0, 0) == 10);
	assert_false(p.dflt.ever_ok);
	/* a standby: nothing counted, asked again an interval later */
	unsigned failures = p.dflt.failures;
	assert_true(kv_reconcile_done(&p, MKV_RECON_NOT_COUNTED, 50, 51) == 61);
	assert_int_equal(p.dflt.failures, failures);
	assert_true(kv_reconcile_done(&p, MKV_RECON_OK, 60, 62) == 70);
	assert_int_equal(p.dflt.failures, 0);
	assert_true(kv_reconcile_done(&p, MKV_RECON_FAILED, 70, 71) == 73);
}

/* Another tenant: stale, else periodic; each at most once an interval; a
 * failure of one holds every other back by the same backoff. */
static void test_tenant_times(void **state)
{
	(void)state;
	kv_reconcile_plan p;
	kv_reconcile_plan_init(&p, 10);
	kv_recon_times a = {0}, b = {0};
	assert_string_equal(kv_reconcile_tenant_cause(&p, &a, true, 100), "stale");
	assert_null(kv_reconcile_tenant_cause(&p, &b, false, 100)); /* its rhythm starts now */
	assert_null(kv_reconcile_tenant_cause(&p, &b, false, 100 + KV_RECONCILE_IDLE_PERIODS * 10 - 1));
	assert_string_equal(kv_reconcile_tenant_cause(&p, &b, false, 100 + KV_RECONCILE_IDLE_PERIODS * 10), "periodic");
	/* a fails: a retries in 2 s, and b waits as long */
	assert_true(kv_reconcile_tenant_done(&p, &a, MKV_RECON_FAILED, 100, 101) == 103);
	assert_null(kv_reconcile_tenant_cause(&p, &b, true, 102));
	assert_null(kv_reconcile_tenant_cause(&p, &a, true, 102));
	assert_string_equal(kv_reconcile_tenant_cause(&p, &b, true, 103), "stale");
	/* b succeeds: the others may go at once; b itself after the interval */
	assert_true(kv_reconcile_tenant_done(&p, &b, MKV_RECON_OK, 103, 104) == 113);
	assert_string_equal(kv_reconcile_tenant_cause(&p, &a, true, 104), "stale");
	assert_null(kv_reconcile_tenant_cause(&p, &b, true, 112));
	assert_string_equal(kv_reconcile_tenant_cause(&p, &b, true, 113), "stale");
	/* tenant default's plan is its own */
	assert_string_equal(kv_reconcile_cause(&p, false, false, 104), "startup");
	/* a master that lists default only, or stands by: no failure, next an interval later */
	assert_true(kv_reconcile_tenant_done(&p, &a, MKV_RECON_NOT_COUNTED, 104, 105) == 115);
	assert_int_equal(p.others_failures, 0);
}

static void test_backend_and_stale(void **state)
{
	(void)state;
	mkv_budget budget;
	mkv_budget_init(&budget, 100, 1000);
	kv_state *st = kv_state_new(&budget, 7);
	assert_non_null(st);
	const char *why;
	assert_null(kv_reconcile_backend(st, NULL, &why));
	assert_non_null(strstr(why, "no event has arrived"));
	assert_string_equal(kv_reconcile_backend(st, "given", &why), "given");
	assert_null(why);
	put(st, "b1", "alice", "k1");
	put(st, "b1", "default", "k2");
	const char *b = kv_reconcile_backend(st, NULL, &why);
	assert_non_null(b);
	assert_memory_equal(b, "b1", 2);
	assert_null(why);
	put(st, "b2", "default", "k3");
	assert_null(kv_reconcile_backend(st, NULL, &why));
	assert_non_null(strstr(why, "several backend_ids"));
	assert_string_equal(kv_reconcile_backend(st, "b2", &why), "b2");

	/* new tenants start stale (start-up); a reconciliation that could
	 * not ask about every key is no cause for another */
	mkv_str b1 = {"b1", 2};
	assert_true(kv_reconcile_stale(st, b1));
	assert_false(kv_reconcile_stale(st, (mkv_str){"nobody", 6}));
	kv_tenant *t = (kv_tenant *)kv_state_find_tenant(st, b1, (mkv_str){"default", 7});
	t->stale = KV_STALE_RECONCILE_INCOMPLETE;
	assert_false(kv_reconcile_stale(st, b1));
	t->stale |= KV_STALE_GAP;
	assert_true(kv_reconcile_stale(st, b1));
	t->stale = 0;
	assert_false(kv_reconcile_stale(st, b1));
	kv_state_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_causes_in_order),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_tenant_times),
		cmocka_unit_test(test_backend_and_stale),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
