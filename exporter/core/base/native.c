/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <string.h>

#include "kv_native.h"

/* floor(a / 2^k) for any sign, k >= 0. */
static int64_t floor_shift(int64_t a, int k)
{
	int64_t d = (int64_t)1 << k;
	return a >= 0 ? a / d : -((-a + d - 1) / d);
}

/* ceil(a / 2^k). */
static int64_t ceil_shift(int64_t a, int k)
{
	return -floor_shift(-a, k);
}

int32_t kv_native_index(double v, int schema)
{
	int exp;
	double frac = frexp(v, &exp); /* v = frac * 2^exp, frac in [0.5, 1) */
	if (schema <= 0) {
		/* log2(v) is exp - 1 for a power of two, else strictly between
		 * exp - 1 and exp: the bucket is the first whose upper bound
		 * 2^(i * 2^-schema) reaches it */
		return (int32_t)ceil_shift(frac == 0.5 ? exp - 1 : exp, -schema);
	}
	int32_t per = 1 << schema; /* buckets an octave */
	/* log2(frac) in [-1, 0): the bucket within the octave, then checked
	 * against its bounds, which log2's rounding may have missed */
	int32_t k = (int32_t)ceil(log2(frac) * per);
	while (k > -per && frac <= exp2((double)(k - 1) / per))
		k--;
	while (k < 0 && frac > exp2((double)k / per))
		k++;
	return exp * per + k;
}

/* One schema lower: buckets 2j-1 and 2j become bucket j. */
static void halve(kv_native *h)
{
	uint64_t merged[KV_NATIVE_BUCKETS] = {0};
	int32_t first = (int32_t)floor_shift((int64_t)h->first + 1, 1);
	int32_t last = first;
	for (int32_t k = 0; k < h->n; k++) {
		int32_t j = (int32_t)floor_shift((int64_t)h->first + k + 1, 1);
		merged[j - first] += h->counts[k];
		last = j;
	}
	memcpy(h->counts, merged, sizeof(merged));
	h->first = first;
	h->n = (uint8_t)(h->n ? last - first + 1 : 0);
	h->lowered++;
}

void kv_native_observe(kv_native *h, double v, uint64_t n)
{
	if (!(v > KV_NATIVE_ZERO_THRESHOLD)) { /* 0, a negative, NaN */
		h->zero += n;
		return;
	}
	int32_t i = kv_native_index(v, kv_native_schema(h));
	if (h->n == 0) {
		h->first = i;
		h->n = 1;
		h->counts[0] += n;
		return;
	}
	int64_t lo = i < h->first ? i : h->first;
	int64_t hi = (int64_t)h->first + h->n - 1;
	hi = i > hi ? i : hi;
	while (hi - lo + 1 > KV_NATIVE_BUCKETS && kv_native_schema(h) > KV_NATIVE_SCHEMA_MIN) {
		halve(h);
		i = kv_native_index(v, kv_native_schema(h));
		lo = i < h->first ? i : h->first;
		hi = (int64_t)h->first + h->n - 1;
		hi = i > hi ? i : hi;
	}
	/* at the lowest schema (a bucket of 2^16 octaves) nothing is that
	 * wide: kept bounded all the same, at the nearest end */
	if (hi - lo + 1 > KV_NATIVE_BUCKETS)
		i = i < h->first ? h->first + h->n - KV_NATIVE_BUCKETS : h->first + KV_NATIVE_BUCKETS - 1;
	if (i < h->first) {
		int32_t by = h->first - i;
		memmove(h->counts + by, h->counts, h->n * sizeof(h->counts[0]));
		memset(h->counts, 0, (size_t)by * sizeof(h->counts[0]));
		h->first = i;
		h->n = (uint8_t)(h->n + by);
	} else if (i >= h->first + h->n) {
		h->n = (uint8_t)(i - h->first + 1);
	}
	h->counts[i - h->first] += n;
}
