/* SPDX-License-Identifier: Apache-2.0 */
/* A growable byte buffer.  Owned by whoever called kv_buf_init; release with
 * kv_buf_free, or take the bytes with kv_buf_steal (then free() them).
 * Appending never fails visibly: on allocation failure the buffer is marked
 * failed and further appends are ignored; check kv_buf_ok once at the end. */
#ifndef MOONCAKE_KV_BUF_H
#define MOONCAKE_KV_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct kv_buf {
	char *data;
	size_t len;
	size_t cap;
	bool failed;
} kv_buf;

void kv_buf_init(kv_buf *b);
void kv_buf_free(kv_buf *b);
char *kv_buf_steal(kv_buf *b, size_t *len);
void kv_buf_reset(kv_buf *b);
static inline bool kv_buf_ok(const kv_buf *b)
{
	return !b->failed;
}

/* The bytes, "" (not NULL) while nothing was ever added: for readers that
 * take a pointer and a length. */
static inline const char *kv_buf_str(const kv_buf *b)
{
	return b->data ? b->data : "";
}

void kv_buf_add(kv_buf *b, const void *p, size_t n);
void kv_buf_adds(kv_buf *b, const char *s);
void kv_buf_addc(kv_buf *b, char c);
void kv_buf_printf(kv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kv_buf_add_u64(kv_buf *b, unsigned long long v);
/* A sample value: integers exactly, others with enough digits to round-trip. */
void kv_buf_add_double(kv_buf *b, double v);

/* Writing in place, for a writer that knows a bound of what it will add
 * (the renderer, a whole sample at a time): room for n more bytes, where
 * they go (NULL once the buffer failed); then kv_buf_used with how many of
 * them were written. */
char *kv_buf_grow(kv_buf *b, size_t n); /* kv_buf_room when the room is not there yet */
static inline char *kv_buf_room(kv_buf *b, size_t n)
{
	return !b->failed && b->len + n + 1 <= b->cap ? b->data + b->len : kv_buf_grow(b, n);
}
static inline void kv_buf_used(kv_buf *b, size_t n)
{
	b->len += n;
	b->data[b->len] = '\0';
}

/* Growing an array of items of `size` bytes that is full at *cap items: the
 * array reallocated to twice *cap (first when *cap is 0; at most max, 0: no
 * bound), *cap updated.  NULL when out of memory or already at max; the
 * array and *cap are then unchanged. */
void *kv_array_grow(void *items, size_t *cap, size_t size, size_t first, size_t max);

/* Copies a table of n items of `size` bytes that point into a names buffer
 * (a quota list, a reject list) into *items (reallocated when *cap is too
 * small) and names, reusing their memory.  Returns 0, or KV_ENOMEM with
 * nothing copied. */
int kv_table_copy(void **items, size_t *cap, kv_buf *names, const void *src, size_t n, size_t size,
		  const kv_buf *src_names);

#endif
