/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include <mooncake_kv/buf.h>

#include "kv_array.h"
#include "kv_state_impl.h"
#include "kv_utf8.h"

void kv_state_set_residency(kv_state *s, bool on)
{
	s->residency = on;
	for (size_t i = 0; i < s->n_tenants; i++)
		kv_state_sync_births(s, s->tenants[i]);
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

void mkv_budget_init(mkv_budget *b, size_t max_tenants, size_t max_objects)
{
	b->max_tenants = max_tenants;
	b->max_objects = max_objects;
	b->max_key_groups = MKV_MAX_KEY_GROUPS_DEFAULT;
	atomic_init(&b->tenants, 0);
	atomic_init(&b->objects, 0);
	atomic_init(&b->key_groups, 0);
}

kv_state *kv_state_new(mkv_budget *budget, uint64_t seed)
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
	kv_state_window_close(t);
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
		free(s->gnames[i].ptr);
	free(s->gnames);
	free(s->gindex);
	kv_keygroup_matcher_free(s->matcher);
	free(s);
}

static uint64_t tenant_hash(const kv_state *s, mkv_str backend, mkv_str tenant)
{
	uint64_t h = XXH3_64bits_withSeed(backend.ptr, backend.len, s->seed);
	return XXH3_64bits_withSeed(tenant.ptr, tenant.len, h);
}

static bool tenant_is(const kv_tenant *t, mkv_str backend, mkv_str tenant)
{
	return t->tenant_len == tenant.len && t->backend_len == backend.len &&
	       memcmp(t->tenant_id, tenant.ptr, tenant.len) == 0 &&
	       memcmp(t->backend_id, backend.ptr, backend.len) == 0;
}

static kv_tenant *find(const kv_state *s, uint64_t h, mkv_str backend, mkv_str tenant)
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

void kv_state_index_put(uint32_t *index, size_t mask, uint64_t h, uint32_t v)
{
	size_t i = h & mask;
	while (index[i] != 0)
		i = (i + 1) & mask;
	index[i] = v;
}

/* Keeps the index at most half full; tenants are few, a rebuild is cheap. */
static enum mkv_err grow_index(kv_state *s)
{
	size_t cap = s->index ? s->index_mask + 1 : 0;
	if ((s->n_tenants + 1) * 2 <= cap)
		return MKV_OK;
	size_t ncap = cap ? cap * 2 : 64;
	uint32_t *n = calloc(ncap, sizeof(*n));
	if (!n)
		return MKV_ENOMEM;
	for (size_t i = 0; i < s->n_tenants; i++)
		kv_state_index_put(n, ncap - 1, s->tenants[i]->hash, (uint32_t)(i + 1));
	free(s->index);
	s->index = n;
	s->index_mask = ncap - 1;
	return MKV_OK;
}

static char *dup_bytes(mkv_str v)
{
	char *p = malloc((size_t)v.len + 1);
	if (p) {
		memcpy(p, v.ptr, v.len);
		p[v.len] = '\0';
	}
	return p;
}

static enum mkv_err add_tenant(kv_state *s, uint64_t h, mkv_str backend, mkv_str tenant, kv_tenant **out)
{
	if (atomic_fetch_add(&s->budget->tenants, 1) >= s->budget->max_tenants) {
		atomic_fetch_sub(&s->budget->tenants, 1);
		s->tenants_overflow++;
		return MKV_ELIMIT;
	}
	enum mkv_err rc = MKV_ENOMEM;
	kv_tenant *t = calloc(1, sizeof(*t));
	if (!t || grow_index(s) != MKV_OK)
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
	t->stale = s->born_exact ? 0 : KV_STALE_STARTUP;
	t->stale_since_ms = t->last_event_ms = s->now_ms;
	t->labels_unclean = !mkv_label_value_clean(backend.ptr, backend.len) ||
			    !mkv_label_value_clean(tenant.ptr, tenant.len);
	s->unclean_labels += t->labels_unclean;
	s->tenants[s->n_tenants++] = t;
	kv_state_index_put(s->index, s->index_mask, h, (uint32_t)s->n_tenants);
	if (!t->stale) /* born exact: its births are kept from the first */
		kv_state_sync_births(s, t);
	*out = t;
	return MKV_OK;
fail:
	if (t)
		tenant_free(t);
	atomic_fetch_sub(&s->budget->tenants, 1);
	return rc;
}

enum mkv_err kv_state_tenant_get(kv_state *s, mkv_str backend, mkv_str tenant, kv_tenant **out)
{
	uint64_t h = tenant_hash(s, backend, tenant);
	if ((*out = find(s, h, backend, tenant)))
		return MKV_OK;
	return add_tenant(s, h, backend, tenant, out);
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

static enum mkv_err tenant_for(kv_state *s, const kv_event *ev, kv_tenant *known, kv_tenant **out)
{
	uint64_t h = 0;
	kv_tenant *t = known ? known : lookup(s, ev, &h);
	if (!t) {
		if (!h)
			h = tenant_hash(s, ev->backend_id, ev->tenant_id);
		enum mkv_err rc = add_tenant(s, h, ev->backend_id, ev->tenant_id, &t);
		if (rc != MKV_OK)
			return rc;
	}
	s->last = t;
	*out = t;
	return MKV_OK;
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

/* The tenant is empty, and we know it (a cleared at `at`, or the proof of
 * an empty store): exact again.  What it still held ended then; after a
 * cleared its removals may still come (state_cleared.c), after the proof
 * nothing of it can. */
static void clear_tenant(kv_state *s, kv_tenant *t, int64_t at, enum kv_exact_cause why)
{
	unsigned was = t->stale;
	end_every_life(s, t, at);
	bool watched = true;
	if (why == KV_EXACT_CLEARED)
		watched = kv_state_window_cleared(s, t);
	else
		kv_state_window_close(t);
	forget_objects(s, t);
	t->stale = 0;
	kv_state_sync_births(s, t);
	kv_state_became_exact(s, was, t, why);
	if (!watched) /* empty now, but a late removal could not be told from a fresh one */
		kv_state_add_stale(s, t, KV_STALE_REMOVED_AFTER_CLEARED);
}

static enum mkv_err update_object(kv_state *s, kv_tenant *t, const kv_event *ev, const kv_prepared *p)
{
	bool stored = ev->type == MKV_EV_STORED;
	kv_group_counts *g = NULL;
	if (s->matcher && !(g = kv_group_vec_at(&t->groups, p->group)))
		return MKV_ENOMEM; /* nothing changed yet */
	bool room = atomic_load_explicit(&s->budget->objects, memory_order_relaxed) < s->budget->max_objects;
	unsigned before;
	int64_t born;
	enum mkv_err rc = kv_objtable_update(&t->objects, p->key_hash, p->add, p->del, room, p->ts, &before, &born);
	if (rc == MKV_ELIMIT) {
		s->objects_overflow++;
		t->counts.objects_overflow++;
		kv_state_add_stale(s, t, KV_STALE_OVERFLOW);
	}
	if (rc != MKV_OK)
		return rc;
	/* a removal that may be a RemoveAll's, late: no figure of the tenant
	 * is sure, and no life ends observed */
	if (t->window && !stored && kv_state_window_removed(t, p->key_hash, p->del, before)) {
		kv_state_add_stale(s, t, KV_STALE_REMOVED_AFTER_CLEARED);
		born = KV_NO_BIRTH;
		s->record_unsure |= t == s->recorded;
	}

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
		return MKV_OK;
	}
	if (before)
		t->counts.placement[mkv_placement_of(before)]--;
	else
		atomic_fetch_add_explicit(&s->budget->objects, 1, memory_order_relaxed);
	if (after) {
		t->counts.placement[mkv_placement_of(after)]++;
	} else {
		atomic_fetch_sub_explicit(&s->budget->objects, 1, memory_order_relaxed);
		if (s->residency) { /* a life ended */
			kv_life_end(&t->counts.life, born, p->ts);
			if (g)
				kv_life_end(&g->life, born, p->ts);
		}
	}
	return MKV_OK;
}

void kv_state_prepare(kv_state *s, const kv_event *ev, enum mkv_dialect d, kv_prepared *p)
{
	uint64_t h;
	p->tenant = lookup(s, ev, &h);
	p->ts = ev->timestamp_bad ? KV_NO_BIRTH : ev->timestamp_ms;
	p->key_hash = 0;
	p->add = p->del = 0;
	if (ev->type == MKV_EV_CLEARED)
		return;
	/* the dialect is settled here, once: everything after (the table, the
	 * key groups, the reconciliation's replay) sees only media masks */
	if (ev->type == MKV_EV_STORED)
		p->add = ev->medium;
	else
		p->del = d == MKV_DIALECT_OBJECT ? MKV_MEDIA_ALL : ev->medium;
	p->key_hash = XXH3_64bits_withSeed(ev->object_key.ptr, ev->object_key.len, s->seed);
	p->group = KV_GROUP_NONE;
	if (s->matcher) {
		char name[MKV_KEYGROUP_MAX_LEN];
		size_t n = kv_keygroup_of(s->matcher, ev->object_key.ptr, ev->object_key.len, name);
		p->group = kv_state_group_id(s, name, n);
	}
}

void kv_state_prefetch_slot(const kv_prepared *p)
{
	if (p->tenant && (p->add | p->del))
		kv_objtable_prefetch(&p->tenant->objects, p->key_hash);
}

enum mkv_err kv_state_apply_prepared(kv_state *s, const kv_event *ev, const kv_prepared *p)
{
	kv_tenant *t;
	enum mkv_err rc = tenant_for(s, ev, p->tenant, &t);
	if (rc != MKV_OK)
		return rc;
	/* recorded whether the live table takes it or not (a limit): it is
	 * what happened at the master */
	t->last_event_ms = s->now_ms;
	if (t == s->recorded)
		kv_recon_log_add(s->record, p->key_hash, ev->type, p->add | p->del, p->group);
	if (ev->type == MKV_EV_CLEARED)
		clear_tenant(s, t, p->ts, KV_EXACT_CLEARED);
	else if ((rc = update_object(s, t, ev, p)) != MKV_OK)
		return rc;
	t->counts.events[ev->type]++;
	return MKV_OK;
}

enum mkv_err kv_state_apply(kv_state *s, const kv_event *ev, enum mkv_dialect d)
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
		kv_state_index_put(s->index, s->index_mask, s->tenants[i]->hash, (uint32_t)(i + 1));
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

void kv_state_prove_empty(kv_state *s)
{
	/* what a tenant still held is gone at the master: ended, unseen */
	for (size_t i = 0; i < s->n_tenants; i++)
		clear_tenant(s, s->tenants[i], KV_NO_BIRTH, KV_EXACT_EMPTY_STORE);
	s->born_exact = true;
}

void kv_state_drop(kv_state *s)
{
	s->born_exact = false;
	for (size_t i = 0; i < s->n_tenants; i++) {
		/* forgotten, not ended: their lives go on at the master */
		forget_objects(s, s->tenants[i]);
		kv_state_window_close(s->tenants[i]);
		s->tenants[i]->stale = KV_STALE_STARTUP;
		s->tenants[i]->stale_since_ms = s->now_ms;
		kv_state_sync_births(s, s->tenants[i]);
	}
}

size_t kv_state_tenant_count(const kv_state *s)
{
	return s->n_tenants;
}

const kv_tenant *kv_state_tenant_at(const kv_state *s, size_t i)
{
	return i < s->n_tenants ? s->tenants[i] : NULL;
}

kv_recon_times *kv_state_recon_times(kv_state *s, size_t i)
{
	return i < s->n_tenants ? &s->tenants[i]->recon : NULL;
}

const kv_tenant *kv_state_find_tenant(const kv_state *s, mkv_str backend, mkv_str tenant)
{
	return find(s, tenant_hash(s, backend, tenant), backend, tenant);
}

unsigned kv_state_object_media(const kv_state *s, const kv_tenant *t, mkv_str key)
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
