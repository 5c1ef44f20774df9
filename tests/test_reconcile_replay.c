/* SPDX-License-Identifier: Apache-2.0 */
/* Reconciliation's replay (exporter/core/model/reconcile_replay.c): the
 * replay argument as a property test, and the bounded log of what arrived
 * meanwhile.  The state's recording and cut-over: test_state_reconcile.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kv_reconcile_replay.h"

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
	if (e->type == MKV_EV_CLEARED) {
		memset(model, 0, KEYS);
		return;
	}
	unsigned k = 0;
	while (key_hash(k) != e->hash)
		k++;
	if (e->type == MKV_EV_STORED) {
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
						  kind < 55   ? MKV_EV_STORED
						  : kind < 99 ? MKV_EV_REMOVED
							      : MKV_EV_CLEARED,
						  (uint8_t)(1 + rnd(&r) % 2), (uint16_t)(k % 3)};
			if (ops[i].type == MKV_EV_CLEARED)
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
					MKV_OK);
				for (unsigned k = 0; k < KEYS; k++)
					touched[k] |= ops[i].type == MKV_EV_CLEARED || ops[i].hash == key_hash(k);
			}
			apply(model, birth, &ops[i], (int64_t)(1000 + i));
		}
		/* births as the stream's view had them when each key was read */
		kv_recon_table t = {0};
		assert_int_equal(kv_objtable_births(&t.objects, true), MKV_OK);
		for (unsigned k = 0; k < KEYS; k++)
			assert_int_equal(kv_recon_put(&t, key_hash(k), seen[k], k % 3, seen_birth[k]), MKV_OK);
		assert_int_equal(kv_recon_replay(&t, log.ev, log.n), MKV_OK);

		uint64_t place[MKV_PLACE__COUNT] = {0}, gplace[3][MKV_PLACE__COUNT] = {{0}};
		for (unsigned k = 0; k < KEYS; k++) {
			if (model[k])
				gplace[k % 3][mkv_placement_of(model[k])]++;
			if (kv_objtable_get(&t.objects, key_hash(k)) != model[k])
				fail_msg("seed %llu key %u: %u, want %u", (unsigned long long)seed, k,
					 kv_objtable_get(&t.objects, key_hash(k)), model[k]);
			if (model[k])
				place[mkv_placement_of(model[k])]++;
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
		assert_int_equal(kv_recon_log_add(&log, (uint64_t)i << 2, MKV_EV_STORED, MKV_MEDIUM_CPU, 0), MKV_OK);
	assert_false(log.overflow);
	assert_int_equal(kv_recon_log_add(&log, 1ull << 40, MKV_EV_STORED, MKV_MEDIUM_CPU, 0), MKV_ELIMIT);
	assert_true(log.overflow);
	assert_int_equal(log.n, 3000);
	assert_int_equal(log.ev[2999].hash, (uint64_t)2999 << 2);
	kv_recon_log_free(&log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_from_before_the_listing_is_the_truth),
		cmocka_unit_test(test_log_is_bounded),
	};
	return cmocka_run_group_tests_name("reconcile_replay", tests, NULL, NULL);
}
