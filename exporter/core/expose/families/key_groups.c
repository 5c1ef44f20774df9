/* SPDX-License-Identifier: Apache-2.0 */
/* Key groups (--key.group-regex): each tenant's objects and events by the
 * group of their keys.  Shown only where key groups are on. */
#include "kv_family.h"

static void objects(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, kv_group_objects(a->g));
}

static void by_medium(kv_emit *e, const kv_at *a)
{
	uint64_t both = a->g->placement[KV_PLACE_CPU_AND_DISK];
	kv_sample_u64(e, (kv_label){"medium", kv_medium_name(KV_MEDIUM_CPU)},
		      a->g->placement[KV_PLACE_CPU_ONLY] + both);
	kv_sample_u64(e, (kv_label){"medium", kv_medium_name(KV_MEDIUM_DISK)},
		      a->g->placement[KV_PLACE_DISK_ONLY] + both);
}

static void events(kv_emit *e, const kv_at *a)
{
	for (int t = KV_EV_STORED; t <= KV_EV_REMOVED; t++)
		kv_sample_u64(e, (kv_label){"event_type", kv_event_type_name(t)}, a->g->events[t]);
}

static const kv_family families[] = {
	{"mooncake_kv_objects_by_key_group", "gauge",
	 "Live objects of the tenant whose key falls in the key group (--key.group-regex; \"\" when it "
	 "does not match, \"__overflow__\" beyond --limits.max-key-groups).",
	 KV_SCOPE_GROUP, 0, kv_any_groups, objects},
	{"mooncake_kv_objects_by_key_group_medium", "gauge",
	 "Live objects of the key group readable on a medium; an object on both counts under both.", KV_SCOPE_GROUP, 0,
	 kv_any_groups, by_medium},
	{"mooncake_kv_key_group_events_total", "counter",
	 "stored and removed events applied to the key group's objects.", KV_SCOPE_GROUP, 0, kv_any_groups, events},
};

KV_FAMILY_TABLE(kv_key_group_families, families);
