/* SPDX-License-Identifier: Apache-2.0 */
/* A scrape's body: its memory, and its gzip. */
#ifndef KV_SCRAPE_BODY_H
#define KV_SCRAPE_BODY_H

#include <stddef.h>

#include <mooncake_kv/buf.h>
#include <mooncake_kv/scrape.h>

/* Room for about `bytes` in b in one allocation, in huge pages where it
 * can (the text of a large scrape). */
void kvd_scrape_room(mkv_buf *b, size_t bytes);

/* The text gzipped.  *out_len: its compressed length.  NULL when memory
 * runs out. */
char *kvd_gzip_text(const char *in, size_t len, size_t *out_len);

#endif
