/* SPDX-License-Identifier: Apache-2.0 */
/* The state's side of a reconciliation (kv_state.h, "reconciliation"):
 * the key hashes and media the fresh table is compared with, the recording
 * of the tenant's events while the listing is read, and the cut-over. */
#include <string.h>
#include <xxhash.h>

#include "kv_state_impl.h"

uint64_t kv_state_key_hash(const kv_state *s, mkv_str key)
{
	return XXH3_64bits_withSeed(key.ptr, key.len, s->seed);
}

unsigned kv_state_media_by_hash(const kv_tenant *t, uint64_t hash)
{
	return kv_objtable_get(&t->objects, hash);
}

enum mkv_err kv_state_record_start(kv_state *s, mkv_str backend, mkv_str tenant, kv_recon_log *log)
{
	if (s->recorded)
		return MKV_EINVAL;
	kv_tenant *t;
	enum mkv_err rc = kv_state_tenant_get(s, backend, tenant, &t);
	if (rc != MKV_OK)
		return rc;
	s->recorded = t;
	s->record = log;
	s->record_unsure = false;
	return MKV_OK;
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

enum mkv_err kv_state_adopt(kv_state *s, kv_recon_table *fresh, unsigned stale, kv_objtable *old)
{
	kv_tenant *t = s->recorded;
	if (!t)
		return MKV_EINVAL;
	/* a removal replayed may be a RemoveAll's, late, and the listing had
	 * the object: the cut-over cannot be sure of it either */
	if (s->record_unsure)
		stale |= KV_STALE_REMOVED_AFTER_CLEARED;
	size_t before = kv_objtable_count(&t->objects), after = kv_recon_objects(fresh);
	size_t used = atomic_load(&s->budget->objects);
	if (after > before && used + (after - before) > s->budget->max_objects)
		return MKV_ELIMIT;
	atomic_fetch_add(&s->budget->objects, after);
	atomic_fetch_sub(&s->budget->objects, before);
	*old = t->objects;
	t->objects = fresh->objects;
	memcpy(t->counts.placement, fresh->placement, sizeof(t->counts.placement));
	/* the groups' objects are the fresh table's; their events go on.  The
	 * fresh table counts by group 0 without key groups: the state keeps
	 * none then, as the stream does (a handover refuses a tenant with any) */
	kv_group_vec_empty(&t->groups);
	for (uint32_t i = 0; s->matcher && i < fresh->groups.n; i++) {
		kv_group_counts *g = kv_group_vec_at(&t->groups, fresh->groups.v[i].id);
		if (g)
			memcpy(g->placement, fresh->groups.v[i].placement, sizeof(g->placement));
	}
	kv_group_vec_free(&fresh->groups);
	unsigned was = t->stale;
	if (was) { /* stale before: exact now, or stale for what the listing could not tell */
		if (stale)
			t->stale_since_ms = s->now_ms;
		t->stale = stale;
		kv_state_became_exact(s, was, t, KV_EXACT_RECONCILED);
	} else {
		kv_state_add_stale(s, t, stale);
	}
	kv_state_sync_births(s, t);
	/* the master's own listing: what a cleared still expected is taken as
	 * come (docs/design.md, "RemoveAll and the op log"), unless a removal
	 * while it was read could not be placed */
	if (!s->record_unsure)
		kv_state_window_close(t);
	memset(fresh, 0, sizeof(*fresh));
	return MKV_OK;
}
