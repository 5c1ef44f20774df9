/* SPDX-License-Identifier: Apache-2.0 */
/* A scrape's body: its memory, and its gzip. */
#ifndef KV_SCRAPE_BODY_H
#define KV_SCRAPE_BODY_H

#include <stdbool.h>
#include <stddef.h>

#include <mooncake_kv/buf.h>
#include <mooncake_kv/scrape.h>

/* Room for about `bytes` in b in one allocation, in huge pages where it
 * can (the text of a large scrape). */
void kvd_scrape_room(mkv_buf *b, size_t bytes);

/* The text gzipped, by the fastest compressor the build has.  *out_len:
 * its compressed length.  NULL when memory runs out. */
char *kvd_gzip_text(const char *in, size_t len, size_t *out_len);

/* The deflate compressors a build can have: zlib always, Intel ISA-L's
 * igzip when built with it (meson option isal; the fastest). */
enum kvd_deflater { KVD_DEFLATE_ZLIB, KVD_DEFLATE_ISAL };

/* Whether this build has the compressor. */
bool kvd_deflater_built(enum kvd_deflater with);

/* kvd_gzip_text by this compressor (the tests and bench-gzip take each in
 * turn).  NULL when memory runs out, the compressor fails or the build
 * does not have it. */
char *kvd_gzip_text_with(const char *in, size_t len, size_t *out_len, enum kvd_deflater with);

#endif
