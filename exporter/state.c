#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

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
	uint64_t objects_overflow;
	uint64_t unclean_labels;
	kv_tenant *recorded; /* its applied events go to record (reconciliation) */
	kv_recon_log *record;
};

void kv_budget_init(kv_budget *b, size_t max_tenants, size_t max_objects)
{
	b->max_tenants = max_tenants;
	b->max_objects = max_objects;
	atomic_init(&b->tenants, 0);
	atomic_init(&b->objects, 0);
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
	return s;
}

static void tenant_free(kv_tenant *t)
{
	kv_objtable_clear(&t->objects);
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
		size_t ncap = s->cap_tenants ? s->cap_tenants * 2 : 16;
		kv_tenant **n = realloc(s->tenants, ncap * sizeof(*n));
		if (!n)
			goto fail;
		s->tenants = n;
		s->cap_tenants = ncap;
	}
	t->backend_id = dup_bytes(backend);
	t->tenant_id = dup_bytes(tenant);
	if (!t->backend_id || !t->tenant_id)
		goto fail;
	t->backend_len = backend.len;
	t->tenant_len = tenant.len;
	t->hash = h;
	t->stale = KV_STALE_STARTUP;
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

static void clear_tenant(kv_state *s, kv_tenant *t)
{
	atomic_fetch_sub(&s->budget->objects, kv_objtable_count(&t->objects));
	kv_objtable_clear(&t->objects);
	memset(t->counts.placement, 0, sizeof(t->counts.placement));
	t->stale = 0; /* the only way back to exact: we know it is empty */
}

static int update_object(kv_state *s, kv_tenant *t, const kv_event *ev, uint64_t h)
{
	bool stored = ev->type == KV_EV_STORED;
	bool room = atomic_load_explicit(&s->budget->objects, memory_order_relaxed) < s->budget->max_objects;
	unsigned before;
	int rc = kv_objtable_update(&t->objects, h, stored ? ev->medium : 0, stored ? 0 : ev->medium, room, &before);
	if (rc == KV_ELIMIT) {
		s->objects_overflow++;
		t->counts.objects_overflow++;
		t->stale |= KV_STALE_OVERFLOW;
	}
	if (rc != KV_OK)
		return rc;

	unsigned after = stored ? before | ev->medium : before & ~(unsigned)ev->medium;
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
	if (after)
		t->counts.placement[kv_placement_of(after)]++;
	else
		atomic_fetch_sub_explicit(&s->budget->objects, 1, memory_order_relaxed);
	return KV_OK;
}

void kv_state_prepare(kv_state *s, const kv_event *ev, kv_prepared *p)
{
	uint64_t h;
	p->tenant = lookup(s, ev, &h);
	p->key_hash = 0;
	if (ev->type == KV_EV_CLEARED)
		return;
	p->key_hash = XXH3_64bits_withSeed(ev->object_key.ptr, ev->object_key.len, s->seed);
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
	if (t == s->recorded)
		kv_recon_log_add(s->record, p->key_hash, ev->type, ev->medium);
	if (ev->type == KV_EV_CLEARED)
		clear_tenant(s, t);
	else if ((rc = update_object(s, t, ev, p->key_hash)) != KV_OK)
		return rc;
	t->counts.events[ev->type]++;
	return KV_OK;
}

int kv_state_apply(kv_state *s, const kv_event *ev)
{
	kv_prepared p;
	kv_state_prepare(s, ev, &p);
	return kv_state_apply_prepared(s, ev, &p);
}

void kv_state_mark_stale(kv_state *s, enum kv_stale_reason why)
{
	for (size_t i = 0; i < s->n_tenants; i++)
		s->tenants[i]->stale |= why;
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
	t->stale = stale;
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
