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
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include "kv_scrape_body.h"

static const enum kvd_deflater deflaters[] = {KVD_DEFLATE_ZLIB, KVD_DEFLATE_ISAL};
#define DEFLATERS (sizeof(deflaters) / sizeof(deflaters[0]))

static unsigned long le32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	return (unsigned long)u[0] | (unsigned long)u[1] << 8 | (unsigned long)u[2] << 16 | (unsigned long)u[3] << 24;
}

/* z[0..zlen) is one gzip member of in[0..len), nothing after it. */
static void check_gzip(char *z, size_t zlen, const char *in, size_t len)
{
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

/* Each built compressor round trips the text, and so does kvd_gzip_text
 * (the fastest built).  Not compared byte for byte: ISA-L's output for the
 * same text was seen to differ by a few bytes between calls (86 and 89
 * bytes for 100), each a valid member. */
static void round_trip(const char *in, size_t len)
{
	for (size_t d = 0; d < DEFLATERS; d++)
		if (kvd_deflater_built(deflaters[d])) {
			size_t n = 0;
			char *z = kvd_gzip_text_with(in, len, &n, deflaters[d]);
			check_gzip(z, n, in, len);
		}
	size_t n = 0;
	char *z = kvd_gzip_text(in, len, &n);
	check_gzip(z, n, in, len);
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

/* Whether this thread's vector registers have their upper halves in use
 * (XINUSE: AVX's YMM_Hi128, AVX-512's ZMM_Hi256), as the CPU says
 * (XGETBV 1); *known false where it cannot say. */
static bool upper_in_use(bool *known)
{
	*known = false;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
		return false;
	if (!__get_cpuid_count(0xd, 1, &a, &b, &c, &d) || !(a & (1u << 2))) /* XGETBV 1 */
		return false;
	unsigned lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	*known = true;
	return (lo & ((1u << 2) | (1u << 6))) != 0;
#else
	return false;
#endif
}

/* A compressor leaves this thread's vector registers as SSE code can run
 * at full speed after it (ISA-L's AVX code leaves their upper halves in
 * use, which made the SSE code after it 2.4 times slower here). */
static void test_vector_state_after(void **state)
{
	(void)state;
	static const char line[] = "mooncake_kv_tenant_objects{source=\"s\",tenant_id=\"t\"} 12\n";
	size_t len = 8000 * (sizeof(line) - 1); /* two halves: this thread does one */
	char *text = malloc(len);
	assert_non_null(text);
	for (size_t i = 0; i < 8000; i++)
		memcpy(text + i * (sizeof(line) - 1), line, sizeof(line) - 1);
	for (size_t d = 0; d < DEFLATERS; d++) {
		if (!kvd_deflater_built(deflaters[d]))
			continue;
		size_t n = 0;
		char *z = kvd_gzip_text_with(text, len, &n, deflaters[d]);
		bool known, in_use = upper_in_use(&known);
		assert_non_null(z);
		free(z);
		if (!known) {
			print_message("the CPU cannot say whether vector registers are in use (XGETBV 1)\n");
			break;
		}
		assert_false(in_use);
	}
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_built),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_vector_state_after),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
