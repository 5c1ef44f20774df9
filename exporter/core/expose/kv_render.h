/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus text exposition 0.0.4 of a snapshot.  Pure. */
#ifndef KV_RENDER_H
#define KV_RENDER_H

#include <mooncake_kv/buf.h>

#include "kv_snapshot.h"

/* KV_CONTENT_TYPE: mooncake_kv/scrape.h */

/* Appends the whole exposition to out.  Returns 0 or KV_ENOMEM. */
int kv_render(kv_buf *out, const kv_exporter_snap *snap);

/* Appends s[0..n) as the inside of a quoted label value: \ " and newline
 * escaped; with sanitize, every byte that does not start a valid UTF-8
 * character (and NUL) becomes U+FFFD. */
void kv_render_label_value(kv_buf *out, const char *s, size_t n, bool sanitize);

#endif
