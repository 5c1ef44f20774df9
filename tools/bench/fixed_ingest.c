/* SPDX-License-Identifier: Apache-2.0 */
/* Decode + state over a fixed amount of work, for instruction counts that do
 * not depend on the machine's noise (docs/performance.md, "Residency"):
 *
 *   valgrind --tool=callgrind --toggle-collect=measured_rounds \
 *       build/tools/bench-fixed-ingest 2 [off]
 *
 * The workload of `mooncake-kv-bench decode` (1M keys in 16 tenants, made
 * exact so that residency does all it can): loaded, two rounds to settle the
 * tables, then ROUNDS rounds of 2,048 messages of 64 events in
 * measured_rounds, whose instructions callgrind counts alone.  It builds
 * against the API from before residency too (no KV_NO_BIRTH there), so that
 * the same work can be counted on both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kv_stream.h"
#include "workload.h"

static void be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static void rounds(kv_stream *st, wl_msg *m, size_t n, int r, uint64_t *seq, uint64_t *eid)
{
	unsigned char s[8];
	mkv_frame f[3] = {{"", 0}, {s, 8}, {NULL, 0}};
	for (int k = 0; k < r; k++)
		for (size_t i = 0; i < n; i++) {
			be64(s, ++*seq);
			wl_stamp(&m[i], *eid + 1, (int64_t)*seq);
			*eid += WL_BATCH;
			f[2] = (mkv_frame){m[i].payload, m[i].len};
			kv_stream_ingest(st, f, 3, (int64_t)*seq, NULL);
		}
}

__attribute__((noinline)) void measured_rounds(kv_stream *st, wl_msg *m, size_t n, int r, uint64_t *seq, uint64_t *eid);
__attribute__((noinline)) void measured_rounds(kv_stream *st, wl_msg *m, size_t n, int r, uint64_t *seq, uint64_t *eid)
{
	rounds(st, m, n, r, seq, eid);
}

int main(int argc, char **argv)
{
	int r = argc > 1 ? atoi(argv[1]) : 10;
	wl_params wp = {.keys = 1000000, .tenants = 16, .key_bytes = 100, .stored_pct = 60, .seed = 7};
	enum { N = 2048 };
	wl_msg *m = wl_encode_mix(&wp, N);
	mkv_budget b;
	mkv_budget_init(&b, 1000, 20000000);
	kv_stream *st = kv_stream_new(&b, 1);
#ifdef KV_NO_BIRTH
	kv_state *s = (kv_state *)kv_stream_state(st);
	char name[32];
	kv_event ev = {.type = MKV_EV_CLEARED, .backend_id = {"mooncake-master-1", 17}};
	kv_state_set_residency(s, !(argc > 2 && !strcmp(argv[2], "off")));
	for (unsigned t = 0; t < wp.tenants; t++) {
		ev.tenant_id = (mkv_str){name, (uint32_t)snprintf(name, sizeof(name), "tenant-%u", t)};
		kv_state_apply(s, &ev, MKV_DIALECT_MEDIA);
	}
#endif
	size_t nl;
	wl_msg *load = wl_encode_load(&wp, &nl);
	uint64_t seq = 0, eid = 0;
	rounds(st, load, nl, 1, &seq, &eid);
	rounds(st, m, N, 2, &seq, &eid);
	struct timespec a, z;
	clock_gettime(CLOCK_MONOTONIC, &a);
	measured_rounds(st, m, N, r, &seq, &eid);
	clock_gettime(CLOCK_MONOTONIC, &z);
	double dt = (double)(z.tv_sec - a.tv_sec) + (double)(z.tv_nsec - a.tv_nsec) / 1e9;
	printf("{\"what\":\"decode + state, fixed work\",\"events\":%llu,\"events_per_s\":%.0f}\n",
	       (unsigned long long)N * WL_BATCH * (unsigned long long)r, (double)N * WL_BATCH * r / dt);
	kv_stream_free(st);
	wl_free(m, N);
	wl_free(load, nl);
	return 0;
}
