/* SPDX-License-Identifier: Apache-2.0 */
/* The set of live objects of one tenant: 64-bit key hash -> media mask.
 *
 * One slot is one uint64_t: the hash with its two low bits replaced by the
 * media mask (bit 0 cpu, bit 1 disk).  A live object always has a medium,
 * so a zero slot is empty.  Open addressing, linear probing, backward-shift
 * deletion (no tombstones in the live table), and incremental growth: when
 * the table doubles, the old array is drained a few slots per operation and
 * its drained pages are returned as it goes, so no single event pays for
 * moving (or unmapping) millions of entries. */
#ifndef KV_OBJTABLE_H
#define KV_OBJTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kv_objtable {
	uint64_t *slots; /* live table, capacity mask + 1 (0 when empty) */
	size_t mask;
	size_t count;  /* live entries in slots */
	uint64_t *old; /* being drained after a resize, or NULL */
	size_t old_mask;
	size_t old_count;
	size_t old_cursor;   /* every live entry of old is at or after this */
	size_t old_released; /* pages of old before this slot went back to the OS */
} kv_objtable;

#define KV_OBJTABLE_INIT \
	{                \
		0        \
	}

/* Frees both arrays and leaves an empty table, ready for reuse. */
void kv_objtable_clear(kv_objtable *t);

/* Media mask of an object, 0 when absent. */
unsigned kv_objtable_get(const kv_objtable *t, uint64_t hash);

/* Sets the media of an object to (before | add) & ~del, inserting or
 * deleting as needed, and reports the mask it had before.  An insertion is
 * refused with KV_ELIMIT when allow_insert is false, and KV_ENOMEM when the
 * table cannot grow; in both cases nothing changes. */
int kv_objtable_update(kv_objtable *t, uint64_t hash, unsigned add, unsigned del, bool allow_insert, unsigned *before);

static inline size_t kv_objtable_count(const kv_objtable *t)
{
	return t->count + t->old_count;
}

/* Starts loading the slot a lookup of hash will probe first. */
static inline void kv_objtable_prefetch(const kv_objtable *t, uint64_t hash)
{
	if (t->slots)
		__builtin_prefetch(&t->slots[(size_t)(hash >> 2) & t->mask], 1);
	if (t->old)
		__builtin_prefetch(&t->old[(size_t)(hash >> 2) & t->old_mask], 0);
}

/* Bytes held by the arrays. */
size_t kv_objtable_bytes(const kv_objtable *t);

/* Calls fn for every live object (for tests and reconciliation). */
void kv_objtable_each(const kv_objtable *t, void (*fn)(uint64_t hash, unsigned media, void *arg), void *arg);

#endif
