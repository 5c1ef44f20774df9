/* SPDX-License-Identifier: Apache-2.0 */
/* Pre-encoded, spec-shaped KV event batches for benchmarks: 64 events per
 * message, keys of ~key_bytes, a stored/removed mix over N keys and T
 * tenants on both media.  Event ids and timestamps are written as fixed
 * 9-byte uint64 so that a message can be sent again with new ones. */
#ifndef WORKLOAD_H
#define WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#define WL_BATCH 64

typedef struct wl_msg {
	unsigned char *payload;
	size_t len;
	size_t ts_off[WL_BATCH + 1]; /* batch timestamp, then each event's */
	size_t eid_off[WL_BATCH];
} wl_msg;

typedef struct wl_params {
	uint64_t keys;
	unsigned tenants;
	unsigned backends; /* backend_id = mooncake-master-<key % backends> (0 or 1: one) */
	unsigned key_bytes;
	unsigned stored_pct; /* the rest is removed */
	uint64_t seed;
} wl_params;

/* Encodes n messages of random operations over the key space. */
wl_msg *wl_encode_mix(const wl_params *p, size_t n);
/* Encodes the messages that store every key once (keys 0..keys-1 in order,
 * spread over tenants), for loading a live set. */
wl_msg *wl_encode_load(const wl_params *p, size_t *n_out);
void wl_free(wl_msg *m, size_t n);

/* Writes event ids first_eid.. and the timestamp into a message. */
void wl_stamp(wl_msg *m, uint64_t first_eid, int64_t ts_ms);

#endif
