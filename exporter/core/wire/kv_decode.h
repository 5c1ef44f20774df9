/* SPDX-License-Identifier: Apache-2.0 */
/* Decoder: one ZMQ multipart message -> one batch of events.
 *
 * Strings in the output point into the payload frame (zero copy): the
 * frames must outlive the batch, and the batch is valid until the next
 * kv_decode on the same decoder. */
#ifndef KV_DECODE_H
#define KV_DECODE_H

#include <stdbool.h>
#include "kv_common.h"

typedef struct kv_event {
	enum kv_reason reject; /* KV_R_OK: usable; otherwise why it is skipped */
	enum kv_event_type type;
	uint8_t medium; /* KV_MEDIUM_* for stored/removed, 0 for cleared */
	bool has_key;   /* false: keyless (emit_object_key=false) */
	bool has_event_id;
	bool timestamp_bad; /* its timestamp is not a usable unix ms: no residency from it */
	uint64_t event_id;
	int64_t timestamp_ms; /* its own `timestamp`, else its message's */
	kv_str tenant_id;
	kv_str backend_id;
	kv_str object_key;
} kv_event;

typedef struct kv_batch {
	enum kv_reason reject; /* message-level rejection, KV_R_OK if the payload decoded */
	bool has_seq;          /* frame 1 was valid: the sequence counts even if the payload is bad */
	uint64_t seq;
	int64_t timestamp_ms;
	size_t n_events;
	kv_event *events; /* owned by the decoder */
} kv_batch;

typedef struct kv_decoder kv_decoder;

kv_decoder *kv_decoder_new(void);
void kv_decoder_free(kv_decoder *d);

/* Fills *out.  Returns 0, or KV_ENOMEM when memory ran out (for the
 * event array): out->reject is then set so that no event is
 * used, but the input was not at fault and must not be counted as bad. */
int kv_decode(kv_decoder *d, const kv_frame *frames, size_t n_frames, kv_batch *out);

#endif
