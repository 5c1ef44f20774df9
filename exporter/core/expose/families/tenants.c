/* SPDX-License-Identifier: Apache-2.0 */
/* Each tenant's objects, their media, its events and whether its figures
 * can be trusted. */
#include "kv_family.h"

/* Each event type from its first event: a tenant's removed and cleared
 * appear when they happen. */
static void events_received_total(kv_emit *e, const kv_at *a)
{
	for (int t = 0; t < MKV_EV__COUNT - a->s->object_dialect; t++)
		if (kv_news(a, a->t->counts.events[t]))
			kv_sample_u64(e, (kv_label){"event_type", mkv_event_type_name((enum mkv_event_type)t)},
				      a->t->counts.events[t]);
}

static void objects(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, kv_counts_objects(&a->t->counts));
}

static void objects_by_medium(kv_emit *e, const kv_at *a)
{
	for (enum mkv_medium m = MKV_MEDIUM_CPU; m <= MKV_MEDIUM_DISK; m++)
		kv_sample_u64(e, (kv_label){"medium", mkv_medium_name(m)}, kv_counts_on_medium(&a->t->counts, m));
}

/* both = cpu + disk - objects, from mooncake_kv_objects_by_medium and
 * mooncake_kv_objects: served only with --metrics.all-series
 * (KV_FAM_ALL_SERIES; the recording rules derive it). */
static void objects_by_placement(kv_emit *e, const kv_at *a)
{
	for (int p = 0; p < MKV_PLACE__COUNT; p++)
		kv_sample_u64(e, (kv_label){"placement", mkv_placement_name((enum mkv_placement)p)},
			      a->t->counts.placement[p]);
}

static void state_stale(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->t->stale != 0);
}

/* Why a stale tenant is stale: one series per reason it has, none while it
 * is exact. */
static void state_stale_reason(kv_emit *e, const kv_at *a)
{
	for (unsigned r = 0; r < KV_STALE__BITS; r++)
		if ((a->t->stale >> r) & 1)
			kv_sample_u64(e, (kv_label){"reason", kv_stale_reason_name(r)}, 1);
}

static void state_stale_since_timestamp_seconds(kv_emit *e, const kv_at *a)
{
	if (a->t->stale)
		kv_sample_ms_as_s(e, KV_NO_LABEL, a->t->stale_since_ms);
}

/* mooncake_kv_events_received_total{event_type="cleared"} by another name
 * (KV_FAM_ALL_SERIES); a publisher of the object dialect never sends
 * cleared: no series that can only ever be 0 */
static void tenant_clears_total(kv_emit *e, const kv_at *a)
{
	if (!a->s->object_dialect)
		kv_sample_u64(e, KV_NO_LABEL, a->t->counts.events[MKV_EV_CLEARED]);
}

/* The counters of rare events: each from its first (kv_news). */
static void stored_duplicates_total(kv_emit *e, const kv_at *a)
{
	if (kv_news(a, a->t->counts.stored_duplicates))
		kv_sample_u64(e, KV_NO_LABEL, a->t->counts.stored_duplicates);
}

static void removed_unknown_total(kv_emit *e, const kv_at *a)
{
	if (kv_news(a, a->t->counts.removed_unknown))
		kv_sample_u64(e, KV_NO_LABEL, a->t->counts.removed_unknown);
}

static void tenant_objects_overflow_total(kv_emit *e, const kv_at *a)
{
	if (kv_news(a, a->t->counts.objects_overflow))
		kv_sample_u64(e, KV_NO_LABEL, a->t->counts.objects_overflow);
}

static const kv_family families[] = {
	{.name = "mooncake_kv_events_received_total",
	 .kind = KV_COUNTER,
	 .help = "Events accepted and applied to the tenant's state, by type.",
	 .scope = KV_SCOPE_TENANT,
	 .labels = "event_type",
	 .flags = KV_FAM_TENANT_DETAIL,
	 .samples = events_received_total},
	{.name = "mooncake_kv_objects",
	 .kind = KV_GAUGE,
	 .help = "Live objects of the tenant (on at least one medium).",
	 .scope = KV_SCOPE_TENANT,
	 .samples = objects},
	{.name = "mooncake_kv_objects_by_medium",
	 .kind = KV_GAUGE,
	 .help = "Live objects readable on a medium; an object on both media counts under both.",
	 .scope = KV_SCOPE_TENANT,
	 .labels = "medium",
	 .samples = objects_by_medium},
	{.name = "mooncake_kv_objects_by_placement",
	 .kind = KV_GAUGE,
	 .help = "Live objects by the set of media they are on (these add up to mooncake_kv_objects).",
	 .scope = KV_SCOPE_TENANT,
	 .labels = "placement",
	 .flags = KV_FAM_TENANT_DETAIL | KV_FAM_ALL_SERIES,
	 .samples = objects_by_placement},
	{.name = "mooncake_kv_state_stale",
	 .kind = KV_GAUGE,
	 .help = "1 when the tenant's figures may be incomplete (mooncake_kv_state_stale_reason says why), 0 when "
		 "they are exact: watched from empty, cleared or reconciled, and nothing lost since.",
	 .scope = KV_SCOPE_TENANT,
	 .samples = state_stale},
	{.name = "mooncake_kv_state_stale_reason",
	 .kind = KV_GAUGE,
	 .help = "1 for each reason the tenant is stale for (startup, gap, reset, reconnect, overflow, "
		 "reconcile_incomplete, failover, dialect, quota_eviction, drift, bootstrap, removed_after_cleared); "
		 "absent while it is exact.",
	 .scope = KV_SCOPE_TENANT,
	 .labels = "reason",
	 .flags = KV_FAM_TENANT_DETAIL,
	 .samples = state_stale_reason},
	{.name = "mooncake_kv_state_stale_since_timestamp_seconds",
	 .kind = KV_GAUGE,
	 .help = "While the tenant is stale: when it stopped being exact (start-up, or the first loss since it was "
		 "last exact), in unix seconds. Absent while it is exact.",
	 .scope = KV_SCOPE_TENANT,
	 .samples = state_stale_since_timestamp_seconds},
	{.name = "mooncake_kv_tenant_clears_total",
	 .kind = KV_COUNTER,
	 .help = "cleared events applied: every object of the tenant was dropped.",
	 .scope = KV_SCOPE_TENANT,
	 .flags = KV_FAM_TENANT_DETAIL | KV_FAM_ALL_SERIES,
	 .samples = tenant_clears_total},
	{.name = "mooncake_kv_stored_duplicates_total",
	 .kind = KV_COUNTER,
	 .help = "stored events for a medium the object was already on (idempotent).",
	 .scope = KV_SCOPE_TENANT,
	 .flags = KV_FAM_TENANT_DETAIL,
	 .samples = stored_duplicates_total},
	{.name = "mooncake_kv_removed_unknown_total",
	 .kind = KV_COUNTER,
	 .help = "removed events of nothing held: a medium the object was not on (media dialect), an object not "
		 "held (object dialect); idempotent, never below zero.",
	 .scope = KV_SCOPE_TENANT,
	 .flags = KV_FAM_TENANT_DETAIL,
	 .samples = removed_unknown_total},
	{.name = "mooncake_kv_tenant_objects_overflow_total",
	 .kind = KV_COUNTER,
	 .help = "stored events of this tenant refused by --limits.max-objects.",
	 .scope = KV_SCOPE_TENANT,
	 .flags = KV_FAM_TENANT_DETAIL,
	 .samples = tenant_objects_overflow_total},
};

KV_FAMILY_TABLE(kv_tenant_families, families);
