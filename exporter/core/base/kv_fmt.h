/* SPDX-License-Identifier: Apache-2.0 */
/* Sample values as text, written in place: the renderer writes a whole
 * sample into room it made once (render.c), and kv_buf_add_u64 and
 * kv_buf_add_double are these behind an append. */
#ifndef KV_FMT_H
#define KV_FMT_H

#include <stdint.h>

#include <mooncake_kv/buf.h>

/* The most bytes any of these writes (no NUL is written). */
#define KV_FMT_MAX 40

/* Each writes the value at w and returns the end of what it wrote. */
char *kv_fmt_u64(char *w, unsigned long long v);
/* Integers exactly; others with the shortest of 15 or 17 significant digits
 * that reads back as the same double; NaN, +Inf, -Inf. */
char *kv_fmt_double(char *w, double v);
/* ms milliseconds in seconds: the same text as kv_fmt_double(w, ms / 1000.0),
 * without printf for |ms| < 10^15 (the decimal is then exact). */
char *kv_fmt_ms_as_s(char *w, int64_t ms);

/* The same, appended to a buffer. */
void kv_buf_add_u64(mkv_buf *b, unsigned long long v);
void kv_buf_add_double(mkv_buf *b, double v);

#endif
