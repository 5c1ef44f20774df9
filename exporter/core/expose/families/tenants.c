/* SPDX-License-Identifier: Apache-2.0 */
/* Each tenant's objects, their media, its events and whether its figures
 * can be trusted. */
#include "kv_family.h"

KV_U64(objects, true, kv_counts_objects(&a->t->counts))
KV_U64(stale, true, a->t->stale != 0)
KV_U64(stored_duplicates, true, a->t->counts.stored_duplicates)
KV_U64(removed_unknown, true, a->t->counts.removed_unknown)
KV_U64(objects_overflow, true, a->t->counts.objects_overflow)
/* a publisher of the object dialect never sends cleared: no series that
 * can only ever be 0 */
KV_U64(clears, !a->s->object_dialect, a->t->counts.events[KV_EV_CLEARED])
KV_MS(stale_since, a->t->stale, a->t->stale_since_ms)

/* Why a stale tenant is stale: one series per reason it has, none while it
 * is exact. */
static void stale_reasons(kv_emit *e, const kv_at *a)
{
	for (unsigned r = 0; r < KV_STALE__BITS; r++)
		if ((a->t->stale >> r) & 1)
			kv_sample_u64(e, (kv_label){"reason", kv_stale_reason_name(r)}, 1);
}

static void events(kv_emit *e, const kv_at *a)
{
	for (int t = 0; t < KV_EV__COUNT - a->s->object_dialect; t++)
		kv_sample_u64(e, (kv_label){"event_type", kv_event_type_name(t)}, a->t->counts.events[t]);
}

static void by_medium(kv_emit *e, const kv_at *a)
{
	for (enum kv_medium m = KV_MEDIUM_CPU; m <= KV_MEDIUM_DISK; m++)
		kv_sample_u64(e, (kv_label){"medium", kv_medium_name(m)}, kv_counts_on_medium(&a->t->counts, m));
}

static void by_placement(kv_emit *e, const kv_at *a)
{
	for (int p = 0; p < KV_PLACE__COUNT; p++)
		kv_sample_u64(e, (kv_label){"placement", kv_placement_name(p)}, a->t->counts.placement[p]);
}

static const kv_family families[] = {
	{"mooncake_kv_events_received_total", "counter", "Events accepted and applied to the tenant's state, by type.",
	 KV_SCOPE_TENANT, 0, NULL, events},
	{"mooncake_kv_objects", "gauge", "Live objects of the tenant (on at least one medium).", KV_SCOPE_TENANT, 0,
	 NULL, objects},
	{"mooncake_kv_objects_by_medium", "gauge",
	 "Live objects readable on a medium; an object on both media counts under both.", KV_SCOPE_TENANT, 0, NULL,
	 by_medium},
	{"mooncake_kv_objects_by_placement", "gauge",
	 "Live objects by the set of media they are on (these add up to mooncake_kv_objects).", KV_SCOPE_TENANT, 0,
	 NULL, by_placement},
	{"mooncake_kv_state_stale", "gauge",
	 "1 when the tenant's figures may be incomplete (mooncake_kv_state_stale_reason says why), 0 when they are "
	 "exact: watched from empty, cleared or reconciled, and nothing lost since.",
	 KV_SCOPE_TENANT, 0, NULL, stale},
	{"mooncake_kv_state_stale_reason", "gauge",
	 "1 for each reason the tenant is stale for (startup, gap, reset, reconnect, overflow, reconcile_incomplete, "
	 "failover, dialect, quota_eviction, drift); absent while it is exact.",
	 KV_SCOPE_TENANT, 0, NULL, stale_reasons},
	{"mooncake_kv_state_stale_since_timestamp_seconds", "gauge",
	 "While the tenant is stale: when it stopped being exact (start-up, or the first loss since it was "
	 "last exact), in unix seconds. Absent while it is exact.",
	 KV_SCOPE_TENANT, 0, NULL, stale_since},
	{"mooncake_kv_tenant_clears_total", "counter",
	 "cleared events applied: every object of the tenant was dropped.", KV_SCOPE_TENANT, 0, NULL, clears},
	{"mooncake_kv_stored_duplicates_total", "counter",
	 "stored events for a medium the object was already on (idempotent).", KV_SCOPE_TENANT, 0, NULL,
	 stored_duplicates},
	{"mooncake_kv_removed_unknown_total", "counter",
	 "removed events of nothing held: a medium the object was not on (media dialect), an object not held "
	 "(object dialect); idempotent, never below zero.",
	 KV_SCOPE_TENANT, 0, NULL, removed_unknown},
	{"mooncake_kv_tenant_objects_overflow_total", "counter",
	 "stored events of this tenant refused by --limits.max-objects.", KV_SCOPE_TENANT, 0, NULL, objects_overflow},
};

KV_FAMILY_TABLE(kv_tenant_families, families);
