/* SPDX-License-Identifier: Apache-2.0 */
/* Continuity of one publisher stream: transport sequence numbers (frame 1)
 * and event ids.
 *
 * The publisher reserves a sequence number for every event its queue drops,
 * but assigns event ids only when it encodes: a sequence gap with no
 * event-id gap is loss in the publisher, an event-id gap is loss after it
 * (transport, subscriber high-water mark).  Both counters are kept.
 *
 * An epoch is one publisher process as the stream sees it: it ends at a
 * reset.  A new process numbers from 1 (sequence and event id), so the first
 * message after a reset carrying sequence s shows s - 1 numbers missing:
 * reserved by queue drops before its first send, or lost.  The first epoch
 * is joined part-way, its first message a baseline, unless the publisher
 * is known to have started after the stream began watching it
 * (kv_seq_publisher_seen): then it too is counted from 1. */
#ifndef KV_SEQTRACK_H
#define KV_SEQTRACK_H

#include <stdbool.h>
#include <stdint.h>

#include <mooncake_kv/store.h> /* enum mkv_seq_verdict */

typedef struct kv_seqtrack {
	bool started;
	bool eid_started;
	bool epoch_whole; /* the current epoch was seen from its start (after a reset, or from 1) */
	bool from_one;    /* before the first message: its publisher started after we began watching */
	bool absent_seen; /* after it: a poll saw the publisher absent since the last message */
	uint64_t last_seq;
	uint64_t last_event_id;
	uint64_t counted_upto; /* tail loss already counted up to this number (0: none), this epoch */
	uint64_t eid_counted_upto;
	uint64_t eid_unread;    /* rejected events since the last id read: each took one id */
	uint64_t gaps;          /* jumps forward, a lost tail included */
	uint64_t missing;       /* sequence numbers skipped by those jumps */
	uint64_t epoch_missing; /* of which in the current epoch */
	uint64_t duplicates;
	uint64_t resets; /* sequence or event id moved backwards */
	uint64_t event_id_gaps;
	uint64_t event_ids_missing;
	uint64_t tail_losses; /* lost tails counted (kv_seq_tail_lost) */
	uint64_t tail_late;   /* messages of those tails that arrived after all: in `missing` too */
} kv_seqtrack;

/* For each message: its sequence number and, when it decoded and has
 * events, the id of its first event (has_eid false otherwise).  The event
 * id catches a restart whose new process had already passed the old
 * process's last number before its first message arrived. */
enum mkv_seq_verdict kv_seq_observe(kv_seqtrack *t, uint64_t seq, bool has_eid, uint64_t first_eid);

/* For each event id of an accepted message, in order.  Returns true when it
 * moved backwards inside the message (a reset kv_seq_observe could not see;
 * one restart counts once). */
bool kv_seq_observe_event_id(kv_seqtrack *t, uint64_t event_id, bool message_was_reset);

/* What the master said of its publisher at a poll.  Before the first
 * message: a publisher seen absent (a standby, a master down or
 * unreachable, enabled=false) starts at 1 when it comes, so every number
 * before the first one received is missing; only a publisher that was
 * publishing when we started watching was joined part-way.  After it: the
 * next message that does not follow on (a jump forward) is a new process
 * that has already passed the old one's numbers, a restart from 1, not a
 * gap; one that follows on says the publisher lived through it (only its
 * admin API was gone). */
void kv_seq_publisher_seen(kv_seqtrack *t, bool publishing);

/* A rejected event of an accepted message: its id is not read (none of a
 * rejected event's fields is evidence), but it took one at the publisher, so
 * the next id read may be that much higher without a loss. */
void kv_seq_skip_event_id(kv_seqtrack *t);

/* The publisher is known to have used numbers up to upto_seq (and event ids
 * up to upto_eid, 0 if unknown) and they are not coming: counts the numbers
 * after the last one seen as missing, once, as one gap.  A message of that
 * tail that arrives after all is applied, not counted missing again but
 * counted late (received + missing - late = the numbers used).  Returns the
 * numbers counted (0: nothing was behind). */
uint64_t kv_seq_tail_lost(kv_seqtrack *t, uint64_t upto_seq, uint64_t upto_eid);

/* The last number this epoch accounts for: received or counted lost. */
static inline uint64_t kv_seq_position(const kv_seqtrack *t)
{
	return t->last_seq > t->counted_upto ? t->last_seq : t->counted_upto;
}

#endif
