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
#ifndef KV_RECON_H
#define KV_RECON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kv_common.h"
#include "kv_objtable.h"

typedef struct kv_recon_event {
	uint64_t hash;  /* the key's hash in the state's keying */
	uint8_t type;   /* enum kv_event_type */
	uint8_t medium; /* KV_MEDIUM_*, 0 for cleared */
} kv_recon_event;

/* Events of one tenant, in the order they were applied; bounded. */
typedef struct kv_recon_log {
	kv_recon_event *ev;
	size_t n, cap, max;
	bool overflow; /* an event did not fit: the attempt must be abandoned */
} kv_recon_log;

void kv_recon_log_init(kv_recon_log *l, size_t max);
/* Returns 0, or KV_ELIMIT / KV_ENOMEM with overflow set. */
int kv_recon_log_add(kv_recon_log *l, uint64_t hash, unsigned type, unsigned medium);
void kv_recon_log_free(kv_recon_log *l);

/* The fresh view of one tenant, with the same figures the state keeps. */
typedef struct kv_recon_table {
	kv_objtable objects;
	uint64_t placement[KV_PLACE__COUNT];
} kv_recon_table;

/* Sets an object's media exactly (0 removes it).  Returns 0 or KV_ENOMEM. */
int kv_recon_put(kv_recon_table *t, uint64_t hash, unsigned media);
/* Applies events in order: stored adds its medium, removed takes it away,
 * cleared empties the table.  Returns 0 or KV_ENOMEM. */
int kv_recon_replay(kv_recon_table *t, const kv_recon_event *ev, size_t n);
void kv_recon_table_free(kv_recon_table *t);

static inline uint64_t kv_recon_objects(const kv_recon_table *t)
{
	return kv_objtable_count(&t->objects);
}

#endif
