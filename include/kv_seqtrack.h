/* Continuity of one publisher stream: transport sequence numbers (frame 1)
 * and event ids.
 *
 * The publisher reserves a sequence number for every event its queue drops,
 * but assigns event ids only when it encodes: a sequence gap with no
 * event-id gap is loss in the publisher, an event-id gap is loss after it
 * (transport, subscriber high-water mark).  Both counters are kept. */
#ifndef KV_SEQTRACK_H
#define KV_SEQTRACK_H

#include <stdbool.h>
#include <stdint.h>

enum kv_seq_verdict {
	KV_SEQ_FIRST,     /* first message: sets the baseline */
	KV_SEQ_NEXT,      /* last + 1 */
	KV_SEQ_GAP,       /* a jump forward: messages were lost */
	KV_SEQ_DUPLICATE, /* the last number again */
	KV_SEQ_RESET,     /* below the last: the publisher restarted */
};

typedef struct kv_seqtrack {
	bool started;
	bool eid_started;
	uint64_t last_seq;
	uint64_t last_event_id;
	uint64_t gaps;    /* jumps forward */
	uint64_t missing; /* sequence numbers skipped by those jumps */
	uint64_t duplicates;
	uint64_t resets; /* sequence or event id moved backwards */
	uint64_t event_id_gaps;
	uint64_t event_ids_missing;
} kv_seqtrack;

enum kv_seq_verdict kv_seq_observe(kv_seqtrack *t, uint64_t seq);

/* For each event id in a message, in order.  Returns true when it moved
 * backwards and the message's sequence number had not already shown the
 * reset (one restart counts once). */
bool kv_seq_observe_event_id(kv_seqtrack *t, uint64_t event_id, bool message_was_reset);

#endif
