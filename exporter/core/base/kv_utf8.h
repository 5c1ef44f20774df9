/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 checks for label values: Prometheus rejects a whole scrape over one
 * invalid byte sequence, and tenant ids come from the wire. */
#ifndef KV_UTF8_H
#define KV_UTF8_H

#include <stdbool.h>
#include <stddef.h>

#include <mooncake_kv/common.h> /* mkv_label_value_clean */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes at s
 * do not start one or the character is NUL. */
size_t kv_utf8_seq_len(const unsigned char *s, size_t n);

#endif
