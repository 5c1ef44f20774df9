/* SPDX-License-Identifier: Apache-2.0 */
/* The object table against a plain array model: random churn through
 * growth and draining, clustered hashes that wrap around, and limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kv_common.h"
#include "kv_objtable.h"

#include <cmocka.h>

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The model: media per key, and the birth each live key was inserted with
 * (KV_NO_BIRTH when births are off or it had none). */
typedef struct table_model {
	unsigned char *media;
	int64_t *birth;
} table_model;

static void check_all(const kv_objtable *t, const uint64_t *hashes, const table_model *m, size_t n)
{
	size_t live = 0, born = 0;
	double sum = 0;
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(kv_objtable_get(t, hashes[k]), m->media[k]);
		live += m->media[k] != 0;
		if (!m->media[k])
			continue;
		assert_true(kv_objtable_birth(t, hashes[k]) == m->birth[k]);
		if (m->birth[k] != KV_NO_BIRTH) {
			born++;
			sum += (double)m->birth[k];
		}
	}
	assert_int_equal(kv_objtable_count(t), live);
	assert_int_equal(t->births_n, born);
	double mean;
	assert_int_equal(kv_objtable_births_mean(t, &mean), born > 0);
	if (born)
		assert_true(mean > sum / (double)born - 1e-6 && mean < sum / (double)born + 1e-6);
	/* 8 (12 with births) bytes a slot; while draining, the old array is at
	 * most 7/8 of the live one */
	size_t cap = t->cap, per = t->with_births ? 12 : 8;
	assert_true(kv_objtable_bytes(t) <= 15 * cap * per / 8 + 1);
	assert_true(live <= cap * 3 / 4 + 1);
}

/* Random stores and removals of n keys; with births, each insertion is
 * born at its operation's number, and a removal reports it back. */
static void churn_births(uint64_t *hashes, size_t n, size_t ops, uint64_t seed, bool births)
{
	table_model m = {calloc(n, 1), malloc(n * sizeof(int64_t))};
	kv_objtable t = KV_OBJTABLE_INIT;
	assert_int_equal(kv_objtable_births(&t, births), MKV_OK);
	uint64_t x = seed;
	for (size_t op = 0; op < ops; op++) {
		size_t k = splitmix(&x) % n;
		unsigned bit = 1u + (unsigned)(splitmix(&x) & 1);
		bool add = splitmix(&x) % 100 < 60;
		unsigned before = 99;
		int64_t born = 99, at = births ? (int64_t)op : KV_NO_BIRTH;
		assert_int_equal(kv_objtable_update(&t, hashes[k], add ? bit : 0, add ? 0 : bit, true, (int64_t)op,
						    &before, &born),
				 MKV_OK);
		assert_int_equal(before, m.media[k]);
		unsigned after = add ? (before | bit) : (before & ~bit);
		if (before && !after) /* it went: its birth is reported */
			assert_true(born == m.birth[k]);
		else
			assert_true(born == KV_NO_BIRTH);
		if (!before && after)
			m.birth[k] = at;
		m.media[k] = (unsigned char)after;
		if (op % 997 == 0)
			check_all(&t, hashes, &m, n);
	}
	check_all(&t, hashes, &m, n);
	kv_objtable_clear(&t);
	assert_int_equal(kv_objtable_count(&t), 0);
	assert_int_equal(kv_objtable_bytes(&t), 0);
	free(m.media);
	free(m.birth);
}

static void churn(uint64_t *hashes, size_t n, size_t ops, uint64_t seed)
{
	churn_births(hashes, n, ops, seed, false);
	churn_births(hashes, n, ops, seed, true);
}

static void test_random_churn(void **state)
{
	(void)state;
	enum { N = 20000 };
	uint64_t *h = malloc(N * sizeof(*h));
	uint64_t x = 42;
	for (size_t i = 0; i < N; i++)
		h[i] = splitmix(&x);
	churn(h, N, 400000, 7);
	free(h);
}

/* Hashes that share their home slot in any table below 2^20 slots (the
 * home is the high bits: the last slot, the first, one in the middle):
 * long clusters, wrap-around at the end of the array, backward shifts
 * across it. */
static void test_clustered_hashes(void **state)
{
	(void)state;
	enum { N = 600 };
	uint64_t h[N];
	for (size_t i = 0; i < N; i++) {
		uint64_t home = (i % 3 == 0) ? 0xfffff : (i % 3 == 1) ? 0 : 0x80000;
		h[i] = (home << 44) | ((uint64_t)(i + 1) << 2);
	}
	churn(h, N, 60000, 3);
}

/* Hashes that differ only in the two low bits are the same object: the
 * table keeps 62 bits, and says so. */
static void test_low_bits_ignored(void **state)
{
	(void)state;
	kv_objtable t = KV_OBJTABLE_INIT;
	assert_int_equal(kv_objtable_update(&t, 0x1000, MKV_MEDIUM_CPU, 0, true, KV_NO_BIRTH, NULL, NULL), MKV_OK);
	assert_int_equal(kv_objtable_get(&t, 0x1003), MKV_MEDIUM_CPU);
	kv_objtable_clear(&t);
}

static void test_media_transitions(void **state)
{
	(void)state;
	kv_objtable t = KV_OBJTABLE_INIT;
	unsigned before;
	uint64_t h = 0xabcdef12345678ull;
	assert_int_equal(kv_objtable_update(&t, h, MKV_MEDIUM_CPU, 0, true, KV_NO_BIRTH, &before, NULL), MKV_OK);
	assert_int_equal(before, 0);
	assert_int_equal(kv_objtable_update(&t, h, MKV_MEDIUM_DISK, 0, true, KV_NO_BIRTH, &before, NULL), MKV_OK);
	assert_int_equal(before, MKV_MEDIUM_CPU);
	assert_int_equal(kv_objtable_get(&t, h), MKV_MEDIUM_CPU | MKV_MEDIUM_DISK);
	assert_int_equal(kv_objtable_update(&t, h, 0, MKV_MEDIUM_CPU, true, KV_NO_BIRTH, &before, NULL), MKV_OK);
	assert_int_equal(kv_objtable_get(&t, h), MKV_MEDIUM_DISK);
	assert_int_equal(kv_objtable_count(&t), 1);
	assert_int_equal(kv_objtable_update(&t, h, 0, MKV_MEDIUM_DISK, true, KV_NO_BIRTH, &before, NULL), MKV_OK);
	assert_int_equal(kv_objtable_count(&t), 0);
	/* removing what is not there changes nothing and needs no room */
	assert_int_equal(kv_objtable_update(&t, h, 0, MKV_MEDIUM_DISK, false, KV_NO_BIRTH, &before, NULL), MKV_OK);
	assert_int_equal(before, 0);
	assert_int_equal(kv_objtable_count(&t), 0);
	kv_objtable_clear(&t);
}

static void test_insert_refused(void **state)
{
	(void)state;
	kv_objtable t = KV_OBJTABLE_INIT;
	assert_int_equal(kv_objtable_update(&t, 1ull << 10, MKV_MEDIUM_CPU, 0, true, KV_NO_BIRTH, NULL, NULL), MKV_OK);
	/* a new object is refused without room... */
	assert_int_equal(kv_objtable_update(&t, 2ull << 10, MKV_MEDIUM_CPU, 0, false, KV_NO_BIRTH, NULL, NULL),
			 MKV_ELIMIT);
	assert_int_equal(kv_objtable_get(&t, 2ull << 10), 0);
	/* ...an existing one may still change */
	assert_int_equal(kv_objtable_update(&t, 1ull << 10, MKV_MEDIUM_DISK, 0, false, KV_NO_BIRTH, NULL, NULL),
			 MKV_OK);
	assert_int_equal(kv_objtable_get(&t, 1ull << 10), 3);
	assert_int_equal(kv_objtable_count(&t), 1);
	kv_objtable_clear(&t);
}

/* Growth drains the old array a few slots per operation: right after a
 * resize both arrays exist, and every object stays reachable. */
static void test_incremental_growth(void **state)
{
	(void)state;
	kv_objtable t = KV_OBJTABLE_INIT;
	uint64_t x = 9;
	uint64_t h[5000];
	bool saw_draining = false;
	for (size_t i = 0; i < 5000; i++) {
		h[i] = splitmix(&x);
		assert_int_equal(kv_objtable_update(&t, h[i], MKV_MEDIUM_DISK, 0, true, KV_NO_BIRTH, NULL, NULL),
				 MKV_OK);
		if (t.old) {
			saw_draining = true;
			for (size_t j = 0; j <= i; j += 7)
				assert_int_equal(kv_objtable_get(&t, h[j]), MKV_MEDIUM_DISK);
		}
	}
	assert_true(saw_draining);
	kv_objtable_clear(&t);
}

/* The drain is paid in chunks, yet each growth's old array is gone before
 * the next growth (which would otherwise move all that is left at once),
 * and no operation moves more than a chunk and a step (objtable.c:
 * DRAIN_CHUNK 4,096 + DRAIN_STEP 48): insertions only, the fastest growth. */
static void test_drain_chunks(void **state)
{
	(void)state;
	enum { N = 400000 };
	kv_objtable t = KV_OBJTABLE_INIT;
	uint64_t x = 5;
	size_t growths = 0, chunks = 0;
	for (size_t i = 0; i < N; i++) {
		size_t cap = t.cap, cursor = t.old_cursor;
		const uint64_t *old = t.old;
		assert_int_equal(kv_objtable_update(&t, splitmix(&x), MKV_MEDIUM_CPU, 0, true, KV_NO_BIRTH, NULL, NULL),
				 MKV_OK);
		if (t.cap != cap) {
			growths++;
			assert_null(old); /* drained before this growth */
		} else if (old && t.old == old && t.old_cursor != cursor) {
			chunks++;
			assert_true(t.old_cursor - cursor <= 4096 + 48);
		}
	}
	assert_true(growths > 20);
	assert_true(chunks > 100);
	assert_int_equal(kv_objtable_count(&t), N);
	kv_objtable_clear(&t);
}

/* Large enough for the old array to hand drained pages back while it is
 * still being probed: lookups, updates and deletions that land in the old
 * array, before and after released pages, against the model. */
static void test_growth_releases_pages(void **state)
{
	(void)state;
	enum { N = 200000 };
	uint64_t *h = malloc(N * sizeof(*h));
	unsigned char *model = calloc(N, 1);
	uint64_t x = 77;
	for (size_t i = 0; i < N; i++)
		h[i] = splitmix(&x);
	kv_objtable t = KV_OBJTABLE_INIT;
	size_t released_checks = 0;
	for (size_t i = 0; i < N; i++) {
		kv_objtable_update(&t, h[i], MKV_MEDIUM_CPU, 0, true, KV_NO_BIRTH, NULL, NULL);
		model[i] = MKV_MEDIUM_CPU;
		if (!t.old || t.old_released == 0)
			continue;
		/* the old array has released pages: touch a few random earlier keys */
		released_checks++;
		for (int k = 0; k < 4; k++) {
			size_t j = splitmix(&x) % (i + 1);
			assert_int_equal(kv_objtable_get(&t, h[j]), model[j]);
			unsigned bit = 1u + (unsigned)(splitmix(&x) & 1);
			bool add = splitmix(&x) & 1;
			unsigned before;
			kv_objtable_update(&t, h[j], add ? bit : 0, add ? 0 : bit, true, KV_NO_BIRTH, &before, NULL);
			assert_int_equal(before, model[j]);
			model[j] = add ? (unsigned char)(model[j] | bit) : (unsigned char)(model[j] & ~bit);
		}
	}
	assert_true(released_checks > 1000);
	int64_t *nb = malloc(N * sizeof(*nb));
	for (size_t i = 0; i < N; i++)
		nb[i] = KV_NO_BIRTH;
	check_all(&t, h, &(table_model){model, nb}, N);
	free(nb);
	kv_objtable_clear(&t);
	free(model);
	free(h);
}

static void count_cb(uint64_t hash, unsigned media, int64_t birth, void *arg)
{
	(void)hash;
	assert_true(birth == KV_NO_BIRTH);
	assert_int_equal(media, MKV_MEDIUM_CPU);
	(*(size_t *)arg)++;
}

static void test_each(void **state)
{
	(void)state;
	kv_objtable t = KV_OBJTABLE_INIT;
	uint64_t x = 5;
	for (int i = 0; i < 1000; i++)
		kv_objtable_update(&t, splitmix(&x), MKV_MEDIUM_CPU, 0, true, KV_NO_BIRTH, NULL, NULL);
	size_t n = 0;
	kv_objtable_each(&t, count_cb, &n);
	assert_int_equal(n, 1000);
	kv_objtable_clear(&t);
}

/* Births on and off: objects held before births were on have none; off
 * gives the memory back; a removal reports the birth it ends. */
static void test_births_on_off(void **state)
{
	(void)state;
	kv_objtable t = KV_OBJTABLE_INIT;
	uint64_t x = 11, h[100];
	for (int i = 0; i < 100; i++)
		kv_objtable_update(&t, h[i] = splitmix(&x), MKV_MEDIUM_CPU, 0, true, 1000 + i, NULL, NULL);
	size_t plain = kv_objtable_bytes(&t);
	assert_true(kv_objtable_birth(&t, h[0]) == KV_NO_BIRTH); /* not kept: off */
	assert_int_equal(kv_objtable_births(&t, true), MKV_OK);
	assert_int_equal(kv_objtable_bytes(&t), plain / 8 * 12);
	assert_true(kv_objtable_birth(&t, h[0]) == KV_NO_BIRTH); /* held before: not seen */
	uint64_t y = splitmix(&x);
	kv_objtable_update(&t, y, MKV_MEDIUM_DISK, 0, true, 5000, NULL, NULL);
	assert_true(kv_objtable_birth(&t, y) == 5000);
	/* a second medium is no new life: the birth stays */
	kv_objtable_update(&t, y, MKV_MEDIUM_CPU, 0, true, 6000, NULL, NULL);
	assert_true(kv_objtable_birth(&t, y) == 5000);
	int64_t born = 0;
	unsigned before;
	kv_objtable_update(&t, y, 0, MKV_MEDIUM_CPU | MKV_MEDIUM_DISK, true, 7000, &before, &born);
	assert_int_equal(before, MKV_MEDIUM_CPU | MKV_MEDIUM_DISK);
	assert_true(born == 5000);
	assert_int_equal(t.births_n, 0);
	/* out of range births are none */
	kv_objtable_update(&t, y, MKV_MEDIUM_CPU, 0, true, -5, NULL, NULL);
	assert_true(kv_objtable_birth(&t, y) == KV_NO_BIRTH);
	assert_int_equal(kv_objtable_births(&t, false), MKV_OK);
	assert_int_equal(kv_objtable_bytes(&t), plain);
	kv_objtable_clear(&t);
}

/* The 49-day window: a birth far from the others moves it; births that
 * fall out become unseen, the others keep their value, the mean follows. */
static void test_birth_window(void **state)
{
	(void)state;
	const int64_t day = 86400000, t0 = 1800000000000;
	kv_objtable t = KV_OBJTABLE_INIT;
	kv_objtable_births(&t, true);
	for (uint64_t i = 1; i <= 50; i++) /* born on days 0 .. 49 */
		kv_objtable_update(&t, i << 40, MKV_MEDIUM_CPU, 0, true, t0 + (int64_t)(i - 1) * day, NULL, NULL);
	/* day 0's window reaches back and forth 24.8 days: births after day 24
	 * moved it; the earliest were forgotten */
	size_t seen = 0;
	double sum = 0;
	for (uint64_t i = 1; i <= 50; i++) {
		int64_t b = kv_objtable_birth(&t, i << 40);
		if (b != KV_NO_BIRTH) {
			assert_true(b == t0 + (int64_t)(i - 1) * day);
			seen++;
			sum += (double)b;
		}
	}
	assert_true(seen >= 25 && seen < 50);
	assert_int_equal(t.births_n, seen);
	double mean;
	assert_true(kv_objtable_births_mean(&t, &mean));
	assert_true(mean > sum / (double)seen - 1e-3 && mean < sum / (double)seen + 1e-3);
	/* the newest birth always fits */
	assert_true(kv_objtable_birth(&t, 50ull << 40) == t0 + 49 * day);
	/* a birth from before the window (another publisher's clock) moves it back */
	kv_objtable_update(&t, 99ull << 40, MKV_MEDIUM_CPU, 0, true, t0, NULL, NULL);
	assert_true(kv_objtable_birth(&t, 99ull << 40) == t0);
	kv_objtable_clear(&t);
}

/* Quarter steps: 16, 20, 24, 28, 32, 40, ...; right after each growth
 * the table is at least 60% full. */
static void test_capacity_steps(void **state)
{
	(void)state;
	kv_objtable t = KV_OBJTABLE_INIT;
	uint64_t x = 3;
	size_t cap = 0, steps = 0;
	static const size_t first[] = {16, 20, 24, 28, 32, 40, 48, 56, 64, 80};
	for (size_t i = 0; i < 100000; i++) {
		kv_objtable_update(&t, splitmix(&x), MKV_MEDIUM_CPU, 0, true, KV_NO_BIRTH, NULL, NULL);
		if (t.cap == cap)
			continue;
		if (steps < sizeof(first) / sizeof(first[0]))
			assert_int_equal(t.cap, first[steps]);
		if (cap >= 16)
			assert_true(kv_objtable_count(&t) * 5 >= t.cap * 3);
		cap = t.cap;
		steps++;
	}
	assert_true(steps > 30);
	kv_objtable_clear(&t);
}

/* Settling drains a quiet table's old array a bounded step at a time. */
static void test_settle(void **state)
{
	(void)state;
	kv_objtable t = KV_OBJTABLE_INIT;
	uint64_t x = 21;
	while (!t.old || t.old_cap < 1000)
		kv_objtable_update(&t, splitmix(&x), MKV_MEDIUM_CPU, 0, true, KV_NO_BIRTH, NULL, NULL);
	size_t live = kv_objtable_count(&t), rounds = 0;
	while (t.old) {
		size_t before = t.old_cursor;
		size_t n = kv_objtable_settle(&t, 100);
		assert_true(n <= 100);
		assert_true(!t.old || t.old_cursor == before + 100);
		rounds++;
	}
	assert_true(rounds > 1);
	assert_int_equal(kv_objtable_count(&t), live);
	assert_int_equal(kv_objtable_settle(&t, 100), 0);
	kv_objtable_clear(&t);
}

/* Arrays of 2 MiB or more are mapped on their own, each aligned to a huge
 * page (so that the kernel can back all of it with huge pages): through
 * growth and draining, with births, every object and birth stays, births
 * off and on again give back and take the memory, and clear frees it all
 * (valgrind and ASan see the mappings). */
static void test_huge_arrays(void **state)
{
	(void)state;
	enum { N = 450000 };
	const uintptr_t huge = (uintptr_t)2 << 20;
	uint64_t *h = malloc(N * sizeof(*h));
	uint64_t x = 31;
	kv_objtable t = KV_OBJTABLE_INIT;
	assert_int_equal(kv_objtable_births(&t, true), MKV_OK);
	size_t aligned_slots = 0, aligned_births = 0;
	const uint64_t *seen = NULL;
	for (size_t i = 0; i < N; i++) {
		h[i] = splitmix(&x);
		assert_int_equal(kv_objtable_update(&t, h[i], MKV_MEDIUM_CPU, 0, true, 1000 + (int64_t)i, NULL, NULL),
				 MKV_OK);
		if (t.slots == seen)
			continue;
		seen = t.slots;
		if (t.cap * sizeof(*t.slots) >= huge) {
			assert_int_equal((uintptr_t)t.slots % huge, 0);
			aligned_slots++;
		}
		if (t.cap * sizeof(*t.births) >= huge) {
			assert_int_equal((uintptr_t)t.births % huge, 0);
			aligned_births++;
		}
	}
	assert_true(aligned_slots >= 3 && aligned_births >= 1);
	/* every other one goes, the rest keep their birth */
	for (size_t i = 0; i < N; i += 2) {
		int64_t born = 0;
		assert_int_equal(kv_objtable_update(&t, h[i], 0, MKV_MEDIUM_CPU, true, 0, NULL, &born), MKV_OK);
		assert_true(born == 1000 + (int64_t)i);
	}
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(kv_objtable_get(&t, h[i]), i % 2 ? MKV_MEDIUM_CPU : 0);
		if (i % 2)
			assert_true(kv_objtable_birth(&t, h[i]) == 1000 + (int64_t)i);
	}
	size_t with = kv_objtable_bytes(&t);
	assert_int_equal(kv_objtable_births(&t, false), MKV_OK);
	assert_int_equal(kv_objtable_bytes(&t), with / 12 * 8);
	assert_int_equal(kv_objtable_births(&t, true), MKV_OK);
	assert_int_equal(kv_objtable_bytes(&t), with);
	assert_int_equal((uintptr_t)t.births % huge, 0);
	assert_int_equal(kv_objtable_count(&t), N / 2);
	kv_objtable_clear(&t);
	assert_int_equal(kv_objtable_bytes(&t), 0);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_churn),
		cmocka_unit_test(test_clustered_hashes),
		cmocka_unit_test(test_low_bits_ignored),
		cmocka_unit_test(test_media_transitions),
		cmocka_unit_test(test_insert_refused),
		cmocka_unit_test(test_incremental_growth),
		cmocka_unit_test(test_drain_chunks),
		cmocka_unit_test(test_each),
		cmocka_unit_test(test_growth_releases_pages),
		cmocka_unit_test(test_births_on_off),
		cmocka_unit_test(test_birth_window),
		cmocka_unit_test(test_capacity_steps),
		cmocka_unit_test(test_settle),
		cmocka_unit_test(test_huge_arrays),
	};
	return cmocka_run_group_tests_name("objtable", tests, NULL, NULL);
}
