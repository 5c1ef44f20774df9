/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "kv_array.h"
#include "kv_snapshot.h"

enum mkv_err kv_snapshot_members(kv_source_snap *snap, size_t n)
{
	if (n > snap->cap_members) {
		kv_member_snap *p = realloc(snap->members, n * sizeof(*p));
		if (!p)
			return MKV_ENOMEM;
		snap->members = p;
		snap->cap_members = n;
	}
	if (n)
		memset(snap->members, 0, n * sizeof(*snap->members));
	snap->n_members = n;
	return MKV_OK;
}

void kv_snapshot_member_stream(kv_member_snap *m, const kv_stream *st)
{
	m->stats = *kv_stream_stats_of(st);
	m->seq = *kv_stream_seq(st);
	m->model = *kv_stream_model(st);
}

enum mkv_err kv_snapshot_stream(kv_source_snap *snap, const kv_stream *st)
{
	if (kv_snapshot_members(snap, 1) != MKV_OK)
		return MKV_ENOMEM;
	kv_snapshot_member_stream(&snap->members[0], st);
	return kv_snapshot_state(snap, kv_stream_state(st));
}

/* Room for one more tenant's groups in the pool: at least `need` items. */
static enum mkv_err pool_room(kv_source_snap *snap, size_t need)
{
	while (need > snap->group_pool_cap) {
		kv_group_counts *p = kv_array_grow(snap->group_pool, &snap->group_pool_cap, sizeof(*p), 64, 0);
		if (!p)
			return MKV_ENOMEM;
		snap->group_pool = p;
	}
	return MKV_OK;
}

/* A scrape takes this under the source's lock, while ingestion waits: one
 * pass over the tenants (each is its own allocation of several cache lines,
 * and its ids two more), the next ones fetched while this one is copied. */
#define PREFETCH_AHEAD 8

enum mkv_err kv_snapshot_state(kv_source_snap *snap, const kv_state *s)
{
	size_t n = kv_state_tenant_count(s);
	snap->tenants_overflow = kv_state_tenants_overflow(s);
	snap->tenants_expired = kv_state_tenants_expired(s);
	snap->objects_overflow = kv_state_objects_overflow(s);
	snap->unclean_labels = kv_state_unclean_labels(s);
	snap->born_exact = kv_state_born_exact(s);
	for (unsigned r = 0; r < KV_STALE__BITS; r++)
		snap->turned_stale[r] = kv_state_turned_stale(s, r);
	for (unsigned c = 0; c < KV_EXACT__CAUSES; c++)
		snap->turned_exact[c] = kv_state_turned_exact(s, (enum kv_exact_cause)c);
	snap->has_groups = kv_state_has_keygroups(s);
	snap->residency = kv_state_residency(s);
	snap->groups_overflow = kv_state_groups_overflow(s);
	snap->n_tenants = 0;
	if (n > snap->cap_tenants) {
		kv_tenant_snap *p = realloc(snap->tenants, n * sizeof(*p));
		if (!p)
			return MKV_ENOMEM;
		snap->tenants = p;
		snap->cap_tenants = n;
	}
	/* the group names by id */
	size_t names = kv_state_group_count(s);
	if (names > snap->cap_group_names) {
		mkv_str *p = realloc(snap->group_names, names * sizeof(*p));
		if (!p)
			return MKV_ENOMEM;
		snap->group_names = p;
		snap->cap_group_names = names;
	}
	for (size_t g = 0; g < names; g++)
		snap->group_names[g] = kv_state_group_name(s, (uint32_t)g);
	snap->n_group_names = names;
	/* the tenants, their groups in one pool, their ids copied */
	mkv_buf_reset(&snap->ids);
	size_t at = 0, table_bytes = 0;
	for (size_t i = 0; i < n; i++) {
		if (i + PREFETCH_AHEAD < n) {
			const char *ahead = (const char *)kv_state_tenant_at(s, i + PREFETCH_AHEAD);
			for (size_t line = 0; line < sizeof(kv_tenant); line += 64)
				__builtin_prefetch(ahead + line);
		}
		if (i + PREFETCH_AHEAD / 2 < n) {
			const kv_tenant *next = kv_state_tenant_at(s, i + PREFETCH_AHEAD / 2);
			__builtin_prefetch(next->backend_id);
			__builtin_prefetch(next->tenant_id);
		}
		const kv_tenant *t = kv_state_tenant_at(s, i);
		kv_tenant_snap *o = &snap->tenants[i];
		if (pool_room(snap, at + t->groups.n) != MKV_OK)
			return MKV_ENOMEM;
		o->group_at = at;
		o->n_groups = t->groups.n;
		if (t->groups.n)
			memcpy(snap->group_pool + at, t->groups.v, t->groups.n * sizeof(*t->groups.v));
		at += t->groups.n;
		o->backend_len = t->backend_len;
		o->tenant_len = t->tenant_len;
		o->labels_unclean = t->labels_unclean;
		o->stale = t->stale;
		o->stale_since_ms = t->stale_since_ms;
		o->counts = t->counts;
		o->aged = t->objects.births_n;
		if (!kv_objtable_births_mean(&t->objects, &o->birth_mean_ms))
			o->birth_mean_ms = 0;
		table_bytes += kv_objtable_bytes(&t->objects);
		mkv_buf_add(&snap->ids, t->backend_id, t->backend_len);
		mkv_buf_addc(&snap->ids, '\0');
		mkv_buf_add(&snap->ids, t->tenant_id, t->tenant_len);
		mkv_buf_addc(&snap->ids, '\0');
	}
	if (!mkv_buf_ok(&snap->ids))
		return MKV_ENOMEM;
	/* kv_state_table_bytes, without another pass over the tenants */
	snap->table_bytes = table_bytes;
	/* the ids pointed at once the buffer no longer moves */
	for (size_t i = 0, id = 0; i < n; i++) {
		kv_tenant_snap *o = &snap->tenants[i];
		o->backend_id = snap->ids.data + id;
		id += o->backend_len + 1;
		o->tenant_id = snap->ids.data + id;
		id += o->tenant_len + 1;
	}
	snap->n_tenants = n;
	return MKV_OK;
}

void kv_source_snap_release(kv_source_snap *snap)
{
	free(snap->members);
	snap->members = NULL;
	snap->n_members = snap->cap_members = 0;
	kv_quotas_free(&snap->quotas);
	kv_quota_rejects_free(&snap->rejects);
	kv_quota_rejects_free(&snap->evictions);
	mkv_buf_free(&snap->ids);
	free(snap->tenants);
	free(snap->group_pool);
	free(snap->group_names);
	snap->tenants = NULL;
	snap->group_pool = NULL;
	snap->group_names = NULL;
	snap->n_tenants = snap->cap_tenants = snap->group_pool_cap = 0;
	snap->n_group_names = snap->cap_group_names = 0;
}
