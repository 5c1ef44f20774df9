/* SPDX-License-Identifier: Apache-2.0 */
/* One publisher stream: decode -> sequence tracking -> state, and the
 * counters about the stream itself.  Pure: the caller supplies the frames
 * and the clock, and serialises calls.  Opaque: the shells learn what they
 * need from the report of each message and the accessors below. */
#ifndef KV_STREAM_H
#define KV_STREAM_H

#include "kv_decode.h"
#include "kv_hist.h"
#include "kv_seqtrack.h"
#include "kv_state.h"

typedef struct kv_stream_stats {
	uint64_t messages; /* every multipart message received */
	uint64_t decode_errors[MKV_R__COUNT];
	uint64_t keyless_events;           /* stored/removed without object_key, skipped */
	uint64_t limit_dropped_events;     /* refused by the tenant or object limit */
	uint64_t duplicate_message_events; /* inside messages whose sequence repeated */
	uint64_t alloc_failures;           /* messages or events lost for want of memory */
	uint64_t reconnects;
	uint64_t timestamps_backwards; /* events older than one this publisher process sent before */
	uint64_t timestamps_invalid;   /* events whose timestamp is no unix ms */
	uint64_t overlap_messages;     /* received while joining a peer's state that it already held */
	bool has_timestamp;
	int64_t last_timestamp_ms;    /* of the last decoded batch */
	int64_t last_timestamp_at_ms; /* when it arrived (the caller's clock): with it, the publisher's clock now */
	kv_hist lag_seconds;          /* receive time - batch timestamp */
	kv_hist batch_events;
} kv_stream_stats;

/* mkv_ingest_report: mooncake_kv/store.h */

typedef struct kv_stream kv_stream;

extern const double kv_lag_bounds[];
extern const size_t kv_lag_bounds_n;
extern const double kv_batch_bounds[];
extern const size_t kv_batch_bounds_n;

/* A stream with a state of its own.  The budget must outlive the stream.
 * Returns NULL when out of memory. */
kv_stream *kv_stream_new(mkv_budget *budget, uint64_t seed);
/* A stream that feeds a state it does not own (several publishers of one
 * store: each has its own numbering, all describe the same objects).  The
 * state must outlive the stream.  Returns NULL when out of memory. */
kv_stream *kv_stream_attach(kv_state *state);
void kv_stream_free(kv_stream *st);

/* Ingests one multipart message received at now_ms (wall clock) and fills
 * *rep (which may be NULL).  Returns 0, or MKV_ENOMEM when memory ran out:
 * the message or some of its events were lost (counted in alloc_failures)
 * and the caller should log it. */
enum mkv_err kv_stream_ingest(kv_stream *st, const mkv_frame *frames, size_t n_frames, int64_t now_ms,
			      mkv_ingest_report *rep);

/* The connection dropped, and came back.  Counted; the tenants turn stale
 * (reason reconnect) only if a loss shows between the two, in the next
 * message, or in the master's last sequence number. */
void kv_stream_disconnected(kv_stream *st);
void kv_stream_reconnected(kv_stream *st);

void kv_stream_position(const kv_stream *st, kv_stream_pos *out);
/* The part of a position the sequence tracker alone knows (messages,
 * receive time and lag left 0). */
void kv_stream_position_of_seq(const kv_seqtrack *t, kv_stream_pos *out);

/* What a poll of the master said of the publisher (kv_master_publisher_seen,
 * when it said anything): see kv_seq_publisher_seen. */
void kv_stream_publisher_seen(kv_stream *st, bool publishing);

/* The publisher used numbers up to upto_seq (event ids up to upto_eid, 0 if
 * unknown) and they are not coming: the tail is counted lost, once, and the
 * tenants turn stale (gap).  Returns the numbers counted. */
uint64_t kv_stream_tail_lost(kv_stream *st, uint64_t upto_seq, uint64_t upto_eid);

/* How the stream's removed events are read (kv_state_apply); media, the
 * subscriber guide's, until set. */
void kv_stream_set_dialect(kv_stream *st, enum mkv_dialect d);
enum mkv_dialect kv_stream_dialect(const kv_stream *st);

/* Whether the stream keeps the digest of its last message, which a handover
 * of its state needs to prove the join (mooncake_kv/handover.h): kept until
 * set; an exporter that never serves its state (no --state.serve) does not
 * hash every message for it.  Joining a peer's state hashes regardless. */
void kv_stream_set_digests(kv_stream *st, bool keep);

/* Key groups (kv_state.h) on the stream's own state. */
enum mkv_err kv_stream_set_keygroups(kv_stream *st, const mkv_keygroup_re *re);

/* --- handover (mooncake_kv/handover.h) ---
 *
 * What a stream hands to the next exporter: its numbering, its publisher's
 * clock, and the digest (XXH3-64 of the payload frame) of the message that
 * set its last number. */
typedef struct kv_stream_carry {
	kv_seqtrack seq;
	bool ts_seen;
	int64_t ts_max;
	bool has_digest;
	uint64_t digest;
	bool has_batch_ms; /* the time of the last message it decoded (the publisher's clock) */
	int64_t batch_ms;
	int64_t batch_at_ms; /* when that message arrived (the receiver's clock) */
} kv_stream_carry;

void kv_stream_carry_get(const kv_stream *st, kv_stream_carry *out);
/* Takes a peer's carry in place of its own numbering.  When the peer's
 * stream had a last number, what arrives next must prove that it continues
 * it (docs/design.md, "Handing over the state"): messages up to that number
 * running on to it, with the same digest at it (they are not applied: the
 * peer's state holds them), or, first of all, the next number with the next
 * event id.  Until then the stream waits (MKV_JOIN_WAITING); anything else
 * breaks the join: every tenant turns stale (bootstrap) and the stream
 * starts afresh, as a new exporter's would. */
void kv_stream_carry_set(kv_stream *st, const kv_stream_carry *in);
enum mkv_join kv_stream_join(const kv_stream *st);
/* The stream feeds another state from now on (a state taken from a peer). */
void kv_stream_rebind(kv_stream *st, kv_state *state);

const kv_stream_stats *kv_stream_stats_of(const kv_stream *st);
/* The model context its publisher stamps on its events (kv_decode.h). */
const kv_model_ctx *kv_stream_model(const kv_stream *st);
const kv_seqtrack *kv_stream_seq(const kv_stream *st);
const kv_state *kv_stream_state(const kv_stream *st);

#endif
