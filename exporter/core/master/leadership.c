/* SPDX-License-Identifier: Apache-2.0 */
#include <stddef.h>
#include <string.h>

#include "kv_leadership.h"
#include "kv_master_json.h"

static const char *const state_names[KV_HA__STATES] = {
	"unknown", "starting", "standby", "candidate", "recovering", "catching_up", "leader_warmup", "serving",
};
static const char *const role_names[KV_ROLE__COUNT] = {"unknown", "leader", "standby"};

const char *kv_ha_state_name(enum kv_ha_state s)
{
	return (unsigned)s < KV_HA__STATES ? state_names[s] : "unknown";
}

const char *kv_ha_role_name(enum kv_ha_role r)
{
	return (unsigned)r < KV_ROLE__COUNT ? role_names[r] : "unknown";
}

enum kv_ha_role kv_ha_role_of(enum kv_ha_state s)
{
	if (s == KV_HA_UNKNOWN)
		return KV_ROLE_UNKNOWN;
	return s == KV_HA_SERVING || s == KV_HA_LEADER_WARMUP ? KV_ROLE_LEADER : KV_ROLE_STANDBY;
}

static bool space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

enum mkv_poll_error kv_ha_parse_state(const char *body, size_t len, enum kv_ha_state *state)
{
	while (len && space(*body))
		body++, len--;
	while (len && space(body[len - 1]))
		len--;
	for (int s = KV_HA_UNKNOWN + 1; s < KV_HA__STATES; s++)
		if (strlen(state_names[s]) == len && !memcmp(state_names[s], body, len))
			return *state = (enum kv_ha_state)s, MKV_POLL_OK;
	*state = KV_HA_UNKNOWN;
	return MKV_POLL_FIELD;
}

enum mkv_poll_error kv_ha_parse_leader(const char *body, size_t len, bool *has_view, uint64_t *view)
{
	enum mkv_poll_error rc = MKV_POLL_FIELD;
	*has_view = false;
	json_t *root = kv_master_json(body, len, &rc);
	if (!root)
		return rc;
	rc = MKV_POLL_FIELD;
	const json_t *present = json_object_get(root, "present"), *v = json_object_get(root, "view_version");
	if (!json_is_boolean(present))
		goto out;
	if (json_is_true(present)) {
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			goto out;
		*has_view = true;
		*view = (uint64_t)json_integer_value(v);
	}
	rc = MKV_POLL_OK;
out:
	json_decref(root);
	return rc;
}

void kv_leadership_init(kv_leadership *h)
{
	memset(h, 0, sizeof(*h));
	h->leader = h->last_leader = -1;
}

void kv_failover_tell_init(kv_failover_tell *t)
{
	*t = (kv_failover_tell){.last = -1, .from = -1};
}

bool kv_failover_tell_step(kv_failover_tell *t, unsigned news, int leader, bool leads, double now, double interval,
			   int *from)
{
	bool tell = false;
	if ((news & MKV_LEAD_FAILOVER) && !t->waits) {
		t->waits = true;
		t->from = t->last;
		t->since = now;
	}
	if (t->waits && ((leader >= 0 && (leader != t->from || leads)) || now - t->since >= 2 * interval)) {
		tell = true;
		*from = t->from;
		t->waits = false;
	}
	if (leader >= 0)
		t->last = leader;
	return tell;
}

void kv_leadership_note(kv_leadership *h, kv_ha_obs *slot, const kv_ha_obs *fresh)
{
	uint64_t from = slot->run_from, last = slot->run_last, n = ++h->observed;
	*slot = *fresh;
	if (fresh->answered) {
		from = fresh->serving ? (from ? from : n) : 0;
		last = fresh->serving ? n : 0;
	}
	slot->run_from = from;
	slot->run_last = last;
}

/* b answered that it serves while a's run was open on both sides of it */
static bool inside(const kv_ha_obs *a, const kv_ha_obs *b)
{
	return a->run_from < b->run_last && b->run_last < a->run_last;
}

/* The members' observations where they are kept: in an array of their own
 * (the tests) or inside each member's role, `stride` bytes apart.  Read in
 * place: copying them out would need room sized by the member count. */
typedef struct obs_list {
	const unsigned char *at;
	size_t stride;
} obs_list;

static const kv_ha_obs *obs_at(obs_list l, size_t i)
{
	return (const kv_ha_obs *)(const void *)(l.at + i * l.stride);
}

/* Whether two members serve now and served at one moment for certain;
 * runs[] says which runs. */
static bool split_of(obs_list obs, size_t n, uint64_t runs[2])
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			const kv_ha_obs *a = obs_at(obs, i), *b = obs_at(obs, j);
			if (a->answered && a->serving && b->answered && b->serving && (inside(a, b) || inside(b, a))) {
				runs[0] = a->run_from;
				runs[1] = b->run_from;
				return true;
			}
		}
	return false;
}

static bool judge(kv_leadership *h, obs_list list, size_t n)
{
	size_t serving = 0;
	int first = -1;
	bool leader_serves = false, has_view = false;
	uint64_t view = 0;
	for (size_t i = 0; i < n; i++) {
		const kv_ha_obs *o = obs_at(list, i);
		if (o->answered && o->serving) {
			serving++;
			if (first < 0)
				first = (int)i;
			leader_serves |= (int)i == h->leader;
		}
		if (o->answered && o->has_view && (!has_view || o->view_version > view)) {
			has_view = true;
			view = o->view_version;
		}
	}
	uint64_t runs[2];
	bool split = split_of(list, n, runs);
	if (split && !h->split_brain && (runs[0] != h->split_runs[0] || runs[1] != h->split_runs[1])) {
		h->split_brains++;
		h->split_runs[0] = runs[0];
		h->split_runs[1] = runs[1];
	}
	h->split_brain = split;
	/* in a split brain the member that served before keeps the title: the
	 * other one is the intruder, and nothing has failed over yet */
	h->leader = leader_serves ? h->leader : first;

	bool had_view = h->has_view, moved = has_view && had_view && view > h->view;
	if (has_view && (!had_view || view > h->view)) {
		h->view = view;
		h->has_view = true;
	}
	bool changed = false;
	if (serving == 1) {
		changed = h->last_leader >= 0 && h->leader != h->last_leader;
		h->last_leader = h->leader;
	}

	/* view_version is the masters' own count of leadership changes: where
	 * they report one, it alone decides (once per move, whichever poll shows
	 * it first).  Which member serves can look different from one poll to
	 * the next without any change of leadership (a leader that misses a
	 * poll during a split brain hands its title to the intruder); it counts
	 * only among masters that report no view. */
	bool counted = had_view ? moved : changed;
	h->failovers += counted;
	return counted;
}

bool kv_leadership_judge(kv_leadership *h, const kv_ha_obs *obs, size_t n)
{
	return judge(h, (obs_list){(const unsigned char *)obs, sizeof(*obs)}, n);
}

void kv_member_role_published(kv_member_role *r, uint64_t events)
{
	if (r->not_serving)
		r->standby_pending += events;
}

unsigned kv_leadership_observe(kv_leadership *l, kv_member_role *roles, size_t n, size_t who, const kv_ha_obs *o,
			       bool standby, kv_state *state)
{
	kv_member_role *r = &roles[who];
	unsigned news = 0;
	kv_leadership_note(l, &r->obs, o);
	r->not_serving = o->answered && !o->serving;
	if (r->not_serving) /* it published while standing by, and still stands by */
		r->standby_events += r->standby_pending;
	r->standby_pending = 0;

	uint64_t splits_before = l->split_brains;
	obs_list list = {(const unsigned char *)roles + offsetof(kv_member_role, obs), sizeof(*roles)};
	if (judge(l, list, n)) {
		kv_state_mark_stale(state, KV_STALE_FAILOVER);
		news |= MKV_LEAD_FAILOVER;
	}
	if (l->split_brains != splits_before)
		news |= MKV_LEAD_SPLIT;
	if (n == 1) {
		if (standby && !l->dropped) {
			kv_state_drop(state);
			l->dropped = true;
			news |= MKV_LEAD_DROPPED;
		} else if (o->serving && l->dropped) {
			l->dropped = false;
			news |= MKV_LEAD_RESUMED;
		}
	}
	return news;
}
