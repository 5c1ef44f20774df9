/* SPDX-License-Identifier: Apache-2.0 */
/* Reader for the .zmqcap capture format (tests/fixtures/upstream/README.md):
 * records of u32_be frame count, then per frame u32_be length + bytes.
 * Reads plain and gzip-compressed files alike (zlib's gzread passes plain
 * files through). */
#ifndef ZMQCAP_H
#define ZMQCAP_H

#include <stddef.h>
#include <mooncake_kv/common.h>

#define ZMQCAP_MAX_FRAMES 16

typedef struct zmqcap zmqcap;

zmqcap *zmqcap_open(const char *path);
void zmqcap_close(zmqcap *c);
/* Returns 1 with the next message (valid until the next call), 0 at a
 * clean end of file, MKV_EINVAL on a truncated or malformed file. */
int zmqcap_next(zmqcap *c, mkv_frame *frames, size_t *n_frames);

#endif
