/* SPDX-License-Identifier: Apache-2.0 */
/* bench-tlb-walks: what a cold TLB costs the ingest thread's slot prefetches
 * (docs/performance.md, "Where the state's nanoseconds went").  Rounds of 64
 * random 8-byte slots of an array, prefetched in a loop of their own and then
 * read, as a message's events are, each round after a sleep (or none), with
 * the array in 4 KiB or in 2 MiB pages.  Prints ns an access.
 *
 *   bench-tlb-walks MIB SLEEP_US     (e.g. 160 200, and 160 0)
 *
 * Numbers are printed, never asserted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { BATCH = 64, ROUNDS = 5000 };
#define HUGE_PAGE ((size_t)2 << 20)

static double mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static double run(size_t bytes, int advice, long sleep_us)
{
	char *raw = mmap(NULL, bytes + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return -1;
	uint64_t *a = (uint64_t *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	madvise(a, bytes, advice);
	size_t n = bytes / sizeof(*a), idx[BATCH];
	memset(a, 1, bytes);
	uint64_t x = 88172645463325252ull, sum = 0;
	struct timespec gap = {sleep_us / 1000000, sleep_us % 1000000 * 1000};
	double spent = 0;
	for (int r = 0; r < ROUNDS; r++) {
		if (sleep_us)
			nanosleep(&gap, NULL);
		double t0 = mono();
		for (int i = 0; i < BATCH; i++) {
			idx[i] = xorshift(&x) % n;
			__builtin_prefetch(&a[idx[i]], 1);
		}
		for (int i = 0; i < BATCH; i++)
			sum += a[idx[i]]++;
		spent += mono() - t0;
	}
	munmap(raw, bytes + HUGE_PAGE);
	return sum ? spent * 1e9 / ((double)ROUNDS * BATCH) : 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s MIB SLEEP_US\n", argv[0]);
		return 2;
	}
	size_t bytes = (size_t)strtoul(argv[1], NULL, 10) << 20;
	long sleep_us = atol(argv[2]);
	double small = run(bytes, MADV_NOHUGEPAGE, sleep_us), huge = run(bytes, MADV_HUGEPAGE, sleep_us);
	printf("{\"what\":\"64 random slots prefetched then read\",\"mib\":%zu,\"sleep_us\":%ld,"
	       "\"ns_per_access_4k_pages\":%.1f,\"ns_per_access_2m_pages\":%.1f}\n",
	       bytes >> 20, sleep_us, small, huge);
	return 0;
}
