/* One publisher stream: decode -> sequence tracking -> state, and the
 * counters about the stream itself.  Pure: the caller supplies the frames
 * and the clock, and serialises calls. */
#ifndef KV_STREAM_H
#define KV_STREAM_H

#include "kv_decode.h"
#include "kv_hist.h"
#include "kv_seqtrack.h"
#include "kv_state.h"

typedef struct kv_stream_stats {
	uint64_t messages;                  /* every multipart message received */
	uint64_t decode_errors[KV_R__COUNT];
	uint64_t keyless_events;            /* stored/removed without object_key, skipped */
	uint64_t limit_dropped_events;      /* refused by the tenant or object limit */
	uint64_t duplicate_message_events;  /* inside messages whose sequence repeated */
	uint64_t reconnects;
	bool has_timestamp;
	int64_t last_timestamp_ms;          /* of the last decoded batch */
	kv_hist lag_seconds;                /* receive time - batch timestamp */
	kv_hist batch_events;
} kv_stream_stats;

typedef struct kv_stream {
	kv_decoder *decoder;
	kv_state *state;
	kv_seqtrack seq;
	kv_stream_stats stats;
} kv_stream;

extern const double kv_lag_bounds[];
extern const size_t kv_lag_bounds_n;
extern const double kv_batch_bounds[];
extern const size_t kv_batch_bounds_n;

/* Returns 0 or KV_ENOMEM; on failure the stream is left untouched. */
int kv_stream_init(kv_stream *st, kv_budget *budget, uint64_t seed);
void kv_stream_destroy(kv_stream *st);

/* Ingests one multipart message received at now_ms (wall clock).
 * Returns 0, or KV_ENOMEM when the state could not grow: that event is lost
 * and the caller should log it. */
int kv_stream_ingest(kv_stream *st, const kv_frame *frames, size_t n_frames, int64_t now_ms);

/* The connection dropped and came back: whatever was sent meanwhile may be
 * lost without a visible gap (the publisher's LINGER=0), so trust is gone. */
void kv_stream_reconnected(kv_stream *st);

#endif
