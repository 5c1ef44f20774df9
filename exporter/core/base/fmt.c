/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_fmt.h"

char *kv_fmt_u64(char *w, unsigned long long v)
{
	if (v < 10) { /* most counters of most tenants: 0 */
		*w = (char)('0' + v);
		return w + 1;
	}
	unsigned n = 1; /* its digits, written from the last */
	for (unsigned long long t = v; t >= 10; t /= 10)
		n++;
	char *end = w + n;
	do
		*--end = (char)('0' + v % 10);
	while (v /= 10);
	return w + n;
}

static char *fmt_i64(char *w, long long v)
{
	if (v < 0) {
		*w++ = '-';
		return kv_fmt_u64(w, 0ull - (unsigned long long)v);
	}
	return kv_fmt_u64(w, (unsigned long long)v);
}

char *kv_fmt_double(char *w, double v)
{
	const char *word = isnan(v) ? "NaN" : isinf(v) ? (v > 0 ? "+Inf" : "-Inf") : NULL;
	if (word) {
		size_t n = strlen(word);
		memcpy(w, word, n);
		return w + n;
	}
	if (v == (double)(long long)v && fabs(v) < 9e15)
		return fmt_i64(w, (long long)v);
	/* the shortest of 15 or 17 digits that reads back as the same double */
	char tmp[KV_FMT_MAX];
	int n = snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (strtod(tmp, NULL) != v)
		n = snprintf(tmp, sizeof(tmp), "%.17g", v);
	memcpy(w, tmp, (size_t)n);
	return w + n;
}

/* Why this is the text %.15g gives, and why it reads back: below 10^15 ms
 * has at most 15 significant digits, so ms / 1000.0 printed with 15 is the
 * exact decimal ms / 1000 (trailing zeros dropped, no exponent: the value
 * is at least 0.001 and below 10^12), and strtod of that decimal is the
 * nearest double to it, which ms / 1000.0 is.  tests/test_fmt.c checks it
 * against kv_fmt_double. */
char *kv_fmt_ms_as_s(char *w, int64_t ms)
{
	if (ms <= -1000000000000000 || ms >= 1000000000000000)
		return kv_fmt_double(w, (double)ms / 1000.0);
	unsigned long long a = ms < 0 ? 0ull - (unsigned long long)ms : (unsigned long long)ms;
	if (ms < 0)
		*w++ = '-';
	w = kv_fmt_u64(w, a / 1000);
	unsigned frac = (unsigned)(a % 1000);
	if (frac) {
		char d[3] = {(char)('0' + frac / 100), (char)('0' + frac / 10 % 10), (char)('0' + frac % 10)};
		size_t n = d[2] != '0' ? 3 : d[1] != '0' ? 2 : 1;
		*w++ = '.';
		memcpy(w, d, n);
		w += n;
	}
	return w;
}
