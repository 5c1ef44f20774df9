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
	enum mkv_reason reject; /* MKV_R_OK: usable; otherwise why it is skipped */
	enum mkv_event_type type;
	uint8_t medium; /* MKV_MEDIUM_* for stored/removed, 0 for cleared */
	bool has_key;   /* false: keyless (emit_object_key=false) */
	bool has_event_id;
	bool timestamp_bad; /* its timestamp is not a usable unix ms: no residency from it */
	uint64_t event_id;
	int64_t timestamp_ms; /* its own `timestamp`, else its message's */
	mkv_str tenant_id;
	mkv_str backend_id;
	mkv_str object_key;
} kv_event;

typedef struct kv_batch {
	enum mkv_reason reject; /* message-level rejection, MKV_R_OK if the payload decoded */
	bool has_seq;           /* frame 1 was valid: the sequence counts even if the payload is bad */
	uint64_t seq;
	int64_t timestamp_ms;
	size_t n_events;
	kv_event *events; /* owned by the decoder */
} kv_batch;

/* The model context a publisher stamps on every event (the subscriber
 * guide's "Event envelope": model_name, block_size, additional_salt,
 * lora_name, dp_rank), as the member's last usable event carried it.  A
 * string field holds a string (str or bin), an integer field an unsigned
 * integer; anything else (nil, absent, another type) counts as none: the
 * fields change no figure, so a strange one rejects nothing.
 *
 * The label values are cut to KV_MODEL_VALUE_MAX bytes (at a character's
 * start, NUL shown as U+FFFD): they come from the wire, where a string may
 * be as long as the message, and each becomes a label of a series, which
 * Prometheus keeps in memory and a scrape config's label_value_length_limit
 * may refuse whole.  Model ids run to about a hundred bytes (a hub repo's
 * name, a local path), so the cap cuts only what is no name.  Two values
 * equal in their first KV_MODEL_VALUE_MAX bytes and their length are the
 * same context.  The salt's value is never shown: only whether there is one. */
#define KV_MODEL_VALUE_MAX 256

typedef struct kv_model_ctx {
	bool seen; /* a usable event has carried one */
	bool has_model, has_lora, has_block_size, has_dp_rank, has_salt;
	uint64_t block_size, dp_rank;
	char model_name[KV_MODEL_VALUE_MAX + 1]; /* NUL-terminated, "" when none */
	char lora_name[KV_MODEL_VALUE_MAX + 1];
	uint64_t changes;   /* usable events whose context differed from the one before */
	uint64_t truncated; /* model or lora names cut to the cap, once per context taken */
} kv_model_ctx;

typedef struct kv_decoder kv_decoder;

kv_decoder *kv_decoder_new(void);
void kv_decoder_free(kv_decoder *d);

/* The member's context: the latest one its decoded messages carried (a
 * message rejected whole leaves it as it was). */
const kv_model_ctx *kv_decoder_model(const kv_decoder *d);

/* Fills *out.  Returns 0, or MKV_ENOMEM when memory ran out (for the
 * event array): out->reject is then set so that no event is
 * used, but the input was not at fault and must not be counted as bad. */
enum mkv_err kv_decode(kv_decoder *d, const mkv_frame *frames, size_t n_frames, kv_batch *out);

#endif
