/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "kv_stream.h"

struct kv_stream {
	kv_decoder *decoder;
	kv_state *state;
	bool owns_state; /* kv_stream_new's; kv_stream_attach's is borrowed */
	enum mkv_dialect dialect;
	kv_seqtrack seq;
	kv_stream_stats stats;
	bool reconnect_pending; /* reconnected; the next message tells whether anything was lost */
	bool disconnected;
	uint64_t breaks_at_disconnect; /* gaps + resets when the connection dropped */
	int64_t last_receive_ms;
	double last_lag;
	bool ts_seen; /* ts_max holds the newest event time of the current publisher process */
	int64_t ts_max;
	bool has_digest; /* digest is of the message numbered seq.last_seq */
	uint64_t digest;
	bool no_digest; /* kv_stream_set_digests(false): not kept, never handed over */
	/* joining a peer's state (kv_stream_carry_set) */
	enum mkv_join join;
	kv_stream_carry peer;
	bool join_run; /* messages before the peer's last number have arrived, the last numbered join_prev */
	uint64_t join_prev;
};

const double kv_lag_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
const size_t kv_lag_bounds_n = sizeof(kv_lag_bounds) / sizeof(kv_lag_bounds[0]);
const double kv_batch_bounds[] = {1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64};
const size_t kv_batch_bounds_n = sizeof(kv_batch_bounds) / sizeof(kv_batch_bounds[0]);

kv_stream *kv_stream_attach(kv_state *state)
{
	kv_stream *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->state = state;
	if (!(st->decoder = kv_decoder_new())) {
		free(st);
		return NULL;
	}
	kv_hist_init(&st->stats.lag_seconds, kv_lag_bounds, kv_lag_bounds_n);
	kv_hist_init(&st->stats.batch_events, kv_batch_bounds, kv_batch_bounds_n);
	return st;
}

kv_stream *kv_stream_new(mkv_budget *budget, uint64_t seed)
{
	kv_state *state = kv_state_new(budget, seed);
	kv_stream *st = state ? kv_stream_attach(state) : NULL;
	if (!st) {
		kv_state_free(state);
		return NULL;
	}
	st->owns_state = true;
	return st;
}

void kv_stream_free(kv_stream *st)
{
	if (!st)
		return;
	kv_decoder_free(st->decoder);
	if (st->owns_state)
		kv_state_free(st->state);
	free(st);
}

void kv_stream_carry_get(const kv_stream *st, kv_stream_carry *out)
{
	*out = (kv_stream_carry){.seq = st->seq,
				 .ts_seen = st->ts_seen,
				 .ts_max = st->ts_max,
				 .has_digest = st->has_digest,
				 .digest = st->digest,
				 .has_batch_ms = st->stats.has_timestamp,
				 .batch_ms = st->stats.last_timestamp_ms,
				 .batch_at_ms = st->stats.last_timestamp_at_ms};
}

void kv_stream_carry_set(kv_stream *st, const kv_stream_carry *in)
{
	st->seq = in->seq;
	st->ts_seen = in->ts_seen;
	st->ts_max = in->ts_max;
	st->has_digest = in->has_digest;
	st->digest = in->digest;
	/* the publisher's clock as the peer last read it (objects' ages) */
	st->stats.has_timestamp = in->has_batch_ms;
	st->stats.last_timestamp_ms = in->batch_ms;
	st->stats.last_timestamp_at_ms = in->batch_at_ms;
	st->peer = *in;
	st->join = in->seq.started ? MKV_JOIN_WAITING : MKV_JOIN_NONE;
	st->join_run = false;
}

enum mkv_join kv_stream_join(const kv_stream *st)
{
	return st->join;
}

void kv_stream_rebind(kv_stream *st, kv_state *state)
{
	st->state = state;
}

const kv_stream_stats *kv_stream_stats_of(const kv_stream *st)
{
	return &st->stats;
}

const kv_model_ctx *kv_stream_model(const kv_stream *st)
{
	return kv_decoder_model(st->decoder);
}

const kv_seqtrack *kv_stream_seq(const kv_stream *st)
{
	return &st->seq;
}

const kv_state *kv_stream_state(const kv_stream *st)
{
	return st->state;
}

void kv_stream_disconnected(kv_stream *st)
{
	st->disconnected = true;
	st->breaks_at_disconnect = st->seq.gaps + st->seq.resets;
}

void kv_stream_set_dialect(kv_stream *st, enum mkv_dialect d)
{
	st->dialect = d;
}

void kv_stream_set_digests(kv_stream *st, bool keep)
{
	st->no_digest = !keep;
	if (!keep)
		st->has_digest = false;
}

enum mkv_dialect kv_stream_dialect(const kv_stream *st)
{
	return st->dialect;
}

enum mkv_err kv_stream_set_keygroups(kv_stream *st, const mkv_keygroup_re *re)
{
	return kv_state_set_keygroups(st->state, re);
}

void kv_stream_reconnected(kv_stream *st)
{
	st->stats.reconnects++;
	/* the monitor's word may come after the first message of the new
	 * connection: a loss seen since the disconnect is this reconnect's */
	if (st->disconnected && st->seq.gaps + st->seq.resets > st->breaks_at_disconnect)
		kv_state_mark_stale(st->state, KV_STALE_RECONNECT);
	else
		st->reconnect_pending = st->seq.started;
	st->disconnected = false;
}

/* Something was lost: the tenants' figures may be incomplete for `why`,
 * and for the reconnect before it if one is waiting to be judged. */
static void mark_loss(kv_stream *st, enum kv_stale_reason why)
{
	kv_state_mark_stale(st->state, why);
	if (st->reconnect_pending)
		kv_state_mark_stale(st->state, KV_STALE_RECONNECT);
	st->reconnect_pending = false;
}

void kv_stream_position_of_seq(const kv_seqtrack *t, kv_stream_pos *out)
{
	uint64_t eid = t->eid_started ? t->last_event_id : 0;
	*out = (kv_stream_pos){
		/* a stream that will be counted from 1 stands at 0 before its first message */
		.started = t->started || t->from_one,
		.epoch_whole = t->epoch_whole || (t->from_one && !t->started),
		.position = kv_seq_position(t),
		.last_event_id = eid > t->eid_counted_upto ? eid : t->eid_counted_upto,
		.missing = t->missing,
		.epoch_missing = t->epoch_missing,
		.resets = t->resets,
		.breaks = t->gaps + t->resets,
	};
}

void kv_stream_position(const kv_stream *st, kv_stream_pos *out)
{
	kv_stream_position_of_seq(&st->seq, out);
	out->messages = st->stats.messages;
	out->last_receive_ms = st->last_receive_ms;
	out->last_lag = st->last_lag;
}

void kv_stream_publisher_seen(kv_stream *st, bool publishing)
{
	kv_seq_publisher_seen(&st->seq, publishing);
}

uint64_t kv_stream_tail_lost(kv_stream *st, uint64_t upto_seq, uint64_t upto_eid)
{
	uint64_t n = kv_seq_tail_lost(&st->seq, upto_seq, upto_eid);
	if (n)
		mark_loss(st, KV_STALE_GAP);
	return n;
}

/* The id of the first accepted event that has one, for telling a restart
 * (a rejected event's fields are no evidence: docs/design.md). */
static bool first_event_id(const kv_batch *b, uint64_t *eid)
{
	if (b->reject != MKV_R_OK)
		return false;
	for (size_t i = 0; i < b->n_events; i++)
		if (b->events[i].reject == MKV_R_OK && b->events[i].has_event_id) {
			*eid = b->events[i].event_id;
			return true;
		}
	return false;
}

/* An event's time is residency's evidence only while the publisher's clock
 * goes forward: one older than the newest this process sent gives no
 * observation, and is counted. */
static void check_time(kv_stream *st, const kv_event *ev, kv_prepared *p)
{
	if (ev->timestamp_bad) {
		st->stats.timestamps_invalid++;
	} else if (st->ts_seen && ev->timestamp_ms < st->ts_max) {
		st->stats.timestamps_backwards++;
		p->ts = KV_NO_BIRTH;
	} else {
		st->ts_max = ev->timestamp_ms;
		st->ts_seen = true;
	}
}

static bool applicable(const kv_event *ev)
{
	return ev->reject == MKV_R_OK && (ev->type == MKV_EV_CLEARED || ev->has_key);
}

static void count_reject(kv_stream *st, enum mkv_reason r, mkv_ingest_report *rep)
{
	st->stats.decode_errors[r]++;
	if (rep->reject == MKV_R_OK)
		rep->reject = r;
}

/* Applies events [from, to): first a look at all of them, so that their
 * objects' memory is on its way while the earlier ones are applied.
 * Returns 0 or MKV_ENOMEM (some event was lost). */
#define LOOKAHEAD 64

static enum mkv_err apply_events(kv_stream *st, const kv_batch *b, size_t from, size_t to, bool was_reset,
				 mkv_ingest_report *rep)
{
	kv_stream_stats *ss = &st->stats;
	kv_prepared prep[LOOKAHEAD];
	enum mkv_err rc = MKV_OK;
	for (size_t i = from; i < to; i++)
		if (applicable(&b->events[i]))
			kv_state_prepare(st->state, &b->events[i], st->dialect, &prep[i - from]);
	/* The slots' prefetches in a loop of their own: a prefetch that misses
	 * the TLB (each does, after a wake-up) retires only once its page walk
	 * is done, and between walks of the hashing and the tenant lookup the
	 * reorder window would hold two or three of them; here it holds dozens
	 * (docs/performance.md, "Prefetches in a loop of their own"). */
	for (size_t i = from; i < to; i++)
		if (applicable(&b->events[i]))
			kv_state_prefetch_slot(&prep[i - from]);
	for (size_t i = from; i < to; i++) {
		const kv_event *ev = &b->events[i];
		if (ev->reject != MKV_R_OK) { /* it arrived, and took an id: which one is not read */
			count_reject(st, ev->reject, rep);
			kv_seq_skip_event_id(&st->seq);
			continue;
		}
		if (ev->has_event_id && kv_seq_observe_event_id(&st->seq, ev->event_id, was_reset)) {
			kv_state_mark_stale(st->state, KV_STALE_RESET);
			st->ts_seen = false;
		}
		if (!applicable(ev)) {
			ss->keyless_events++;
			continue;
		}
		check_time(st, ev, &prep[i - from]);
		enum mkv_err r = kv_state_apply_prepared(st->state, ev, &prep[i - from]);
		if (r == MKV_ELIMIT) {
			ss->limit_dropped_events++;
		} else if (r != MKV_OK) {
			ss->alloc_failures++;
			rc = r;
		}
	}
	return rc;
}

/* What a message says of a join (kv_stream_carry_set): SKIP, it is one the
 * peer held; CONTINUED, it proves the stream continues the peer's (and is
 * applied when it is the next number); BROKEN, it cannot. */
enum join_step { JOIN_SKIP, JOIN_CONTINUED_SKIP, JOIN_CONTINUED, JOIN_BROKEN };

static enum join_step join_step(kv_stream *st, const kv_batch *b, uint64_t digest, bool has_eid, uint64_t eid)
{
	const kv_seqtrack *p = &st->peer.seq;
	uint64_t last = p->last_seq, seq = b->seq;
	if (seq <= last) {
		/* The overlap must run on, number by number, to the peer's last;
		 * and be of what the peer had seen: no later event id, no later
		 * time than its newest.  A publisher that restarted after the
		 * peer's copy numbers from 1 again: its messages are newer. */
		if (st->join_run && seq != st->join_prev + 1)
			return JOIN_BROKEN;
		if ((has_eid && eid > p->last_event_id) || !st->peer.has_batch_ms ||
		    b->timestamp_ms > st->peer.batch_ms)
			return JOIN_BROKEN;
		st->join_run = true;
		st->join_prev = seq;
		if (seq < last)
			return JOIN_SKIP;
		return st->peer.has_digest && digest == st->peer.digest ? JOIN_CONTINUED_SKIP : JOIN_BROKEN;
	}
	/* no overlap: the very next number, from the same process (the next event id) */
	if (!st->join_run && seq == last + 1 && p->eid_started && has_eid &&
	    eid == p->last_event_id + 1 + p->eid_unread)
		return JOIN_CONTINUED;
	return JOIN_BROKEN;
}

/* The join is broken: the peer's figures stay, stale (bootstrap), and the
 * numbering starts afresh as a new exporter's would (this message its
 * first). */
static void join_broken(kv_stream *st)
{
	kv_state_mark_stale(st->state, KV_STALE_BOOTSTRAP);
	memset(&st->seq, 0, sizeof(st->seq));
	st->ts_seen = false;
	st->has_digest = false;
	st->join = MKV_JOIN_BROKEN;
}

enum mkv_err kv_stream_ingest(kv_stream *st, const mkv_frame *frames, size_t n_frames, int64_t now_ms,
			      mkv_ingest_report *rep)
{
	mkv_ingest_report dummy;
	if (!rep)
		rep = &dummy;
	memset(rep, 0, sizeof(*rep));
	kv_stream_stats *ss = &st->stats;
	kv_batch b;
	enum mkv_err rc = kv_decode(st->decoder, frames, n_frames, &b);

	ss->messages++;
	st->last_receive_ms = now_ms;
	kv_state_set_now(st->state, now_ms);
	/* The sequence counts before the payload is judged: a message with a
	 * bad payload still closes or opens a gap. */
	uint64_t eid = 0;
	bool has_eid = rc == MKV_OK && first_event_id(&b, &eid);
	/* the payload's digest, for a handover of this state (kept) or of a
	 * peer's (joining): hashing is ~10-20 ns an event otherwise spent */
	bool hashed = b.has_seq && n_frames >= 3 && (!st->no_digest || st->join == MKV_JOIN_WAITING);
	uint64_t digest = hashed ? XXH3_64bits(frames[2].data, frames[2].len) : 0;
	if (st->join == MKV_JOIN_WAITING && b.has_seq) {
		switch (join_step(st, &b, digest, has_eid, eid)) {
		case JOIN_CONTINUED_SKIP:
			/* the peer's last message: proven, and held by its state */
			st->join = rep->join = MKV_JOIN_CONTINUED;
			/* fall through */
		case JOIN_SKIP:
			ss->overlap_messages++;
			rep->verdict = MKV_SEQ_DUPLICATE;
			rep->seq = b.seq;
			return MKV_OK;
		case JOIN_CONTINUED:
			st->join = rep->join = MKV_JOIN_CONTINUED;
			break;
		case JOIN_BROKEN:
			join_broken(st);
			rep->join = MKV_JOIN_BROKEN;
			break;
		}
	}
	uint64_t missing_before = st->seq.missing;
	rep->prev_seq = kv_seq_position(&st->seq);
	rep->seq = b.seq;
	enum mkv_seq_verdict v = b.has_seq ? kv_seq_observe(&st->seq, b.seq, has_eid, eid) : MKV_SEQ_NEXT;
	rep->verdict = v;
	rep->missing = st->seq.missing - missing_before;
	if (v == MKV_SEQ_GAP || (v == MKV_SEQ_RESET && rep->missing))
		mark_loss(st, KV_STALE_GAP);
	if (v == MKV_SEQ_RESET) {
		mark_loss(st, KV_STALE_RESET);
		st->ts_seen = false; /* a new process: a new clock, maybe another host's */
	}
	st->reconnect_pending = false; /* this message has told */
	if (b.has_seq && v != MKV_SEQ_DUPLICATE) {
		st->has_digest = hashed && !st->no_digest;
		st->digest = digest;
	}

	if (rc == MKV_ENOMEM) { /* not the sender's fault: no decode error */
		ss->alloc_failures++;
		return rc;
	}
	if (b.reject != MKV_R_OK) {
		count_reject(st, b.reject, rep);
		return MKV_OK;
	}
	if (v == MKV_SEQ_DUPLICATE) {
		ss->duplicate_message_events += b.n_events;
		return MKV_OK;
	}
	ss->has_timestamp = true;
	ss->last_timestamp_ms = b.timestamp_ms;
	ss->last_timestamp_at_ms = now_ms;
	double lag = (double)(now_ms - b.timestamp_ms) / 1000.0;
	st->last_lag = lag > 0 ? lag : 0;
	kv_hist_observe(&ss->lag_seconds, st->last_lag);
	kv_hist_observe(&ss->batch_events, (double)b.n_events);
	rep->events = b.n_events;
	for (size_t i = 0; i < b.n_events; i += LOOKAHEAD) {
		size_t end = i + LOOKAHEAD < b.n_events ? i + LOOKAHEAD : b.n_events;
		enum mkv_err r = apply_events(st, &b, i, end, v == MKV_SEQ_RESET, rep);
		if (r != MKV_OK)
			rc = r;
	}
	return rc;
}
