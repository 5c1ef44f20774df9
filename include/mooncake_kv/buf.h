/* SPDX-License-Identifier: Apache-2.0 */
/* A growable byte buffer.  Owned by whoever called mkv_buf_init; release with
 * mkv_buf_free, or take the bytes with mkv_buf_steal (then free() them).
 * Appending never fails visibly: on allocation failure the buffer is marked
 * failed and further appends are ignored; check mkv_buf_ok once at the end. */
#ifndef MOONCAKE_KV_BUF_H
#define MOONCAKE_KV_BUF_H

#include <stdbool.h>
#include <stddef.h>

#include <mooncake_kv/common.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mkv_buf {
	char *data;
	size_t len;
	size_t cap;
	bool failed;
} mkv_buf;

MKV_EXTERN void mkv_buf_init(mkv_buf *b);
MKV_EXTERN void mkv_buf_free(mkv_buf *b);
MKV_EXTERN char *mkv_buf_steal(mkv_buf *b, size_t *len);
MKV_EXTERN void mkv_buf_reset(mkv_buf *b);
static inline bool mkv_buf_ok(const mkv_buf *b)
{
	return !b->failed;
}

/* The bytes, "" (not NULL) while nothing was ever added: for readers that
 * take a pointer and a length. */
static inline const char *mkv_buf_str(const mkv_buf *b)
{
	return b->data ? b->data : "";
}

MKV_EXTERN void mkv_buf_add(mkv_buf *b, const void *p, size_t n);
MKV_EXTERN void mkv_buf_adds(mkv_buf *b, const char *s);
MKV_EXTERN void mkv_buf_addc(mkv_buf *b, char c);
MKV_EXTERN void mkv_buf_printf(mkv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writing in place, for a writer that knows a bound of what it will add
 * (the renderer, a whole sample at a time): room for n more bytes, where
 * they go (NULL once the buffer failed); then mkv_buf_used with how many of
 * them were written. */
MKV_EXTERN char *mkv_buf_grow(mkv_buf *b, size_t n); /* mkv_buf_room when the room is not there yet */
static inline char *mkv_buf_room(mkv_buf *b, size_t n)
{
	return !b->failed && b->len + n + 1 <= b->cap ? b->data + b->len : mkv_buf_grow(b, n);
}
static inline void mkv_buf_used(mkv_buf *b, size_t n)
{
	b->len += n;
	b->data[b->len] = '\0';
}

#ifdef __cplusplus
}
#endif

#endif
