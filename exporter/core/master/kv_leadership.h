/* SPDX-License-Identifier: Apache-2.0 */
/* Highly available masters: what each member's admin endpoints say of its
 * role (GET /ha_status, GET /leader), and the judgement over all members of
 * a source: which one serves, when leadership changed (a failover), and
 * when two serve at once (a split brain).  Pure: the pollers hand each
 * member's latest answers here, under the source's lock. */
#ifndef KV_LEADERSHIP_H
#define KV_LEADERSHIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mooncake_kv/store.h> /* enum mkv_leadership_news */

#include "kv_state.h"

/* upstream's MasterRuntimeState (include/ha/ha_types.h), as /ha_status
 * names it; KV_HA_UNKNOWN: no answer, or a word upstream does not use */
enum kv_ha_state {
	KV_HA_UNKNOWN = 0,
	KV_HA_STARTING,
	KV_HA_STANDBY,
	KV_HA_CANDIDATE,
	KV_HA_RECOVERING,
	KV_HA_CATCHING_UP,
	KV_HA_LEADER_WARMUP,
	KV_HA_SERVING,
	KV_HA__STATES
};

/* upstream's MasterRuntimeRoleToString: leader for leader_warmup and
 * serving, standby for the other states */
enum kv_ha_role { KV_ROLE_UNKNOWN = 0, KV_ROLE_LEADER, KV_ROLE_STANDBY, KV_ROLE__COUNT };

const char *kv_ha_state_name(enum kv_ha_state s);
const char *kv_ha_role_name(enum kv_ha_role r);
enum kv_ha_role kv_ha_role_of(enum kv_ha_state s);

/* The body of /ha_status (text/plain, surrounding white space ignored):
 * MKV_POLL_OK, or MKV_POLL_FIELD for a word upstream does not use (*state
 * KV_HA_UNKNOWN). */
enum mkv_poll_error kv_ha_parse_state(const char *body, size_t len, enum kv_ha_state *state);

/* The body of /leader: {"present":bool,"leader_address":"...","view_version":N}.
 * Returns MKV_POLL_OK (has_view false when no leader is present),
 * MKV_POLL_PARSE, MKV_POLL_FIELD or MKV_POLL_NO_MEMORY. */
enum mkv_poll_error kv_ha_parse_leader(const char *body, size_t len, bool *has_view, uint64_t *view);

/* One member as its last polls saw it. */
typedef struct kv_ha_obs {
	bool answered;          /* its last status poll got an answer (200 or 503) */
	bool serving;           /* it serves: /ha_status says serving, or (no /ha_status) the status answered 200 */
	enum kv_ha_state state; /* KV_HA_UNKNOWN when it has no /ha_status */
	bool has_view;
	uint64_t view_version; /* of the leader it knows */
	/* kept by kv_leadership_note, not by the poller: the member's latest run
	 * of answers saying it serves, as the numbers of the observations noted
	 * (run_from 0: no run open); a poll without an answer leaves it open */
	uint64_t run_from, run_last;
} kv_ha_obs;

typedef struct kv_leadership {
	int leader;      /* index of the serving member, -1: none serves now */
	int last_leader; /* the last member that served alone, -1: none yet */
	bool has_view;
	uint64_t view; /* the highest view_version any member reported */
	uint64_t failovers;
	bool split_brain; /* several members serve now, for certain */
	uint64_t split_brains;
	uint64_t split_runs[2]; /* run_from of the two runs of the last split brain counted */
	uint64_t observed;      /* observations noted */
	bool dropped;           /* a one-master source whose master stands by: its state is dropped */
} kv_leadership;

/* One member's role as its polls and its stream show it. */
typedef struct kv_member_role {
	kv_ha_obs obs;            /* its last observation */
	bool not_serving;         /* the last poll got an answer that says it does not serve */
	uint64_t standby_events;  /* events it published while not serving */
	uint64_t standby_pending; /* events since the last poll said it does not serve */
} kv_member_role;

/* What an observation changed, as bits (for the log). */

void kv_leadership_init(kv_leadership *h);

/* When a failover is told (the log's warning names the new leader): the
 * poll that finds a failover may not know its new leader yet.  When the
 * new leader's answer moves the view, the old leader's last answer still
 * says it serves (the judgement keeps it leader until it answers again),
 * and when the old leader's does, the new one may not have answered as
 * leader yet.  So the telling waits until the judgement names a leader
 * other than the one before (or the same one, re-elected, by its own
 * poll), two poll intervals at most. */
typedef struct kv_failover_tell {
	int last;     /* the member last judged to serve, -1: none yet */
	bool waits;   /* a failover not told yet */
	int from;     /* its leader before */
	double since; /* when it was found (unix seconds) */
} kv_failover_tell;

void kv_failover_tell_init(kv_failover_tell *t);
/* After a poll (its leadership news bits, the leader judged now, whether
 * the polled member leads, at now, polls `interval` apart): true when a
 * failover is to be told now, with *from its leader before (-1: none). */
bool kv_failover_tell_step(kv_failover_tell *t, unsigned news, int leader, bool leads, double now, double interval,
			   int *from);

/* A message of `events` events came from the member.  Events published
 * while its last poll said it does not serve are real mutations (applied),
 * and a sign of trouble: counted as standby events once the next poll
 * confirms it still does not serve (a promoted leader publishes before a
 * poll can see it serve). */
void kv_member_role_published(kv_member_role *r, uint64_t events);

/* Member `who` of roles[0..n) was observed as *o (its status answered 503
 * when `standby`).  Settles its standby events, judges leadership across
 * the members and applies what follows to the source's state: a failover
 * marks the tenants stale (the new leader's publisher starts afresh, and
 * what the old one published last may never have reached us); a one-master
 * source whose master stands by drops its state until the master serves
 * again, so that no sum counts the store twice (docs/design.md, "Highly
 * available masters").  Returns enum mkv_leadership_news bits. */
unsigned kv_leadership_observe(kv_leadership *l, kv_member_role *roles, size_t n, size_t who, const kv_ha_obs *o,
			       bool standby, kv_state *state);

/* A member's new observation *fresh into its slot: numbered, its serving
 * run carried on, begun or closed. */
void kv_leadership_note(kv_leadership *h, kv_ha_obs *slot, const kv_ha_obs *fresh);

/* Judges the members' latest observations (each put in place by
 * kv_leadership_note).  Returns true when a failover was counted by this
 * call.  The pollers look at the members one at a time, so two answers
 * saying "serving" may not be of the same moment: the old leader's last
 * one and the new leader's first in a failover are not.  A split brain is
 * certain only where one member answered that it serves between two such
 * answers of the other's run; it counts once per pair of runs, however
 * often a missed poll hides it. */
bool kv_leadership_judge(kv_leadership *h, const kv_ha_obs *obs, size_t n);

#endif
