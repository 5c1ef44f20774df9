/* SPDX-License-Identifier: Apache-2.0 */
/* bench-gzip FILE [RUNS]: the gzip of a scrape, as the exporter makes it
 * (kvd_gzip_text_with: two halves at once into one member, by ISA-L when
 * built with it and by zlib) against ISA-L's level 1 and zlib's choices
 * on one thread (zlib's level 1 in one member was the first way), over the
 * whole text of FILE (a saved /metrics) and over its first third (a scrape
 * with a third of the samples).  The kinds take turns, run after run, so
 * that a shared machine's slow phases fall on all; prints each one's best
 * and median milliseconds of wall clock, its median CPU milliseconds (all
 * threads: what a loaded machine cannot hide) and its compressed bytes.  Numbers are printed,
 * never asserted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#ifdef KVD_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include "kv_scrape_body.h"

static double clock_s(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One gzip member of in[0..len) on this thread; returns its bytes. */
static size_t one_thread(const char *in, size_t len, int level, int strategy)
{
	z_stream z = {0};
	if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, strategy) != Z_OK)
		return 0;
	size_t cap = deflateBound(&z, len);
	unsigned char *out = malloc(cap);
	size_t n = 0;
	if (out) {
		z.next_in = (unsigned char *)in;
		z.avail_in = (uInt)len;
		z.next_out = out;
		z.avail_out = (uInt)cap;
		if (deflate(&z, Z_FINISH) == Z_STREAM_END)
			n = z.total_out;
	}
	deflateEnd(&z);
	free(out);
	return n;
}

#ifdef KVD_HAVE_ISAL
/* One gzip member of in[0..len) by ISA-L at level 1 on this thread. */
static size_t isal_one_thread(const char *in, size_t len)
{
	static struct isal_zstream z; /* ~100 KiB: not on the stack */
	static uint8_t level_buf[ISAL_DEF_LVL1_DEFAULT];
	isal_deflate_init(&z);
	z.level = 1;
	z.level_buf = level_buf;
	z.level_buf_size = sizeof level_buf;
	z.gzip_flag = IGZIP_GZIP;
	z.end_of_stream = 1;
	size_t cap = len + len / 8 + 4096; /* stored blocks at worst */
	unsigned char *out = malloc(cap);
	size_t n = 0;
	if (out) {
		z.next_in = (uint8_t *)(uintptr_t)in;
		z.avail_in = (uint32_t)len;
		z.next_out = out;
		z.avail_out = (uint32_t)cap;
		if (isal_deflate(&z) == COMP_OK && z.internal_state.state == ZSTATE_END)
			n = z.total_out;
	}
	free(out);
	/* its AVX code leaves the vector registers' upper halves in use, which
	 * slows the SSE code after it (zlib's kinds): as the exporter does */
	if (__builtin_cpu_supports("avx"))
		__asm__ volatile("vzeroupper" ::: "memory");
	return n;
}
#endif

#define KINDS 7
static const char *const names[KINDS] = {"exporter: ISA-L level 1, two halves at once",
					 "exporter without ISA-L: zlib level 1, two halves at once",
					 "one thread, ISA-L level 1",
					 "one thread, level 1 (the first way)",
					 "one thread, level 2",
					 "one thread, Z_RLE",
					 "one thread, Huffman only"};

/* The kind's compressed bytes, 0 when this build lacks it. */
static size_t run(int kind, const char *in, size_t len)
{
	static const int level[KINDS] = {0, 0, 0, 1, 2, 1, 1};
	static const int strategy[KINDS] = {0, 0, 0, Z_DEFAULT_STRATEGY, Z_DEFAULT_STRATEGY, Z_RLE, Z_HUFFMAN_ONLY};
	size_t n = 0;
	switch (kind) {
	case 0:
	case 1:
		free(kvd_gzip_text_with(in, len, &n, kind == 0 ? KVD_DEFLATE_ISAL : KVD_DEFLATE_ZLIB));
		return n;
	case 2:
#ifdef KVD_HAVE_ISAL
		return isal_one_thread(in, len);
#else
		return 0;
#endif
	default:
		return one_thread(in, len, level[kind], strategy[kind]);
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE [RUNS]  (FILE: a saved /metrics)\n", argv[0]);
		return 2;
	}
	int runs = argc > 2 ? atoi(argv[2]) : 15;
	if (runs < 1 || runs > 200)
		runs = 15;
	FILE *f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0) {
		fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
		return 1;
	}
	long size = ftell(f);
	char *text = size > 0 ? malloc((size_t)size) : NULL;
	rewind(f);
	if (!text || fread(text, 1, (size_t)size, f) != (size_t)size) {
		fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
		return 1;
	}
	fclose(f);
	size_t lens[2] = {(size_t)size, (size_t)size / 3};
	for (int l = 0; l < 2; l++) {
		double ms[KINDS][200], cpu[KINDS][200];
		size_t bytes[KINDS] = {0};
		for (int r = 0; r < runs; r++)
			for (int k = 0; k < KINDS; k++) {
				double t = clock_s(CLOCK_MONOTONIC), c = clock_s(CLOCK_PROCESS_CPUTIME_ID);
				bytes[k] = run(k, text, lens[l]);
				ms[k][r] = (clock_s(CLOCK_MONOTONIC) - t) * 1e3;
				cpu[k][r] = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c) * 1e3;
			}
		for (int k = 0; k < KINDS; k++) {
			if (!bytes[k]) /* not in this build */
				continue;
			qsort(ms[k], (size_t)runs, sizeof(double), cmp);
			qsort(cpu[k], (size_t)runs, sizeof(double), cmp);
			printf("{\"what\": \"gzip of a scrape\", \"text_bytes\": %zu, \"kind\": \"%s\", "
			       "\"gzip_bytes\": %zu, "
			       "\"best_ms\": %.1f, \"median_ms\": %.1f, \"cpu_median_ms\": %.1f, \"runs\": %d}\n",
			       lens[l], names[k], bytes[k], ms[k][0], ms[k][runs / 2], cpu[k][runs / 2], runs);
		}
	}
	free(text);
	return 0;
}
