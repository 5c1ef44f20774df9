/* SPDX-License-Identifier: Apache-2.0 */
/* Reconciliation, the pure part: a tenant's objects rebuilt from the
 * master's answers (the listing and the batch queries) into a fresh table,
 * the events applied to that tenant meanwhile, recorded in order, and their
 * replay onto the fresh table before it replaces the stream's view.
 *
 * Why replaying events recorded from *before* the listing started gives the
 * true state: per (key, medium), stored and removed are last-writer-wins.
 * The master's answer for a key reflects every change up to the moment it
 * was read.  Replaying, in order, every event recorded since before the
 * listing started leaves each (key, medium) as its last recorded event set
 * it, or as the master said when no event for it was recorded; either way
 * that is its state at cut-over.  An event that happened before the key was
 * read is applied twice (once in the answer, once in the replay), which
 * idempotent events allow.  docs/design.md ("Reconciliation") has the
 * argument and its limits (changes the master publishes no event for). */
#ifndef KV_RECONCILE_REPLAY_H
#define KV_RECONCILE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mooncake_kv/reconcile.h>

#include "kv_common.h"
#include "kv_key_group_counts.h"
#include "kv_objtable.h"

typedef struct kv_recon_event {
	uint64_t hash;  /* the key's hash in the state's keying */
	uint8_t type;   /* enum mkv_event_type */
	uint8_t medium; /* the media it adds (stored) or takes away (removed: in the object
			   dialect, all of them); 0 for cleared */
	uint16_t group; /* the key's group (kv_key_group_counts.h), 0 without key groups */
} kv_recon_event;

/* Events of one tenant, in the order they were applied; bounded. */
typedef struct kv_recon_log {
	kv_recon_event *ev;
	size_t n, cap, max;
	bool overflow; /* an event did not fit: the attempt must be abandoned */
} kv_recon_log;

void kv_recon_log_init(kv_recon_log *l, size_t max);
/* Returns 0, or MKV_ELIMIT / MKV_ENOMEM with overflow set. */
enum mkv_err kv_recon_log_add(kv_recon_log *l, uint64_t hash, unsigned type, unsigned medium, unsigned group);
void kv_recon_log_free(kv_recon_log *l);

/* The fresh view of one tenant, with the same figures the state keeps. */
typedef struct kv_recon_table {
	kv_objtable objects;
	uint64_t placement[MKV_PLACE__COUNT];
	kv_group_vec groups; /* per key group (placements only) */
} kv_recon_table;

/* Sets an object of key group `group` to media exactly (0 removes it); a
 * new one takes `birth`: the stream's view's birth of it (KV_NO_BIRTH when
 * it had none).  Returns 0 or MKV_ENOMEM.  Births are kept when the table's
 * are on (kv_objtable_births on t->objects before the first put). */
enum mkv_err kv_recon_put(kv_recon_table *t, uint64_t hash, unsigned media, unsigned group, int64_t birth);
/* Applies events in order: stored adds its media, removed takes its media
 * away (the dialect was settled when they were recorded), cleared empties
 * the table.  An object a replayed event makes present has no birth: an
 * event from before its key was read can take away, for a moment, what
 * the master still held, and bring it back; only the media come out right
 * in the end, not when a life began.  Returns 0 or MKV_ENOMEM. */
enum mkv_err kv_recon_replay(kv_recon_table *t, const kv_recon_event *ev, size_t n);
void kv_recon_table_free(kv_recon_table *t);

/* enum mkv_recon_result: mooncake_kv/reconcile.h */

/* Label values of mooncake_kv_reconcile_corrections_total{kind}. */
enum kv_recon_correction {
	KV_CORR_ADDED,   /* the master had it, the stream's view did not */
	KV_CORR_REMOVED, /* the stream's view had it, the master did not */
	KV_CORR_MEDIUM,  /* both had it, on other media */
	KV_CORR__KINDS
};

const char *kv_recon_correction_name(enum kv_recon_correction k);

/* What a source's reconciliations did, for the metrics. */
typedef struct kv_recon_stats {
	bool enabled;
	uint64_t results[MKV_RECON__RESULTS];
	uint64_t corrections[KV_CORR__KINDS];
	bool has_duration, has_success;
	double last_duration; /* seconds, of the last attempt that got to the end */
	double last_success;  /* unix seconds */
	uint64_t last_keys;   /* keys the last successful listing held */
} kv_recon_stats;

static inline uint64_t kv_recon_objects(const kv_recon_table *t)
{
	return kv_objtable_count(&t->objects);
}

#endif
