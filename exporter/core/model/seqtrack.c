/* SPDX-License-Identifier: Apache-2.0 */
#include "kv_seqtrack.h"

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static void lose(kv_seqtrack *t, uint64_t n)
{
	t->gaps++;
	t->missing += n;
	t->epoch_missing += n;
}

enum mkv_seq_verdict kv_seq_observe(kv_seqtrack *t, uint64_t seq, bool has_eid, uint64_t first_eid)
{
	if (!t->started) {
		t->started = true;
		t->last_seq = seq;
		t->epoch_whole = seq == 1 || t->from_one;
		/* from 1: every number before this one is missing, but those of a
		 * tail already counted lost (kv_seq_tail_lost) only once */
		if (t->from_one && seq > t->counted_upto + 1) {
			lose(t, seq - t->counted_upto - 1);
			return MKV_SEQ_GAP;
		}
		if (t->from_one && seq <= t->counted_upto) {
			t->tail_late++;
			return MKV_SEQ_NEXT;
		}
		return MKV_SEQ_FIRST;
	}
	if (seq == t->last_seq) {
		t->duplicates++;
		return MKV_SEQ_DUPLICATE;
	}
	/* a new process: its numbers restart at 1, and so do its event ids, which
	 * tell a restart even when the new numbers are already past the old (a
	 * late message of a counted tail has ids above the last one received);
	 * and a jump after the publisher was seen absent is one that has passed
	 * both */
	bool eid_back = has_eid && t->eid_started && seq > t->last_seq && first_eid <= t->last_event_id;
	bool jump_after_absence = t->absent_seen && seq > kv_seq_position(t) + 1;
	t->absent_seen = false;
	if (seq < t->last_seq || eid_back || jump_after_absence) {
		t->resets++;
		t->eid_started = false;
		t->eid_counted_upto = 0;
		t->eid_unread = 0;
		t->counted_upto = 0;
		t->last_seq = seq;
		t->epoch_whole = true;
		t->epoch_missing = 0;
		if (seq > 1)
			lose(t, seq - 1);
		return MKV_SEQ_RESET;
	}
	uint64_t from = kv_seq_position(t);
	t->last_seq = seq;
	t->tail_late += seq <= t->counted_upto; /* already counted missing */
	if (seq <= from + 1)
		return MKV_SEQ_NEXT;
	lose(t, seq - from - 1);
	return MKV_SEQ_GAP;
}

void kv_seq_publisher_seen(kv_seqtrack *t, bool publishing)
{
	if (t->started && !publishing)
		t->absent_seen = true;
	if (t->started || publishing || t->from_one)
		return;
	/* its sequence and its event ids will start at 1: the stream stands at
	 * 0 from now on, so that a first burst lost whole, then silence, is a
	 * lost tail like any other */
	t->from_one = true;
	t->eid_started = true;
	t->last_event_id = 0;
}

void kv_seq_skip_event_id(kv_seqtrack *t)
{
	t->eid_unread++;
}

bool kv_seq_observe_event_id(kv_seqtrack *t, uint64_t eid, bool message_was_reset)
{
	uint64_t unread = t->eid_unread;
	t->eid_unread = 0;
	if (!t->eid_started) {
		t->eid_started = true;
		t->last_event_id = eid;
		return false;
	}
	uint64_t last = t->last_event_id;
	t->last_event_id = eid;
	if (eid > last) {
		uint64_t from = max_u64(last, t->eid_counted_upto) + unread;
		if (eid > from + 1) {
			t->event_id_gaps++;
			t->event_ids_missing += eid - from - 1;
		}
		return false;
	}
	if (eid == last || message_was_reset)
		return false;
	t->resets++;
	return true;
}

uint64_t kv_seq_tail_lost(kv_seqtrack *t, uint64_t upto_seq, uint64_t upto_eid)
{
	uint64_t from = kv_seq_position(t);
	if (!(t->started || t->from_one) || upto_seq <= from)
		return 0;
	uint64_t n = upto_seq - from;
	lose(t, n);
	t->tail_losses++;
	t->counted_upto = upto_seq;
	uint64_t efrom = max_u64(t->last_event_id, t->eid_counted_upto);
	if (t->eid_started && upto_eid > efrom) {
		t->event_id_gaps++;
		t->event_ids_missing += upto_eid - efrom;
		t->eid_counted_upto = upto_eid;
	}
	return n;
}
