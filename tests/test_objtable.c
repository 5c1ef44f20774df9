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

static void check_all(const kv_objtable *t, const uint64_t *hashes, const unsigned char *model, size_t n)
{
	size_t live = 0;
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(kv_objtable_get(t, hashes[k]), model[k]);
		live += model[k] != 0;
	}
	assert_int_equal(kv_objtable_count(t), live);
	/* 8 bytes a slot, never more than twice the live array while draining */
	size_t cap = t->slots ? t->mask + 1 : 0;
	assert_true(kv_objtable_bytes(t) <= 3 * cap * sizeof(uint64_t) / 2 + 1);
	assert_true(live <= cap * 3 / 4 + 1);
}

static void churn(uint64_t *hashes, size_t n, size_t ops, uint64_t seed)
{
	unsigned char *model = calloc(n, 1);
	kv_objtable t = KV_OBJTABLE_INIT;
	uint64_t x = seed;
	for (size_t op = 0; op < ops; op++) {
		size_t k = splitmix(&x) % n;
		unsigned bit = 1u + (unsigned)(splitmix(&x) & 1);
		bool add = splitmix(&x) % 100 < 60;
		unsigned before = 99;
		assert_int_equal(kv_objtable_update(&t, hashes[k], add ? bit : 0, add ? 0 : bit, true, &before), KV_OK);
		assert_int_equal(before, model[k]);
		model[k] = add ? (unsigned char)(model[k] | bit) : (unsigned char)(model[k] & ~bit);
		if (op % 997 == 0)
			check_all(&t, hashes, model, n);
	}
	check_all(&t, hashes, model, n);
	kv_objtable_clear(&t);
	assert_int_equal(kv_objtable_count(&t), 0);
	assert_int_equal(kv_objtable_bytes(&t), 0);
	free(model);
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

/* Hashes that share their home slot in any table below 2^20 slots: long
 * clusters, wrap-around at the end of the array, backward shifts across it. */
static void test_clustered_hashes(void **state)
{
	(void)state;
	enum { N = 600 };
	uint64_t h[N];
	for (size_t i = 0; i < N; i++) {
		uint64_t home = (i % 3 == 0) ? 0xfffff : (i % 3 == 1) ? 0 : 0x7;
		h[i] = ((uint64_t)(i + 1) << 40) | (home << 2);
	}
	churn(h, N, 60000, 3);
}

/* Hashes that differ only in the two low bits are the same object: the
 * table keeps 62 bits, and says so. */
static void test_low_bits_ignored(void **state)
{
	(void)state;
	kv_objtable t = KV_OBJTABLE_INIT;
	assert_int_equal(kv_objtable_update(&t, 0x1000, KV_MEDIUM_CPU, 0, true, NULL), KV_OK);
	assert_int_equal(kv_objtable_get(&t, 0x1003), KV_MEDIUM_CPU);
	kv_objtable_clear(&t);
}

static void test_media_transitions(void **state)
{
	(void)state;
	kv_objtable t = KV_OBJTABLE_INIT;
	unsigned before;
	uint64_t h = 0xabcdef12345678ull;
	assert_int_equal(kv_objtable_update(&t, h, KV_MEDIUM_CPU, 0, true, &before), KV_OK);
	assert_int_equal(before, 0);
	assert_int_equal(kv_objtable_update(&t, h, KV_MEDIUM_DISK, 0, true, &before), KV_OK);
	assert_int_equal(before, KV_MEDIUM_CPU);
	assert_int_equal(kv_objtable_get(&t, h), KV_MEDIUM_CPU | KV_MEDIUM_DISK);
	assert_int_equal(kv_objtable_update(&t, h, 0, KV_MEDIUM_CPU, true, &before), KV_OK);
	assert_int_equal(kv_objtable_get(&t, h), KV_MEDIUM_DISK);
	assert_int_equal(kv_objtable_count(&t), 1);
	assert_int_equal(kv_objtable_update(&t, h, 0, KV_MEDIUM_DISK, true, &before), KV_OK);
	assert_int_equal(kv_objtable_count(&t), 0);
	/* removing what is not there changes nothing and needs no room */
	assert_int_equal(kv_objtable_update(&t, h, 0, KV_MEDIUM_DISK, false, &before), KV_OK);
	assert_int_equal(before, 0);
	assert_int_equal(kv_objtable_count(&t), 0);
	kv_objtable_clear(&t);
}

static void test_insert_refused(void **state)
{
	(void)state;
	kv_objtable t = KV_OBJTABLE_INIT;
	assert_int_equal(kv_objtable_update(&t, 1ull << 10, KV_MEDIUM_CPU, 0, true, NULL), KV_OK);
	/* a new object is refused without room... */
	assert_int_equal(kv_objtable_update(&t, 2ull << 10, KV_MEDIUM_CPU, 0, false, NULL), KV_ELIMIT);
	assert_int_equal(kv_objtable_get(&t, 2ull << 10), 0);
	/* ...an existing one may still change */
	assert_int_equal(kv_objtable_update(&t, 1ull << 10, KV_MEDIUM_DISK, 0, false, NULL), KV_OK);
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
		assert_int_equal(kv_objtable_update(&t, h[i], KV_MEDIUM_DISK, 0, true, NULL), KV_OK);
		if (t.old) {
			saw_draining = true;
			for (size_t j = 0; j <= i; j += 7)
				assert_int_equal(kv_objtable_get(&t, h[j]), KV_MEDIUM_DISK);
		}
	}
	assert_true(saw_draining);
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
		kv_objtable_update(&t, h[i], KV_MEDIUM_CPU, 0, true, NULL);
		model[i] = KV_MEDIUM_CPU;
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
			kv_objtable_update(&t, h[j], add ? bit : 0, add ? 0 : bit, true, &before);
			assert_int_equal(before, model[j]);
			model[j] = add ? (unsigned char)(model[j] | bit) : (unsigned char)(model[j] & ~bit);
		}
	}
	assert_true(released_checks > 1000);
	check_all(&t, h, model, N);
	kv_objtable_clear(&t);
	free(model);
	free(h);
}

static void count_cb(uint64_t hash, unsigned media, void *arg)
{
	(void)hash;
	assert_int_equal(media, KV_MEDIUM_CPU);
	(*(size_t *)arg)++;
}

static void test_each(void **state)
{
	(void)state;
	kv_objtable t = KV_OBJTABLE_INIT;
	uint64_t x = 5;
	for (int i = 0; i < 1000; i++)
		kv_objtable_update(&t, splitmix(&x), KV_MEDIUM_CPU, 0, true, NULL);
	size_t n = 0;
	kv_objtable_each(&t, count_cb, &n);
	assert_int_equal(n, 1000);
	kv_objtable_clear(&t);
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
		cmocka_unit_test(test_each),
		cmocka_unit_test(test_growth_releases_pages),
	};
	return cmocka_run_group_tests_name("objtable", tests, NULL, NULL);
}
