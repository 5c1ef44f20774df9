/* SPDX-License-Identifier: Apache-2.0 */
/* A Prometheus histogram with fixed upper bounds: cumulative on render,
 * per-bucket here so that observing is one increment; and the same
 * observations in native buckets (kv_native.h), which the protobuf
 * exposition serves alongside. */
#ifndef KV_HIST_H
#define KV_HIST_H

#include <stddef.h>
#include <stdint.h>

#include "kv_native.h"

#define KV_HIST_MAX_BUCKETS 24

typedef struct kv_hist {
	const double *bounds; /* ascending upper bounds, +Inf implied */
	size_t n_bounds;
	uint64_t counts[KV_HIST_MAX_BUCKETS + 1]; /* last: above every bound */
	uint64_t count;
	double sum;
	kv_native native;
} kv_hist;

/* n_bounds must be at most KV_HIST_MAX_BUCKETS; bounds must outlive h. */
void kv_hist_init(kv_hist *h, const double *bounds, size_t n_bounds);
void kv_hist_observe(kv_hist *h, double v);

#endif
