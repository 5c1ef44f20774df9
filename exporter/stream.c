#include <string.h>

#include "kv_stream.h"

const double kv_lag_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                0.25,   0.5,   1,      2.5,   5,    10,    30,   60};
const size_t kv_lag_bounds_n = sizeof(kv_lag_bounds) / sizeof(kv_lag_bounds[0]);
const double kv_batch_bounds[] = {1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64};
const size_t kv_batch_bounds_n = sizeof(kv_batch_bounds) / sizeof(kv_batch_bounds[0]);

int kv_stream_init(kv_stream *st, kv_budget *budget, uint64_t seed)
{
	memset(st, 0, sizeof(*st));
	st->decoder = kv_decoder_new();
	st->state = kv_state_new(budget, seed);
	if (!st->decoder || !st->state) {
		kv_stream_destroy(st);
		return KV_ENOMEM;
	}
	kv_hist_init(&st->stats.lag_seconds, kv_lag_bounds, kv_lag_bounds_n);
	kv_hist_init(&st->stats.batch_events, kv_batch_bounds, kv_batch_bounds_n);
	return KV_OK;
}

void kv_stream_destroy(kv_stream *st)
{
	kv_decoder_free(st->decoder);
	kv_state_free(st->state);
	memset(st, 0, sizeof(*st));
}

void kv_stream_reconnected(kv_stream *st)
{
	st->stats.reconnects++;
	kv_state_mark_stale(st->state, KV_STALE_RECONNECT);
}

static bool applicable(const kv_event *ev)
{
	return ev->reject == KV_R_OK && (ev->type == KV_EV_CLEARED || ev->has_key);
}

/* Applies events [from, to): first a look at all of them, so that their
 * objects' memory is on its way while the earlier ones are applied. */
#define LOOKAHEAD 64

static void apply_events(kv_stream *st, const kv_batch *b, size_t from, size_t to, bool was_reset, int *rc)
{
	kv_stream_stats *ss = &st->stats;
	kv_prepared prep[LOOKAHEAD];
	for (size_t i = from; i < to; i++)
		if (applicable(&b->events[i]))
			kv_state_prepare(st->state, &b->events[i], &prep[i - from]);
	for (size_t i = from; i < to; i++) {
		const kv_event *ev = &b->events[i];
		if (ev->has_event_id && kv_seq_observe_event_id(&st->seq, ev->event_id, was_reset))
			kv_state_mark_stale(st->state, KV_STALE_RESET);
		if (ev->reject != KV_R_OK) {
			ss->decode_errors[ev->reject]++;
			continue;
		}
		if (!applicable(ev)) {
			ss->keyless_events++;
			continue;
		}
		int r = kv_state_apply_prepared(st->state, ev, &prep[i - from]);
		if (r == KV_ELIMIT)
			ss->limit_dropped_events++;
		else if (r != KV_OK)
			*rc = r;
	}
}

int kv_stream_ingest(kv_stream *st, const kv_frame *frames, size_t n_frames, int64_t now_ms)
{
	kv_stream_stats *ss = &st->stats;
	kv_batch b;
	int rc = kv_decode(st->decoder, frames, n_frames, &b);

	ss->messages++;
	/* The sequence counts before the payload is judged: a message with a
	 * bad payload still closes or opens a gap. */
	enum kv_seq_verdict v = b.has_seq ? kv_seq_observe(&st->seq, b.seq) : KV_SEQ_NEXT;
	if (v == KV_SEQ_GAP)
		kv_state_mark_stale(st->state, KV_STALE_GAP);
	else if (v == KV_SEQ_RESET)
		kv_state_mark_stale(st->state, KV_STALE_RESET);

	if (b.reject != KV_R_OK) {
		ss->decode_errors[b.reject]++;
		return rc;
	}
	if (v == KV_SEQ_DUPLICATE) {
		ss->duplicate_message_events += b.n_events;
		return rc;
	}
	ss->has_timestamp = true;
	ss->last_timestamp_ms = b.timestamp_ms;
	double lag = (double)(now_ms - b.timestamp_ms) / 1000.0;
	kv_hist_observe(&ss->lag_seconds, lag > 0 ? lag : 0);
	kv_hist_observe(&ss->batch_events, (double)b.n_events);
	for (size_t i = 0; i < b.n_events; i += LOOKAHEAD)
		apply_events(st, &b, i, i + LOOKAHEAD < b.n_events ? i + LOOKAHEAD : b.n_events, v == KV_SEQ_RESET, &rc);
	return rc;
}
