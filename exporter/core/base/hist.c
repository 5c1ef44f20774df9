/* SPDX-License-Identifier: Apache-2.0 */
#include "kv_hist.h"

void kv_hist_init(kv_hist *h, const double *bounds, size_t n_bounds)
{
	*h = (kv_hist){0};
	h->bounds = bounds;
	h->n_bounds = n_bounds < KV_HIST_MAX_BUCKETS ? n_bounds : KV_HIST_MAX_BUCKETS;
}

void kv_hist_observe(kv_hist *h, double v)
{
	size_t i = 0;
	while (i < h->n_bounds && v > h->bounds[i])
		i++;
	h->counts[i]++;
	h->count++;
	h->sum += v;
	kv_native_observe(&h->native, v, 1);
}
