/* SPDX-License-Identifier: Apache-2.0 */
/* A scrape's body: its memory, and its gzip. */
#ifndef KV_SCRAPE_BODY_H
#define KV_SCRAPE_BODY_H

#include <stddef.h>

#include <mooncake_kv/buf.h>
#include <mooncake_kv/scrape.h>

/* Room for about `bytes` in b in one allocation, in huge pages where it
 * can (the text of a large scrape). */
void kv_scrape_room(kv_buf *b, size_t bytes);

/* The text gzipped, and shaped on the way as eo asks when eo is not NULL: the
 * OpenMetrics or filtered text goes to the compressor a piece at a time
 * instead of being written whole first (41 MB of fresh memory at 10,000
 * tenants, whose page faults cost more than the pass: docs/performance.md,
 * "The seventh pass").  *plain_len: the bytes before compression.  NULL when
 * memory runs out. */
char *kv_gzip_text(const char *in, size_t len, const kv_expo_opts *eo, size_t *out_len, size_t *plain_len);

#endif
