/* SPDX-License-Identifier: Apache-2.0 */
/* Residency: every rule of a life's beginning and end (docs/design.md,
 * "Residency"), through a stream (decode + sequence + state), in both
 * dialects.  Each event carries its own publisher timestamp; the expected
 * lifetimes are differences of the timestamps the test sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "kv_stream.h"
#include "support/feed.h"
#include "support/msgbuild.h"

#include <cmocka.h>

#define T0 1795982104612ll /* the publisher's clock at the first event */

struct fx {
	mkv_budget budget;
	kv_stream *st;
	uint64_t seq, eid;
	enum mkv_dialect d;
};

static int setup_d(void **state, enum mkv_dialect d)
{
	struct fx *f = calloc(1, sizeof(*f));
	mkv_budget_init(&f->budget, 1000, 1000000);
	assert_non_null(f->st = kv_stream_new(&f->budget, 99));
	kv_stream_set_dialect(f->st, d);
	f->d = d;
	*state = f;
	return 0;
}

static int setup_media(void **state)
{
	return setup_d(state, MKV_DIALECT_MEDIA);
}

static int setup_object(void **state)
{
	return setup_d(state, MKV_DIALECT_OBJECT);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	kv_stream_free(f->st);
	assert_int_equal(atomic_load(&f->budget.objects), 0);
	free(f);
	return 0;
}

/* One event, its own timestamp at ms after T0 (its message's too). */
static void ev_at(struct fx *f, int64_t ms, const char *type, const char *tenant_id, const char *medium,
		  const char *key)
{
	ev_spec e;
	ev_init(&e, EV_UPSTREAM, type, ++f->eid, B, tenant_id, medium, key);
	ev_set(&e, INT("timestamp", T0 + ms));
	assert_int_equal(feed_at(f->st, ++f->seq, &e, 1, T0 + ms), MKV_OK);
}

/* A cleared makes the tenant exact: from there, births are seen. */
static void exact(struct fx *f, int64_t ms, const char *t)
{
	ev_at(f, ms, "cleared", t, NULL, NULL);
	assert_int_equal(tenant(f->st, t)->stale, 0);
}

static const kv_life_hist *life(struct fx *f, const char *t)
{
	return &tenant(f->st, t)->counts.life;
}

/* The bucket a lifetime of ms lands in (the first bound not below it). */
static unsigned bucket_of(uint64_t ms)
{
	unsigned i = 0;
	while (i < KV_LIFE_BUCKETS && ms > kv_life_bounds_ms[i])
		i++;
	return i;
}

static void expect_lives(struct fx *f, const char *t, const uint64_t *ms, size_t n, uint64_t unobserved)
{
	const kv_life_hist *h = life(f, t);
	uint64_t counts[KV_LIFE_BUCKETS + 1] = {0}, sum = 0;
	for (size_t i = 0; i < n; i++) {
		counts[bucket_of(ms[i])]++;
		sum += ms[i];
	}
	assert_memory_equal(h->counts, counts, sizeof(counts));
	assert_int_equal(h->count, n);
	assert_int_equal(h->sum_ms, sum);
	assert_int_equal(h->unobserved, unobserved);
}

/* stored ... removed: one life, the difference of the two timestamps, to
 * the millisecond; the bucket bounds are inclusive. */
static void test_one_life(void **state)
{
	struct fx *f = *state;
	exact(f, 0, "t");
	ev_at(f, 1000, "stored", "t", "cpu", "a");
	ev_at(f, 6000, "removed", "t", "cpu", "a"); /* 5000 ms: le="5" */
	ev_at(f, 6000, "stored", "t", "disk", "b");
	ev_at(f, 6001, "removed", "t", "disk", "b"); /* 1 ms */
	ev_at(f, 7000, "stored", "t", "cpu", "c");
	ev_at(f, 7000 + 86400001, "removed", "t", "cpu", "c"); /* above a day: +Inf */
	uint64_t want[] = {5000, 1, 86400001};
	expect_lives(f, "t", want, 3, 0);
	assert_int_equal(life(f, "t")->counts[2], 1);
	assert_int_equal(life(f, "t")->counts[KV_LIFE_BUCKETS], 1);
}

/* A second medium is no new life; in the media dialect the life ends with
 * the last medium, in the object dialect with any removed. */
static void test_media_of_one_life(void **state)
{
	struct fx *f = *state;
	exact(f, 0, "t");
	ev_at(f, 1000, "stored", "t", "cpu", "a");
	ev_at(f, 2000, "stored", "t", "disk", "a");
	ev_at(f, 3000, "removed", "t", "cpu", "a");
	if (f->d == MKV_DIALECT_MEDIA) {
		expect_lives(f, "t", NULL, 0, 0); /* still on disk */
		ev_at(f, 4000, "removed", "t", "disk", "a");
		uint64_t want[] = {3000};
		expect_lives(f, "t", want, 1, 0);
	} else {
		uint64_t want[] = {2000};
		expect_lives(f, "t", want, 1, 0);
	}
}

/* Upsert.  Object dialect (main): UpsertEnd publishes a stored for each
 * replica type, the replaced ones nothing: the object never went, its life
 * goes on.  Media dialect (conductor): removed for each medium it no longer
 * has, then stored for each it has: a move to other media makes it absent
 * for a moment (one life ends, another begins); one that keeps a medium
 * goes on. */
static void test_upsert(void **state)
{
	struct fx *f = *state;
	exact(f, 0, "t");
	ev_at(f, 1000, "stored", "t", "cpu", "a");
	if (f->d == MKV_DIALECT_OBJECT) {
		ev_at(f, 2000, "stored", "t", "cpu", "a");  /* upsert */
		ev_at(f, 2000, "stored", "t", "disk", "a"); /* and a disk replica */
		ev_at(f, 9000, "removed", "t", "cpu", "a");
		uint64_t want[] = {8000};
		expect_lives(f, "t", want, 1, 0);
		return;
	}
	/* cpu -> disk: removed cpu, stored disk */
	ev_at(f, 2000, "removed", "t", "cpu", "a");
	ev_at(f, 2000, "stored", "t", "disk", "a");
	/* disk -> disk + cpu: stored disk (held), stored cpu */
	ev_at(f, 3000, "stored", "t", "disk", "a");
	ev_at(f, 3000, "stored", "t", "cpu", "a");
	ev_at(f, 10000, "removed", "t", "cpu", "a");
	ev_at(f, 10000, "removed", "t", "disk", "a");
	uint64_t want[] = {1000, 8000};
	expect_lives(f, "t", want, 2, 0);
}

/* A removal of an object not held is no life: nothing observed, nothing
 * unobserved (it is an unknown removal). */
static void test_removal_of_object_not_held(void **state)
{
	struct fx *f = *state;
	exact(f, 0, "t");
	ev_at(f, 1000, "removed", "t", "cpu", "ghost");
	expect_lives(f, "t", NULL, 0, 0);
	assert_int_equal(tenant(f->st, "t")->counts.removed_unknown, 1);
}

/* A tenant that is not exact keeps no birth: a stored of an object it does
 * not hold may be one that was there before we joined (an upsert, a second
 * replica, an offload).  Its lives end unobserved. */
static void test_not_exact_no_birth(void **state)
{
	struct fx *f = *state;
	ev_at(f, 1000, "stored", "t", "cpu", "a"); /* stale since start-up */
	assert_true(tenant(f->st, "t")->stale != 0);
	ev_at(f, 5000, "removed", "t", "cpu", "a");
	expect_lives(f, "t", NULL, 0, 1);
	assert_int_equal(tenant(f->st, "t")->objects.births_n, 0);
	assert_null(tenant(f->st, "t")->objects.births); /* no memory for births */
}

/* Objects present before a gap: their births are forgotten, they end
 * unobserved; births after the gap too (the tenant is no longer exact),
 * until a cleared makes it exact again. */
static void test_objects_present_before_a_gap(void **state)
{
	struct fx *f = *state;
	exact(f, 0, "t");
	ev_at(f, 1000, "stored", "t", "cpu", "a");
	ev_at(f, 1000, "stored", "t", "cpu", "b");
	assert_int_equal(tenant(f->st, "t")->objects.births_n, 2);
	f->seq += 5; /* five messages lost */
	ev_at(f, 2000, "stored", "t", "cpu", "c");
	assert_true(tenant(f->st, "t")->stale & KV_STALE_GAP);
	assert_int_equal(tenant(f->st, "t")->objects.births_n, 0);
	ev_at(f, 3000, "removed", "t", "cpu", "a");
	ev_at(f, 3000, "removed", "t", "cpu", "c");
	expect_lives(f, "t", NULL, 0, 2);
	/* a cleared ends b's life (unobserved) and makes the tenant exact */
	exact(f, 4000, "t");
	expect_lives(f, "t", NULL, 0, 3);
	ev_at(f, 5000, "stored", "t", "cpu", "d");
	ev_at(f, 7500, "removed", "t", "cpu", "d");
	uint64_t want[] = {2500};
	expect_lives(f, "t", want, 1, 3);
}

/* A publisher restart: a new process, a new clock; what was born before
 * ends unobserved. */
static void test_restart(void **state)
{
	struct fx *f = *state;
	exact(f, 0, "t");
	ev_at(f, 1000, "stored", "t", "cpu", "a");
	f->seq = 0; /* the next message is number 1 of a new process */
	f->eid = 0;
	ev_at(f, 500, "removed", "t", "cpu", "a");
	expect_lives(f, "t", NULL, 0, 1);
}

/* A cleared ends every life of its tenant at its own timestamp. */
static void test_cleared_ends_every_life(void **state)
{
	struct fx *f = *state;
	exact(f, 0, "t");
	ev_at(f, 1000, "stored", "t", "cpu", "a");
	ev_at(f, 2000, "stored", "t", "disk", "b");
	ev_at(f, 2000, "stored", "t", "cpu", "b");
	ev_at(f, 4000, "cleared", "t", NULL, NULL);
	uint64_t want[] = {3000, 2000};
	expect_lives(f, "t", want, 2, 0);
	assert_int_equal(kv_tenant_objects(tenant(f->st, "t")), 0);
	/* another tenant's lives are not touched */
	exact(f, 4000, "u");
	ev_at(f, 4500, "stored", "u", "cpu", "x");
	ev_at(f, 5000, "cleared", "t", NULL, NULL);
	expect_lives(f, "u", NULL, 0, 0);
	assert_int_equal(kv_tenant_objects(tenant(f->st, "u")), 1);
	ev_at(f, 5500, "removed", "u", "cpu", "x");
}

/* A timestamp older than one the publisher already sent gives no
 * observation (neither a birth nor an end) and is counted; a missing one
 * is its message's; a malformed one is counted and gives none. */
static void test_timestamps_backwards(void **state)
{
	struct fx *f = *state;
	exact(f, 0, "t");
	ev_at(f, 5000, "stored", "t", "cpu", "a");
	ev_at(f, 4000, "stored", "t", "cpu", "b"); /* backwards: b's birth unseen */
	ev_at(f, 6000, "stored", "t", "cpu", "c");
	ev_at(f, 5500, "removed", "t", "cpu", "a"); /* backwards: a's end unusable */
	ev_at(f, 7000, "removed", "t", "cpu", "b");
	ev_at(f, 8000, "removed", "t", "cpu", "c");
	uint64_t want[] = {2000};
	expect_lives(f, "t", want, 1, 2);
	assert_int_equal(kv_stream_stats_of(f->st)->timestamps_backwards, 2);

	/* without its own timestamp an event has its message's */
	ev_spec e;
	ev_init(&e, EV_UPSTREAM, "stored", ++f->eid, B, "t", "cpu", "d");
	ev_del(&e, "timestamp");
	assert_int_equal(feed_at(f->st, ++f->seq, &e, 1, T0 + 9000), MKV_OK);
	/* a malformed one: no birth, counted */
	ev_init(&e, EV_UPSTREAM, "stored", ++f->eid, B, "t", "cpu", "e");
	ev_set(&e, STR("timestamp", "yesterday"));
	assert_int_equal(feed_at(f->st, ++f->seq, &e, 1, T0 + 9000), MKV_OK);
	assert_int_equal(kv_stream_stats_of(f->st)->timestamps_invalid, 1);
	ev_at(f, 10000, "removed", "t", "cpu", "d");
	ev_at(f, 10000, "removed", "t", "cpu", "e");
	uint64_t want2[] = {2000, 1000};
	expect_lives(f, "t", want2, 2, 3);
}

/* Key groups: the group of the removed key gets the life; a cleared ends
 * its groups' lives unobserved (the table keeps no group per object). */
static void test_key_groups(void **state)
{
	struct fx *f = *state;
	mkv_keygroup_re *re;
	char err[128];
	assert_non_null(re = mkv_keygroup_compile("^(?<model>[^/]+)/", err, sizeof(err)));
	assert_int_equal(kv_stream_set_keygroups(f->st, re), MKV_OK);
	exact(f, 0, "t");
	ev_at(f, 1000, "stored", "t", "cpu", "m1/a");
	ev_at(f, 1000, "stored", "t", "cpu", "m2/a");
	ev_at(f, 3000, "removed", "t", "cpu", "m1/a");
	ev_at(f, 4000, "cleared", "t", NULL, NULL);
	const kv_state *s = kv_stream_state(f->st);
	const kv_tenant *t = tenant(f->st, "t");
	for (uint32_t i = 0; i < t->groups.n; i++) {
		const kv_group_counts *g = &t->groups.v[i];
		mkv_str name = kv_state_group_name(s, g->id);
		if (name.len == 2 && !memcmp(name.ptr, "m1", 2)) {
			assert_int_equal(g->life.count, 1);
			assert_int_equal(g->life.sum_ms, 2000);
			assert_int_equal(g->life.unobserved, 0);
		} else if (name.len == 2 && !memcmp(name.ptr, "m2", 2)) {
			assert_int_equal(g->life.count, 0);
			assert_int_equal(g->life.unobserved, 1);
		}
	}
	uint64_t want[] = {2000, 3000}; /* the tenant's figure has both */
	expect_lives(f, "t", want, 2, 0);
	kv_stream_free(f->st);
	f->st = kv_stream_new(&f->budget, 99);
	mkv_keygroup_free(re);
}

/* Residency off: no births (no memory for them), no figures. */
static void test_off(void **state)
{
	struct fx *f = *state;
	kv_state_set_residency((kv_state *)kv_stream_state(f->st), false);
	exact(f, 0, "t");
	ev_at(f, 1000, "stored", "t", "cpu", "a");
	assert_null(tenant(f->st, "t")->objects.births);
	ev_at(f, 2000, "removed", "t", "cpu", "a");
	expect_lives(f, "t", NULL, 0, 0);
	/* and back on: births from then */
	kv_state_set_residency((kv_state *)kv_stream_state(f->st), true);
	ev_at(f, 3000, "stored", "t", "cpu", "a");
	assert_non_null(tenant(f->st, "t")->objects.births);
	ev_at(f, 4000, "removed", "t", "cpu", "a");
	uint64_t want[] = {1000};
	expect_lives(f, "t", want, 1, 0);
}

/* The mean age's inputs: the births held and the publisher's clock. */
static void test_mean_birth_and_clock(void **state)
{
	struct fx *f = *state;
	exact(f, 0, "t");
	ev_at(f, 1000, "stored", "t", "cpu", "a");
	ev_at(f, 3000, "stored", "t", "cpu", "b");
	ev_at(f, 8000, "stored", "t", "cpu", "c");
	ev_at(f, 9000, "removed", "t", "cpu", "c");
	double mean;
	assert_true(kv_objtable_births_mean(&tenant(f->st, "t")->objects, &mean));
	assert_true(mean == (double)(T0 + 2000));
	const kv_stream_stats *st = kv_stream_stats_of(f->st);
	assert_true(st->last_timestamp_ms == T0 + 9000 && st->last_timestamp_at_ms == T0 + 9000);
	ev_at(f, 9500, "removed", "t", "cpu", "a");
	ev_at(f, 9500, "removed", "t", "cpu", "b");
	assert_false(kv_objtable_births_mean(&tenant(f->st, "t")->objects, &mean));
}

/* One reconciliation of tenant default: the master lists `keys` (on cpu);
 * a key the stream's view knew keeps its birth, the others have none. */
static void reconcile(struct fx *f, const char *const *keys, size_t n)
{
	kv_state *s = (kv_state *)kv_stream_state(f->st);
	kv_recon_log log;
	kv_recon_log_init(&log, 100);
	assert_int_equal(kv_state_record_start(s, S(B), S("default"), &log), MKV_OK);
	const kv_tenant *t = tenant(f->st, "default");
	kv_recon_table fresh = {0};
	assert_int_equal(kv_objtable_births(&fresh.objects, kv_state_residency(s)), MKV_OK);
	for (size_t i = 0; i < n; i++) {
		uint64_t h = kv_state_key_hash(s, S(keys[i]));
		assert_int_equal(kv_recon_put(&fresh, h, MKV_MEDIUM_CPU, 0, kv_state_birth_by_hash(t, h)), MKV_OK);
	}
	kv_objtable old;
	assert_int_equal(kv_state_adopt(s, &fresh, 0, &old), MKV_OK);
	kv_objtable_clear(&old);
	kv_state_record_stop(s);
	kv_recon_log_free(&log);
}

/* Objects added by reconciliation have no birth; a reconciliation makes
 * the tenant exact, so births are seen from then; one of an exact tenant
 * carries the births of the lives it goes on with. */
static void test_reconciliation(void **state)
{
	struct fx *f = *state;
	ev_at(f, 1000, "stored", "default", "cpu", "a"); /* stale since start-up: no birth */
	const char *const first[] = {"a", "x"};          /* x: the stream never said */
	reconcile(f, first, 2);
	assert_int_equal(tenant(f->st, "default")->stale, 0);
	ev_at(f, 2000, "stored", "default", "cpu", "b");
	ev_at(f, 3000, "removed", "default", "cpu", "a");
	ev_at(f, 3000, "removed", "default", "cpu", "x");
	ev_at(f, 5000, "removed", "default", "cpu", "b");
	uint64_t want[] = {3000};
	expect_lives(f, "default", want, 1, 2);
	/* a second one, while exact: c's life goes on across it */
	ev_at(f, 6000, "stored", "default", "cpu", "c");
	const char *const second[] = {"c"};
	reconcile(f, second, 1);
	ev_at(f, 9000, "removed", "default", "cpu", "c");
	uint64_t want2[] = {3000, 3000};
	expect_lives(f, "default", want2, 2, 2);
}

#define BOTH(fn)                                                                   \
	cmocka_unit_test_prestate_setup_teardown(fn, setup_media, teardown, NULL), \
		cmocka_unit_test_prestate_setup_teardown(fn, setup_object, teardown, NULL)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_one_life),
		BOTH(test_media_of_one_life),
		BOTH(test_upsert),
		BOTH(test_removal_of_object_not_held),
		BOTH(test_not_exact_no_birth),
		BOTH(test_objects_present_before_a_gap),
		BOTH(test_restart),
		BOTH(test_cleared_ends_every_life),
		BOTH(test_timestamps_backwards),
		BOTH(test_key_groups),
		BOTH(test_off),
		BOTH(test_mean_birth_and_clock),
		BOTH(test_reconciliation),
	};
	return cmocka_run_group_tests_name("residency", tests, NULL, NULL);
}
