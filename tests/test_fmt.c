/* SPDX-License-Identifier: Apache-2.0 */
/* Sample values written in place (exporter/core/base/fmt.c), against what
 * printf writes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_fmt.h"

#include <cmocka.h>

/* The text printf gives v, the way kv_buf_add_double promises it: written
 * here from libc alone, as the reference. */
static void printf_reference(char *out, size_t cap, double v)
{
	if (v == (double)(long long)v && fabs(v) < 9e15) {
		snprintf(out, cap, "%lld", (long long)v);
		return;
	}
	snprintf(out, cap, "%.15g", v);
	if (strtod(out, NULL) != v)
		snprintf(out, cap, "%.17g", v);
}

static void check_ms(int64_t ms)
{
	char want[64], got[KV_FMT_MAX + 1];
	printf_reference(want, sizeof(want), (double)ms / 1000.0);
	*kv_fmt_ms_as_s(got, ms) = '\0';
	if (strcmp(want, got))
		fail_msg("%lld ms: %s, printf says %s", (long long)ms, got, want);
}

/* kv_fmt_ms_as_s writes what printf would, without it: every edge, and
 * random values of every magnitude, both signs. */
static void test_ms_as_seconds(void **state)
{
	(void)state;
	static const int64_t edges[] = {0,
					1,
					9,
					10,
					99,
					100,
					999,
					1000,
					1001,
					1010,
					1100,
					12345,
					1795982104700,
					999999999999999,
					1000000000000000,
					1000000000000001,
					9007199254740993,
					INT64_MAX,
					INT64_MIN,
					INT64_MIN + 1};
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		check_ms(edges[i]);
		if (edges[i] != INT64_MIN)
			check_ms(-edges[i]);
	}
	uint64_t x = 88172645463325252ull; /* xorshift: the same values every run */
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		int64_t v = (int64_t)(x >> (x % 62)); /* every magnitude */
		check_ms(i & 1 ? -v : v);
	}
	char w[KV_FMT_MAX + 1];
	*kv_fmt_ms_as_s(w, 2500) = '\0';
	assert_string_equal(w, "2.5");
	*kv_fmt_u64(w, 100) = '\0';
	assert_string_equal(w, "100");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ms_as_seconds),
	};
	return cmocka_run_group_tests_name("fmt", tests, NULL, NULL);
}
