/* SPDX-License-Identifier: Apache-2.0 */
/* Native histogram buckets (exporter/core/base/native.c) against
 * Prometheus's definition, worked out here by brute force in long double:
 * at schema s bucket i holds (2^((i-1)/2^s), 2^(i/2^s)]; bounded to
 * KV_NATIVE_BUCKETS by lowering the schema, never losing a count. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_hist.h"
#include "kv_lifetime.h"
#include "kv_native.h"

#include <cmocka.h>

/* The bucket of v at schema s, by walking the bounds: each the double
 * nearest 2^(i/2^s), as Prometheus's tables of bounds hold them. */
static int32_t truth_index(double v, int s)
{
	long double per = powl(2.0L, s);
	int32_t i = (int32_t)floorl(log2l(v) * per) - 2;
	while (!(v <= (double)powl(2.0L, (long double)i / per)))
		i++;
	return i;
}

/* The schema the observations end at: the highest from the start whose
 * buckets from the lowest to the highest observed are few enough. */
static int truth_schema(const double *v, size_t n)
{
	for (int s = KV_NATIVE_SCHEMA_START; s > KV_NATIVE_SCHEMA_MIN; s--) {
		int32_t lo = INT32_MAX, hi = INT32_MIN;
		for (size_t k = 0; k < n; k++)
			if (v[k] > 0) {
				int32_t i = truth_index(v[k], s);
				lo = i < lo ? i : lo;
				hi = i > hi ? i : hi;
			}
		if (lo == INT32_MAX || hi - lo + 1 <= KV_NATIVE_BUCKETS)
			return s;
	}
	return KV_NATIVE_SCHEMA_MIN;
}

/* h holds exactly the buckets the truth gives v[0..n). */
static void check(const kv_native *h, const double *v, size_t n)
{
	int s = truth_schema(v, n);
	assert_int_equal(kv_native_schema(h), s);
	assert_true(h->n <= KV_NATIVE_BUCKETS);
	uint64_t zero = 0, total = h->zero;
	for (size_t k = 0; k < n; k++) {
		if (!(v[k] > 0)) {
			zero++;
			continue;
		}
		int32_t i = truth_index(v[k], s);
		assert_true(i >= h->first && i < h->first + h->n);
	}
	assert_int_equal(h->zero, zero);
	for (size_t b = 0; b < h->n; b++) {
		uint64_t want = 0;
		for (size_t k = 0; k < n; k++)
			want += v[k] > 0 && truth_index(v[k], s) == h->first + (int32_t)b;
		if (h->counts[b] != want)
			fail_msg("bucket %d at schema %d: %llu, want %llu", h->first + (int32_t)b, s,
				 (unsigned long long)h->counts[b], (unsigned long long)want);
		total += h->counts[b];
	}
	assert_int_equal(total, n);
}

/* Whether long double carries more precision than double here, as the
 * truth's bounds need to be the doubles nearest the real ones.  Under
 * valgrind, which runs x87 arithmetic at double precision, it does not. */
static bool long_double_wider(void)
{
	volatile long double one = 1.0L, eps = LDBL_EPSILON;
	return LDBL_MANT_DIG > DBL_MANT_DIG && one + eps > one;
}

/* Every bound itself, and just above and below it, at every schema: each in
 * the bucket Prometheus puts it in.  Where long double is no wider than
 * double the truth cannot place a value one ulp from a bound: only the
 * values clear of the bounds are probed then (said on stdout). */
static void test_index_at_bounds(void **state)
{
	(void)state;
	bool exact = long_double_wider();
	if (!exact)
		printf("long double no wider than double (valgrind?): bounds probed 0.01%% away, not at an ulp\n");
	for (int s = KV_NATIVE_SCHEMA_MIN; s <= 8; s++)
		for (int i = -40; i <= 40; i++) {
			double b = (double)powl(2.0L, (long double)i / powl(2.0L, s));
			double probes[] = {b * 1.0001, b * 0.9999, b, nextafter(b, 0), nextafter(b, INFINITY)};
			for (size_t k = 0; k < (exact ? sizeof(probes) / sizeof(probes[0]) : 2); k++)
				if (kv_native_index(probes[k], s) != truth_index(probes[k], s))
					fail_msg("%.17g at schema %d: %d, want %d", probes[k], s,
						 kv_native_index(probes[k], s), truth_index(probes[k], s));
		}
}

/* Observations close together keep the finest schema; spreading them lowers
 * it only as far as needed to fit, and no count is lost on the way. */
static void test_bounded_by_lowering(void **state)
{
	(void)state;
	double v[400];
	size_t n = 0;
	kv_native h = {0};
	uint64_t seed = 7;
	/* from 1 s to 2 s first, then ever wider: 1 ms up to a day */
	for (; n < 40; n++) {
		v[n] = 1.0 + (double)n / 40;
		kv_native_observe(&h, v[n], 1);
	}
	check(&h, v, n);
	assert_int_equal(kv_native_schema(&h), KV_NATIVE_SCHEMA_START);
	for (; n < 400; n++) {
		seed = seed * 6364136223846793005u + 1442695040888963407u;
		double u = (double)(seed >> 11) / 9007199254740992.0; /* [0, 1) */
		v[n] = n % 50 == 0 ? 0 : 0.001 * pow(86400000.0, u * (double)n / 400);
		kv_native_observe(&h, v[n], 1);
		if (n % 37 == 0)
			check(&h, v, n + 1);
	}
	check(&h, v, n);
	assert_true(kv_native_schema(&h) < KV_NATIVE_SCHEMA_START);
}

/* Below the lowest bucket first: the buckets move up to make room. */
static void test_extends_down(void **state)
{
	(void)state;
	double v[] = {100, 90, 80, 70, 60, 50};
	kv_native h = {0};
	for (size_t k = 0; k < 6; k++)
		kv_native_observe(&h, v[k], 1);
	check(&h, v, 6);
}

/* A lifetime histogram's native buckets are in the seconds it is served
 * in; a classic histogram keeps the same observations natively; a
 * handover's rebuild puts each classic bucket's lives at its upper bound. */
static void test_lifetime_in_seconds(void **state)
{
	(void)state;
	kv_life_hist h = {0};
	uint64_t ms[] = {0, 1500, 1500, 2000, 4000, 9000};
	double s[6];
	for (size_t k = 0; k < 6; k++) {
		kv_life_observe(&h, ms[k]);
		s[k] = (double)ms[k] / 1000.0;
	}
	check(&h.native, s, 6);
	kv_hist c;
	static const double bounds[] = {1, 10};
	kv_hist_init(&c, bounds, 2);
	for (size_t k = 0; k < 6; k++)
		kv_hist_observe(&c, s[k]);
	check(&c.native, s, 6);
	kv_life_native_from_classic(&h);
	/* buckets 2500, 2500, 2500, 5000, 10000 ms; the 0 in the first, at 1 s */
	double rebuilt[] = {1, 2.5, 2.5, 2.5, 5, 10};
	check(&h.native, rebuilt, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_index_at_bounds),
		cmocka_unit_test(test_bounded_by_lowering),
		cmocka_unit_test(test_extends_down),
		cmocka_unit_test(test_lifetime_in_seconds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
