/* SPDX-License-Identifier: Apache-2.0 */
/* Key groups (--key.group-regex): each tenant's objects and events by the
 * group of their keys.  Shown only where key groups are on. */
#include "kv_family.h"

static void objects_by_key_group(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, kv_group_objects(a->g));
}

static void objects_by_key_group_medium(kv_emit *e, const kv_at *a)
{
	uint64_t both = a->g->placement[MKV_PLACE_CPU_AND_DISK];
	kv_sample_u64(e, (kv_label){"medium", mkv_medium_name(MKV_MEDIUM_CPU)},
		      a->g->placement[MKV_PLACE_CPU_ONLY] + both);
	kv_sample_u64(e, (kv_label){"medium", mkv_medium_name(MKV_MEDIUM_DISK)},
		      a->g->placement[MKV_PLACE_DISK_ONLY] + both);
}

static void key_group_events_total(kv_emit *e, const kv_at *a)
{
	for (int t = MKV_EV_STORED; t <= MKV_EV_REMOVED; t++)
		if (kv_news(a, a->g->events[t])) /* each from its first event */
			kv_sample_u64(e, (kv_label){"event_type", mkv_event_type_name((enum mkv_event_type)t)},
				      a->g->events[t]);
}

static const kv_family families[] = {
	{.name = "mooncake_kv_objects_by_key_group",
	 .kind = KV_GAUGE,
	 .help = "Live objects of the tenant whose key falls in the key group (--key.group-regex; \"\" when it "
		 "does not match, \"__overflow__\" beyond --limits.max-key-groups).",
	 .scope = KV_SCOPE_GROUP,
	 .shown = kv_any_groups,
	 .samples = objects_by_key_group},
	{.name = "mooncake_kv_objects_by_key_group_medium",
	 .kind = KV_GAUGE,
	 .help = "Live objects of the key group readable on a medium; an object on both counts under both.",
	 .scope = KV_SCOPE_GROUP,
	 .labels = "medium",
	 .flags = KV_FAM_TENANT_DETAIL,
	 .shown = kv_any_groups,
	 .samples = objects_by_key_group_medium},
	{.name = "mooncake_kv_key_group_events_total",
	 .kind = KV_COUNTER,
	 .help = "stored and removed events applied to the key group's objects.",
	 .scope = KV_SCOPE_GROUP,
	 .labels = "event_type",
	 .flags = KV_FAM_TENANT_DETAIL,
	 .shown = kv_any_groups,
	 .samples = key_group_events_total},
};

KV_FAMILY_TABLE(kv_key_group_families, families);
