/* SPDX-License-Identifier: Apache-2.0 */
/* A growable byte buffer.  Owned by whoever called kv_buf_init; release with
 * kv_buf_free, or take the bytes with kv_buf_steal (then free() them).
 * Appending never fails visibly: on allocation failure the buffer is marked
 * failed and further appends are ignored; check kv_buf_ok once at the end. */
#ifndef MOONCAKE_KV_BUF_H
#define MOONCAKE_KV_BUF_H

#include <stdbool.h>
#include <stddef.h>

#include <mooncake_kv/common.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kv_buf {
	char *data;
	size_t len;
	size_t cap;
	bool failed;
} kv_buf;

KV_EXTERN void kv_buf_init(kv_buf *b);
KV_EXTERN void kv_buf_free(kv_buf *b);
KV_EXTERN char *kv_buf_steal(kv_buf *b, size_t *len);
KV_EXTERN void kv_buf_reset(kv_buf *b);
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

KV_EXTERN void kv_buf_add(kv_buf *b, const void *p, size_t n);
KV_EXTERN void kv_buf_adds(kv_buf *b, const char *s);
KV_EXTERN void kv_buf_addc(kv_buf *b, char c);
KV_EXTERN void kv_buf_printf(kv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writing in place, for a writer that knows a bound of what it will add
 * (the renderer, a whole sample at a time): room for n more bytes, where
 * they go (NULL once the buffer failed); then kv_buf_used with how many of
 * them were written. */
KV_EXTERN char *kv_buf_grow(kv_buf *b, size_t n); /* kv_buf_room when the room is not there yet */
static inline char *kv_buf_room(kv_buf *b, size_t n)
{
	return !b->failed && b->len + n + 1 <= b->cap ? b->data + b->len : kv_buf_grow(b, n);
}
static inline void kv_buf_used(kv_buf *b, size_t n)
{
	b->len += n;
	b->data[b->len] = '\0';
}

#ifdef __cplusplus
}
#endif

#endif
