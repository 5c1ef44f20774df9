/* SPDX-License-Identifier: Apache-2.0 */
/* The state's side of a reconciliation (exporter/core/model/state_reconcile.c):
 * the tenant's events recorded while the master is read, and the cut-over
 * that swaps in the fresh table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kv_reconcile_replay.h"
#include "kv_state.h"

#include <cmocka.h>

static mkv_str S(const char *s)
{
	return (mkv_str){s, (uint32_t)strlen(s)};
}

static kv_event stored(const char *tenant, const char *key, unsigned medium, enum mkv_event_type type)
{
	return (kv_event){.type = type,
			  .medium = (uint8_t)medium,
			  .has_key = true,
			  .backend_id = S("b"),
			  .tenant_id = S(tenant),
			  .object_key = S(key)};
}

/* Recorded in the object dialect, a removed takes the whole object in the
 * replay too, whatever medium it named. */
static void test_record_object_dialect(void **state)
{
	(void)state;
	mkv_budget budget;
	mkv_budget_init(&budget, 10, 100);
	kv_state *s = kv_state_new(&budget, 42);
	kv_recon_log log;
	kv_recon_log_init(&log, 100);
	assert_int_equal(kv_state_record_start(s, S("b"), S("default"), &log), MKV_OK);
	kv_event e = stored("default", "a", MKV_MEDIUM_CPU, MKV_EV_REMOVED);
	kv_state_apply(s, &e, MKV_DIALECT_OBJECT);
	e = stored("default", "b", MKV_MEDIUM_DISK, MKV_EV_REMOVED);
	kv_state_apply(s, &e, MKV_DIALECT_MEDIA);
	assert_int_equal(log.n, 2);
	/* the master listed a and b on both media before those removals */
	kv_recon_table t = {0};
	kv_recon_put(&t, kv_state_key_hash(s, S("a")), MKV_MEDIUM_CPU | MKV_MEDIUM_DISK, 0, KV_NO_BIRTH);
	kv_recon_put(&t, kv_state_key_hash(s, S("b")), MKV_MEDIUM_CPU | MKV_MEDIUM_DISK, 0, KV_NO_BIRTH);
	assert_int_equal(kv_recon_replay(&t, log.ev, log.n), MKV_OK);
	assert_int_equal(kv_objtable_get(&t.objects, kv_state_key_hash(s, S("a"))), 0);
	assert_int_equal(kv_objtable_get(&t.objects, kv_state_key_hash(s, S("b"))), MKV_MEDIUM_CPU);
	assert_int_equal(kv_recon_objects(&t), 1);
	assert_int_equal(t.placement[MKV_PLACE_CPU_ONLY], 1);
	kv_recon_table_free(&t);
	kv_state_record_stop(s);
	kv_recon_log_free(&log);
	kv_state_free(s);
}

/* The state records the tenant's events, and the cut-over swaps its
 * objects, figures, stale bits and the budget. */
static void test_record_and_adopt(void **state)
{
	(void)state;
	mkv_budget budget;
	mkv_budget_init(&budget, 10, 100);
	kv_state *s = kv_state_new(&budget, 42);
	kv_event e = stored("default", "a", MKV_MEDIUM_CPU, MKV_EV_STORED);
	assert_int_equal(kv_state_apply(s, &e, MKV_DIALECT_MEDIA), MKV_OK);
	e = stored("other", "x", MKV_MEDIUM_CPU, MKV_EV_STORED);
	assert_int_equal(kv_state_apply(s, &e, MKV_DIALECT_MEDIA), MKV_OK);

	kv_recon_log log;
	kv_recon_log_init(&log, 100);
	assert_int_equal(kv_state_record_start(s, S("b"), S("default"), &log), MKV_OK);
	assert_int_equal(kv_state_record_start(s, S("b"), S("default"), &log), MKV_EINVAL); /* one at a time */
	e = stored("default", "b", MKV_MEDIUM_DISK, MKV_EV_STORED);
	kv_state_apply(s, &e, MKV_DIALECT_MEDIA);
	e = stored("other", "y", MKV_MEDIUM_DISK, MKV_EV_STORED); /* not this tenant's */
	kv_state_apply(s, &e, MKV_DIALECT_MEDIA);
	e = stored("default", "a", MKV_MEDIUM_CPU, MKV_EV_REMOVED);
	kv_state_apply(s, &e, MKV_DIALECT_MEDIA);
	assert_int_equal(log.n, 2);
	assert_int_equal(log.ev[0].hash, kv_state_key_hash(s, S("b")));
	assert_int_equal(log.ev[1].type, MKV_EV_REMOVED);
	assert_int_equal(kv_state_recorded_objects(s), 1);

	/* the master says: a on both media, c on disk, d on cpu */
	kv_recon_table t = {0};
	kv_recon_put(&t, kv_state_key_hash(s, S("a")), MKV_MEDIUM_CPU | MKV_MEDIUM_DISK, 0, KV_NO_BIRTH);
	kv_recon_put(&t, kv_state_key_hash(s, S("c")), MKV_MEDIUM_DISK, 0, KV_NO_BIRTH);
	kv_recon_put(&t, kv_state_key_hash(s, S("d")), MKV_MEDIUM_CPU, 0, KV_NO_BIRTH);
	kv_recon_replay(&t, log.ev, log.n); /* + b on disk, a loses cpu */
	kv_objtable old;
	assert_int_equal(kv_state_adopt(s, &t, 0, &old), MKV_OK);
	kv_state_record_stop(s);
	kv_recon_log_free(&log);
	assert_int_equal(kv_objtable_count(&old), 1);
	kv_objtable_clear(&old);

	const kv_tenant *d = kv_state_find_tenant(s, S("b"), S("default"));
	assert_int_equal(kv_tenant_objects(d), 4);
	assert_int_equal(d->counts.placement[MKV_PLACE_DISK_ONLY], 3); /* a, b, c */
	assert_int_equal(d->counts.placement[MKV_PLACE_CPU_ONLY], 1);  /* d */
	assert_int_equal(d->stale, 0);
	assert_int_equal(d->groups.n, 0); /* no key groups: none, as the stream keeps it (a handover refuses any) */
	assert_int_equal(kv_state_object_media(s, d, S("a")), MKV_MEDIUM_DISK);
	assert_int_equal(atomic_load(&budget.objects), 4 + 2);
	assert_true(kv_state_find_tenant(s, S("b"), S("other"))->stale != 0); /* others untouched */

	/* no room in the budget: nothing changes */
	kv_recon_log_init(&log, 100);
	assert_int_equal(kv_state_record_start(s, S("b"), S("new"), &log), MKV_OK); /* created */
	kv_recon_table big = {0};
	for (uint64_t i = 1; i <= 95; i++)
		kv_recon_put(&big, i << 2, MKV_MEDIUM_CPU, 0, KV_NO_BIRTH);
	assert_int_equal(kv_state_adopt(s, &big, 0, &old), MKV_ELIMIT);
	assert_int_equal(atomic_load(&budget.objects), 6);
	kv_state_record_stop(s);
	kv_recon_log_free(&log);
	kv_recon_table_free(&big);
	kv_state_free(s);
	assert_int_equal(atomic_load(&budget.objects), 0);
	assert_int_equal(atomic_load(&budget.tenants), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_and_adopt),
		cmocka_unit_test(test_record_object_dialect),
	};
	return cmocka_run_group_tests_name("state_reconcile", tests, NULL, NULL);
}
