/* SPDX-License-Identifier: Apache-2.0 */
/* Leadership among highly available masters (kv_leadership): parsing what the
 * masters say, and judging failovers and split brains from the members'
 * observations as they arrive, one poll at a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kv_common.h"
#include "kv_leadership.h"

#include "support/state_fixture.h"

static enum kv_ha_state ha_state(const char *body, size_t len)
{
	enum kv_ha_state st = KV_HA_STANDBY;
	enum mkv_poll_error rc = kv_ha_parse_state(body, len, &st);
	assert_int_equal(rc, st == KV_HA_UNKNOWN ? MKV_POLL_FIELD : MKV_POLL_OK);
	return st;
}

static void test_parse_state(void **state)
{
	(void)state;
	assert_int_equal(ha_state("serving", 7), KV_HA_SERVING);
	assert_int_equal(ha_state(" leader_warmup\r\n", 16), KV_HA_LEADER_WARMUP);
	assert_int_equal(ha_state("catching_up", 11), KV_HA_CATCHING_UP);
	assert_int_equal(ha_state("standby", 7), KV_HA_STANDBY);
	assert_int_equal(ha_state("servingx", 8), KV_HA_UNKNOWN);
	assert_int_equal(ha_state("serv", 4), KV_HA_UNKNOWN);
	assert_int_equal(ha_state("", 0), KV_HA_UNKNOWN);
	assert_int_equal(ha_state("unknown", 7), KV_HA_UNKNOWN);
	/* upstream's MasterRuntimeRoleToString */
	assert_int_equal(kv_ha_role_of(KV_HA_SERVING), KV_ROLE_LEADER);
	assert_int_equal(kv_ha_role_of(KV_HA_LEADER_WARMUP), KV_ROLE_LEADER);
	for (int s = KV_HA_STARTING; s <= KV_HA_CATCHING_UP; s++)
		assert_int_equal(kv_ha_role_of((enum kv_ha_state)s), KV_ROLE_STANDBY);
	assert_int_equal(kv_ha_role_of(KV_HA_UNKNOWN), KV_ROLE_UNKNOWN);
	assert_string_equal(kv_ha_state_name(KV_HA_CATCHING_UP), "catching_up");
	assert_string_equal(kv_ha_role_name(KV_ROLE_STANDBY), "standby");
}

static void test_parse_leader(void **state)
{
	(void)state;
	bool has;
	uint64_t v = 0;
	const char *ok = "{\"present\":true,\"leader_address\":\"10.0.0.1:50051\",\"view_version\":7}";
	assert_int_equal(kv_ha_parse_leader(ok, strlen(ok), &has, &v), MKV_POLL_OK);
	assert_true(has);
	assert_int_equal(v, 7);
	const char *none = "{\"present\":false}";
	assert_int_equal(kv_ha_parse_leader(none, strlen(none), &has, &v), MKV_POLL_OK);
	assert_false(has);
	/* not JSON, and a key twice: unreadable */
	assert_int_equal(kv_ha_parse_leader("", 0, &has, &v), MKV_POLL_PARSE);
	const char *twice = "{\"present\":true,\"present\":false,\"view_version\":1}";
	assert_int_equal(kv_ha_parse_leader(twice, strlen(twice), &has, &v), MKV_POLL_PARSE);
	static const char *const bad[] = {
		"[]",
		"{\"present\":1}",
		"{\"present\":true}",
		"{\"present\":true,\"view_version\":-1}",
		"{\"present\":true,\"view_version\":\"7\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(kv_ha_parse_leader(bad[i], strlen(bad[i]), &has, &v), MKV_POLL_FIELD);
}

/* A member as a poll sees it: s serving, standby, or down (no answer);
 * view 0: no /leader answer. */
enum { DOWN, STANDBY, SERVING };

static kv_ha_obs obs(int s, uint64_t view)
{
	return (kv_ha_obs){.answered = s != DOWN,
			   .serving = s == SERVING,
			   .state = s == SERVING   ? KV_HA_SERVING
				    : s == STANDBY ? KV_HA_STANDBY
						   : KV_HA_UNKNOWN,
			   .has_view = s != DOWN && view > 0,
			   .view_version = view};
}

/* The members' observations, updated one member at a time as the pollers
 * do, judged after each update; returns the failovers counted. */
struct cluster {
	kv_leadership h;
	kv_ha_obs m[3];
};

/* member i's new observation, not judged yet */
static void see(struct cluster *c, size_t i, int s, uint64_t view)
{
	kv_ha_obs o = obs(s, view);
	kv_leadership_note(&c->h, &c->m[i], &o);
}

static uint64_t poll(struct cluster *c, size_t i, int s, uint64_t view)
{
	see(c, i, s, view);
	kv_leadership_judge(&c->h, c->m, 3);
	return c->h.failovers;
}

static void cluster_init(struct cluster *c)
{
	memset(c, 0, sizeof(*c));
	kv_leadership_init(&c->h);
	for (size_t i = 0; i < 3; i++)
		see(c, i, i ? STANDBY : SERVING, 1);
	kv_leadership_judge(&c->h, c->m, 3);
}

static void test_steady_and_flap(void **state)
{
	(void)state;
	struct cluster c;
	cluster_init(&c);
	assert_int_equal(c.h.leader, 0);
	assert_int_equal(c.h.view, 1);
	for (int i = 0; i < 5; i++)
		assert_int_equal(poll(&c, (size_t)i % 3, i % 3 ? STANDBY : SERVING, 1), 0);
	/* the leader's admin flaps: gone, back, still the leader */
	assert_int_equal(poll(&c, 0, DOWN, 0), 0);
	assert_int_equal(c.h.leader, -1);
	assert_int_equal(poll(&c, 0, SERVING, 1), 0);
	assert_int_equal(c.h.leader, 0);
	/* a standby that stays down changes nothing */
	assert_int_equal(poll(&c, 2, DOWN, 0), 0);
	assert_int_equal(c.h.split_brains, 0);
}

/* The two signs of one failover, in every order the polls can show them:
 * one failover each time. */
static void test_failover_counted_once(void **state)
{
	(void)state;
	struct cluster c;
	/* the new leader's poll shows both */
	cluster_init(&c);
	/* the old leader steps down and knows the new view: counted now */
	assert_int_equal(poll(&c, 0, STANDBY, 2), 1);
	assert_int_equal(poll(&c, 1, SERVING, 2), 1); /* the new leader: the same failover */
	assert_int_equal(c.h.leader, 1);

	/* the serving member changes first, the view after: the masters
	 * report views, so the view's move is what counts */
	cluster_init(&c);
	see(&c, 0, STANDBY, 1);
	see(&c, 1, SERVING, 0); /* its /leader failed this time */
	kv_leadership_judge(&c.h, c.m, 3);
	assert_int_equal(c.h.leader, 1);
	assert_int_equal(c.h.failovers, 0);
	assert_int_equal(poll(&c, 1, SERVING, 2), 1);
	assert_int_equal(poll(&c, 2, STANDBY, 2), 1);

	/* both in one judgement */
	cluster_init(&c);
	see(&c, 0, STANDBY, 2);
	see(&c, 1, SERVING, 2);
	kv_leadership_judge(&c.h, c.m, 3);
	assert_int_equal(c.h.failovers, 1);

	/* a window with nobody serving between the two leaders */
	cluster_init(&c);
	assert_int_equal(poll(&c, 0, STANDBY, 1), 0);
	assert_int_equal(c.h.leader, -1);
	assert_int_equal(poll(&c, 2, SERVING, 2), 1);
	assert_int_equal(poll(&c, 0, STANDBY, 2), 1);
	/* and back again: a second failover */
	assert_int_equal(poll(&c, 2, STANDBY, 3), 2);
	assert_int_equal(poll(&c, 0, SERVING, 3), 2);
	assert_int_equal(c.h.leader, 0);
	assert_int_equal(c.h.view, 3);
}

/* A split brain whose first leader misses polls: the title passes to the
 * intruder and back, and leadership never changed (the view did not move).
 * Seen in CI under load: it used to count two failovers. */
static void test_split_brain_with_a_missed_poll(void **state)
{
	(void)state;
	struct cluster c;
	cluster_init(&c);
	assert_int_equal(poll(&c, 1, SERVING, 1), 0); /* the split brain begins */
	assert_int_equal(poll(&c, 0, DOWN, 0), 0);    /* the leader misses a poll */
	assert_int_equal(c.h.leader, 1);
	assert_int_equal(poll(&c, 0, SERVING, 1), 0);
	assert_int_equal(poll(&c, 1, STANDBY, 1), 0); /* the intruder stands down */
	assert_int_equal(c.h.leader, 0);
	/* then a real failover: one */
	assert_int_equal(poll(&c, 0, STANDBY, 2), 1);
	assert_int_equal(poll(&c, 2, SERVING, 2), 1);
	assert_int_equal(c.h.failovers, 1);
}

/* Masters without /leader: the serving member alone tells. */
static void test_failover_without_views(void **state)
{
	(void)state;
	struct cluster c;
	memset(&c, 0, sizeof(c));
	kv_leadership_init(&c.h);
	see(&c, 0, SERVING, 0), see(&c, 1, STANDBY, 0), see(&c, 2, DOWN, 0);
	kv_leadership_judge(&c.h, c.m, 3);
	assert_false(c.h.has_view);
	assert_int_equal(poll(&c, 0, STANDBY, 0), 0);
	assert_int_equal(poll(&c, 1, SERVING, 0), 1);
	assert_int_equal(poll(&c, 1, STANDBY, 0), 1);
	assert_int_equal(poll(&c, 0, SERVING, 0), 2);
}

/* One master (the sidecar): a promotion with a new view is a failover. */
static void test_one_master(void **state)
{
	(void)state;
	kv_leadership h;
	kv_leadership_init(&h);
	kv_ha_obs o = obs(SERVING, 4);
	kv_leadership_judge(&h, &o, 1);
	o = obs(STANDBY, 4);
	assert_false(kv_leadership_judge(&h, &o, 1));
	o = obs(SERVING, 5);
	assert_true(kv_leadership_judge(&h, &o, 1));
	assert_int_equal(h.failovers, 1);
	/* the first view seen is where we start, not a move */
	kv_leadership_init(&h);
	o = obs(SERVING, 9);
	assert_false(kv_leadership_judge(&h, &o, 1));
}

static void test_split_brain(void **state)
{
	(void)state;
	struct cluster c;
	cluster_init(&c);
	/* the intruder's first answer came after the leader's last one: the two
	 * need not be of one moment (the leader may have stepped down since) */
	assert_int_equal(poll(&c, 1, SERVING, 1), 0);
	assert_false(c.h.split_brain);
	/* the leader still serves: both did when the intruder answered */
	assert_int_equal(poll(&c, 0, SERVING, 1), 0);
	assert_true(c.h.split_brain);
	assert_int_equal(c.h.split_brains, 1);
	assert_int_equal(c.h.leader, 0); /* the one that served before keeps the title */
	assert_int_equal(poll(&c, 2, STANDBY, 1), 0);
	assert_int_equal(c.h.split_brains, 1); /* the same episode */
	/* the leader misses a poll: the split brain is hidden, not over, and
	 * when it answers again it is the same episode (CI once counted two) */
	assert_int_equal(poll(&c, 0, DOWN, 0), 0);
	assert_false(c.h.split_brain);
	assert_int_equal(poll(&c, 0, SERVING, 1), 0);
	assert_true(c.h.split_brain);
	assert_int_equal(c.h.split_brains, 1);
	/* the intruder steps down: over, nothing failed over */
	assert_int_equal(poll(&c, 1, STANDBY, 1), 0);
	assert_false(c.h.split_brain);
	assert_int_equal(c.h.leader, 0);
	assert_int_equal(c.h.failovers, 0);
	/* a failover seen in the worst order, the new leader serving before the
	 * old one's standby answer: no split brain */
	assert_int_equal(poll(&c, 2, SERVING, 2), 1);
	assert_false(c.h.split_brain);
	assert_int_equal(poll(&c, 0, STANDBY, 2), 1);
	assert_int_equal(c.h.leader, 2);
	assert_int_equal(c.h.split_brains, 1);
	/* a second episode: a deposed leader that never learnt the new view and
	 * serves on, seen between two answers of the new leader */
	assert_int_equal(poll(&c, 0, SERVING, 1), 1);
	assert_false(c.h.split_brain);
	assert_int_equal(poll(&c, 2, SERVING, 2), 1);
	assert_true(c.h.split_brain);
	assert_int_equal(c.h.split_brains, 2);
	assert_int_equal(c.h.leader, 2);
	assert_int_equal(poll(&c, 0, STANDBY, 2), 1);
	assert_false(c.h.split_brain);
	assert_int_equal(c.h.split_brains, 2);
}

/* Random histories of failovers, each a change of leader and a view bump
 * seen by the pollers in random order with random flaps in between: the
 * count equals the failovers played. */
static void test_random_histories(void **state)
{
	(void)state;
	uint64_t rng = 42;
	for (int run = 0; run < 300; run++) {
		struct cluster c;
		cluster_init(&c);
		size_t leader = 0;
		uint64_t view = 1, played = 0;
		for (int step = 0; step < 40; step++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			unsigned r = (unsigned)(rng >> 33);
			if (r % 4 == 0) { /* a failover */
				size_t next = (leader + 1 + (r >> 4) % 2) % 3;
				view++;
				played++;
				/* old leader down, then the others in a random order */
				size_t order[3] = {leader, next, 3 - leader - next};
				if ((r >> 8) & 1) {
					size_t t = order[0];
					order[0] = order[1], order[1] = t;
				}
				for (size_t k = 0; k < 3; k++)
					poll(&c, order[k], order[k] == next ? SERVING : STANDBY, view);
				leader = next;
			} else { /* a flap of some member, then it answers again */
				size_t who = (r >> 4) % 3;
				poll(&c, who, DOWN, 0);
				poll(&c, who, who == leader ? SERVING : STANDBY, view);
			}
		}
		assert_int_equal(c.h.failovers, played);
		assert_int_equal(c.h.leader, (int)leader);
		/* never two at once, whatever order the pollers saw them in */
		assert_int_equal(c.h.split_brains, 0);
	}
}

/* --- the poller's policy: kv_leadership_observe --- */

struct store {
	mkv_budget budget;
	kv_state *st;
	kv_leadership l;
	kv_member_role r[2];
};

static int store_setup(void **state)
{
	struct store *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->st = state_open(&s->budget);
	kv_leadership_init(&s->l);
	*state = s;
	return 0;
}

static int store_teardown(void **state)
{
	struct store *s = *state;
	kv_state_free(s->st);
	free(s);
	return 0;
}

static uint64_t store_objects(const struct store *s, unsigned *stale)
{
	uint64_t n = 0;
	*stale = 0;
	for (size_t i = 0; i < kv_state_tenant_count(s->st); i++) {
		n += kv_tenant_objects(kv_state_tenant_at(s->st, i));
		*stale |= kv_state_tenant_at(s->st, i)->stale;
	}
	return n;
}

static const kv_ha_obs OBS_SERVING = {.answered = true, .serving = true, .state = KV_HA_SERVING};
static const kv_ha_obs OBS_STANDBY = {.answered = true, .serving = false, .state = KV_HA_STANDBY};
static const kv_ha_obs OBS_DOWN = {.answered = false};

static void test_standby_events(void **state)
{
	struct store *s = *state;
	kv_leadership *l = &s->l;
	kv_member_role *r = s->r;
	kv_leadership_observe(l, r, 2, 0, &OBS_SERVING, false, s->st);
	kv_leadership_observe(l, r, 2, 1, &OBS_STANDBY, true, s->st);
	/* the leader's events are nobody's business */
	kv_member_role_published(&r[0], 10);
	assert_int_equal(r[0].standby_pending, 0);
	/* a standby's are counted once the next poll confirms it stands by */
	kv_member_role_published(&r[1], 5);
	assert_int_equal(r[1].standby_events, 0);
	kv_leadership_observe(l, r, 2, 1, &OBS_STANDBY, true, s->st);
	assert_int_equal(r[1].standby_events, 5);
	assert_int_equal(r[1].standby_pending, 0);
	/* a promoted leader publishes before a poll sees it serve: not counted */
	kv_member_role_published(&r[1], 7);
	kv_leadership_observe(l, r, 2, 0, &OBS_DOWN, false, s->st);
	unsigned news = kv_leadership_observe(l, r, 2, 1, &OBS_SERVING, false, s->st);
	assert_int_equal(r[1].standby_events, 5);
	assert_true(news & MKV_LEAD_FAILOVER);
	kv_member_role_published(&r[1], 3);
	assert_int_equal(r[1].standby_pending, 0);
}

static void test_failover_marks_stale(void **state)
{
	struct store *s = *state;
	kv_leadership *l = &s->l;
	kv_member_role *r = s->r;
	assert_int_equal(kv_leadership_observe(l, r, 2, 0, &OBS_SERVING, false, s->st), 0);
	assert_int_equal(kv_leadership_observe(l, r, 2, 1, &OBS_STANDBY, true, s->st), 0);
	state_put(s->st, "default", 4);
	unsigned stale;
	assert_int_equal(store_objects(s, &stale), 4);
	assert_false(stale & KV_STALE_FAILOVER);
	/* both serve (the leader's next answer says so): a split brain, not a
	 * failover; nothing stale */
	assert_int_equal(kv_leadership_observe(l, r, 2, 1, &OBS_SERVING, false, s->st), 0);
	assert_int_equal(kv_leadership_observe(l, r, 2, 0, &OBS_SERVING, false, s->st), MKV_LEAD_SPLIT);
	assert_int_equal(l->leader, 0);
	store_objects(s, &stale);
	assert_false(stale & KV_STALE_FAILOVER);
	/* the old leader stands by: leadership moved, the tenants are stale,
	 * and their objects stay (the store still holds them) */
	assert_int_equal(kv_leadership_observe(l, r, 2, 0, &OBS_STANDBY, true, s->st), MKV_LEAD_FAILOVER);
	assert_int_equal(l->leader, 1);
	assert_int_equal(store_objects(s, &stale), 4);
	assert_true(stale & KV_STALE_FAILOVER);
	assert_false(l->dropped); /* a source of several members never drops its state */
}

static void test_one_master_drops_and_resumes(void **state)
{
	struct store *s = *state;
	kv_leadership *l = &s->l;
	kv_member_role *r = s->r;
	assert_int_equal(kv_leadership_observe(l, r, 1, 0, &OBS_SERVING, false, s->st), 0);
	state_put(s->st, "default", 3);
	/* down is not standing by: the figures stay */
	assert_int_equal(kv_leadership_observe(l, r, 1, 0, &OBS_DOWN, false, s->st), 0);
	unsigned stale;
	assert_int_equal(store_objects(s, &stale), 3);
	/* it stands by (503): another master leads the store, and its own
	 * exporter describes it; this source's figures go, once */
	assert_int_equal(kv_leadership_observe(l, r, 1, 0, &OBS_STANDBY, true, s->st), MKV_LEAD_DROPPED);
	assert_true(l->dropped);
	assert_int_equal(store_objects(s, &stale), 0);
	assert_int_equal(kv_leadership_observe(l, r, 1, 0, &OBS_STANDBY, true, s->st), 0);
	assert_int_equal(kv_leadership_observe(l, r, 1, 0, &OBS_SERVING, false, s->st), MKV_LEAD_RESUMED);
	assert_false(l->dropped);
	assert_int_equal(kv_leadership_observe(l, r, 1, 0, &OBS_SERVING, false, s->st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_state),
		cmocka_unit_test(test_parse_leader),
		cmocka_unit_test(test_steady_and_flap),
		cmocka_unit_test(test_failover_counted_once),
		cmocka_unit_test(test_failover_without_views),
		cmocka_unit_test(test_one_master),
		cmocka_unit_test(test_split_brain),
		cmocka_unit_test(test_split_brain_with_a_missed_poll),
		cmocka_unit_test(test_random_histories),
		cmocka_unit_test_setup_teardown(test_standby_events, store_setup, store_teardown),
		cmocka_unit_test_setup_teardown(test_failover_marks_stale, store_setup, store_teardown),
		cmocka_unit_test_setup_teardown(test_one_master_drops_and_resumes, store_setup, store_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
