/* SPDX-License-Identifier: Apache-2.0 */
/* The state rules of the subscriber guide, event by event, through a
 * stream (decode + sequence + state), so that each rule is checked the way
 * the exporter applies it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "kv_stream.h"
#include "support/feed.h"
#include "support/msgbuild.h"

#include <cmocka.h>

#include "support/stream_fixture.h"

static int setup(void **state)
{
	stream_fx *f = stream_fx_new();
	assert_non_null(f->st = kv_stream_new(&f->budget, 1234));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	stream_fx *f = *state;
	kv_stream_free(f->st);
	return stream_fx_free(f);
}

/* The placement, and the totals and media that follow from it. */
static void expect_counts(stream_fx *f, const char *t, uint64_t cpu_only, uint64_t disk_only, uint64_t both)
{
	expect_placement(f, t, cpu_only, disk_only, both);
	const kv_tenant *tn = tenant(f->st, t);
	assert_int_equal(kv_tenant_objects(tn), cpu_only + disk_only + both);
	assert_int_equal(kv_tenant_on_medium(tn, MKV_MEDIUM_CPU), cpu_only + both);
	assert_int_equal(kv_tenant_on_medium(tn, MKV_MEDIUM_DISK), disk_only + both);
}

static void test_stored_idempotent(void **state)
{
	stream_fx *f = *state;
	ev1(f, "stored", "t", "cpu", "k");
	ev1(f, "stored", "t", "cpu", "k");
	ev1(f, "stored", "t", "CPU", "k");
	expect_counts(f, "t", 1, 0, 0);
	const kv_tenant *tn = tenant(f->st, "t");
	assert_int_equal(tn->counts.stored_duplicates, 2);
	assert_int_equal(tn->counts.events[MKV_EV_STORED], 3);
}

static void test_media_sets(void **state)
{
	stream_fx *f = *state;
	ev1(f, "stored", "t", "cpu", "k");
	ev1(f, "stored", "t", "disk", "k");
	expect_counts(f, "t", 0, 0, 1);
	assert_int_equal(media_of(f->st, "t", "k"), MKV_MEDIUM_CPU | MKV_MEDIUM_DISK);
	/* removed retracts one medium only */
	ev1(f, "removed", "t", "cpu", "k");
	expect_counts(f, "t", 0, 1, 0);
	assert_int_equal(media_of(f->st, "t", "k"), MKV_MEDIUM_DISK);
	/* the object is gone once no medium is left */
	ev1(f, "removed", "t", "disk", "k");
	expect_counts(f, "t", 0, 0, 0);
	assert_int_equal(media_of(f->st, "t", "k"), 0);
}

static void test_removed_never_below_zero(void **state)
{
	stream_fx *f = *state;
	ev1(f, "removed", "t", "cpu", "never-stored");
	ev1(f, "stored", "t", "disk", "k");
	ev1(f, "removed", "t", "cpu", "k"); /* not on cpu */
	ev1(f, "removed", "t", "disk", "k");
	ev1(f, "removed", "t", "disk", "k"); /* repeated retraction */
	ev1(f, "removed", "t", "disk", "k");
	expect_counts(f, "t", 0, 0, 0);
	const kv_tenant *tn = tenant(f->st, "t");
	assert_int_equal(tn->counts.removed_unknown, 4);
	assert_int_equal(tn->counts.events[MKV_EV_REMOVED], 5);
	/* and it can come back */
	ev1(f, "stored", "t", "cpu", "k");
	expect_counts(f, "t", 1, 0, 0);
}

/* An upsert is removed then stored for the same object, in one message. */
static void test_upsert(void **state)
{
	stream_fx *f = *state;
	ev1(f, "stored", "t", "cpu", "k");
	ev_spec e[2];
	ev_init(&e[0], EV_SPEC, "removed", ++f->eid, B, "t", "cpu", "k");
	ev_init(&e[1], EV_SPEC, "stored", ++f->eid, B, "t", "cpu", "k");
	assert_int_equal(feed(f->st, ++f->seq, e, 2), MKV_OK);
	expect_counts(f, "t", 1, 0, 0);
	const kv_tenant *tn = tenant(f->st, "t");
	assert_int_equal(tn->counts.stored_duplicates, 0);
	assert_int_equal(tn->counts.removed_unknown, 0);
	assert_int_equal(tn->counts.events[MKV_EV_STORED], 2);
	assert_int_equal(tn->counts.events[MKV_EV_REMOVED], 1);
}

static void test_cleared(void **state)
{
	stream_fx *f = *state;
	for (int i = 0; i < 100; i++) {
		char k[16];
		snprintf(k, sizeof(k), "k%d", i);
		ev1(f, "stored", "a", i % 2 ? "cpu" : "disk", k);
		ev1(f, "stored", "b", "cpu", k);
	}
	ev1(f, "stored", "a", "cpu", "k0");
	expect_counts(f, "a", 50, 49, 1);
	assert_int_equal(atomic_load(&f->budget.objects), 200);
	const kv_tenant *a = tenant(f->st, "a");
	assert_true(a->stale & KV_STALE_STARTUP);

	ev1(f, "cleared", "a", NULL, NULL);
	expect_counts(f, "a", 0, 0, 0);
	expect_counts(f, "b", 100, 0, 0); /* other tenants untouched */
	assert_int_equal(media_of(f->st, "a", "k1"), 0);
	assert_int_equal(a->stale, 0); /* cleared makes the tenant exact */
	assert_true(tenant(f->st, "b")->stale != 0);
	assert_int_equal(a->counts.events[MKV_EV_CLEARED], 1);
	assert_int_equal(atomic_load(&f->budget.objects), 100);
	assert_int_equal(kv_objtable_bytes(&a->objects), 0);

	/* a cleared for a tenant we never saw creates it, exact and empty */
	ev1(f, "cleared", "c", NULL, NULL);
	expect_counts(f, "c", 0, 0, 0);
	assert_int_equal(tenant(f->st, "c")->stale, 0);
}

/* A tenant's stale age starts when it stops being exact, and only then:
 * at start-up, and at the first loss after a cleared made it exact. */
static void test_stale_since(void **state)
{
	stream_fx *f = *state;
	ev_spec e;
	int64_t t0 = 1795982000000;
	ev_init(&e, EV_UPSTREAM, "stored", ++f->eid, B, "a", "cpu", "k1");
	assert_int_equal(feed_at(f->st, ++f->seq, &e, 1, t0), MKV_OK);
	const kv_tenant *a = tenant(f->st, "a");
	assert_int_equal(a->stale, KV_STALE_STARTUP);
	assert_int_equal(a->stale_since_ms, t0);
	ev_init(&e, EV_UPSTREAM, "stored", ++f->eid, B, "a", "cpu", "k2");
	assert_int_equal(feed_at(f->st, ++f->seq, &e, 1, t0 + 1000), MKV_OK);
	assert_int_equal(a->stale_since_ms, t0); /* still the same staleness */

	ev_init(&e, EV_UPSTREAM, "cleared", ++f->eid, B, "a", NULL, NULL);
	assert_int_equal(feed_at(f->st, ++f->seq, &e, 1, t0 + 2000), MKV_OK);
	assert_int_equal(a->stale, 0);
	ev_init(&e, EV_UPSTREAM, "stored", ++f->eid, B, "a", "cpu", "k3");
	assert_int_equal(feed_at(f->st, ++f->seq, &e, 1, t0 + 3000), MKV_OK);
	assert_int_equal(a->stale, 0);

	/* a gap: stale from this message on */
	f->seq += 5;
	ev_init(&e, EV_UPSTREAM, "stored", ++f->eid, B, "a", "cpu", "k4");
	assert_int_equal(feed_at(f->st, ++f->seq, &e, 1, t0 + 4000), MKV_OK);
	assert_int_equal(a->stale, KV_STALE_GAP);
	assert_int_equal(a->stale_since_ms, t0 + 4000);
	f->seq += 5; /* another loss does not make it younger */
	ev_init(&e, EV_UPSTREAM, "stored", ++f->eid, B, "a", "cpu", "k5");
	assert_int_equal(feed_at(f->st, ++f->seq, &e, 1, t0 + 5000), MKV_OK);
	assert_int_equal(a->stale, KV_STALE_GAP);
	assert_int_equal(a->stale_since_ms, t0 + 4000);
}

/* Tenants are (backend_id, tenant_id): the same tenant name under two
 * backends is two tenants. */
static void test_tenant_identity(void **state)
{
	stream_fx *f = *state;
	ev_spec e[3];
	ev_init(&e[0], EV_SPEC, "stored", 1, "backend-1", "t", "cpu", "k");
	ev_init(&e[1], EV_SPEC, "stored", 2, "backend-2", "t", "cpu", "k");
	ev_init(&e[2], EV_SPEC, "cleared", 3, "backend-1", "t", NULL, NULL);
	assert_int_equal(feed(f->st, 1, e, 3), MKV_OK);
	assert_int_equal(kv_state_tenant_count(kv_stream_state(f->st)), 2);
	const kv_tenant *t1 = kv_state_find_tenant(kv_stream_state(f->st), S("backend-1"), S("t"));
	const kv_tenant *t2 = kv_state_find_tenant(kv_stream_state(f->st), S("backend-2"), S("t"));
	assert_int_equal(kv_tenant_objects(t1), 0);
	assert_int_equal(kv_tenant_objects(t2), 1);
	assert_ptr_equal(kv_state_tenant_at(kv_stream_state(f->st), 0), t1);
	assert_ptr_equal(kv_state_tenant_at(kv_stream_state(f->st), 1), t2);
	assert_null(kv_state_tenant_at(kv_stream_state(f->st), 2));
	/* keys with a shared prefix, a NUL, UTF-8 are distinct objects */
	ev_spec k[3];
	ev_init(&k[0], EV_SPEC, "stored", 4, "b3", "t", "cpu", "ab");
	ev_init(&k[1], EV_SPEC, "stored", 5, "b3", "t", "cpu", "abc");
	ev_init(&k[2], EV_SPEC, "stored", 6, "b3", "t", "cpu", NULL);
	ev_set(&k[2], STRN("object_key", "ab\0c", 4));
	assert_int_equal(feed(f->st, 2, k, 3), MKV_OK);
	assert_int_equal(kv_tenant_objects(kv_state_find_tenant(kv_stream_state(f->st), S("b3"), S("t"))), 3);
}

static void test_keyless_and_rejected_not_applied(void **state)
{
	stream_fx *f = *state;
	ev_spec e[3];
	ev_init(&e[0], EV_UPSTREAM, "stored", 1, B, "t", "cpu", NULL); /* keyless */
	ev_init(&e[1], EV_UPSTREAM, "stored", 2, B, "t", "nvme", "k"); /* unknown medium */
	ev_init(&e[2], EV_UPSTREAM, "stored", 3, B, "t", "disk", "k");
	assert_int_equal(feed(f->st, 1, e, 3), MKV_OK);
	expect_counts(f, "t", 0, 1, 0);
	assert_int_equal(kv_stream_stats_of(f->st)->keyless_events, 1);
	assert_int_equal(kv_stream_stats_of(f->st)->decode_errors[MKV_R_UNKNOWN_MEDIUM], 1);
	assert_int_equal(tenant(f->st, "t")->counts.events[MKV_EV_STORED], 1);
}

static void test_limits(void **state)
{
	(void)state;
	mkv_budget budget;
	mkv_budget_init(&budget, 2, 3);
	kv_stream *s1 = kv_stream_new(&budget, 1), *s2 = kv_stream_new(&budget, 2);
	assert_non_null(s1);
	assert_non_null(s2);
	ev_spec e[5];
	ev_init(&e[0], EV_SPEC, "stored", 1, B, "t1", "cpu", "a");
	ev_init(&e[1], EV_SPEC, "stored", 2, B, "t1", "cpu", "b");
	ev_init(&e[2], EV_SPEC, "stored", 3, B, "t1", "disk", "a"); /* existing: no new room needed */
	ev_init(&e[3], EV_SPEC, "stored", 4, B, "t1", "cpu", "c");
	ev_init(&e[4], EV_SPEC, "stored", 5, B, "t1", "cpu", "d"); /* 4th object: refused */
	assert_int_equal(feed(s1, 1, e, 5), MKV_OK);
	const kv_tenant *t1 = kv_state_find_tenant(kv_stream_state(s1), S(B), S("t1"));
	assert_int_equal(kv_tenant_objects(t1), 3);
	assert_int_equal(kv_state_objects_overflow(kv_stream_state(s1)), 1);
	assert_int_equal(t1->counts.objects_overflow, 1);
	assert_true(t1->stale & KV_STALE_OVERFLOW);
	assert_int_equal(kv_stream_stats_of(s1)->limit_dropped_events, 1);
	assert_int_equal(t1->counts.events[MKV_EV_STORED], 4);

	/* the budget is shared: the second stream has no room either */
	ev_spec g[3];
	ev_init(&g[0], EV_SPEC, "stored", 1, B, "t2", "cpu", "x");
	ev_init(&g[1], EV_SPEC, "stored", 2, B, "t3", "cpu", "x");  /* 3rd tenant: refused */
	ev_init(&g[2], EV_SPEC, "removed", 3, B, "t1", "cpu", "a"); /* s2's own t1: 3rd tenant too */
	assert_int_equal(feed(s2, 1, g, 3), MKV_OK);
	assert_int_equal(kv_state_objects_overflow(kv_stream_state(s2)), 1);
	assert_int_equal(kv_state_tenants_overflow(kv_stream_state(s2)), 2);
	assert_int_equal(kv_state_tenant_count(kv_stream_state(s2)), 1);

	/* removing frees room */
	ev_spec r;
	ev_init(&r, EV_SPEC, "removed", 6, B, "t1", "cpu", "b");
	feed(s1, 2, &r, 1);
	feed(s2, 2, g, 1);
	assert_int_equal(kv_tenant_objects(kv_state_find_tenant(kv_stream_state(s2), S(B), S("t2"))), 1);
	assert_int_equal(atomic_load(&budget.objects), 3);
	kv_stream_free(s1);
	kv_stream_free(s2);
	assert_int_equal(atomic_load(&budget.objects), 0);
	assert_int_equal(atomic_load(&budget.tenants), 0);
}

/* --- the object dialect: Mooncake main's master (docs/upstream.md) --- */

/* A removed of any medium means the object is gone: main's Remove sends one
 * removed with the medium MediumForMetadata guesses (cpu whenever a memory
 * replica exists), its evictions send removed cpu for a disk-only object
 * they emptied.  Neither is an unknown removal. */
static void test_object_removed_takes_the_object(void **state)
{
	stream_fx *f = *state;
	kv_stream_set_dialect(f->st, MKV_DIALECT_OBJECT);
	ev1(f, "stored", "t", "disk", "both"); /* PutEnd of the disk replica, then of memory */
	ev1(f, "stored", "t", "cpu", "both");
	ev1(f, "stored", "t", "disk", "disk-only");
	expect_counts(f, "t", 0, 1, 1);
	ev1(f, "removed", "t", "cpu", "both");      /* Remove of M+D: one removed cpu */
	ev1(f, "removed", "t", "cpu", "disk-only"); /* EvictDiskReplica emptied it: removed cpu */
	expect_counts(f, "t", 0, 0, 0);
	const kv_tenant *tn = tenant(f->st, "t");
	assert_int_equal(tn->counts.removed_unknown, 0);
	assert_int_equal(tn->counts.events[MKV_EV_REMOVED], 2);
	assert_int_equal(atomic_load(&f->budget.objects), 0);
}

/* Of an object not held, a removed is an unknown removal in either dialect;
 * in the object dialect a second removed of the same object is one too. */
static void test_object_removed_unknown(void **state)
{
	stream_fx *f = *state;
	kv_stream_set_dialect(f->st, MKV_DIALECT_OBJECT);
	ev1(f, "removed", "t", "cpu", "never");
	ev1(f, "stored", "t", "cpu", "k");
	ev1(f, "removed", "t", "disk", "k"); /* not its medium: still the object */
	ev1(f, "removed", "t", "disk", "k");
	expect_counts(f, "t", 0, 0, 0);
	assert_int_equal(tenant(f->st, "t")->counts.removed_unknown, 2);
}

/* Upsert on main is one more stored (UpsertEnd goes through PutEnd): the
 * media announced add up, nothing is taken away. */
static void test_object_upsert_is_stored(void **state)
{
	stream_fx *f = *state;
	kv_stream_set_dialect(f->st, MKV_DIALECT_OBJECT);
	ev1(f, "stored", "t", "cpu", "k");
	ev1(f, "stored", "t", "cpu", "k");
	ev1(f, "stored", "t", "disk", "k");
	expect_counts(f, "t", 0, 0, 1);
	assert_int_equal(tenant(f->st, "t")->counts.stored_duplicates, 1);
}

/* The dialect is the stream's at the time of each event: a switch changes
 * how the next removed is read, in both directions, and nothing already
 * applied. */
static void test_dialect_switch_both_ways(void **state)
{
	stream_fx *f = *state;
	ev1(f, "stored", "t", "cpu", "a");
	ev1(f, "stored", "t", "disk", "a");
	ev1(f, "stored", "t", "cpu", "b");
	ev1(f, "stored", "t", "disk", "b");
	ev1(f, "removed", "t", "cpu", "a"); /* media: a keeps disk */
	expect_counts(f, "t", 0, 1, 1);
	kv_stream_set_dialect(f->st, MKV_DIALECT_OBJECT);
	assert_int_equal(kv_stream_dialect(f->st), MKV_DIALECT_OBJECT);
	ev1(f, "removed", "t", "cpu", "b"); /* object: b is gone */
	expect_counts(f, "t", 0, 1, 0);
	ev1(f, "stored", "t", "cpu", "c");
	ev1(f, "stored", "t", "disk", "c");
	kv_stream_set_dialect(f->st, MKV_DIALECT_MEDIA);
	ev1(f, "removed", "t", "disk", "c"); /* media again: c keeps cpu */
	expect_counts(f, "t", 1, 1, 0);
	assert_int_equal(media_of(f->st, "t", "a"), MKV_MEDIUM_DISK);
	assert_int_equal(media_of(f->st, "t", "c"), MKV_MEDIUM_CPU);
}

/* cleared empties a tenant in either dialect (main never sends it; a
 * master that does is no longer main, but its word is still true). */
static void test_object_cleared(void **state)
{
	stream_fx *f = *state;
	kv_stream_set_dialect(f->st, MKV_DIALECT_OBJECT);
	ev1(f, "stored", "t", "cpu", "a");
	ev1(f, "cleared", "t", NULL, NULL);
	expect_counts(f, "t", 0, 0, 0);
	assert_int_equal(tenant(f->st, "t")->stale, 0);
}

/* --limits.tenant-idle-timeout: a tenant with no object and no event for the
 * timeout is forgotten (its room in the budget back, its series gone); one
 * with objects, or with a recent event, stays; one that comes back starts
 * afresh, stale since start-up. */
static void test_idle_tenants_expire(void **state)
{
	stream_fx *f = *state;
	const int64_t t0 = 1795982104612, idle = 3600 * 1000;
	ev_spec e;
	uint64_t seq = 0;
#define AT(ms, type, tn, key)                                                 \
	do {                                                                  \
		ev_init(&e, EV_UPSTREAM, type, seq + 1, B, tn, "cpu", key);   \
		assert_int_equal(feed_at(f->st, ++seq, &e, 1, (ms)), MKV_OK); \
	} while (0)
	AT(t0, "stored", "holds", "k1");
	AT(t0, "stored", "emptied", "k2");
	AT(t0 + 1000, "removed", "emptied", "k2"); /* empty from t0 + 1 s */
	AT(t0, "stored", "recent", "k3");
	AT(t0 + idle, "removed", "recent", "k3"); /* empty, but active at t0 + 1 h */
	kv_state *st = (kv_state *)kv_stream_state(f->st);
	assert_int_equal(atomic_load(&f->budget.tenants), 3);
	assert_int_equal(kv_state_expire(st, t0 + idle, idle), 0); /* "emptied": 1 s short */
	assert_int_equal(kv_state_expire(st, t0 + 1000 + idle, idle), 1);
	assert_null(tenant(f->st, "emptied"));
	assert_non_null(tenant(f->st, "holds")); /* objects: never */
	assert_non_null(tenant(f->st, "recent"));
	assert_int_equal(kv_state_tenant_count(st), 2);
	assert_int_equal(kv_state_tenants_expired(st), 1);
	assert_int_equal(atomic_load(&f->budget.tenants), 2);
	/* the index still finds the others, and a tenant can come back */
	expect_counts(f, "holds", 1, 0, 0);
	AT(t0 + 2 * idle, "stored", "emptied", "k9");
	const kv_tenant *back = tenant(f->st, "emptied");
	assert_non_null(back);
	assert_int_equal(back->counts.events[MKV_EV_STORED], 1); /* afresh */
	assert_true(back->stale & KV_STALE_STARTUP);
	assert_int_equal(kv_state_expire(st, t0 + 2 * idle + idle, idle), 1); /* "recent" now */
	assert_int_equal(kv_state_tenant_count(st), 2);
#undef AT
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stored_idempotent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_media_sets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_removed_never_below_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upsert, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cleared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tenant_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_since, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keyless_and_rejected_not_applied, setup, teardown),
		cmocka_unit_test(test_limits),
		cmocka_unit_test_setup_teardown(test_object_removed_takes_the_object, setup, teardown),
		cmocka_unit_test_setup_teardown(test_object_removed_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_object_upsert_is_stored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dialect_switch_both_ways, setup, teardown),
		cmocka_unit_test_setup_teardown(test_object_cleared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_tenants_expire, setup, teardown),
	};
	return cmocka_run_group_tests_name("state", tests, NULL, NULL);
}
