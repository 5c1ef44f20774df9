/* SPDX-License-Identifier: Apache-2.0 */
/* A state into a handover stream and back (kv_state_io.h). */
#include <stdlib.h>
#include <string.h>

#include "kv_state_impl.h"
#include "kv_state_io.h"

#define MAX_ID        (64u * 1024) /* bytes of a backend or tenant id, a group's name */
#define NO_BIRTH_CODE 0            /* a birth is written + 1: 0 is none */

static void write_life(kv_pack_w *w, const kv_life_hist *h)
{
	kv_pack_u64(w, KV_LIFE_BUCKETS + 1);
	for (size_t i = 0; i <= KV_LIFE_BUCKETS; i++)
		kv_pack_u64(w, h->counts[i]);
	kv_pack_u64(w, h->count);
	kv_pack_u64(w, h->sum_ms);
	kv_pack_u64(w, h->unobserved);
}

static void read_life(kv_pack_r *r, kv_life_hist *h)
{
	if (kv_unpack_u64(r) != KV_LIFE_BUCKETS + 1)
		r->bad = true;
	for (size_t i = 0; i <= KV_LIFE_BUCKETS; i++)
		h->counts[i] = kv_unpack_u64(r);
	h->count = kv_unpack_u64(r);
	h->sum_ms = kv_unpack_u64(r);
	h->unobserved = kv_unpack_u64(r);
	/* the handover carries the classic buckets only */
	kv_life_native_from_classic(h);
}

static void write_counts(kv_pack_w *w, const uint64_t *v, size_t n)
{
	kv_pack_u64(w, n);
	for (size_t i = 0; i < n; i++)
		kv_pack_u64(w, v[i]);
}

static void read_counts(kv_pack_r *r, uint64_t *v, size_t n)
{
	if (kv_unpack_u64(r) != n)
		r->bad = true;
	for (size_t i = 0; i < n && !r->bad; i++)
		v[i] = kv_unpack_u64(r);
}

/* Counts of which a peer may know fewer (reasons added since: its missing
 * ones are 0), never more. */
static void read_counts_upto(kv_pack_r *r, uint64_t *v, size_t n)
{
	uint64_t have = kv_unpack_max(r, n);
	for (size_t i = 0; i < n && !r->bad; i++)
		v[i] = i < have ? kv_unpack_u64(r) : 0;
}

struct objects_out {
	kv_pack_w *w;
	size_t in_record;
};

static void write_object(uint64_t hash, unsigned media, int64_t birth, void *arg)
{
	struct objects_out *o = arg;
	if (o->in_record == KV_STATE_IO_OBJECTS) {
		kv_pack_end(o->w);
		o->in_record = 0;
	}
	if (o->in_record == 0)
		kv_pack_begin(o->w, KV_REC_OBJECTS);
	kv_pack_fixed64(o->w, hash | media);
	kv_pack_u64(o->w, birth == KV_NO_BIRTH ? NO_BIRTH_CODE : (uint64_t)birth + 1);
	o->in_record++;
}

static void write_tenant(const kv_tenant *t, kv_pack_w *w)
{
	const kv_tenant_counts *c = &t->counts;
	kv_pack_begin(w, KV_REC_TENANT);
	kv_pack_bytes(w, t->backend_id, t->backend_len);
	kv_pack_bytes(w, t->tenant_id, t->tenant_len);
	kv_pack_u64(w, t->stale);
	kv_pack_i64(w, t->stale_since_ms);
	kv_pack_i64(w, t->last_event_ms);
	kv_pack_f64(w, t->recon.last_ok);
	kv_pack_f64(w, t->recon.next);
	kv_pack_u64(w, t->recon.failures);
	kv_pack_u64(w, t->recon.ever_ok);
	write_counts(w, c->placement, MKV_PLACE__COUNT);
	write_counts(w, c->events, MKV_EV__COUNT);
	kv_pack_u64(w, c->stored_duplicates);
	kv_pack_u64(w, c->removed_unknown);
	kv_pack_u64(w, c->objects_overflow);
	write_life(w, &c->life);
	kv_pack_u64(w, t->groups.n);
	for (uint32_t i = 0; i < t->groups.n; i++) {
		const kv_group_counts *g = &t->groups.v[i];
		kv_pack_u64(w, g->id);
		write_counts(w, g->placement, MKV_PLACE__COUNT);
		write_counts(w, g->events, 2);
		write_life(w, &g->life);
	}
	kv_pack_u64(w, kv_objtable_count(&t->objects));
	/* it waits for removals of its cleared (state_cleared.c): said only
	 * then, so that a reader without the field takes every other tenant */
	if (kv_state_tenant_waits(t))
		kv_pack_u64(w, 1);
	kv_pack_end(w);
	struct objects_out o = {w, 0};
	kv_objtable_each(&t->objects, write_object, &o);
	if (o.in_record)
		kv_pack_end(w);
}

void kv_state_write(const kv_state *s, kv_pack_w *w)
{
	kv_pack_begin(w, KV_REC_STATE);
	kv_pack_fixed64(w, s->seed);
	kv_pack_u64(w, s->residency);
	kv_pack_u64(w, s->born_exact);
	kv_pack_u64(w, s->matcher != NULL);
	kv_pack_i64(w, s->now_ms);
	uint64_t carried[] = {s->tenants_overflow, s->tenants_expired, s->objects_overflow, s->unclean_labels,
			      s->groups_overflow};
	write_counts(w, carried, sizeof(carried) / sizeof(carried[0]));
	write_counts(w, s->turned_stale, KV_STALE__BITS);
	write_counts(w, s->turned_exact, KV_EXACT__CAUSES);
	kv_pack_u64(w, s->n_gnames);
	kv_pack_u64(w, s->n_tenants);
	kv_pack_end(w);
	/* ids 0 and 1 ("" and the overflow group) come with key groups themselves */
	for (size_t i = 2; i < s->n_gnames; i++) {
		kv_pack_begin(w, KV_REC_GROUP);
		kv_pack_bytes(w, s->gnames[i].ptr, s->gnames[i].len);
		kv_pack_end(w);
	}
	for (size_t i = 0; i < s->n_tenants; i++)
		write_tenant(s->tenants[i], w);
}

void kv_state_load_init(kv_state_load *l, mkv_budget *budget, const mkv_keygroup_re *key_groups)
{
	*l = (kv_state_load){.budget = budget, .key_groups = key_groups};
}

void kv_state_load_free(kv_state_load *l)
{
	kv_state_free(l->state);
	l->state = NULL;
}

static enum kv_pack_error read_state(kv_state_load *l, kv_pack_r *r)
{
	uint64_t seed = kv_unpack_fixed64(r);
	bool residency = kv_unpack_bool(r), born_exact = kv_unpack_bool(r), groups = kv_unpack_bool(r);
	int64_t now_ms = kv_unpack_i64(r);
	read_counts(r, l->carried, 5);
	read_counts_upto(r, l->turned_stale, KV_STALE__BITS);
	read_counts(r, l->turned_exact, KV_EXACT__CAUSES);
	uint64_t n_groups = kv_unpack_u64(r);
	l->tenants_left = kv_unpack_u64(r);
	if (!kv_unpack_done(r))
		return KV_PACK_MALFORMED;
	if (l->tenants_left > l->budget->max_tenants)
		return KV_PACK_REFUSED;
	if (groups != (l->key_groups != NULL))
		return KV_PACK_REFUSED; /* ids mean nothing without the same groups */
	if (!(l->state = kv_state_new(l->budget, seed)))
		return KV_PACK_NOMEM;
	if (groups) {
		if (n_groups < 2)
			return KV_PACK_MALFORMED;
		if (kv_state_set_keygroups(l->state, l->key_groups) != MKV_OK)
			return KV_PACK_NOMEM;
		l->groups_left = n_groups - 2;
	} else if (n_groups) {
		return KV_PACK_MALFORMED;
	}
	l->state->residency = residency;
	l->state->born_exact = born_exact;
	l->state->now_ms = now_ms;
	return KV_PACK_OK;
}

static enum kv_pack_error read_group(kv_state_load *l, kv_pack_r *r)
{
	mkv_str name = kv_unpack_bytes(r, MAX_ID);
	if (!kv_unpack_done(r) || !l->groups_left || !name.len)
		return KV_PACK_MALFORMED;
	size_t expect = l->state->n_gnames;
	uint32_t id = kv_state_group_id(l->state, name.ptr, name.len);
	if (id == KV_GROUP_OVERFLOW) /* beyond this exporter's limit, or out of memory */
		return KV_PACK_REFUSED;
	if (id != expect)
		return KV_PACK_MALFORMED; /* a name twice */
	l->groups_left--;
	return KV_PACK_OK;
}

/* The objects of the tenant before are all in, and add up to its figures. */
static enum kv_pack_error tenant_done(kv_state_load *l)
{
	kv_tenant *t = l->tenant;
	if (!t)
		return KV_PACK_OK;
	if (l->objects_left)
		return KV_PACK_TRUNCATED;
	if (memcmp(l->tally, t->counts.placement, sizeof(l->tally)) != 0)
		return KV_PACK_MALFORMED;
	for (uint32_t i = 0; i < t->groups.n; i++) /* and its groups are the state's */
		if (t->groups.v[i].id >= l->state->n_gnames)
			return KV_PACK_MALFORMED;
	l->tenant = NULL;
	return KV_PACK_OK;
}

static enum kv_pack_error read_tenant(kv_state_load *l, kv_pack_r *r)
{
	enum kv_pack_error rc = tenant_done(l);
	if (rc != KV_PACK_OK)
		return rc;
	if (!l->tenants_left || l->groups_left)
		return KV_PACK_MALFORMED;
	mkv_str backend = kv_unpack_bytes(r, MAX_ID), tenant = kv_unpack_bytes(r, MAX_ID);
	if (r->bad)
		return KV_PACK_MALFORMED;
	kv_state *s = l->state;
	if (kv_state_find_tenant(s, backend, tenant))
		return KV_PACK_MALFORMED;
	kv_tenant *t;
	enum mkv_err got = kv_state_tenant_get(s, backend, tenant, &t);
	if (got != MKV_OK)
		return got == MKV_ELIMIT ? KV_PACK_REFUSED : KV_PACK_NOMEM;
	l->tenants_left--;
	l->tenant = t;
	t->stale = (unsigned)kv_unpack_max(r, (1u << KV_STALE__BITS) - 1);
	t->stale_since_ms = kv_unpack_i64(r);
	t->last_event_ms = kv_unpack_i64(r);
	t->recon.last_ok = kv_unpack_f64(r);
	t->recon.next = kv_unpack_f64(r);
	t->recon.failures = (unsigned)kv_unpack_max(r, UINT32_MAX);
	t->recon.ever_ok = kv_unpack_bool(r);
	kv_tenant_counts *c = &t->counts;
	read_counts(r, c->placement, MKV_PLACE__COUNT);
	read_counts(r, c->events, MKV_EV__COUNT);
	c->stored_duplicates = kv_unpack_u64(r);
	c->removed_unknown = kv_unpack_u64(r);
	c->objects_overflow = kv_unpack_u64(r);
	read_life(r, &c->life);
	uint64_t n_groups = kv_unpack_max(r, s->matcher ? s->n_gnames + l->groups_left : 0);
	for (uint64_t i = 0; i < n_groups && !r->bad; i++) {
		uint32_t id = (uint32_t)kv_unpack_max(r, UINT32_MAX);
		for (uint32_t k = 0; k < t->groups.n; k++)
			if (t->groups.v[k].id == id)
				return KV_PACK_MALFORMED;
		kv_group_counts *g = kv_group_vec_at(&t->groups, id);
		if (!g)
			return KV_PACK_NOMEM;
		read_counts(r, g->placement, MKV_PLACE__COUNT);
		read_counts(r, g->events, 2);
		read_life(r, &g->life);
	}
	l->objects_left = kv_unpack_u64(r);
	/* which removals its cleared still expects is not carried: any may come */
	if (!kv_unpack_done(r) && kv_unpack_max(r, 1))
		kv_state_window_unseen(t);
	if (!kv_unpack_done(r))
		return KV_PACK_MALFORMED;
	uint64_t sum = 0;
	for (int i = 0; i < MKV_PLACE__COUNT; i++)
		sum += c->placement[i];
	if (sum != l->objects_left)
		return KV_PACK_MALFORMED;
	memset(l->tally, 0, sizeof(l->tally));
	kv_state_sync_births(s, t); /* births kept from the first object, as the writer kept them */
	/* room for them all at once, within what the budget can still hold */
	size_t held = atomic_load(&l->budget->objects);
	if (held >= l->budget->max_objects || l->objects_left > l->budget->max_objects - held)
		return KV_PACK_REFUSED;
	if (l->objects_left && kv_objtable_reserve(&t->objects, l->objects_left) != MKV_OK)
		return KV_PACK_NOMEM;
	return KV_PACK_OK;
}

static enum kv_pack_error read_objects(kv_state_load *l, kv_pack_r *r)
{
	kv_tenant *t = l->tenant;
	mkv_budget *b = l->budget;
	if (!t)
		return KV_PACK_MALFORMED;
	while (r->p < r->end) {
		uint64_t slot = kv_unpack_fixed64(r), code = kv_unpack_u64(r);
		unsigned media = (unsigned)(slot & 3);
		if (r->bad || !media || !l->objects_left)
			return KV_PACK_MALFORMED;
		if (atomic_fetch_add_explicit(&b->objects, 1, memory_order_relaxed) >= b->max_objects) {
			atomic_fetch_sub_explicit(&b->objects, 1, memory_order_relaxed);
			return KV_PACK_REFUSED;
		}
		unsigned before;
		int64_t birth = code == NO_BIRTH_CODE ? KV_NO_BIRTH : (int64_t)(code - 1);
		enum mkv_err rc = kv_objtable_update(&t->objects, slot & ~(uint64_t)3, media, 0, true, birth, &before,
						     NULL);
		if (rc != MKV_OK || before) { /* not inserted: out of memory, or an object twice */
			atomic_fetch_sub_explicit(&b->objects, 1, memory_order_relaxed);
			return rc == MKV_ENOMEM ? KV_PACK_NOMEM : KV_PACK_MALFORMED;
		}
		l->tally[mkv_placement_of(media)]++;
		l->objects_left--;
	}
	return KV_PACK_OK;
}

enum kv_pack_error kv_state_load_record(kv_state_load *l, unsigned type, kv_pack_r *r)
{
	if (!l->state)
		return type == KV_REC_STATE ? read_state(l, r) : KV_PACK_MALFORMED;
	switch (type) {
	case KV_REC_GROUP:
		return read_group(l, r);
	case KV_REC_TENANT:
		return read_tenant(l, r);
	case KV_REC_OBJECTS:
		return read_objects(l, r);
	default:
		return KV_PACK_MALFORMED;
	}
}

enum kv_pack_error kv_state_load_end(kv_state_load *l, kv_state **out)
{
	if (!l->state)
		return KV_PACK_TRUNCATED;
	enum kv_pack_error rc = tenant_done(l);
	if (rc != KV_PACK_OK)
		return rc;
	if (l->tenants_left || l->groups_left)
		return KV_PACK_TRUNCATED;
	kv_state *s = l->state;
	s->tenants_overflow = l->carried[0];
	s->tenants_expired = l->carried[1];
	s->objects_overflow = l->carried[2];
	s->unclean_labels = l->carried[3];
	s->groups_overflow = l->carried[4];
	memcpy(s->turned_stale, l->turned_stale, sizeof(s->turned_stale));
	memcpy(s->turned_exact, l->turned_exact, sizeof(s->turned_exact));
	*out = s;
	l->state = NULL;
	return KV_PACK_OK;
}
