/* SPDX-License-Identifier: Apache-2.0 */
/* The byte-level helpers the renderer stands on: kv_buf and the UTF-8
 * checks that keep one bad tenant id from failing a whole scrape. */
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

#include "kv_fmt.h"
#include "kv_render.h"
#include "kv_utf8.h"

static void test_buf_grows_and_stays_terminated(void **state)
{
	(void)state;
	kv_buf b;
	kv_buf_init(&b);
	assert_null(b.data);
	for (int i = 0; i < 3000; i++)
		kv_buf_adds(&b, "abc");
	assert_int_equal(b.len, 9000);
	assert_true(b.cap > b.len);
	assert_int_equal(b.data[b.len], '\0');
	assert_int_equal(memcmp(b.data + 8997, "abc", 3), 0);
	kv_buf_addc(&b, 'x');
	kv_buf_add(&b, "\0y", 2); /* binary-safe */
	assert_int_equal(b.len, 9003);
	assert_int_equal(b.data[9001], '\0');
	assert_int_equal(b.data[9002], 'y');
	assert_true(kv_buf_ok(&b));

	kv_buf_reset(&b);
	assert_int_equal(b.len, 0);
	kv_buf_printf(&b, "%s=%d;", "n", 42);
	kv_buf_printf(&b, "%0500d", 7); /* longer than what is left of nothing */
	assert_int_equal(b.len, 5 + 500);
	assert_int_equal(strncmp(b.data, "n=42;000", 8), 0);

	size_t len;
	char *p = kv_buf_steal(&b, &len);
	assert_int_equal(len, 505);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	free(p);
	kv_buf_free(&b); /* nothing left: a no-op */
}

static const char *num(kv_buf *b, double v)
{
	kv_buf_reset(b);
	kv_buf_add_double(b, v);
	return b->data;
}

static void test_buf_numbers(void **state)
{
	(void)state;
	kv_buf b;
	kv_buf_init(&b);
	kv_buf_add_u64(&b, 0);
	kv_buf_addc(&b, ' ');
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
	kv_buf_free(&b);
}

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

/* Writing in place: the room asked for is there, what was used is kept and
 * terminated, and the buffer grows when the room is not there. */
static void test_buf_room(void **state)
{
	(void)state;
	kv_buf b;
	kv_buf_init(&b);
	kv_buf_adds(&b, "ab");
	char *w = kv_buf_room(&b, 10000);
	assert_non_null(w);
	assert_true(b.cap >= b.len + 10000 + 1);
	memcpy(w, "cdef", 4);
	kv_buf_used(&b, 3);
	assert_int_equal(b.len, 5);
	assert_string_equal(b.data, "abcde");
	b.failed = true; /* a failed buffer gives no room */
	assert_null(kv_buf_room(&b, 1));
	kv_buf_free(&b);
}

static void test_utf8(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		size_t n;
		bool clean;
	} cases[] = {
		{"", 0, true},
		{"tenant-a", 8, true},
		{"\xce\xba\xce\xbb", 4, true}, /* κλ */
		{"\xe2\x82\xac", 3, true},     /* € */
		{"\xf0\x9f\x98\x80", 4, true}, /* U+1F600 */
		{"\xf4\x8f\xbf\xbf", 4, true}, /* U+10FFFF, the last */
		{"a\0b", 3, false},            /* NUL */
		{"\xff", 1, false},
		{"\xc0\xaf", 2, false},         /* overlong '/' */
		{"\xe0\x80\xaf", 3, false},     /* overlong, 3 bytes */
		{"\xed\xa0\x80", 3, false},     /* surrogate U+D800 */
		{"\xf4\x90\x80\x80", 4, false}, /* above U+10FFFF */
		{"\xce", 1, false},             /* truncated */
		{"\xe2\x82", 2, false},
		{"\xce\x41", 2, false}, /* bad continuation */
		{"\x80", 1, false},     /* lone continuation */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (kv_label_value_clean(cases[i].s, cases[i].n) != cases[i].clean)
			fail_msg("case %zu", i);
	assert_int_equal(kv_utf8_seq_len((const unsigned char *)"\xf0\x9f\x98\x80", 4), 4);
	assert_int_equal(kv_utf8_seq_len((const unsigned char *)"\xf0\x9f\x98\x80", 3), 0);
}

static void test_label_value_escaping(void **state)
{
	(void)state;
	kv_buf b;
	kv_buf_init(&b);
	kv_render_label_value(&b, "a\\b\"c\nd", 7, false);
	assert_string_equal(b.data, "a\\\\b\\\"c\\nd");
	kv_buf_reset(&b);
	/* sanitised: each byte that starts no character becomes one U+FFFD */
	kv_render_label_value(&b, "x\xff\xfey\0z\xce\xba", 8, true);
	assert_string_equal(b.data, "x\xef\xbf\xbd\xef\xbf\xbdy\xef\xbf\xbdz\xce\xba");
	assert_true(kv_label_value_clean(b.data, b.len));
	kv_buf_free(&b);
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
		cmocka_unit_test(test_ms_as_seconds),
		cmocka_unit_test(test_buf_room),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_label_value_escaping),
		cmocka_unit_test(test_array_grow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
