/* SPDX-License-Identifier: Apache-2.0 */
/* kvd_gzip_text: what it writes is a gzip member that zlib's own inflate
 * (the independent decoder here) turns back into the same bytes, for an
 * empty text, a scrape-like text and bytes that do not compress. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>

#include "kv_scrape_body.h"

static void round_trip(const char *in, size_t len)
{
	size_t zlen = 0;
	char *z = kvd_gzip_text(in, len, &zlen);
	assert_non_null(z);
	assert_true(zlen >= 18); /* a gzip header and trailer at least */
	assert_int_equal((unsigned char)z[0], 0x1f);
	assert_int_equal((unsigned char)z[1], 0x8b);
	char *back = malloc(len + 1);
	assert_non_null(back);
	z_stream s = {0};
	assert_int_equal(inflateInit2(&s, 15 + 16), Z_OK);
	s.next_in = (Bytef *)z;
	s.avail_in = (uInt)zlen;
	s.next_out = (Bytef *)back;
	s.avail_out = (uInt)(len + 1);
	assert_int_equal(inflate(&s, Z_FINISH), Z_STREAM_END);
	assert_int_equal(s.total_out, len);
	assert_int_equal(s.avail_in, 0); /* nothing after the member */
	assert_memory_equal(back, in, len);
	inflateEnd(&s);
	free(back);
	free(z);
}

static void test_round_trips(void **state)
{
	(void)state;
	round_trip("", 0);
	static const char line[] = "mooncake_kv_tenant_objects{source=\"s\",backend_id=\"b\",tenant_id=\"t\"} 12\n";
	size_t n = 20000 * (sizeof(line) - 1);
	char *text = malloc(n);
	assert_non_null(text);
	for (size_t i = 0; i < 20000; i++)
		memcpy(text + i * (sizeof(line) - 1), line, sizeof(line) - 1);
	round_trip(text, n);
	uint64_t x = 88172645463325252u; /* xorshift: bytes that do not compress */
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		text[i] = (char)x;
	}
	round_trip(text, n);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trips),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
