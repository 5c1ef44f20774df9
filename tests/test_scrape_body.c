/* SPDX-License-Identifier: Apache-2.0 */
/* kvd_gzip_text, by every compressor the build has (zlib, and ISA-L when
 * built with it): what it writes is one gzip member that zlib's own
 * inflate (the independent decoder here) turns back into the same bytes,
 * its trailer's CRC-32 and length those zlib computes over the text, with
 * nothing after it (curl reads only a first member), for an empty text, a
 * scrape-like text and bytes that do not compress, short and long: a text
 * of 64 KiB or more is compressed in two halves at once, which must still
 * make one member.  kvd_gzip_text itself writes what the fastest built
 * compressor writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>

#include "kv_scrape_body.h"

static const enum kvd_deflater deflaters[] = {KVD_DEFLATE_ZLIB, KVD_DEFLATE_ISAL};
#define DEFLATERS (sizeof(deflaters) / sizeof(deflaters[0]))

static unsigned long le32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	return (unsigned long)u[0] | (unsigned long)u[1] << 8 | (unsigned long)u[2] << 16 | (unsigned long)u[3] << 24;
}

static void round_trip_with(const char *in, size_t len, enum kvd_deflater with)
{
	size_t zlen = 0;
	char *z = kvd_gzip_text_with(in, len, &zlen, with);
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
	assert_int_equal(inflate(&s, Z_FINISH), Z_STREAM_END); /* the trailer checked */
	assert_int_equal(s.total_out, len);
	assert_int_equal(s.avail_in, 0); /* nothing after the member */
	assert_memory_equal(back, in, len);
	inflateEnd(&s);
	/* the trailer: the CRC-32 and the length zlib makes of the text */
	assert_int_equal(le32(z + zlen - 8), crc32_z(crc32_z(0, Z_NULL, 0), (const Bytef *)in, len));
	assert_int_equal(le32(z + zlen - 4), (unsigned long)(len & 0xffffffffu));
	free(back);
	free(z);
}

/* Each built compressor round trips the text; kvd_gzip_text writes the
 * bytes of the last built (the fastest). */
static void round_trip(const char *in, size_t len)
{
	size_t fastest = 0;
	for (size_t d = 0; d < DEFLATERS; d++)
		if (kvd_deflater_built(deflaters[d])) {
			round_trip_with(in, len, deflaters[d]);
			fastest = d;
		}
	size_t n = 0, n_fastest = 0;
	char *z = kvd_gzip_text(in, len, &n);
	char *want = kvd_gzip_text_with(in, len, &n_fastest, deflaters[fastest]);
	assert_non_null(z);
	assert_non_null(want);
	assert_int_equal(n, n_fastest);
	assert_memory_equal(z, want, n);
	free(z);
	free(want);
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
	/* around the split (64 KiB), odd lengths, and 1.4 MB */
	static const size_t lens[] = {100, (64 << 10) - 1, 64 << 10, (64 << 10) + 1, 300001};
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		round_trip(text, lens[i]);
	round_trip(text, n);
	uint64_t x = 88172645463325252u; /* xorshift: bytes that do not compress */
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		text[i] = (char)x;
	}
	round_trip(text, n);
	round_trip(text, (64 << 10) + 1);
	round_trip(text, 1000);
	free(text);
}

/* zlib is always built; a compressor the build lacks writes nothing. */
static void test_built(void **state)
{
	(void)state;
	assert_true(kvd_deflater_built(KVD_DEFLATE_ZLIB));
	for (size_t d = 0; d < DEFLATERS; d++) {
		size_t n = 1;
		char *z = kvd_gzip_text_with("x", 1, &n, deflaters[d]);
		assert_int_equal(z != NULL, kvd_deflater_built(deflaters[d]));
		if (!z)
			assert_int_equal(n, 0);
		print_message("%s: %s\n", d ? "ISA-L" : "zlib", z ? "built, tested" : "not built");
		free(z);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_built),
		cmocka_unit_test(test_round_trips),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
