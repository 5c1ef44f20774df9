/* SPDX-License-Identifier: Apache-2.0 */
/* Loss by cause: every sequence number the stream found missing lands in
 * exactly one bucket, once the next status poll has looked at it:
 *
 *   queue         the master's dropped_events explains it (its queue was
 *                 full: one reserved number per dropped event);
 *   transport     the master's counters of that publisher process are known
 *                 and do not explain it: lost after the publisher;
 *   unattributed  the counters that could have explained it are gone (the
 *                 process restarted before a poll saw them).
 *
 * so that queue + transport + unattributed = missing after every poll.
 * Also decides restarts (seen by the stream or by the counters, counted
 * once) and when a tail the stream never received is certainly lost.
 * Pure: the poller hands it the stream's position and the master's answer.
 * See docs/design.md, "Loss by cause", for the orderings it handles. */
#ifndef KV_LOSS_H
#define KV_LOSS_H

#include <stdbool.h>
#include <stdint.h>

#include "kv_common.h"

/* Events in one message at most (the upstream publisher's batch). */
#define KV_LOSS_BATCH_EVENTS 64

typedef struct kv_loss {
	bool polled;              /* a valid answer has been seen */
	bool epoch_based;         /* the stream's current epoch is compared with the master's counters */
	bool orphan;              /* the stream's current epoch outlived its master counters */
	uint64_t resets_seen;     /* stream resets already matched to restarts */
	uint64_t credit;          /* restarts seen by the counters whose stream reset has not arrived */
	uint64_t credit_messages; /* stream messages when the credit was taken */
	uint64_t closed_done;     /* missing numbers of closed epochs already attributed */
	uint64_t epoch_done;      /* missing numbers of the current epoch already attributed */
	uint64_t epoch_used;      /* the current process's drops used (or unseeable): never explain twice */
	uint64_t dropped_prev;    /* dropped_events of the last valid answer */
	/* the master's last number and our position at the last poll, while
	 * both described the same process */
	bool tail_watch;
	uint64_t tail_master_last, tail_position;
	double tail_since; /* when that pair was first seen */
	/* numbers the master had used at the previous poll that the stream has
	 * neither received nor counted lost: a stream more than a poll behind */
	bool behind_known;
	uint64_t behind;
	/* results */
	uint64_t restarts;
	uint64_t queue, transport, unattributed;
} kv_loss;

/* The master's counters at one valid answer. */
typedef struct kv_loss_counters {
	uint64_t published_batches, published_events, dropped_events;
} kv_loss_counters;

/* Last sequence number the publisher process used: every message and every
 * dropped event takes one. */
static inline uint64_t kv_loss_master_last(const kv_loss_counters *c)
{
	return c->published_batches + c->dropped_events;
}

/* One valid answer.  prev is the previous valid answer (NULL for the first),
 * pos the stream's position read before the request was sent: every gap
 * seen by then was caused by drops the master had already counted.
 * Returns the restarts decided at this poll. */
uint64_t kv_loss_poll(kv_loss *l, const kv_loss_counters *prev, const kv_loss_counters *now, const kv_stream_pos *pos);

/* True when the stream's current epoch and the master's counters describe the
 * same publisher process, so that the master's last number can be compared
 * with the stream's position. */
bool kv_loss_matched(const kv_loss *l);

/* Called after kv_loss_poll with the stream's position now; updates
 * `behind`.  True when a tail is certainly lost: the master's last number
 * was ahead of the stream, the same at two polls in a row at least half of
 * interval_s apart with the stream not moving in between, and nothing has
 * arrived for interval_s plus the last message's lag (or ever).  The hold
 * matters when nothing has arrived: a poll the ingest thread asked for a
 * moment after a regular one (it awaits the dialect, messages queued in ZMQ)
 * is not a second look.  *upto_seq and *upto_eid say up to where (*upto_eid
 * 0 when the event ids cannot tell).  The numbers are attributed at once. */
bool kv_loss_tail(kv_loss *l, const kv_loss_counters *now, const kv_stream_pos *pos, double now_s, double interval_s,
		  uint64_t *upto_seq, uint64_t *upto_eid);

#endif
