/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kv_common.h"
#include "kv_objtable.h"

#define MEDIA_BITS 3u
#define TAG(h)     ((h) & ~(uint64_t)MEDIA_BITS)
/* A drained or retired slot of the old array: media 0 but not empty.  Only
 * the old array has these, and it is freed once drained. */
#define TOMBSTONE ((uint64_t)4)
#define MIN_CAP   16
/* Entries moved from the old array per operation.  Growth starts at 3/4
 * load, and the next one at 3/4 of twice the size: at least 2 slots per
 * insertion must move for the old array to be gone before then. */
#define DRAIN_STEP 8
/* Drained slots handed back to the OS at a time (256 KiB).  Freeing a 128 MiB
 * array at once costs ~20 ms of page-table work in one operation. */
#define RELEASE_SLOTS (32 * 1024)

static inline size_t home(uint64_t h, size_t mask)
{
	return (size_t)(h >> 2) & mask;
}

static inline bool live(uint64_t s)
{
	return (s & MEDIA_BITS) != 0;
}

void kv_objtable_clear(kv_objtable *t)
{
	free(t->slots);
	free(t->old);
	*t = (kv_objtable)KV_OBJTABLE_INIT;
}

size_t kv_objtable_bytes(const kv_objtable *t)
{
	size_t n = t->slots ? (t->mask + 1) : 0;
	if (t->old)
		n += t->old_mask + 1;
	return n * sizeof(uint64_t);
}

/* Index of the object in the live array, or SIZE_MAX. */
static size_t find_live(const kv_objtable *t, uint64_t tag)
{
	if (!t->slots)
		return SIZE_MAX;
	for (size_t i = home(tag, t->mask);; i = (i + 1) & t->mask) {
		uint64_t s = t->slots[i];
		if (s == 0)
			return SIZE_MAX;
		if (TAG(s) == tag)
			return i;
	}
}

/* Everything before the cursor is drained (and its pages may read as zero
 * after release), so a probe starts at the cursor at the earliest and wraps
 * to it: from there to the entry every slot is still occupied. */
static size_t find_old(const kv_objtable *t, uint64_t tag)
{
	if (!t->old)
		return SIZE_MAX;
	size_t first = t->old_cursor, i = home(tag, t->old_mask);
	if (i < first)
		i = first;
	for (size_t n = t->old_mask + 1 - first; n; n--) {
		uint64_t s = t->old[i];
		if (s == 0)
			return SIZE_MAX;
		if (live(s) && TAG(s) == tag)
			return i;
		i = i == t->old_mask ? first : i + 1;
	}
	return SIZE_MAX;
}

/* Returns the whole pages of old[old_released, old_cursor) to the OS. */
static void release_drained(kv_objtable *t)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE); /* once per 256 KiB drained: no need to cache */
	uintptr_t from = (uintptr_t)(t->old + t->old_released);
	uintptr_t to = (uintptr_t)(t->old + t->old_cursor);
	from = (from + page - 1) & ~(uintptr_t)(page - 1);
	to &= ~(uintptr_t)(page - 1);
	if (to > from)
		madvise((void *)from, to - from, MADV_DONTNEED);
	t->old_released = t->old_cursor;
}

/* The caller guarantees the tag is not present and there is room. */
static void insert_live(kv_objtable *t, uint64_t slot)
{
	size_t i = home(slot, t->mask);
	while (t->slots[i] != 0)
		i = (i + 1) & t->mask;
	t->slots[i] = slot;
	t->count++;
}

static void delete_live(kv_objtable *t, size_t hole)
{
	size_t mask = t->mask;
	for (size_t j = (hole + 1) & mask; t->slots[j] != 0; j = (j + 1) & mask) {
		size_t h = home(t->slots[j], mask);
		/* Move j into the hole when the hole lies on j's probe path,
		 * i.e. is no further from j's home than j itself is. */
		if (((j - h) & mask) >= ((j - hole) & mask)) {
			t->slots[hole] = t->slots[j];
			hole = j;
		}
	}
	t->slots[hole] = 0;
	t->count--;
}

static void drain(kv_objtable *t, size_t steps)
{
	while (t->old && steps--) {
		uint64_t s = t->old[t->old_cursor];
		if (live(s)) {
			insert_live(t, s);
			t->old[t->old_cursor] = TOMBSTONE;
			t->old_count--;
		}
		if (++t->old_cursor > t->old_mask || t->old_count == 0) {
			free(t->old);
			t->old = NULL;
			t->old_mask = t->old_count = t->old_cursor = t->old_released = 0;
		} else if (t->old_cursor - t->old_released >= RELEASE_SLOTS) {
			release_drained(t);
		}
	}
}

/* Makes room for one more entry in the live array. */
static int reserve_one(kv_objtable *t)
{
	size_t cap = t->slots ? t->mask + 1 : 0;
	if (kv_objtable_count(t) + 1 <= cap / 4 * 3)
		return KV_OK;
	if (t->old) /* not expected: draining outpaces growth */
		drain(t, SIZE_MAX);
	size_t ncap = cap ? cap * 2 : MIN_CAP;
	uint64_t *n = calloc(ncap, sizeof(*n));
	if (!n)
		return KV_ENOMEM;
	t->old = t->slots;
	t->old_mask = t->mask;
	t->old_count = t->count;
	t->old_cursor = t->old_released = 0;
	t->slots = n;
	t->mask = ncap - 1;
	t->count = 0;
	if (!t->old || t->old_count == 0) {
		free(t->old);
		t->old = NULL;
		t->old_mask = t->old_count = 0;
	}
	return KV_OK;
}

unsigned kv_objtable_get(const kv_objtable *t, uint64_t hash)
{
	uint64_t tag = TAG(hash);
	size_t i = find_live(t, tag);
	if (i != SIZE_MAX)
		return (unsigned)(t->slots[i] & MEDIA_BITS);
	i = find_old(t, tag);
	return i != SIZE_MAX ? (unsigned)(t->old[i] & MEDIA_BITS) : 0;
}

int kv_objtable_update(kv_objtable *t, uint64_t hash, unsigned add, unsigned del, bool allow_insert, unsigned *before)
{
	uint64_t tag = TAG(hash);
	unsigned was = 0, now;
	size_t i = find_live(t, tag);

	if (i != SIZE_MAX) {
		was = (unsigned)(t->slots[i] & MEDIA_BITS);
		now = (was | add) & ~del & MEDIA_BITS;
		if (now)
			t->slots[i] = tag | now;
		else
			delete_live(t, i);
	} else if ((i = find_old(t, tag)) != SIZE_MAX) {
		/* Touching an entry of the old array moves it over. */
		was = (unsigned)(t->old[i] & MEDIA_BITS);
		now = (was | add) & ~del & MEDIA_BITS;
		t->old[i] = TOMBSTONE;
		t->old_count--;
		if (now)
			insert_live(t, tag | now); /* old and live together stay below 3/4 */
	} else {
		now = add & ~del & MEDIA_BITS;
		if (now) {
			if (!allow_insert)
				return KV_ELIMIT;
			int rc = reserve_one(t);
			if (rc != KV_OK)
				return rc;
			insert_live(t, tag | now);
		}
	}
	if (before)
		*before = was;
	drain(t, DRAIN_STEP);
	return KV_OK;
}

void kv_objtable_each(const kv_objtable *t, void (*fn)(uint64_t, unsigned, void *), void *arg)
{
	for (size_t i = 0; t->slots && i <= t->mask; i++)
		if (live(t->slots[i]))
			fn(TAG(t->slots[i]), (unsigned)(t->slots[i] & MEDIA_BITS), arg);
	for (size_t i = 0; t->old && i <= t->old_mask; i++)
		if (live(t->old[i]))
			fn(TAG(t->old[i]), (unsigned)(t->old[i] & MEDIA_BITS), arg);
}
