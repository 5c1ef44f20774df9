/* SPDX-License-Identifier: Apache-2.0 */
/* Highly available masters: which member serves, failovers, split brains,
 * each member's role, and events from members that do not serve.  For the
 * sources whose members are all polled. */
#include "kv_family.h"

#define LEAD a->s->leadership
KV_U64(failovers, a->s->polled, LEAD.failovers)
KV_U64(split_brain, a->s->polled, LEAD.split_brain)
KV_U64(split_brains, a->s->polled, LEAD.split_brains)
KV_U64(view, (a->s->polled && LEAD.has_view), LEAD.view)
KV_U64(leader, a->s->polled, LEAD.leader == (int)(a->m - a->s->members))
KV_U64(standby_events, a->s->polled, a->m->standby_events)

static void role(kv_emit *e, const kv_at *a)
{
	if (!a->s->polled)
		return;
	const kv_ha_obs *o = &a->m->ha;
	enum kv_ha_role now = kv_ha_role_of(o->state);
	if (now == KV_ROLE_UNKNOWN && o->answered)
		now = o->serving ? KV_ROLE_LEADER : KV_ROLE_STANDBY;
	for (int r = 0; r < KV_ROLE__COUNT; r++)
		kv_sample_u64(e, (kv_label){"role", kv_ha_role_name(r)}, now == (enum kv_ha_role)r);
}

static void ha_poll_errors(kv_emit *e, const kv_at *a)
{
	if (a->s->polled)
		kv_sample_poll_errors(e, a->m->ha_errors);
}

#define SOURCE KV_SCOPE_SOURCE, 0, kv_any_polled
#define MEMBER KV_SCOPE_MEMBER, KV_FAM_MEMBER_ALWAYS, kv_any_polled

static const kv_family families[] = {
	{"mooncake_kv_master_failovers_total", "counter",
	 "Leadership changes among the source's masters: the serving master changed or view_version moved "
	 "(each change counted once).",
	 SOURCE, failovers},
	{"mooncake_kv_master_split_brain", "gauge",
	 "1 while more than one of the source's masters serves: one answered serving between two such answers of "
	 "another.",
	 SOURCE, split_brain},
	{"mooncake_kv_master_split_brains_total", "counter",
	 "Times more than one of the source's masters began to serve at once.", SOURCE, split_brains},
	{"mooncake_kv_master_view_version", "gauge",
	 "The highest view_version the source's masters report in /leader; it grows with every leadership "
	 "change.",
	 SOURCE, view},
	{"mooncake_kv_master_leader", "gauge", "1 for the master that serves (the leader), 0 for the others.", MEMBER,
	 leader},
	{"mooncake_kv_master_role", "gauge",
	 "The master's role, one series per role with 1 for the current one: leader (serving or warming up), "
	 "standby (standing by, a candidate, recovering, catching up) or unknown (no answer, or no /ha_status: "
	 "then leader while its status answers 200).",
	 MEMBER, role},
	{"mooncake_kv_standby_events_total", "counter",
	 "Events received from a master that does not serve (applied all the same: they are real mutations).", MEMBER,
	 standby_events},
	{"mooncake_kv_master_ha_poll_errors_total", "counter",
	 "Failed reads of the master's /ha_status or /leader, by reason (a master without them, 404, is not "
	 "counted).",
	 MEMBER, ha_poll_errors},
};

KV_FAMILY_TABLE(kv_leadership_families, families);
