/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include <mooncake_kv/buf.h>

#include "kv_state.h"
#include "kv_utf8.h"

struct kv_state {
	kv_budget *budget;
	uint64_t seed;
	kv_tenant **tenants; /* first-seen order */
	size_t n_tenants;
	size_t cap_tenants;
	uint32_t *index; /* open addressing over tenants: i + 1, 0 empty */
	size_t index_mask;
	kv_tenant *last; /* consecutive events are mostly for one tenant */
	uint64_t tenants_overflow;
	uint64_t tenants_expired;
	uint64_t objects_overflow;
	uint64_t unclean_labels;
	kv_tenant *recorded; /* its applied events go to record (reconciliation) */
	kv_recon_log *record;
	/* key groups: NULL matcher when off; names by id, an index by hash */
	kv_keygroup_matcher *matcher;
	kv_str *gnames;
	size_t n_gnames, cap_gnames;
	uint32_t *gindex; /* open addressing: id + 1, 0 empty; at most half full */
	size_t gindex_mask;
	uint64_t groups_overflow;
	int64_t now_ms; /* the owner's clock, for stale_since (kv_state_set_now) */
	bool residency;
};

/* Births are kept exactly while the tenant is exact (kv_state.h).  Out of
 * memory they stay off: nothing is observed, nothing is wrong. */
static void sync_births(const kv_state *s, kv_tenant *t)
{
	kv_objtable_births(&t->objects, s->residency && t->stale == 0);
}

/* Adds stale bits; the tenant's stale age starts when it stops being exact,
 * and its births are forgotten then: from there on a stored may be an
 * object coming back, and one held may have died and come back unseen. */
static void add_stale(const kv_state *s, kv_tenant *t, unsigned bits)
{
	bool was_exact = !t->stale;
	t->stale |= bits;
	if (was_exact && bits) {
		t->stale_since_ms = s->now_ms;
		sync_births(s, t);
	}
}

void kv_state_set_residency(kv_state *s, bool on)
{
	s->residency = on;
	for (size_t i = 0; i < s->n_tenants; i++)
		sync_births(s, s->tenants[i]);
}

bool kv_state_residency(const kv_state *s)
{
	return s->residency;
}

int64_t kv_state_birth_by_hash(const kv_tenant *t, uint64_t hash)
{
	return kv_objtable_birth(&t->objects, hash);
}

void kv_state_set_now(kv_state *s, int64_t now_ms)
{
	s->now_ms = now_ms;
}

void kv_budget_init(kv_budget *b, size_t max_tenants, size_t max_objects)
{
	b->max_tenants = max_tenants;
	b->max_objects = max_objects;
	b->max_key_groups = 200;
	atomic_init(&b->tenants, 0);
	atomic_init(&b->objects, 0);
	atomic_init(&b->key_groups, 0);
}

kv_state *kv_state_new(kv_budget *budget, uint64_t seed)
{
	if (!budget)
		return NULL;
	kv_state *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->budget = budget;
	s->seed = seed;
	s->residency = true;
	return s;
}

static void tenant_free(kv_tenant *t)
{
	kv_objtable_clear(&t->objects);
	kv_group_vec_free(&t->groups);
	free(t->backend_id);
	free(t->tenant_id);
	free(t);
}

void kv_state_free(kv_state *s)
{
	if (!s)
		return;
	kv_state_record_stop(s);
	for (size_t i = 0; i < s->n_tenants; i++) {
		atomic_fetch_sub(&s->budget->objects, kv_objtable_count(&s->tenants[i]->objects));
		tenant_free(s->tenants[i]);
	}
	atomic_fetch_sub(&s->budget->tenants, s->n_tenants);
	free(s->tenants);
	free(s->index);
	if (s->n_gnames > 2) /* "" and the overflow group do not count */
		atomic_fetch_sub(&s->budget->key_groups, s->n_gnames - 2);
	for (size_t i = 0; i < s->n_gnames; i++)
		free((char *)s->gnames[i].ptr);
	free(s->gnames);
	free(s->gindex);
	kv_keygroup_matcher_free(s->matcher);
	free(s);
}

static uint64_t tenant_hash(const kv_state *s, kv_str backend, kv_str tenant)
{
	uint64_t h = XXH3_64bits_withSeed(backend.ptr, backend.len, s->seed);
	return XXH3_64bits_withSeed(tenant.ptr, tenant.len, h);
}

static bool tenant_is(const kv_tenant *t, kv_str backend, kv_str tenant)
{
	return t->tenant_len == tenant.len && t->backend_len == backend.len &&
	       memcmp(t->tenant_id, tenant.ptr, tenant.len) == 0 &&
	       memcmp(t->backend_id, backend.ptr, backend.len) == 0;
}

static kv_tenant *find(const kv_state *s, uint64_t h, kv_str backend, kv_str tenant)
{
	if (!s->index)
		return NULL;
	for (size_t i = h & s->index_mask;; i = (i + 1) & s->index_mask) {
		uint32_t v = s->index[i];
		if (v == 0)
			return NULL;
		kv_tenant *t = s->tenants[v - 1];
		if (t->hash == h && tenant_is(t, backend, tenant))
			return t;
	}
}

static void index_put(uint32_t *index, size_t mask, uint64_t h, uint32_t v)
{
	size_t i = h & mask;
	while (index[i] != 0)
		i = (i + 1) & mask;
	index[i] = v;
}

/* Keeps the index at most half full; tenants are few, a rebuild is cheap. */
static int grow_index(kv_state *s)
{
	size_t cap = s->index ? s->index_mask + 1 : 0;
	if ((s->n_tenants + 1) * 2 <= cap)
		return KV_OK;
	size_t ncap = cap ? cap * 2 : 64;
	uint32_t *n = calloc(ncap, sizeof(*n));
	if (!n)
		return KV_ENOMEM;
	for (size_t i = 0; i < s->n_tenants; i++)
		index_put(n, ncap - 1, s->tenants[i]->hash, (uint32_t)(i + 1));
	free(s->index);
	s->index = n;
	s->index_mask = ncap - 1;
	return KV_OK;
}

static char *dup_bytes(kv_str v)
{
	char *p = malloc((size_t)v.len + 1);
	if (p) {
		memcpy(p, v.ptr, v.len);
		p[v.len] = '\0';
	}
	return p;
}

static int add_tenant(kv_state *s, uint64_t h, kv_str backend, kv_str tenant, kv_tenant **out)
{
	if (atomic_fetch_add(&s->budget->tenants, 1) >= s->budget->max_tenants) {
		atomic_fetch_sub(&s->budget->tenants, 1);
		s->tenants_overflow++;
		return KV_ELIMIT;
	}
	int rc = KV_ENOMEM;
	kv_tenant *t = calloc(1, sizeof(*t));
	if (!t || grow_index(s) != KV_OK)
		goto fail;
	if (s->n_tenants == s->cap_tenants) {
		kv_tenant **n = kv_array_grow(s->tenants, &s->cap_tenants, sizeof(*n), 16, 0);
		if (!n)
			goto fail;
		s->tenants = n;
	}
	t->backend_id = dup_bytes(backend);
	t->tenant_id = dup_bytes(tenant);
	if (!t->backend_id || !t->tenant_id)
		goto fail;
	t->backend_len = backend.len;
	t->tenant_len = tenant.len;
	t->hash = h;
	t->stale = KV_STALE_STARTUP;
	t->stale_since_ms = t->last_event_ms = s->now_ms;
	t->labels_unclean = !kv_label_value_clean(backend.ptr, backend.len) ||
			    !kv_label_value_clean(tenant.ptr, tenant.len);
	s->unclean_labels += t->labels_unclean;
	s->tenants[s->n_tenants++] = t;
	index_put(s->index, s->index_mask, h, (uint32_t)s->n_tenants);
	*out = t;
	return KV_OK;
fail:
	if (t)
		tenant_free(t);
	atomic_fetch_sub(&s->budget->tenants, 1);
	return rc;
}

static kv_tenant *lookup(kv_state *s, const kv_event *ev, uint64_t *h)
{
	kv_tenant *t = s->last;
	if (t && tenant_is(t, ev->backend_id, ev->tenant_id))
		return t;
	*h = tenant_hash(s, ev->backend_id, ev->tenant_id);
	t = find(s, *h, ev->backend_id, ev->tenant_id);
	if (t)
		s->last = t;
	return t;
}

static int tenant_for(kv_state *s, const kv_event *ev, kv_tenant *known, kv_tenant **out)
{
	uint64_t h = 0;
	kv_tenant *t = known ? known : lookup(s, ev, &h);
	if (!t) {
		if (!h)
			h = tenant_hash(s, ev->backend_id, ev->tenant_id);
		int rc = add_tenant(s, h, ev->backend_id, ev->tenant_id, &t);
		if (rc != KV_OK)
			return rc;
	}
	s->last = t;
	*out = t;
	return KV_OK;
}

struct life_ends {
	kv_life_hist *h;
	int64_t at;
};

static void end_life(uint64_t hash, unsigned media, int64_t birth, void *arg)
{
	(void)hash, (void)media;
	const struct life_ends *e = arg;
	kv_life_end(e->h, birth, e->at);
}

/* A cleared at `at` (KV_NO_BIRTH: no usable time) ends every life of the
 * tenant.  The table keeps no key group per object: the groups count
 * theirs unobserved. */
static void end_every_life(kv_state *s, kv_tenant *t, int64_t at)
{
	if (!s->residency)
		return;
	if (t->objects.births_n) {
		struct life_ends e = {&t->counts.life, at};
		kv_objtable_each(&t->objects, end_life, &e);
	} else {
		t->counts.life.unobserved += kv_objtable_count(&t->objects);
	}
	for (uint32_t i = 0; i < t->groups.n; i++)
		t->groups.v[i].life.unobserved += kv_group_objects(&t->groups.v[i]);
}

static void forget_objects(kv_state *s, kv_tenant *t)
{
	atomic_fetch_sub(&s->budget->objects, kv_objtable_count(&t->objects));
	kv_objtable_clear(&t->objects);
	memset(t->counts.placement, 0, sizeof(t->counts.placement));
	kv_group_vec_empty(&t->groups);
}

/* The tenant is empty, and we know it: the only way back to exact. */
static void clear_tenant(kv_state *s, kv_tenant *t, int64_t at)
{
	end_every_life(s, t, at);
	forget_objects(s, t);
	t->stale = 0;
	sync_births(s, t);
}

static int update_object(kv_state *s, kv_tenant *t, const kv_event *ev, const kv_prepared *p)
{
	bool stored = ev->type == KV_EV_STORED;
	kv_group_counts *g = NULL;
	if (s->matcher && !(g = kv_group_vec_at(&t->groups, p->group)))
		return KV_ENOMEM; /* nothing changed yet */
	bool room = atomic_load_explicit(&s->budget->objects, memory_order_relaxed) < s->budget->max_objects;
	unsigned before;
	int64_t born;
	int rc = kv_objtable_update(&t->objects, p->key_hash, p->add, p->del, room, p->ts, &before, &born);
	if (rc == KV_ELIMIT) {
		s->objects_overflow++;
		t->counts.objects_overflow++;
		add_stale(s, t, KV_STALE_OVERFLOW);
	}
	if (rc != KV_OK)
		return rc;

	unsigned after = (before | p->add) & ~(unsigned)p->del;
	if (g) {
		g->events[stored ? 0 : 1]++;
		kv_group_move(g, before, after);
	}
	if (after == before) {
		if (stored)
			t->counts.stored_duplicates++;
		else
			t->counts.removed_unknown++;
		return KV_OK;
	}
	if (before)
		t->counts.placement[kv_placement_of(before)]--;
	else
		atomic_fetch_add_explicit(&s->budget->objects, 1, memory_order_relaxed);
	if (after) {
		t->counts.placement[kv_placement_of(after)]++;
	} else {
		atomic_fetch_sub_explicit(&s->budget->objects, 1, memory_order_relaxed);
		if (s->residency) { /* a life ended */
			kv_life_end(&t->counts.life, born, p->ts);
			if (g)
				kv_life_end(&g->life, born, p->ts);
		}
	}
	return KV_OK;
}

void kv_state_prepare(kv_state *s, const kv_event *ev, enum kv_dialect d, kv_prepared *p)
{
	uint64_t h;
	p->tenant = lookup(s, ev, &h);
	p->ts = ev->timestamp_bad ? KV_NO_BIRTH : ev->timestamp_ms;
	p->key_hash = 0;
	p->add = p->del = 0;
	if (ev->type == KV_EV_CLEARED)
		return;
	/* the dialect is settled here, once: everything after (the table, the
	 * key groups, the reconciliation's replay) sees only media masks */
	if (ev->type == KV_EV_STORED)
		p->add = ev->medium;
	else
		p->del = d == KV_DIALECT_OBJECT ? KV_MEDIA_ALL : ev->medium;
	p->key_hash = XXH3_64bits_withSeed(ev->object_key.ptr, ev->object_key.len, s->seed);
	p->group = KV_GROUP_NONE;
	if (s->matcher) {
		char name[KV_KEYGROUP_MAX_LEN];
		size_t n = kv_keygroup_of(s->matcher, ev->object_key.ptr, ev->object_key.len, name);
		p->group = kv_state_group_id(s, name, n);
	}
	if (p->tenant)
		kv_objtable_prefetch(&p->tenant->objects, p->key_hash);
}

int kv_state_apply_prepared(kv_state *s, const kv_event *ev, const kv_prepared *p)
{
	kv_tenant *t;
	int rc = tenant_for(s, ev, p->tenant, &t);
	if (rc != KV_OK)
		return rc;
	/* recorded whether the live table takes it or not (a limit): it is
	 * what happened at the master */
	t->last_event_ms = s->now_ms;
	if (t == s->recorded)
		kv_recon_log_add(s->record, p->key_hash, ev->type, p->add | p->del, p->group);
	if (ev->type == KV_EV_CLEARED)
		clear_tenant(s, t, p->ts);
	else if ((rc = update_object(s, t, ev, p)) != KV_OK)
		return rc;
	t->counts.events[ev->type]++;
	return KV_OK;
}

int kv_state_apply(kv_state *s, const kv_event *ev, enum kv_dialect d)
{
	kv_prepared p;
	kv_state_prepare(s, ev, d, &p);
	return kv_state_apply_prepared(s, ev, &p);
}

size_t kv_state_expire(kv_state *s, int64_t now_ms, int64_t idle_ms)
{
	size_t kept = 0, gone = 0;
	for (size_t i = 0; i < s->n_tenants; i++) {
		kv_tenant *t = s->tenants[i];
		if (!kv_tenant_objects(t) && t != s->recorded && now_ms - t->last_event_ms >= idle_ms) {
			tenant_free(t);
			gone++;
		} else {
			s->tenants[kept++] = t; /* first-seen order kept */
		}
	}
	if (!gone)
		return 0;
	s->n_tenants = kept;
	s->last = NULL;
	memset(s->index, 0, (s->index_mask + 1) * sizeof(*s->index));
	for (size_t i = 0; i < s->n_tenants; i++)
		index_put(s->index, s->index_mask, s->tenants[i]->hash, (uint32_t)(i + 1));
	atomic_fetch_sub(&s->budget->tenants, gone);
	s->tenants_expired += gone;
	return gone;
}

uint64_t kv_state_tenants_expired(const kv_state *s)
{
	return s->tenants_expired;
}

bool kv_state_settle(kv_state *s, size_t slots)
{
	bool more = false;
	for (size_t i = 0; i < s->n_tenants; i++) {
		kv_objtable *t = &s->tenants[i]->objects;
		slots -= kv_objtable_settle(t, slots);
		more |= t->old != NULL;
	}
	return more;
}

void kv_state_mark_stale(kv_state *s, enum kv_stale_reason why)
{
	for (size_t i = 0; i < s->n_tenants; i++)
		add_stale(s, s->tenants[i], why);
}

void kv_state_drop(kv_state *s)
{
	for (size_t i = 0; i < s->n_tenants; i++) {
		/* forgotten, not ended: their lives go on at the master */
		forget_objects(s, s->tenants[i]);
		s->tenants[i]->stale = KV_STALE_STARTUP;
		s->tenants[i]->stale_since_ms = s->now_ms;
		sync_births(s, s->tenants[i]);
	}
}

static kv_str dup_str(const char *p, size_t n)
{
	char *c = malloc(n + 1);
	if (c) {
		memcpy(c, p, n);
		c[n] = '\0';
	}
	return (kv_str){c, (uint32_t)n};
}

static int add_group_name(kv_state *s, const char *name, size_t len)
{
	if (s->n_gnames == s->cap_gnames) {
		kv_str *p = kv_array_grow(s->gnames, &s->cap_gnames, sizeof(*p), 16, 0);
		if (!p)
			return KV_ENOMEM;
		s->gnames = p;
	}
	/* the index stays at most half full */
	if ((s->n_gnames + 1) * 2 > (s->gindex ? s->gindex_mask + 1 : 0)) {
		size_t cap = s->gindex ? (s->gindex_mask + 1) * 2 : 64;
		uint32_t *n = calloc(cap, sizeof(*n));
		if (!n)
			return KV_ENOMEM;
		for (size_t i = 0; i < s->n_gnames; i++)
			index_put(n, cap - 1, XXH3_64bits(s->gnames[i].ptr, s->gnames[i].len), (uint32_t)i + 1);
		free(s->gindex);
		s->gindex = n;
		s->gindex_mask = cap - 1;
	}
	kv_str c = dup_str(name, len);
	if (!c.ptr)
		return KV_ENOMEM;
	index_put(s->gindex, s->gindex_mask, XXH3_64bits(name, len), (uint32_t)s->n_gnames + 1);
	s->gnames[s->n_gnames++] = c;
	return KV_OK;
}

int kv_state_set_keygroups(kv_state *s, const kv_keygroup_re *re)
{
	if (!(s->matcher = kv_keygroup_matcher_new(re)) || add_group_name(s, "", 0) != KV_OK ||
	    add_group_name(s, "__overflow__", 12) != KV_OK)
		return KV_ENOMEM;
	return KV_OK;
}

bool kv_state_has_keygroups(const kv_state *s)
{
	return s->matcher != NULL;
}

uint32_t kv_state_group_id(kv_state *s, const char *name, size_t len)
{
	if (!len || !s->gindex)
		return KV_GROUP_NONE;
	for (size_t j = XXH3_64bits(name, len) & s->gindex_mask; s->gindex[j]; j = (j + 1) & s->gindex_mask) {
		const kv_str *g = &s->gnames[s->gindex[j] - 1];
		if (g->len == len && memcmp(g->ptr, name, len) == 0)
			return s->gindex[j] - 1;
	}
	/* a new group: within the budget of all sources, or the overflow group */
	if (atomic_fetch_add(&s->budget->key_groups, 1) >= s->budget->max_key_groups ||
	    add_group_name(s, name, len) != KV_OK) {
		atomic_fetch_sub(&s->budget->key_groups, 1);
		s->groups_overflow++;
		return KV_GROUP_OVERFLOW;
	}
	return (uint32_t)s->n_gnames - 1;
}

size_t kv_state_group_count(const kv_state *s)
{
	return s->n_gnames;
}

kv_str kv_state_group_name(const kv_state *s, uint32_t id)
{
	return id < s->n_gnames ? s->gnames[id] : (kv_str){"", 0};
}

uint64_t kv_state_groups_overflow(const kv_state *s)
{
	return s->groups_overflow;
}

uint64_t kv_state_key_hash(const kv_state *s, kv_str key)
{
	return XXH3_64bits_withSeed(key.ptr, key.len, s->seed);
}

unsigned kv_state_media_by_hash(const kv_tenant *t, uint64_t hash)
{
	return kv_objtable_get(&t->objects, hash);
}

int kv_state_record_start(kv_state *s, kv_str backend, kv_str tenant, kv_recon_log *log)
{
	if (s->recorded)
		return KV_EINVAL;
	uint64_t h = tenant_hash(s, backend, tenant);
	kv_tenant *t = find(s, h, backend, tenant);
	if (!t) {
		int rc = add_tenant(s, h, backend, tenant, &t);
		if (rc != KV_OK)
			return rc;
	}
	s->recorded = t;
	s->record = log;
	return KV_OK;
}

void kv_state_record_stop(kv_state *s)
{
	s->recorded = NULL;
	s->record = NULL;
}

size_t kv_state_recorded_objects(const kv_state *s)
{
	return s->recorded ? kv_objtable_count(&s->recorded->objects) : 0;
}

int kv_state_adopt(kv_state *s, kv_recon_table *fresh, unsigned stale, kv_objtable *old)
{
	kv_tenant *t = s->recorded;
	if (!t)
		return KV_EINVAL;
	size_t before = kv_objtable_count(&t->objects), after = kv_recon_objects(fresh);
	size_t used = atomic_load(&s->budget->objects);
	if (after > before && used + (after - before) > s->budget->max_objects)
		return KV_ELIMIT;
	atomic_fetch_add(&s->budget->objects, after);
	atomic_fetch_sub(&s->budget->objects, before);
	*old = t->objects;
	t->objects = fresh->objects;
	memcpy(t->counts.placement, fresh->placement, sizeof(t->counts.placement));
	/* the groups' objects are the fresh table's; their events go on */
	kv_group_vec_empty(&t->groups);
	for (uint32_t i = 0; i < fresh->groups.n; i++) {
		kv_group_counts *g = kv_group_vec_at(&t->groups, fresh->groups.v[i].id);
		if (g)
			memcpy(g->placement, fresh->groups.v[i].placement, sizeof(g->placement));
	}
	kv_group_vec_free(&fresh->groups);
	t->stale = 0;
	add_stale(s, t, stale);
	sync_births(s, t);
	memset(fresh, 0, sizeof(*fresh));
	return KV_OK;
}

size_t kv_state_tenant_count(const kv_state *s)
{
	return s->n_tenants;
}

const kv_tenant *kv_state_tenant_at(const kv_state *s, size_t i)
{
	return i < s->n_tenants ? s->tenants[i] : NULL;
}

const kv_tenant *kv_state_find_tenant(const kv_state *s, kv_str backend, kv_str tenant)
{
	return find(s, tenant_hash(s, backend, tenant), backend, tenant);
}

unsigned kv_state_object_media(const kv_state *s, const kv_tenant *t, kv_str key)
{
	return kv_objtable_get(&t->objects, XXH3_64bits_withSeed(key.ptr, key.len, s->seed));
}

uint64_t kv_state_tenants_overflow(const kv_state *s)
{
	return s->tenants_overflow;
}

uint64_t kv_state_objects_overflow(const kv_state *s)
{
	return s->objects_overflow;
}

uint64_t kv_state_unclean_labels(const kv_state *s)
{
	return s->unclean_labels;
}

size_t kv_state_table_bytes(const kv_state *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n_tenants; i++)
		n += kv_objtable_bytes(&s->tenants[i]->objects);
	return n;
}
