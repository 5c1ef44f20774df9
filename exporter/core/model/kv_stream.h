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
	uint64_t decode_errors[KV_R__COUNT];
	uint64_t keyless_events;           /* stored/removed without object_key, skipped */
	uint64_t limit_dropped_events;     /* refused by the tenant or object limit */
	uint64_t duplicate_message_events; /* inside messages whose sequence repeated */
	uint64_t alloc_failures;           /* messages or events lost for want of memory */
	uint64_t reconnects;
	uint64_t timestamps_backwards; /* events older than one this publisher process sent before */
	uint64_t timestamps_invalid;   /* events whose timestamp is no unix ms */
	bool has_timestamp;
	int64_t last_timestamp_ms;    /* of the last decoded batch */
	int64_t last_timestamp_at_ms; /* when it arrived (the caller's clock): with it, the publisher's clock now */
	kv_hist lag_seconds;          /* receive time - batch timestamp */
	kv_hist batch_events;
} kv_stream_stats;

/* kv_ingest_report: mooncake_kv/store.h */

typedef struct kv_stream kv_stream;

extern const double kv_lag_bounds[];
extern const size_t kv_lag_bounds_n;
extern const double kv_batch_bounds[];
extern const size_t kv_batch_bounds_n;

/* A stream with a state of its own.  The budget must outlive the stream.
 * Returns NULL when out of memory. */
kv_stream *kv_stream_new(kv_budget *budget, uint64_t seed);
/* A stream that feeds a state it does not own (several publishers of one
 * store: each has its own numbering, all describe the same objects).  The
 * state must outlive the stream.  Returns NULL when out of memory. */
kv_stream *kv_stream_attach(kv_state *state);
void kv_stream_free(kv_stream *st);

/* Ingests one multipart message received at now_ms (wall clock) and fills
 * *rep (which may be NULL).  Returns 0, or KV_ENOMEM when memory ran out:
 * the message or some of its events were lost (counted in alloc_failures)
 * and the caller should log it. */
int kv_stream_ingest(kv_stream *st, const kv_frame *frames, size_t n_frames, int64_t now_ms, kv_ingest_report *rep);

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
void kv_stream_set_dialect(kv_stream *st, enum kv_dialect d);
enum kv_dialect kv_stream_dialect(const kv_stream *st);

/* Key groups (kv_state.h) on the stream's own state. */
int kv_stream_set_keygroups(kv_stream *st, const kv_keygroup_re *re);

const kv_stream_stats *kv_stream_stats_of(const kv_stream *st);
const kv_seqtrack *kv_stream_seq(const kv_stream *st);
const kv_state *kv_stream_state(const kv_stream *st);

#endif
