/* SPDX-License-Identifier: Apache-2.0 */
/* Residency: how long objects live, per tenant and key group, from the
 * publisher's timestamps (docs/design.md, "Residency"); the mean age of the
 * live objects whose birth was seen; and the timestamps that could not be
 * used.  Shown while residency is on (--residency.enabled). */
#include "kv_family.h"

static bool group_residency(const kv_source_snap *s)
{
	return s->residency && s->has_groups;
}

static bool any_group_residency(const kv_exporter_snap *x)
{
	return kv_any_source(x, group_residency);
}

static void object_lifetime_seconds(kv_emit *e, const kv_at *a)
{
	if (a->s->residency && kv_news(a, a->t->counts.life.count)) /* from the first life seen whole */
		kv_sample_life(e, &a->t->counts.life);
}

static void object_lifetime_unobserved_total(kv_emit *e, const kv_at *a)
{
	if (a->s->residency && kv_news(a, a->t->counts.life.unobserved))
		kv_sample_u64(e, KV_NO_LABEL, a->t->counts.life.unobserved);
}

static void object_age_tracked_objects(kv_emit *e, const kv_at *a)
{
	if (a->s->residency)
		kv_sample_u64(e, KV_NO_LABEL, a->t->aged);
}

/* The publisher's clock now: the time of the last message a member
 * decoded, and the time since on ours (so that neither the hosts' clock
 * skew nor a quiet stream moves it); the newest of the members. */
static double publisher_now_ms(const kv_exporter_snap *x, const kv_source_snap *s)
{
	double now = 0;
	for (size_t i = 0; i < s->n_members; i++) {
		const kv_stream_stats *st = &s->members[i].stats;
		int64_t since = x->info.now_ms > st->last_timestamp_at_ms ? x->info.now_ms - st->last_timestamp_at_ms
									  : 0;
		if (st->has_timestamp && (double)(st->last_timestamp_ms + since) > now)
			now = (double)(st->last_timestamp_ms + since);
	}
	return now;
}

static void object_age_mean_seconds(kv_emit *e, const kv_at *a)
{
	if (!a->s->residency || !a->t->aged)
		return;
	double age = (publisher_now_ms(a->x, a->s) - a->t->birth_mean_ms) / 1000.0;
	kv_sample_double(e, KV_NO_LABEL, age > 0 ? age : 0); /* births are never after the newest time */
}

static void key_group_object_lifetime_seconds(kv_emit *e, const kv_at *a)
{
	if (a->s->residency && kv_news(a, a->g->life.count))
		kv_sample_life(e, &a->g->life);
}

static void key_group_object_lifetime_unobserved_total(kv_emit *e, const kv_at *a)
{
	if (a->s->residency && kv_news(a, a->g->life.unobserved))
		kv_sample_u64(e, KV_NO_LABEL, a->g->life.unobserved);
}

static void event_timestamps_unusable_total(kv_emit *e, const kv_at *a)
{
	if (!a->s->residency)
		return;
	kv_sample_u64(e, (kv_label){"reason", "backwards"}, a->m->stats.timestamps_backwards);
	kv_sample_u64(e, (kv_label){"reason", "invalid"}, a->m->stats.timestamps_invalid);
}

static const kv_family families[] = {
	{.name = "mooncake_kv_object_lifetime_seconds",
	 .kind = KV_HISTOGRAM,
	 .help = "Lifetimes of the tenant's objects whose whole life the exporter saw: from the event that made the "
		 "object present to the one that made it absent, by the publisher's timestamps.",
	 .scope = KV_SCOPE_TENANT,
	 .flags = KV_FAM_TENANT_DETAIL,
	 .shown = kv_any_residency,
	 .samples = object_lifetime_seconds},
	{.name = "mooncake_kv_object_lifetime_unobserved_total",
	 .kind = KV_COUNTER,
	 .help = "Lives of the tenant's objects that ended without their start seen (present before the tenant was "
		 "exact, added by reconciliation, across a loss) or with an unusable timestamp: not in the "
		 "histogram.",
	 .scope = KV_SCOPE_TENANT,
	 .flags = KV_FAM_TENANT_DETAIL,
	 .shown = kv_any_residency,
	 .samples = object_lifetime_unobserved_total},
	{.name = "mooncake_kv_object_age_mean_seconds",
	 .kind = KV_GAUGE,
	 .help = "Mean age, on the publisher's clock, of the tenant's live objects whose birth was seen. Absent when "
		 "there is none.",
	 .scope = KV_SCOPE_TENANT,
	 .flags = KV_FAM_TENANT_DETAIL,
	 .shown = kv_any_residency,
	 .samples = object_age_mean_seconds},
	{.name = "mooncake_kv_object_age_tracked_objects",
	 .kind = KV_GAUGE,
	 .help = "Live objects of the tenant whose birth was seen: those mooncake_kv_object_age_mean_seconds "
		 "describes.",
	 .scope = KV_SCOPE_TENANT,
	 .flags = KV_FAM_TENANT_DETAIL,
	 .shown = kv_any_residency,
	 .samples = object_age_tracked_objects},
	{.name = "mooncake_kv_key_group_object_lifetime_seconds",
	 .kind = KV_HISTOGRAM,
	 .help = "Lifetimes of the key group's objects whose whole life the exporter saw, ended by a removed (a "
		 "cleared keeps no group per object: those count unobserved).",
	 .scope = KV_SCOPE_GROUP,
	 .flags = KV_FAM_TENANT_DETAIL,
	 .shown = any_group_residency,
	 .samples = key_group_object_lifetime_seconds},
	{.name = "mooncake_kv_key_group_object_lifetime_unobserved_total",
	 .kind = KV_COUNTER,
	 .help = "Lives of the key group's objects that ended unobserved (start not seen, unusable timestamp, or "
		 "ended by a cleared).",
	 .scope = KV_SCOPE_GROUP,
	 .flags = KV_FAM_TENANT_DETAIL,
	 .shown = any_group_residency,
	 .samples = key_group_object_lifetime_unobserved_total},
	{.name = "mooncake_kv_event_timestamps_unusable_total",
	 .kind = KV_COUNTER,
	 .help = "Events whose timestamp gave no residency: older than one the same publisher process sent before "
		 "(backwards), or no unix milliseconds (invalid). Their events are applied.",
	 .scope = KV_SCOPE_MEMBER,
	 .labels = "reason",
	 .shown = kv_any_residency,
	 .samples = event_timestamps_unusable_total},
};

KV_FAMILY_TABLE(kv_residency_families, families);
