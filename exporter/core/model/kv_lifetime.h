/* SPDX-License-Identifier: Apache-2.0 */
/* Object lifetimes (cache residency): a histogram kept in whole
 * milliseconds, so that what is observed is the difference of two
 * publisher timestamps, exactly, and its buckets and sum compare exactly
 * with a ground truth.  Rendered in seconds; its native buckets
 * (kv_native.h) are of the seconds served. */
#ifndef KV_LIFETIME_H
#define KV_LIFETIME_H

#include <stdbool.h>
#include <stdint.h>

#include "kv_native.h"

/* Upper bounds in ms: 1 s to 1 d, docs/metrics (docs/guide.md, "Residency"). */
#define KV_LIFE_BUCKETS 14
extern const uint32_t kv_life_bounds_ms[KV_LIFE_BUCKETS];

typedef struct kv_life_hist {
	uint64_t counts[KV_LIFE_BUCKETS + 1]; /* per bucket; the last above every bound */
	uint64_t count;
	uint64_t sum_ms;
	uint64_t unobserved; /* lives that ended without their start seen (or with an unusable time) */
	kv_native native;    /* the same lives in seconds */
} kv_life_hist;

/* A life of ms milliseconds ended. */
void kv_life_observe(kv_life_hist *h, uint64_t ms);
/* The native buckets rebuilt from the classic ones, when only those are
 * known (a handover carries them): each bucket's lives observed at its
 * upper bound, those above every bound at the last. */
void kv_life_native_from_classic(kv_life_hist *h);

/* A life ended at `end` (unix ms, or KV_NO_BIRTH when that time is not
 * usable) that began at `birth` (KV_NO_BIRTH: not seen): observed when both
 * are known and in order, counted unobserved otherwise.  Returns whether
 * it was observed. */
bool kv_life_end(kv_life_hist *h, int64_t birth, int64_t end);

#endif
