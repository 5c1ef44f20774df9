/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mooncake_kv/buf.h>

#include "kv_array.h"
#include "kv_common.h"
#include "kv_fmt.h"

void *kv_array_grow(void *items, size_t *cap, size_t size, size_t first, size_t max)
{
	size_t n = *cap ? *cap * 2 : first;
	if (max && n > max)
		n = max;
	if (n <= *cap || n > SIZE_MAX / size)
		return NULL;
	void *p = realloc(items, n * size);
	if (p)
		*cap = n;
	return p;
}

void mkv_buf_init(mkv_buf *b)
{
	*b = (mkv_buf){0};
}

void mkv_buf_free(mkv_buf *b)
{
	free(b->data);
	*b = (mkv_buf){0};
}

char *mkv_buf_steal(mkv_buf *b, size_t *len)
{
	char *p = b->data;
	*len = b->len;
	*b = (mkv_buf){0};
	return p;
}

void mkv_buf_reset(mkv_buf *b)
{
	b->len = 0;
	b->failed = false;
}

static bool reserve(mkv_buf *b, size_t extra)
{
	if (b->failed)
		return false;
	if (b->len + extra + 1 <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + extra + 1)
		cap *= 2;
	char *p = realloc(b->data, cap);
	if (!p) {
		b->failed = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

void mkv_buf_add(mkv_buf *b, const void *p, size_t n)
{
	if (!reserve(b, n))
		return;
	if (n) /* p may be NULL then: an empty buffer's data */
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void mkv_buf_adds(mkv_buf *b, const char *s)
{
	mkv_buf_add(b, s, strlen(s));
}

void mkv_buf_addc(mkv_buf *b, char c)
{
	mkv_buf_add(b, &c, 1);
}

void mkv_buf_printf(mkv_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void kv_buf_add_u64(mkv_buf *b, unsigned long long v)
{
	char tmp[KV_FMT_MAX];
	mkv_buf_add(b, tmp, (size_t)(kv_fmt_u64(tmp, v) - tmp));
}

void kv_buf_add_double(mkv_buf *b, double v)
{
	char tmp[KV_FMT_MAX];
	mkv_buf_add(b, tmp, (size_t)(kv_fmt_double(tmp, v) - tmp));
}

char *mkv_buf_grow(mkv_buf *b, size_t n)
{
	return reserve(b, n) ? b->data + b->len : NULL;
}

enum mkv_err kv_table_copy(void **items, size_t *cap, mkv_buf *names, const void *src, size_t n, size_t size,
			   const mkv_buf *src_names)
{
	mkv_buf_reset(names);
	if (n > *cap) {
		void *p = realloc(*items, n * size);
		if (!p)
			return MKV_ENOMEM;
		*items = p;
		*cap = n;
	}
	mkv_buf_add(names, src_names->data, src_names->len);
	if (!mkv_buf_ok(names)) {
		mkv_buf_free(names);
		mkv_buf_init(names);
		return MKV_ENOMEM;
	}
	if (n)
		memcpy(*items, src, n * size);
	return MKV_OK;
}
