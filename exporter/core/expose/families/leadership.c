/* SPDX-License-Identifier: Apache-2.0 */
/* Highly available masters: which member serves, failovers, split brains,
 * each member's role, and events from members that do not serve.  For the
 * sources whose members are all polled. */
#include "kv_family.h"

static void master_failovers_total(kv_emit *e, const kv_at *a)
{
	if (a->s->polled)
		kv_sample_u64(e, KV_NO_LABEL, a->s->leadership.failovers);
}

static void master_split_brain(kv_emit *e, const kv_at *a)
{
	if (a->s->polled)
		kv_sample_u64(e, KV_NO_LABEL, a->s->leadership.split_brain);
}

static void master_split_brains_total(kv_emit *e, const kv_at *a)
{
	if (a->s->polled)
		kv_sample_u64(e, KV_NO_LABEL, a->s->leadership.split_brains);
}

static void master_view_version(kv_emit *e, const kv_at *a)
{
	if (a->s->polled && a->s->leadership.has_view)
		kv_sample_u64(e, KV_NO_LABEL, a->s->leadership.view);
}

static void master_leader(kv_emit *e, const kv_at *a)
{
	if (a->s->polled)
		kv_sample_u64(e, KV_NO_LABEL, a->s->leadership.leader == (int)(a->m - a->s->members));
}

static void standby_events_total(kv_emit *e, const kv_at *a)
{
	if (a->s->polled)
		kv_sample_u64(e, KV_NO_LABEL, a->m->standby_events);
}

static void master_role(kv_emit *e, const kv_at *a)
{
	if (!a->s->polled)
		return;
	const kv_ha_obs *o = &a->m->ha;
	enum kv_ha_role now = kv_ha_role_of(o->state);
	if (now == KV_ROLE_UNKNOWN && o->answered)
		now = o->serving ? KV_ROLE_LEADER : KV_ROLE_STANDBY;
	for (int r = 0; r < KV_ROLE__COUNT; r++)
		kv_sample_u64(e, (kv_label){"role", kv_ha_role_name((enum kv_ha_role)r)}, now == (enum kv_ha_role)r);
}

static void master_ha_poll_errors_total(kv_emit *e, const kv_at *a)
{
	if (a->s->polled)
		kv_sample_poll_errors(e, a->m->ha_errors);
}

static const kv_family families[] = {
	{.name = "mooncake_kv_master_failovers_total",
	 .kind = KV_COUNTER,
	 .help = "Leadership changes among the source's masters: the serving master changed or view_version moved "
		 "(each change counted once).",
	 .scope = KV_SCOPE_SOURCE,
	 .shown = kv_any_polled,
	 .samples = master_failovers_total},
	{.name = "mooncake_kv_master_split_brain",
	 .kind = KV_GAUGE,
	 .help = "1 while more than one of the source's masters serves: one answered serving between two such answers "
		 "of another.",
	 .scope = KV_SCOPE_SOURCE,
	 .shown = kv_any_polled,
	 .samples = master_split_brain},
	{.name = "mooncake_kv_master_split_brains_total",
	 .kind = KV_COUNTER,
	 .help = "Times more than one of the source's masters began to serve at once.",
	 .scope = KV_SCOPE_SOURCE,
	 .shown = kv_any_polled,
	 .samples = master_split_brains_total},
	{.name = "mooncake_kv_master_view_version",
	 .kind = KV_GAUGE,
	 .help = "The highest view_version the source's masters report in /leader; it grows with every leadership "
		 "change.",
	 .scope = KV_SCOPE_SOURCE,
	 .shown = kv_any_polled,
	 .samples = master_view_version},
	{.name = "mooncake_kv_master_leader",
	 .kind = KV_GAUGE,
	 .help = "1 for the master that serves (the leader), 0 for the others.",
	 .scope = KV_SCOPE_MEMBER,
	 .flags = KV_FAM_MEMBER_ALWAYS,
	 .shown = kv_any_polled,
	 .samples = master_leader},
	{.name = "mooncake_kv_master_role",
	 .kind = KV_GAUGE,
	 .help = "The master's role, one series per role with 1 for the current one: leader (serving or warming up), "
		 "standby (standing by, a candidate, recovering, catching up) or unknown (no answer, or no "
		 "/ha_status: then leader while its status answers 200).",
	 .scope = KV_SCOPE_MEMBER,
	 .labels = "role",
	 .flags = KV_FAM_MEMBER_ALWAYS,
	 .shown = kv_any_polled,
	 .samples = master_role},
	{.name = "mooncake_kv_standby_events_total",
	 .kind = KV_COUNTER,
	 .help = "Events received from a master that does not serve (applied all the same: they are real mutations).",
	 .scope = KV_SCOPE_MEMBER,
	 .flags = KV_FAM_MEMBER_ALWAYS,
	 .shown = kv_any_polled,
	 .samples = standby_events_total},
	{.name = "mooncake_kv_master_ha_poll_errors_total",
	 .kind = KV_COUNTER,
	 .help = "Failed reads of the master's /ha_status or /leader, by reason (a master without them, 404, is not "
		 "counted).",
	 .scope = KV_SCOPE_MEMBER,
	 .labels = "reason",
	 .flags = KV_FAM_MEMBER_ALWAYS,
	 .shown = kv_any_polled,
	 .samples = master_ha_poll_errors_total},
};

KV_FAMILY_TABLE(kv_leadership_families, families);
