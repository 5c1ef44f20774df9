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
/* Slots of the old array drained per operation.  Growth starts at 3/4
 * load, and the next one at 3/4 of the next capacity, at least 8/7 of this
 * one: 3/4 x 1/7 of the old capacity in insertions, so at least 9.4 slots
 * per insertion must be drained for the old array to be gone before then.
 * Draining faster costs nothing more in all (each slot is moved once) and
 * shortens the time every miss of the live array is looked up twice: with
 * 48, a growth of 10 M keys in 16 tenants is gone after ~260,000 events. */
#define DRAIN_STEP 48
/* The slots owed are moved a chunk at a time, DRAIN_CHUNK or a 16th of the
 * old array when that is less.  A few slots an operation meant cold lines
 * of both arrays for each, waited for one at a time after every wake-up of
 * a paced stream (~120 ns an event at 10 M keys while a growth lasted); a
 * chunk reads the old array and writes the live one in order (homes keep
 * the hashes' order), at the speed of memory.  The lag, at most a 16th of
 * the old array, leaves it drained within 0.023 of the old capacity in
 * operations.  docs/performance.md, "Draining a growth". */
#define DRAIN_CHUNK 4096
/* Drained slots handed back to the OS at a time (256 KiB of slots).
 * Freeing a 128 MiB array at once costs ~20 ms of page-table work in one
 * operation. */
#define RELEASE_SLOTS (32 * 1024)
/* A birth is stored as birth - base + 1, below 2^32; a new base puts the
 * birth that needed it in the middle of the window. */
#define BIRTH_HALF   ((int64_t)1 << 31)
#define BIRTH_MAX_MS ((int64_t)1 << 62)

static inline bool live(uint64_t s)
{
	return (s & MEDIA_BITS) != 0;
}

static inline size_t next(size_t i, size_t cap)
{
	return i + 1 == cap ? 0 : i + 1;
}

/* The capacity after cap: the next quarter step, 2^k x {4, 5, 6, 7, 8} / 4. */
static size_t grown(size_t cap)
{
	if (cap < MIN_CAP)
		return MIN_CAP;
	unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)cap); /* 2^k <= cap < 2^(k+1) */
	size_t quarter = ((size_t)1 << k) / 4;
	return cap + quarter;
}

/* Arrays of a huge page or more are mapped on their own, aligned to one, and
 * asked to be backed by huge pages where the kernel has them (THP
 * "madvise").  A probe lands on a random slot of a table far larger than
 * the cache; with 4 KiB pages it also misses the TLB, and on a paced stream
 * each wake-up finds the TLB empty, so every event waits for a page walk
 * (docs/performance.md, "Huge pages, aligned").  malloc's large blocks
 * start 16 bytes into a 4 KiB page, so only their inner whole 2 MiB runs
 * could be huge: none of a table under 4 MiB.  The tail after the last
 * whole huge page stays in 4 KiB pages: rounding it up would hold as much
 * as 2 MiB more a table. */
#define HUGE_PAGE ((size_t)2 << 20)

static size_t page_round(size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return (bytes + page - 1) & ~(page - 1);
}

/* n zeroed elements, or NULL. */
static void *array_calloc(size_t n, size_t size)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, size, &bytes) || bytes > SIZE_MAX / 2)
		return NULL;
	if (bytes < HUGE_PAGE)
		return calloc(n, size);
	size_t len = page_round(bytes);
	char *p = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	char *a = (char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + len + HUGE_PAGE > a + len)
		munmap(a + len, (size_t)(p + len + HUGE_PAGE - (a + len)));
#ifdef MADV_HUGEPAGE
	madvise(a, len, MADV_HUGEPAGE); /* a hint: refused is fine */
#endif
	return a;
}

/* Frees what array_calloc(n, size) returned (NULL is fine). */
static void array_free(void *p, size_t n, size_t size)
{
	if (!p)
		return;
	if (n * size < HUGE_PAGE)
		free(p);
	else
		munmap(p, page_round(n * size));
}

void kv_objtable_clear(kv_objtable *t)
{
	array_free(t->slots, t->cap, sizeof(*t->slots));
	array_free(t->births, t->cap, sizeof(*t->births));
	array_free(t->old, t->old_cap, sizeof(*t->old));
	array_free(t->old_births, t->old_cap, sizeof(*t->old_births));
	*t = (kv_objtable)KV_OBJTABLE_INIT;
}

enum mkv_err kv_objtable_births(kv_objtable *t, bool on)
{
	if (on == t->with_births)
		return MKV_OK;
	if (on) {
		uint32_t *b = t->slots ? array_calloc(t->cap, sizeof(*b)) : NULL;
		uint32_t *ob = t->old ? array_calloc(t->old_cap, sizeof(*ob)) : NULL;
		if ((t->slots && !b) || (t->old && !ob)) {
			array_free(b, t->cap, sizeof(*b));
			array_free(ob, t->old_cap, sizeof(*ob));
			return MKV_ENOMEM;
		}
		t->births = b;
		t->old_births = ob;
	} else {
		array_free(t->births, t->cap, sizeof(*t->births));
		array_free(t->old_births, t->old_cap, sizeof(*t->old_births));
		t->births = t->old_births = NULL;
	}
	t->with_births = on;
	t->births_n = t->births_sum = 0;
	return MKV_OK;
}

size_t kv_objtable_bytes(const kv_objtable *t)
{
	size_t per = sizeof(uint64_t) + (t->with_births ? sizeof(uint32_t) : 0);
	return (t->cap + (t->old ? t->old_cap : 0)) * per;
}

static inline int64_t birth_of(const kv_objtable *t, uint32_t b)
{
	return b ? t->birth_base + (int64_t)b - 1 : KV_NO_BIRTH;
}

/* Index of the object in the live array, or SIZE_MAX. */
static size_t find_live(const kv_objtable *t, uint64_t tag)
{
	if (!t->slots)
		return SIZE_MAX;
	for (size_t i = kv_objtable_home(tag, t->cap);; i = next(i, t->cap)) {
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
	size_t first = t->old_cursor, i = kv_objtable_home(tag, t->old_cap);
	if (i < first)
		i = first;
	for (size_t n = t->old_cap - first; n; n--) {
		uint64_t s = t->old[i];
		if (s == 0)
			return SIZE_MAX;
		if (live(s) && TAG(s) == tag)
			return i;
		i = i + 1 == t->old_cap ? first : i + 1;
	}
	return SIZE_MAX;
}

static void release_pages(void *base, size_t elem, size_t from_i, size_t to_i)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE); /* once per 256 KiB drained: no need to cache */
	uintptr_t from = (uintptr_t)base + from_i * elem, to = (uintptr_t)base + to_i * elem;
	from = (from + page - 1) & ~(uintptr_t)(page - 1);
	to &= ~(uintptr_t)(page - 1);
	if (to > from)
		madvise((void *)from, to - from, MADV_DONTNEED);
}

/* Returns the whole pages of old[old_released, old_cursor) to the OS. */
static void release_drained(kv_objtable *t)
{
	release_pages(t->old, sizeof(*t->old), t->old_released, t->old_cursor);
	if (t->old_births)
		release_pages(t->old_births, sizeof(*t->old_births), t->old_released, t->old_cursor);
	t->old_released = t->old_cursor;
}

/* The caller guarantees the tag is not present and there is room. */
static void insert_live(kv_objtable *t, uint64_t slot, uint32_t birth)
{
	size_t i = kv_objtable_home(slot, t->cap);
	while (t->slots[i] != 0)
		i = next(i, t->cap);
	t->slots[i] = slot;
	if (t->births)
		t->births[i] = birth;
	t->count++;
}

static void delete_live(kv_objtable *t, size_t hole)
{
	size_t cap = t->cap;
	for (size_t j = next(hole, cap); t->slots[j] != 0; j = next(j, cap)) {
		size_t h = kv_objtable_home(t->slots[j], cap);
		/* Move j into the hole when the hole lies on j's probe path,
		 * i.e. is no further from j's home than j itself is. */
		size_t dj = j >= h ? j - h : j + cap - h, dh = j >= hole ? j - hole : j + cap - hole;
		if (dj >= dh) {
			t->slots[hole] = t->slots[j];
			if (t->births)
				t->births[hole] = t->births[j];
			hole = j;
		}
	}
	t->slots[hole] = 0;
	if (t->births)
		t->births[hole] = 0;
	t->count--;
}

static void free_old(kv_objtable *t)
{
	array_free(t->old, t->old_cap, sizeof(*t->old));
	array_free(t->old_births, t->old_cap, sizeof(*t->old_births));
	t->old = NULL;
	t->old_births = NULL;
	t->old_cap = t->old_count = t->old_cursor = t->old_released = t->drain_owed = 0;
}

static void drain(kv_objtable *t, size_t steps)
{
	while (t->old && steps--) {
		size_t c = t->old_cursor;
		uint64_t s = t->old[c];
		if (live(s)) {
			insert_live(t, s, t->old_births ? t->old_births[c] : 0);
			t->old[c] = TOMBSTONE;
			t->old_count--;
		}
		if (++t->old_cursor == t->old_cap || t->old_count == 0)
			free_old(t);
		else if (t->old_cursor - t->old_released >= RELEASE_SLOTS)
			release_drained(t);
	}
}

size_t kv_objtable_settle(kv_objtable *t, size_t slots)
{
	size_t from = t->old_cursor, cap = t->old_cap;
	if (!t->old)
		return 0;
	drain(t, slots);
	/* an old array whose last entry moved goes before its end: count no more than asked */
	size_t done = (t->old ? t->old_cursor : cap) - from;
	return done < slots ? done : slots;
}

/* A live array of ncap slots; the one before becomes the old array, drained
 * as operations go (none when it was empty). */
static enum mkv_err move_to(kv_objtable *t, size_t ncap)
{
	uint64_t *n = array_calloc(ncap, sizeof(*n));
	uint32_t *nb = t->with_births ? array_calloc(ncap, sizeof(*nb)) : NULL;
	if (!n || (t->with_births && !nb)) {
		array_free(n, ncap, sizeof(*n));
		array_free(nb, ncap, sizeof(*nb));
		return MKV_ENOMEM;
	}
	t->old = t->slots;
	t->old_births = t->births;
	t->old_cap = t->cap;
	t->old_count = t->count;
	t->old_cursor = t->old_released = t->drain_owed = 0;
	t->slots = n;
	t->births = nb;
	t->cap = ncap;
	t->count = 0;
	if (!t->old || t->old_count == 0)
		free_old(t);
	return MKV_OK;
}

/* Makes room for one more entry in the live array. */
static enum mkv_err reserve_one(kv_objtable *t)
{
	if (kv_objtable_count(t) + 1 <= t->cap / 4 * 3)
		return MKV_OK;
	if (t->old) /* not expected: draining outpaces growth */
		drain(t, SIZE_MAX);
	return move_to(t, grown(t->cap));
}

enum mkv_err kv_objtable_reserve(kv_objtable *t, size_t n)
{
	if (t->slots || t->old)
		return MKV_EINVAL;
	size_t cap = MIN_CAP;
	while (n > cap / 4 * 3)
		cap = grown(cap);
	return move_to(t, cap);
}

/* Puts every held birth in the window of base, forgetting those outside. */
static void rebase(kv_objtable *t, int64_t base)
{
	uint64_t *arr[2] = {t->slots, t->old};
	uint32_t *b[2] = {t->births, t->old_births};
	size_t from[2] = {0, t->old_cursor}, to[2] = {t->cap, t->old ? t->old_cap : 0};
	for (int a = 0; a < 2; a++)
		for (size_t i = from[a]; b[a] && i < to[a]; i++) {
			if (!live(arr[a][i]) || !b[a][i])
				continue;
			int64_t at = birth_of(t, b[a][i]);
			t->births_sum -= b[a][i];
			if (at < base || at - base >= (int64_t)UINT32_MAX) {
				b[a][i] = 0;
				t->births_n--;
			} else {
				b[a][i] = (uint32_t)(at - base + 1);
				t->births_sum += b[a][i];
			}
		}
	t->birth_base = base;
}

/* The stored value of a new object's birth, moving the window if needed. */
static uint32_t birth_value(kv_objtable *t, int64_t birth)
{
	if (!t->with_births || birth < 0 || birth >= BIRTH_MAX_MS)
		return 0;
	if (t->births_n == 0)
		t->birth_base = birth - BIRTH_HALF;
	else if (birth < t->birth_base || birth - t->birth_base >= (int64_t)UINT32_MAX)
		rebase(t, birth - BIRTH_HALF);
	return (uint32_t)(birth - t->birth_base + 1);
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

int64_t kv_objtable_birth(const kv_objtable *t, uint64_t hash)
{
	if (!t->with_births)
		return KV_NO_BIRTH;
	uint64_t tag = TAG(hash);
	size_t i = find_live(t, tag);
	if (i != SIZE_MAX)
		return birth_of(t, t->births[i]);
	i = find_old(t, tag);
	return i != SIZE_MAX ? birth_of(t, t->old_births[i]) : KV_NO_BIRTH;
}

/* An object leaves the table with its stored birth b. */
static inline void forget_birth(kv_objtable *t, uint32_t b)
{
	if (b) {
		t->births_n--;
		t->births_sum -= b;
	}
}

enum mkv_err kv_objtable_update(kv_objtable *t, uint64_t hash, unsigned add, unsigned del, bool allow_insert,
				int64_t birth, unsigned *before, int64_t *born)
{
	uint64_t tag = TAG(hash);
	unsigned was = 0, now;
	uint32_t b = 0;
	size_t i = find_live(t, tag);

	if (i != SIZE_MAX) {
		was = (unsigned)(t->slots[i] & MEDIA_BITS);
		now = (was | add) & ~del & MEDIA_BITS;
		if (now) {
			t->slots[i] = tag | now; /* its birth is not needed: nothing ends */
		} else {
			b = t->births ? t->births[i] : 0;
			forget_birth(t, b);
			delete_live(t, i);
		}
	} else if ((i = find_old(t, tag)) != SIZE_MAX) {
		/* Touching an entry of the old array moves it over. */
		was = (unsigned)(t->old[i] & MEDIA_BITS);
		b = t->old_births ? t->old_births[i] : 0;
		now = (was | add) & ~del & MEDIA_BITS;
		t->old[i] = TOMBSTONE;
		t->old_count--;
		if (now)
			insert_live(t, tag | now, b); /* old and live together stay below 3/4 */
		else
			forget_birth(t, b);
	} else {
		now = add & ~del & MEDIA_BITS;
		if (now) {
			if (!allow_insert)
				return MKV_ELIMIT;
			enum mkv_err rc = reserve_one(t);
			if (rc != MKV_OK)
				return rc;
			uint32_t nb = birth_value(t, birth);
			insert_live(t, tag | now, nb);
			if (nb) {
				t->births_n++;
				t->births_sum += nb;
			}
		}
	}
	if (before)
		*before = was;
	if (born)
		*born = now ? KV_NO_BIRTH : birth_of(t, b);
	if (t->old) {
		size_t chunk = t->old_cap / 16 < DRAIN_CHUNK ? t->old_cap / 16 : DRAIN_CHUNK;
		if ((t->drain_owed += DRAIN_STEP) >= chunk) {
			drain(t, t->drain_owed);
			t->drain_owed = 0;
		}
	}
	return MKV_OK;
}

bool kv_objtable_births_mean(const kv_objtable *t, double *mean_ms)
{
	if (!t->births_n)
		return false;
	*mean_ms = (double)(t->birth_base - 1) + (double)t->births_sum / (double)t->births_n;
	return true;
}

void kv_objtable_each(const kv_objtable *t, void (*fn)(uint64_t, unsigned, int64_t, void *), void *arg)
{
	for (size_t i = 0; t->slots && i < t->cap; i++)
		if (live(t->slots[i]))
			fn(TAG(t->slots[i]), (unsigned)(t->slots[i] & MEDIA_BITS),
			   birth_of(t, t->births ? t->births[i] : 0), arg);
	for (size_t i = t->old_cursor; t->old && i < t->old_cap; i++)
		if (live(t->old[i]))
			fn(TAG(t->old[i]), (unsigned)(t->old[i] & MEDIA_BITS),
			   birth_of(t, t->old_births ? t->old_births[i] : 0), arg);
}
