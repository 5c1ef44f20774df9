/* SPDX-License-Identifier: Apache-2.0 */
/* What the handover's tests share (test_handover.c): the random numbers
 * their histories and pieces come from, a stream into bytes and back into a
 * store in random pieces, and the per-tenant series two stores must agree
 * on.  Include after <cmocka.h>. */
#ifndef HANDOVER_FIXTURE_H
#define HANDOVER_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include <mooncake_kv/handover.h>

#include "store_fixture.h"

#define TS0 1795982104000LL

static uint64_t rng;
static inline uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

typedef struct bytes {
	unsigned char *p;
	size_t n, cap;
	size_t fail_after; /* the sink stops past this many bytes (0: never) */
} bytes;

static inline int to_bytes(void *arg, const void *p, size_t n)
{
	bytes *b = arg;
	if (b->fail_after && b->n + n > b->fail_after)
		return -1;
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		assert_non_null(b->p = realloc(b->p, b->cap));
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
	return 0;
}

static inline bytes write_all(mkv_store *s)
{
	bytes b = {0};
	mkv_store *stores[] = {s};
	assert_int_equal(mkv_handover_write(stores, 1, TS0, to_bytes, &b), MKV_OK);
	return b;
}

/* Reads p[0..n) for store s in pieces of random sizes; the result of end. */
static inline enum mkv_boot_result read_into(mkv_store *s, const unsigned char *p, size_t n, uint64_t max,
					     enum mkv_boot_result *took)
{
	mkv_store *stores[] = {s};
	mkv_handover *h = mkv_handover_new(stores, 1, max);
	assert_non_null(h);
	enum mkv_boot_result r = MKV_BOOT_TAKEN;
	for (size_t at = 0; at < n && r == MKV_BOOT_TAKEN;) {
		size_t step = 1 + (size_t)(next_rand() % 70000);
		if (step > n - at)
			step = n - at;
		r = mkv_handover_feed(h, p + at, step);
		at += step;
	}
	if (r == MKV_BOOT_TAKEN)
		r = mkv_handover_end(h);
	enum mkv_boot_result t = r == MKV_BOOT_TAKEN ? mkv_handover_take(h, 0) : r;
	if (took)
		*took = t;
	mkv_handover_free(h);
	return r;
}

/* The per-tenant series of a store's scrape (every line naming a tenant),
 * and the stream's numbering. */
static inline char *tenant_lines(mkv_store *s)
{
	mkv_buf text = render(s);
	char *out = calloc(1, text.len + 1), *o = out;
	assert_non_null(out);
	for (char *line = text.data; line && *line;) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
		bool keep = line[0] != '#' && (memmem(line, len, "tenant_id=\"", 11) != NULL ||
					       strncmp(line, "mooncake_kv_sequence_", 21) == 0 ||
					       strncmp(line, "mooncake_kv_tenants", 19) == 0);
		if (keep && len < text.len) {
			memcpy(o, line, len);
			o += len;
		}
		line = nl ? nl + 1 : NULL;
	}
	mkv_buf_free(&text);
	return out;
}

static inline void assert_same(mkv_store *a, mkv_store *b)
{
	char *x = tenant_lines(a), *y = tenant_lines(b);
	assert_true(strlen(x) > 1000);
	if (strcmp(x, y) != 0) {
		/* the first line that differs, for the log */
		size_t i = 0;
		while (x[i] == y[i])
			i++;
		while (i && x[i - 1] != '\n')
			i--;
		fail_msg("first difference:\nA: %.200s\nB: %.200s", x + i, y + i);
	}
	free(x);
	free(y);
}

static inline bool has_line(mkv_store *s, const char *needle)
{
	mkv_buf text = render(s);
	bool found = strstr(text.data, needle) != NULL;
	mkv_buf_free(&text);
	return found;
}

#endif
