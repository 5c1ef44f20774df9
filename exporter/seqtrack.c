#include "kv_seqtrack.h"

enum kv_seq_verdict kv_seq_observe(kv_seqtrack *t, uint64_t seq)
{
	if (!t->started) {
		t->started = true;
		t->last_seq = seq;
		return KV_SEQ_FIRST;
	}
	uint64_t last = t->last_seq;
	if (seq == last) {
		t->duplicates++;
		return KV_SEQ_DUPLICATE;
	}
	t->last_seq = seq;
	if (seq < last) {
		t->resets++;
		/* Event ids restart with the process: take a new baseline. */
		t->eid_started = false;
		return KV_SEQ_RESET;
	}
	if (seq == last + 1)
		return KV_SEQ_NEXT;
	t->gaps++;
	t->missing += seq - last - 1;
	return KV_SEQ_GAP;
}

bool kv_seq_observe_event_id(kv_seqtrack *t, uint64_t eid, bool message_was_reset)
{
	if (!t->eid_started) {
		t->eid_started = true;
		t->last_event_id = eid;
		return false;
	}
	uint64_t last = t->last_event_id;
	t->last_event_id = eid;
	if (eid > last) {
		if (eid != last + 1) {
			t->event_id_gaps++;
			t->event_ids_missing += eid - last - 1;
		}
		return false;
	}
	if (eid == last || message_was_reset)
		return false;
	t->resets++;
	return true;
}
