/* SPDX-License-Identifier: Apache-2.0 */
/* The core's own shared types, beside the public ones (mooncake_kv/common.h). */
#ifndef KV_COMMON_H
#define KV_COMMON_H

#include <mooncake_kv/common.h>

/* Where a stream stands (kv_stream_position), for comparing it with the
 * master's counters. */
typedef struct kv_stream_pos {
	bool started;           /* a message has arrived */
	bool epoch_whole;       /* the current epoch was seen from its first number */
	uint64_t position;      /* last number received or counted lost, this epoch */
	uint64_t last_event_id; /* last event id received or counted lost, this epoch (0: none) */
	uint64_t missing;       /* all epochs */
	uint64_t epoch_missing; /* the current epoch */
	uint64_t resets;
	uint64_t breaks; /* gaps + restarts: anything that can have lost an event */
	uint64_t messages;
	int64_t last_receive_ms; /* wall clock of the last message (0: none) */
	double last_lag;         /* seconds, receive minus publish, of the last decoded message */
} kv_stream_pos;

#endif
