/* SPDX-License-Identifier: Apache-2.0 */
#include "kv_loss.h"

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Numbers found missing, with `left` drops of their process still able to
 * explain them.  The rest is transport loss when those counters are the
 * process's current ones (current), unattributed when the process has
 * moved on since they were read: its later drops are unknown. */
static uint64_t attribute(kv_loss *l, uint64_t fresh, uint64_t left, bool current)
{
	uint64_t q = min_u64(fresh, left);
	l->queue += q;
	if (current)
		l->transport += fresh - q;
	else
		l->unattributed += fresh - q;
	return q;
}

static uint64_t left_of(const kv_loss *l, uint64_t dropped)
{
	return dropped > l->epoch_used ? dropped - l->epoch_used : 0;
}

bool kv_loss_matched(const kv_loss *l)
{
	return l->polled && l->epoch_based && !l->orphan && !l->credit;
}

uint64_t kv_loss_poll(kv_loss *l, const kv_loss_counters *prev, const kv_loss_counters *now, const kv_stream_pos *pos)
{
	/* 1. restarts: each stream reset is one; a restart the counters show
	 * (backwards, or behind what the stream already received of the same
	 * process) before the stream does is one too, and the stream's reset for
	 * it, when it comes, is not counted again */
	uint64_t d = pos->resets - l->resets_seen;
	l->resets_seen = pos->resets;
	uint64_t absorbed = min_u64(d, l->credit);
	l->credit -= absorbed;
	uint64_t restarts = d - absorbed;
	bool backwards = prev &&
			 (now->published_batches < prev->published_batches ||
			  now->published_events < prev->published_events || now->dropped_events < prev->dropped_events);
	/* the publisher counts a batch after sending it: the stream may be one
	 * message (up to 64 events) ahead of the counters of its own process */
	bool behind = kv_loss_matched(l) && d == 0 && pos->started &&
		      (pos->position > kv_loss_master_last(now) + 1 ||
		       pos->last_event_id > now->published_events + KV_LOSS_BATCH_EVENTS);
	bool master_only = false;
	if (l->polled && d == 0 && (backwards || behind)) {
		restarts = 1;
		master_only = true;
	} else if (l->credit && d == 0 && pos->messages > l->credit_messages) {
		/* the stream went on without a reset: the counters lied */
		l->credit = 0;
		l->orphan = false;
		l->epoch_based = false;
	}
	l->restarts += restarts;
	if (restarts)
		l->tail_watch = false; /* the last number was another process's */

	/* 2. epochs the stream closed since the last poll: what they lost beyond
	 * what was attributed can only be explained by the drops of the process
	 * the last answer described (if it was theirs) */
	if (d > 0) {
		uint64_t closed = pos->missing - pos->epoch_missing;
		uint64_t fresh = closed - l->closed_done - l->epoch_done;
		bool known = l->epoch_based && !l->orphan && !absorbed;
		attribute(l, fresh, known ? left_of(l, l->dropped_prev) : 0, false);
		l->closed_done = closed;
		l->epoch_done = 0;
		l->epoch_used = 0;
		l->orphan = false;
		l->epoch_based = true; /* a new epoch is seen from its first number */
	}

	/* 3. the process changed under a stream that has not seen it yet: the
	 * stream's epoch keeps what the old counters explain and is orphaned */
	if (master_only) {
		uint64_t fresh = pos->epoch_missing - l->epoch_done;
		attribute(l, fresh, l->epoch_based && !l->orphan ? left_of(l, l->dropped_prev) : 0, false);
		l->epoch_done = pos->epoch_missing;
		l->orphan = true;
		l->credit++;
		l->credit_messages = pos->messages;
	}

	/* 4. the current epoch against the current counters */
	uint64_t fresh = pos->epoch_missing - l->epoch_done;
	if (l->orphan || !pos->started) {
		attribute(l, fresh, 0, false);
	} else if (!l->epoch_based) {
		/* joined part-way: the process's drops before we joined show as
		 * no gap we can see, except those whose numbers are still ahead of
		 * the stream (their gap is yet to come) */
		uint64_t q = attribute(l, fresh, now->dropped_events, true);
		uint64_t usable = now->dropped_events - q, last = kv_loss_master_last(now);
		if (!pos->epoch_whole)
			usable = min_u64(usable, last > pos->position ? last - pos->position : 0);
		l->epoch_used = now->dropped_events - usable;
		l->epoch_based = true;
	} else {
		l->epoch_used += attribute(l, fresh, left_of(l, now->dropped_events), true);
	}
	l->epoch_done = pos->epoch_missing;
	l->dropped_prev = now->dropped_events;
	l->polled = true;
	return restarts;
}

bool kv_loss_tail(kv_loss *l, const kv_loss_counters *now, const kv_stream_pos *pos, double now_s, double interval_s,
		  uint64_t *upto_seq, uint64_t *upto_eid)
{
	uint64_t last = kv_loss_master_last(now);
	bool matched = kv_loss_matched(l) && pos->started;
	bool prev = matched && l->tail_watch; /* the previous answer was this process's too */
	l->behind_known = prev;
	l->behind = prev && l->tail_master_last > pos->position ? l->tail_master_last - pos->position : 0;
	bool again = prev && l->tail_master_last == last && l->tail_position == pos->position;
	if (!again)
		l->tail_since = now_s;
	l->tail_watch = matched;
	l->tail_master_last = last;
	l->tail_position = pos->position;
	double quiet_s = interval_s + pos->last_lag;
	if (!again || last <= pos->position || now_s - l->tail_since < interval_s / 2 ||
	    now_s - (double)pos->last_receive_ms / 1000.0 <= quiet_s)
		return false;
	*upto_seq = last;
	/* the event ids are known from where the epoch is whole (a process seen
	 * from its start numbers them from 1) or from one received */
	bool eids = pos->last_event_id || pos->epoch_whole;
	*upto_eid = eids && now->published_events > pos->last_event_id ? now->published_events : 0;
	/* the stream counts these now: attribute them at once, so that the
	 * books balance after this poll too */
	uint64_t n = last - pos->position;
	l->epoch_used += attribute(l, n, left_of(l, now->dropped_events), true);
	l->epoch_done += n;
	l->tail_position = last;
	l->behind = 0;
	return true;
}
