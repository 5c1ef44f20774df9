/* SPDX-License-Identifier: Apache-2.0 */
/* The set of live objects of one tenant: 64-bit key hash -> media mask, and
 * (while births are kept) the publisher time the object's life began.
 *
 * One slot is one uint64_t: the hash with its two low bits replaced by the
 * media mask (bit 0 cpu, bit 1 disk).  A live object always has a medium,
 * so a zero slot is empty.  Open addressing, linear probing, backward-shift
 * deletion (no tombstones in the live table), and incremental growth: when
 * the table grows, the old array is drained a few slots per operation and
 * its drained pages are returned as it goes, so no single event pays for
 * moving (or unmapping) millions of entries.
 *
 * Capacities come in quarter steps, 2^k x {1, 1.25, 1.5, 1.75}, and a hash
 * finds its home slot by a multiply-high instead of a mask: right after a
 * growth the table is at least 60% full (37.5% with doubling), which is
 * what keeps a birth per object within budget (docs/performance.md).
 *
 * Births: with kv_objtable_births on, a parallel uint32_t per slot holds
 * birth - base + 1 in milliseconds (0: the birth was not seen), base being
 * the table's own.  That covers 49 days; a birth outside the window moves
 * the base to centre it, and births that fall out become unseen (lives
 * longer than 24 days, far above the histograms' last bucket). */
#ifndef KV_OBJTABLE_H
#define KV_OBJTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* No birth: not seen, or births are not kept. */
#define KV_NO_BIRTH INT64_MIN

typedef struct kv_objtable {
	uint64_t *slots;  /* live table, cap slots (NULL when empty) */
	uint32_t *births; /* parallel to slots while births are kept */
	size_t cap;
	size_t count;  /* live entries in slots */
	uint64_t *old; /* being drained after a resize, or NULL */
	uint32_t *old_births;
	size_t old_cap;
	size_t old_count;
	size_t old_cursor;   /* every live entry of old is at or after this */
	size_t old_released; /* pages of old before this slot went back to the OS */
	size_t drain_owed;   /* slots operations have owed the drain since it last ran */
	bool with_births;
	int64_t birth_base;
	uint64_t births_n;   /* objects whose birth is held */
	uint64_t births_sum; /* of their stored values (below 2^32 objects: no overflow) */
} kv_objtable;

#define KV_OBJTABLE_INIT \
	{                \
		0        \
	}

/* Frees the arrays and leaves an empty table, births off, ready for reuse. */
void kv_objtable_clear(kv_objtable *t);

/* Keeps a birth per object from now on (every object held so far: not
 * seen), or stops and frees them.  Returns 0 or MKV_ENOMEM (nothing changed). */
enum mkv_err kv_objtable_births(kv_objtable *t, bool on);

/* Media mask of an object, 0 when absent. */
unsigned kv_objtable_get(const kv_objtable *t, uint64_t hash);
/* Its birth (unix ms), KV_NO_BIRTH when absent, not seen or not kept. */
int64_t kv_objtable_birth(const kv_objtable *t, uint64_t hash);

/* Sets the media of an object to (before | add) & ~del, inserting or
 * deleting as needed, and reports the mask it had before and, when the
 * object goes, its birth (either pointer may be NULL).  An insertion takes `birth` (unix ms,
 * 0 .. 2^62; anything else is KV_NO_BIRTH).  An insertion is refused with
 * MKV_ELIMIT when allow_insert is false, and MKV_ENOMEM when the table
 * cannot grow; in both cases nothing changes. */
enum mkv_err kv_objtable_update(kv_objtable *t, uint64_t hash, unsigned add, unsigned del, bool allow_insert,
				int64_t birth, unsigned *before, int64_t *born);

static inline size_t kv_objtable_count(const kv_objtable *t)
{
	return t->count + t->old_count;
}

/* The slot of hash in a table of cap slots: the high word of hash * cap. */
static inline size_t kv_objtable_home(uint64_t hash, size_t cap)
{
	return (size_t)(((unsigned __int128)(hash & ~(uint64_t)3) * cap) >> 64);
}

/* Starts loading the slot a lookup of hash will probe first.  Always
 * inlined: as a function of its own, GCC 12 judges it free of side effects
 * (ipa-pure-const does not count __builtin_prefetch) and drops the call, and
 * with it the prefetch (none was in the binary before this). */
static inline __attribute__((always_inline)) void kv_objtable_prefetch(const kv_objtable *t, uint64_t hash)
{
	/* not the birth: it is read only when an object comes or goes */
	if (t->slots)
		__builtin_prefetch(&t->slots[kv_objtable_home(hash, t->cap)], 1);
	if (t->old)
		__builtin_prefetch(&t->old[kv_objtable_home(hash, t->old_cap)], 0);
}

/* Drains at most `slots` slots of the old array (an idle moment's work:
 * without operations, a growth's old array would stay).  Returns the
 * slots drained. */
size_t kv_objtable_settle(kv_objtable *t, size_t slots);

/* Bytes held by the arrays. */
size_t kv_objtable_bytes(const kv_objtable *t);

/* The mean birth (unix ms) of the objects whose birth is held; false when
 * there is none.  O(1): kept as objects come and go. */
bool kv_objtable_births_mean(const kv_objtable *t, double *mean_ms);

/* Calls fn for every live object, with its birth (KV_NO_BIRTH if none). */
void kv_objtable_each(const kv_objtable *t, void (*fn)(uint64_t hash, unsigned media, int64_t birth, void *arg),
		      void *arg);

/* Sizes an empty table for n objects at once, so that they go in without
 * a growth.  In the order of another table's slots (by hash), objects
 * going into a table still growing all land on its first slots and probe
 * ever longer runs (the state handover's reader took 22 us an object so).
 * Returns 0, MKV_ENOMEM, or MKV_EINVAL when the table is not empty. */
enum mkv_err kv_objtable_reserve(kv_objtable *t, size_t n);

#endif
