/* SPDX-License-Identifier: Apache-2.0 */
/* A pre-scan of a msgpack buffer that msgpack-c does not do for us.
 *
 * msgpack-c allocates room for a container's declared element count before
 * it knows the bytes exist: a 7-byte payload declaring 2^32-1 elements asks
 * for 128 GiB.  Every element takes at least one byte, so a buffer in which
 * no container declares more elements than bytes remain bounds msgpack-c's
 * allocation by the payload size.  The scan walks the framing only (no
 * values), iteratively, so depth costs nothing. */
#ifndef KV_MPCHECK_H
#define KV_MPCHECK_H

#include <stdbool.h>
#include <stddef.h>

/* True when buf holds exactly one complete msgpack object, every length
 * fits the buffer and no container claims more elements than bytes left. */
bool kv_msgpack_well_formed(const void *buf, size_t len);

#endif
