/* SPDX-License-Identifier: Apache-2.0 */
/* A native (exponential) histogram's buckets, as Prometheus defines them:
 * at schema s the base is 2^(2^-s) and bucket i holds the observations in
 * (base^(i-1), base^i]; those at most KV_NATIVE_ZERO_THRESHOLD are in the
 * zero bucket.  Bounded: at most KV_NATIVE_BUCKETS consecutive buckets, kept
 * in place (no allocation: a tenant's figures are copied whole into every
 * snapshot; zeroed memory is an empty histogram).  An observation that would widen them beyond that lowers the
 * schema, merging each pair of buckets into one, until they fit (client
 * libraries' maximum bucket number does the same).  Observations are never
 * negative here (lags are clamped at 0): a negative one is counted in the
 * zero bucket.  Pure. */
#ifndef KV_NATIVE_H
#define KV_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#define KV_NATIVE_BUCKETS      16
#define KV_NATIVE_SCHEMA_START 3 /* a bucket 9% wide: client_golang's factor 1.1 */
#define KV_NATIVE_SCHEMA_MIN   (-4)
/* client_golang's default: only 0 (and what rounds to it) in the zero bucket */
#define KV_NATIVE_ZERO_THRESHOLD 0x1p-128

typedef struct kv_native {
	uint64_t counts[KV_NATIVE_BUCKETS]; /* bucket first + k; 0 from n on */
	uint64_t zero;                      /* in the zero bucket */
	int32_t first;                      /* the index of counts[0] (when n > 0) */
	uint8_t lowered;                    /* the schema is KV_NATIVE_SCHEMA_START - lowered: zeroed is new */
	uint8_t n;                          /* buckets from first to the last that holds any; 0: none yet */
} kv_native;

static inline int kv_native_schema(const kv_native *h)
{
	return KV_NATIVE_SCHEMA_START - h->lowered;
}

/* n observations of v. */
void kv_native_observe(kv_native *h, double v, uint64_t n);
/* The index of v's bucket at schema s (v > the zero threshold). */
int32_t kv_native_index(double v, int schema);

#endif
