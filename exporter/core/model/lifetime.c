/* SPDX-License-Identifier: Apache-2.0 */
#include "kv_lifetime.h"
#include "kv_objtable.h"

/* KV cache objects live from seconds (a thrashing tier) to hours (a warm
 * prefix cache): fine steps below a minute, coarser up to a day. */
const uint32_t kv_life_bounds_ms[KV_LIFE_BUCKETS] = {
	1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000, 7200000, 21600000, 86400000,
};

void kv_life_observe(kv_life_hist *h, uint64_t ms)
{
	unsigned i = 0;
	while (i < KV_LIFE_BUCKETS && ms > kv_life_bounds_ms[i])
		i++;
	h->counts[i]++;
	h->count++;
	h->sum_ms += ms;
	kv_native_observe(&h->native, (double)ms / 1000.0, 1);
}

void kv_life_native_from_classic(kv_life_hist *h)
{
	h->native = (kv_native){0};
	for (unsigned i = 0; i <= KV_LIFE_BUCKETS; i++)
		if (h->counts[i])
			kv_native_observe(&h->native, kv_life_bounds_ms[i < KV_LIFE_BUCKETS ? i : i - 1] / 1000.0,
					  h->counts[i]);
}

bool kv_life_end(kv_life_hist *h, int64_t birth, int64_t end)
{
	if (birth == KV_NO_BIRTH || end == KV_NO_BIRTH || end < birth) {
		h->unobserved++;
		return false;
	}
	kv_life_observe(h, (uint64_t)(end - birth));
	return true;
}
