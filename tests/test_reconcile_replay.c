/* SPDX-License-Identifier: Apache-2.0 */
/* Reconciliation's pure part: the replay argument as a property test, and
 * the state's recording and cut-over. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kv_reconcile_replay.h"
#include "kv_state.h"

#include <cmocka.h>

#define KEYS 64
#define OPS  400

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t key_hash(unsigned k)
{
	return ((uint64_t)k + 1) * 0x9e3779b97f4a7c15ull;
}

/* One mutation at the master, as its event says; a key that becomes
 * present is born then (at the event's index). */
static void apply(unsigned char *model, int64_t *birth, const kv_recon_event *e, int64_t at)
{
	if (e->type == KV_EV_CLEARED) {
		memset(model, 0, KEYS);
		return;
	}
	unsigned k = 0;
	while (key_hash(k) != e->hash)
		k++;
	if (e->type == KV_EV_STORED) {
		if (!model[k])
			birth[k] = at;
		model[k] |= e->medium;
	} else {
		model[k] &= (unsigned char)~e->medium;
	}
}

/* Random histories: recording starts at r0, the master is read key by key at
 * random moments from r1 on (the listing, then the batch queries), the
 * events go on until the cut-over.  Replaying everything recorded since r0
 * onto what was read gives the master's state at cut-over. */
static void test_replay_from_before_the_listing_is_the_truth(void **state)
{
	(void)state;
	size_t births_kept = 0;
	for (uint64_t seed = 1; seed <= 500; seed++) {
		uint64_t r = seed;
		kv_recon_event ops[OPS];
		for (int i = 0; i < OPS; i++) {
			unsigned kind = (unsigned)(rnd(&r) % 100);
			unsigned k = (unsigned)(rnd(&r) % KEYS);
			/* the group is a function of the key, as the regex makes it */
			ops[i] = (kv_recon_event){key_hash(k),
						  kind < 55   ? KV_EV_STORED
						  : kind < 99 ? KV_EV_REMOVED
							      : KV_EV_CLEARED,
						  (uint8_t)(1 + rnd(&r) % 2), (uint16_t)(k % 3)};
			if (ops[i].type == KV_EV_CLEARED)
				ops[i].medium = 0;
		}
		size_t r0 = rnd(&r) % OPS, r1 = r0 + rnd(&r) % (OPS - r0), cut = r1 + rnd(&r) % (OPS - r1 + 1);
		/* when each key is read: somewhere in [r1, cut] */
		size_t read_at[KEYS];
		for (unsigned k = 0; k < KEYS; k++)
			read_at[k] = r1 + rnd(&r) % (cut - r1 + 1);

		unsigned char model[KEYS] = {0}, seen[KEYS], touched[KEYS] = {0};
		int64_t birth[KEYS], seen_birth[KEYS];
		kv_recon_log log;
		kv_recon_log_init(&log, OPS);
		for (size_t i = 0; i <= cut; i++) {
			for (unsigned k = 0; k < KEYS; k++)
				if (read_at[k] == i) {
					seen[k] = model[k];
					seen_birth[k] = model[k] ? birth[k] : KV_NO_BIRTH;
				}
			if (i == cut)
				break;
			if (i >= r0) {
				assert_int_equal(
					kv_recon_log_add(&log, ops[i].hash, ops[i].type, ops[i].medium, ops[i].group),
					KV_OK);
				for (unsigned k = 0; k < KEYS; k++)
					touched[k] |= ops[i].type == KV_EV_CLEARED || ops[i].hash == key_hash(k);
			}
			apply(model, birth, &ops[i], (int64_t)(1000 + i));
		}
		/* births as the stream's view had them when each key was read */
		kv_recon_table t = {0};
		assert_int_equal(kv_objtable_births(&t.objects, true), KV_OK);
		for (unsigned k = 0; k < KEYS; k++)
			assert_int_equal(kv_recon_put(&t, key_hash(k), seen[k], k % 3, seen_birth[k]), KV_OK);
		assert_int_equal(kv_recon_replay(&t, log.ev, log.n), KV_OK);

		uint64_t place[KV_PLACE__COUNT] = {0}, gplace[3][KV_PLACE__COUNT] = {{0}};
		for (unsigned k = 0; k < KEYS; k++) {
			if (model[k])
				gplace[k % 3][kv_placement_of(model[k])]++;
			if (kv_objtable_get(&t.objects, key_hash(k)) != model[k])
				fail_msg("seed %llu key %u: %u, want %u", (unsigned long long)seed, k,
					 kv_objtable_get(&t.objects, key_hash(k)), model[k]);
			if (model[k])
				place[kv_placement_of(model[k])]++;
			/* a birth is the truth's, or none where the replay touched the
			 * key (never another), and always the truth's where it did not */
			int64_t b = kv_objtable_birth(&t.objects, key_hash(k));
			if (model[k] && b != birth[k] && (b != KV_NO_BIRTH || !touched[k]))
				fail_msg("seed %llu key %u: born %lld, want %lld", (unsigned long long)seed, k,
					 (long long)b, (long long)birth[k]);
			births_kept += model[k] && b == birth[k];
		}
		assert_memory_equal(t.placement, place, sizeof(place));
		for (uint32_t g = 0; g < 3; g++) /* and per group */
			assert_memory_equal(kv_group_vec_at(&t.groups, g)->placement, gplace[g], sizeof(gplace[g]));
		kv_recon_table_free(&t);
		kv_recon_log_free(&log);
	}
	assert_true(births_kept > 500); /* carried over, not merely never wrong */
}

static void test_log_is_bounded(void **state)
{
	(void)state;
	kv_recon_log log;
	kv_recon_log_init(&log, 3000);
	for (int i = 0; i < 3000; i++)
		assert_int_equal(kv_recon_log_add(&log, (uint64_t)i << 2, KV_EV_STORED, KV_MEDIUM_CPU, 0), KV_OK);
	assert_false(log.overflow);
	assert_int_equal(kv_recon_log_add(&log, 1ull << 40, KV_EV_STORED, KV_MEDIUM_CPU, 0), KV_ELIMIT);
	assert_true(log.overflow);
	assert_int_equal(log.n, 3000);
	assert_int_equal(log.ev[2999].hash, (uint64_t)2999 << 2);
	kv_recon_log_free(&log);
}

static kv_str S(const char *s)
{
	return (kv_str){s, (uint32_t)strlen(s)};
}

static kv_event stored(const char *tenant, const char *key, unsigned medium, enum kv_event_type type)
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
	kv_budget budget;
	kv_budget_init(&budget, 10, 100);
	kv_state *s = kv_state_new(&budget, 42);
	kv_recon_log log;
	kv_recon_log_init(&log, 100);
	assert_int_equal(kv_state_record_start(s, S("b"), S("default"), &log), KV_OK);
	kv_event e = stored("default", "a", KV_MEDIUM_CPU, KV_EV_REMOVED);
	kv_state_apply(s, &e, KV_DIALECT_OBJECT);
	e = stored("default", "b", KV_MEDIUM_DISK, KV_EV_REMOVED);
	kv_state_apply(s, &e, KV_DIALECT_MEDIA);
	assert_int_equal(log.n, 2);
	/* the master listed a and b on both media before those removals */
	kv_recon_table t = {0};
	kv_recon_put(&t, kv_state_key_hash(s, S("a")), KV_MEDIUM_CPU | KV_MEDIUM_DISK, 0, KV_NO_BIRTH);
	kv_recon_put(&t, kv_state_key_hash(s, S("b")), KV_MEDIUM_CPU | KV_MEDIUM_DISK, 0, KV_NO_BIRTH);
	assert_int_equal(kv_recon_replay(&t, log.ev, log.n), KV_OK);
	assert_int_equal(kv_objtable_get(&t.objects, kv_state_key_hash(s, S("a"))), 0);
	assert_int_equal(kv_objtable_get(&t.objects, kv_state_key_hash(s, S("b"))), KV_MEDIUM_CPU);
	assert_int_equal(kv_recon_objects(&t), 1);
	assert_int_equal(t.placement[KV_PLACE_CPU_ONLY], 1);
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
	kv_budget budget;
	kv_budget_init(&budget, 10, 100);
	kv_state *s = kv_state_new(&budget, 42);
	kv_event e = stored("default", "a", KV_MEDIUM_CPU, KV_EV_STORED);
	assert_int_equal(kv_state_apply(s, &e, KV_DIALECT_MEDIA), KV_OK);
	e = stored("other", "x", KV_MEDIUM_CPU, KV_EV_STORED);
	assert_int_equal(kv_state_apply(s, &e, KV_DIALECT_MEDIA), KV_OK);

	kv_recon_log log;
	kv_recon_log_init(&log, 100);
	assert_int_equal(kv_state_record_start(s, S("b"), S("default"), &log), KV_OK);
	assert_int_equal(kv_state_record_start(s, S("b"), S("default"), &log), KV_EINVAL); /* one at a time */
	e = stored("default", "b", KV_MEDIUM_DISK, KV_EV_STORED);
	kv_state_apply(s, &e, KV_DIALECT_MEDIA);
	e = stored("other", "y", KV_MEDIUM_DISK, KV_EV_STORED); /* not this tenant's */
	kv_state_apply(s, &e, KV_DIALECT_MEDIA);
	e = stored("default", "a", KV_MEDIUM_CPU, KV_EV_REMOVED);
	kv_state_apply(s, &e, KV_DIALECT_MEDIA);
	assert_int_equal(log.n, 2);
	assert_int_equal(log.ev[0].hash, kv_state_key_hash(s, S("b")));
	assert_int_equal(log.ev[1].type, KV_EV_REMOVED);
	assert_int_equal(kv_state_recorded_objects(s), 1);

	/* the master says: a on both media, c on disk, d on cpu */
	kv_recon_table t = {0};
	kv_recon_put(&t, kv_state_key_hash(s, S("a")), KV_MEDIUM_CPU | KV_MEDIUM_DISK, 0, KV_NO_BIRTH);
	kv_recon_put(&t, kv_state_key_hash(s, S("c")), KV_MEDIUM_DISK, 0, KV_NO_BIRTH);
	kv_recon_put(&t, kv_state_key_hash(s, S("d")), KV_MEDIUM_CPU, 0, KV_NO_BIRTH);
	kv_recon_replay(&t, log.ev, log.n); /* + b on disk, a loses cpu */
	kv_objtable old;
	assert_int_equal(kv_state_adopt(s, &t, 0, &old), KV_OK);
	kv_state_record_stop(s);
	kv_recon_log_free(&log);
	assert_int_equal(kv_objtable_count(&old), 1);
	kv_objtable_clear(&old);

	const kv_tenant *d = kv_state_find_tenant(s, S("b"), S("default"));
	assert_int_equal(kv_tenant_objects(d), 4);
	assert_int_equal(d->counts.placement[KV_PLACE_DISK_ONLY], 3); /* a, b, c */
	assert_int_equal(d->counts.placement[KV_PLACE_CPU_ONLY], 1);  /* d */
	assert_int_equal(d->stale, 0);
	assert_int_equal(kv_state_object_media(s, d, S("a")), KV_MEDIUM_DISK);
	assert_int_equal(atomic_load(&budget.objects), 4 + 2);
	assert_true(kv_state_find_tenant(s, S("b"), S("other"))->stale != 0); /* others untouched */

	/* no room in the budget: nothing changes */
	kv_recon_log_init(&log, 100);
	assert_int_equal(kv_state_record_start(s, S("b"), S("new"), &log), KV_OK); /* created */
	kv_recon_table big = {0};
	for (uint64_t i = 1; i <= 95; i++)
		kv_recon_put(&big, i << 2, KV_MEDIUM_CPU, 0, KV_NO_BIRTH);
	assert_int_equal(kv_state_adopt(s, &big, 0, &old), KV_ELIMIT);
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
		cmocka_unit_test(test_replay_from_before_the_listing_is_the_truth),
		cmocka_unit_test(test_log_is_bounded),
		cmocka_unit_test(test_record_and_adopt),
		cmocka_unit_test(test_record_object_dialect),
	};
	return cmocka_run_group_tests_name("recon", tests, NULL, NULL);
}
