/* SPDX-License-Identifier: Apache-2.0 */
/* The core's own growable arrays: not part of its interface (a program that
 * embeds the core never grows the core's tables), so not exported. */
#ifndef KV_ARRAY_H
#define KV_ARRAY_H

#include <stddef.h>

#include <mooncake_kv/buf.h>

/* Growing an array of items of `size` bytes that is full at *cap items: the
 * array reallocated to twice *cap (first when *cap is 0; at most max, 0: no
 * bound), *cap updated.  NULL when out of memory or already at max; the
 * array and *cap are then unchanged. */
void *kv_array_grow(void *items, size_t *cap, size_t size, size_t first, size_t max);

/* Copies a table of n items of `size` bytes that point into a names buffer
 * (a quota list, a reject list) into *items (reallocated when *cap is too
 * small) and names, reusing their memory.  Returns MKV_OK, or MKV_ENOMEM with
 * nothing copied. */
enum mkv_err kv_table_copy(void **items, size_t *cap, mkv_buf *names, const void *src, size_t n, size_t size,
			   const mkv_buf *src_names);

#endif
