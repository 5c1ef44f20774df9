/* SPDX-License-Identifier: Apache-2.0 */
/* Growable byte buffers (exporter/core/base/buf.c, include/mooncake_kv/buf.h):
 * what the renderer writes into, and the core's own helpers beside them
 * (core-private headers).  Linked with the daemon's library, without
 * UNIT_TESTING: the test frees what the library allocated. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <mooncake_kv/buf.h>

#include "kv_array.h" /* kv_array_grow: the core's own, not public */
#include "kv_fmt.h"   /* kv_buf_add_u64, kv_buf_add_double: the renderer's */

static void test_buf_grows_and_stays_terminated(void **state)
{
	(void)state;
	mkv_buf b;
	mkv_buf_init(&b);
	assert_null(b.data);
	for (int i = 0; i < 3000; i++)
		mkv_buf_adds(&b, "abc");
	assert_int_equal(b.len, 9000);
	assert_true(b.cap > b.len);
	assert_int_equal(b.data[b.len], '\0');
	assert_int_equal(memcmp(b.data + 8997, "abc", 3), 0);
	mkv_buf_addc(&b, 'x');
	mkv_buf_add(&b, "\0y", 2); /* binary-safe */
	assert_int_equal(b.len, 9003);
	assert_int_equal(b.data[9001], '\0');
	assert_int_equal(b.data[9002], 'y');
	assert_true(mkv_buf_ok(&b));

	mkv_buf_reset(&b);
	assert_int_equal(b.len, 0);
	mkv_buf_printf(&b, "%s=%d;", "n", 42);
	mkv_buf_printf(&b, "%0500d", 7); /* longer than what is left of nothing */
	assert_int_equal(b.len, 5 + 500);
	assert_int_equal(strncmp(b.data, "n=42;000", 8), 0);

	size_t len;
	char *p = mkv_buf_steal(&b, &len);
	assert_int_equal(len, 505);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	free(p);
	mkv_buf_free(&b); /* nothing left: a no-op */
}

static const char *num(mkv_buf *b, double v)
{
	mkv_buf_reset(b);
	kv_buf_add_double(b, v);
	return b->data;
}

static void test_buf_numbers(void **state)
{
	(void)state;
	mkv_buf b;
	mkv_buf_init(&b);
	kv_buf_add_u64(&b, 0);
	mkv_buf_addc(&b, ' ');
	kv_buf_add_u64(&b, 18446744073709551615ull);
	assert_string_equal(b.data, "0 18446744073709551615");
	assert_string_equal(num(&b, 0), "0");
	assert_string_equal(num(&b, -3), "-3");
	assert_string_equal(num(&b, 1e15), "1000000000000000");
	assert_string_equal(num(&b, 0.25), "0.25");
	assert_string_equal(num(&b, 0.1), "0.1");
	assert_string_equal(num(&b, NAN), "NaN");
	assert_string_equal(num(&b, INFINITY), "+Inf");
	assert_string_equal(num(&b, -INFINITY), "-Inf");
	/* no shorter form reads back as the same double */
	double third = 1.0 / 3.0;
	assert_true(strtod(num(&b, third), NULL) == third);
	assert_true(strtod(num(&b, 1e300), NULL) == 1e300);
	mkv_buf_free(&b);
}

/* Writing in place: the room asked for is there, what was used is kept and
 * terminated, and the buffer grows when the room is not there. */
static void test_buf_room(void **state)
{
	(void)state;
	mkv_buf b;
	mkv_buf_init(&b);
	mkv_buf_adds(&b, "ab");
	char *w = mkv_buf_room(&b, 10000);
	assert_non_null(w);
	assert_true(b.cap >= b.len + 10000 + 1);
	memcpy(w, "cdef", 4);
	mkv_buf_used(&b, 3);
	assert_int_equal(b.len, 5);
	assert_string_equal(b.data, "abcde");
	b.failed = true; /* a failed buffer gives no room */
	assert_null(mkv_buf_room(&b, 1));
	mkv_buf_free(&b);
}

/* kv_array_grow: first, then doubling, clamped at max; at max, or when the
 * bytes would overflow, NULL with the array and the capacity unchanged. */
static void test_array_grow(void **state)
{
	(void)state;
	size_t cap = 0;
	int *a = kv_array_grow(NULL, &cap, sizeof(int), 4, 10);
	assert_non_null(a);
	assert_int_equal(cap, 4);
	for (int i = 0; i < 4; i++)
		a[i] = i;
	a = kv_array_grow(a, &cap, sizeof(int), 4, 10);
	assert_int_equal(cap, 8);
	assert_int_equal(a[3], 3); /* kept */
	a = kv_array_grow(a, &cap, sizeof(int), 4, 10);
	assert_int_equal(cap, 10);
	assert_null(kv_array_grow(a, &cap, sizeof(int), 4, 10));
	assert_int_equal(cap, 10);
	size_t huge = SIZE_MAX / 2;
	assert_null(kv_array_grow(a, &huge, sizeof(int), 4, 0));
	assert_int_equal(huge, SIZE_MAX / 2);
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buf_grows_and_stays_terminated),
		cmocka_unit_test(test_buf_numbers),
		cmocka_unit_test(test_buf_room),
		cmocka_unit_test(test_array_grow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
