/* SPDX-License-Identifier: Apache-2.0 */
/* RemoveAll and the op log (docs/design.md): in a store of several masters
 * a cleared keeps what its tenant held until the removals come; a removal
 * that may be a RemoveAll's, late, of an object put again since, turns the
 * tenant stale (removed_after_cleared).  Through a stream, as the exporter
 * applies events; the handover and the reconciliation's cut-over too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "kv_state_io.h"
#include "kv_stream.h"
#include "support/feed.h"
#include "support/msgbuild.h"

#include <cmocka.h>

#include "support/stream_fixture.h"

/* The core's calloc, failing while calloc_fails holds (this test links with
 * --wrap=calloc: tests/meson.build). */
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
static bool calloc_fails;
void *__wrap_calloc(size_t n, size_t size)
{
	return calloc_fails ? NULL : __real_calloc(n, size);
}

/* A state fed by several masters (kv_state_set_ha, unless one), exact from
 * the start (the proof of an empty store), so that a cleared knows all its
 * tenant held. */
static int setup_state(void **state, bool ha)
{
	stream_fx *f = stream_fx_new();
	kv_state *s = kv_state_new(&f->budget, 1234);
	assert_non_null(s);
	kv_state_set_ha(s, ha);
	kv_state_prove_empty(s);
	assert_non_null(f->st = kv_stream_attach(s));
	*state = f;
	return 0;
}

static int setup_ha(void **state)
{
	return setup_state(state, true);
}

static int setup_one(void **state)
{
	return setup_state(state, false);
}

static int teardown(void **state)
{
	stream_fx *f = *state;
	kv_state *s = (kv_state *)kv_stream_state(f->st); /* attached: the test owns it */
	kv_stream_free(f->st);
	kv_state_free(s);
	return stream_fx_free(f);
}

/* RemoveAll of tenant t with the op log: cleared at once, the removals of
 * what it held (k1 cpu, k2 cpu and disk, k3 cpu) later.  k1 is put again in
 * between: its late removal cannot be told from the new object's own. */
static void removeall_with_late_removals(stream_fx *f)
{
	ev1(f, "stored", "t", "cpu", "k1");
	ev1(f, "stored", "t", "cpu", "k2");
	ev1(f, "stored", "t", "disk", "k2");
	ev1(f, "stored", "t", "cpu", "k3");
	ev1(f, "stored", "u", "cpu", "k1");
	assert_int_equal(tenant(f->st, "t")->stale, 0);
	ev1(f, "cleared", "t", NULL, NULL);
	ev1(f, "stored", "t", "cpu", "k1"); /* put again: a new object */
	ev1(f, "stored", "t", "cpu", "k4");
	ev1(f, "removed", "t", "cpu", "k2"); /* late, of nothing held: harmless */
	ev1(f, "removed", "t", "disk", "k2");
	ev1(f, "removed", "t", "cpu", "k3");
}

static void test_late_removal_after_cleared(void **state)
{
	stream_fx *f = *state;
	removeall_with_late_removals(f);
	const kv_tenant *t = tenant(f->st, "t");
	assert_int_equal(t->stale, 0); /* so far every removal was of nothing held */
	assert_true(kv_state_tenant_waits(t));
	expect_placement(f, "t", 2, 0, 0);
	uint64_t unobserved = t->counts.life.unobserved, observed = t->counts.life.count;
	ev1(f, "removed", "t", "cpu", "k1"); /* the old k1's, late; or the new one's? */
	assert_int_equal(t->stale, KV_STALE_REMOVED_AFTER_CLEARED);
	assert_int_equal(kv_state_turned_stale(kv_stream_state(f->st), 11), 1);
	/* no life of it is observed: its end is not known */
	assert_int_equal(t->counts.life.unobserved, unobserved + 1);
	assert_int_equal(t->counts.life.count, observed);
	/* every removal the cleared expected came: it waits no more */
	assert_false(kv_state_tenant_waits(t));
	expect_placement(f, "u", 1, 0, 0);
	assert_int_equal(tenant(f->st, "u")->stale, 0); /* another tenant: not touched */
}

/* A late removal of a medium the new object is not on changes nothing;
 * once every expected removal came, a removal is the guide's again. */
static void test_late_removals_drained(void **state)
{
	stream_fx *f = *state;
	ev1(f, "stored", "t", "cpu", "k1");
	ev1(f, "stored", "t", "disk", "k1");
	ev1(f, "stored", "t", "cpu", "k2");
	ev1(f, "cleared", "t", NULL, NULL);
	ev1(f, "stored", "t", "cpu", "k1");   /* put again, memory only */
	ev1(f, "removed", "t", "disk", "k1"); /* late; the new object has no disk */
	ev1(f, "removed", "t", "cpu", "k2");
	const kv_tenant *t = tenant(f->st, "t");
	assert_int_equal(t->stale, 0);
	assert_true(kv_state_tenant_waits(t)); /* k1's cpu */
	ev1(f, "removed", "t", "cpu", "k1");   /* late, and takes the new object */
	assert_int_equal(t->stale, KV_STALE_REMOVED_AFTER_CLEARED);
	assert_false(kv_state_tenant_waits(t));

	ev1(f, "stored", "v", "cpu", "k1");
	ev1(f, "cleared", "v", NULL, NULL);
	ev1(f, "removed", "v", "cpu", "k1"); /* late, of nothing held */
	const kv_tenant *v = tenant(f->st, "v");
	assert_false(kv_state_tenant_waits(v));
	ev1(f, "stored", "v", "cpu", "k1");
	ev1(f, "removed", "v", "cpu", "k1"); /* nothing is expected: the guide's rule */
	assert_int_equal(v->stale, 0);
	expect_placement(f, "v", 0, 0, 0);
	/* a cleared while stale (the ambiguity above) may leave an object
	 * unseen whose removal is still to come */
	ev1(f, "cleared", "t", NULL, NULL);
	assert_int_equal(t->stale, 0);
	assert_true(kv_state_tenant_waits(t));
}

/* A tenant not exact at its cleared may have held objects unseen: any
 * removal of something held after it may be one of theirs. */
static void test_cleared_of_a_stale_tenant(void **state)
{
	stream_fx *f = *state;
	ev1(f, "stored", "t", "cpu", "k1");
	f->seq += 3; /* a gap: every tenant stale */
	ev1(f, "stored", "t", "cpu", "k2");
	const kv_tenant *t = tenant(f->st, "t");
	assert_int_equal(t->stale, KV_STALE_GAP);
	ev1(f, "cleared", "t", NULL, NULL);
	assert_int_equal(t->stale, 0);
	assert_true(kv_state_tenant_waits(t));
	ev1(f, "removed", "t", "cpu", "never-seen"); /* of nothing held: harmless */
	ev1(f, "removed", "t", "cpu", "k1");
	ev1(f, "removed", "t", "cpu", "k2");
	assert_int_equal(t->stale, 0);
	ev1(f, "stored", "t", "disk", "k9");
	ev1(f, "removed", "t", "disk", "k9");
	assert_int_equal(t->stale, KV_STALE_REMOVED_AFTER_CLEARED);
	assert_true(kv_state_tenant_waits(t)); /* until a reconciliation */
	/* the proof of an empty store ends the wait */
	kv_state_prove_empty((kv_state *)kv_stream_state(f->st));
	assert_false(kv_state_tenant_waits(t));
	assert_int_equal(t->stale, 0);
}

/* A reconciliation ends the wait, unless a removal it recorded could not be
 * placed: then the cut-over is not sure of that object either. */
static void test_reconciliation_ends_the_wait(void **state)
{
	stream_fx *f = *state;
	kv_state *s = (kv_state *)kv_stream_state(f->st);
	for (int round = 0; round < 2; round++) {
		const char *tn = round ? "v" : "t";
		ev1(f, "stored", tn, "cpu", "k1");
		ev1(f, "stored", tn, "cpu", "k2");
		ev1(f, "cleared", tn, NULL, NULL);
		ev1(f, "stored", tn, "cpu", "k1"); /* put again */
		kv_recon_log log;
		kv_recon_log_init(&log, 100);
		assert_int_equal(kv_state_record_start(s, S(B), S(tn), &log), MKV_OK);
		if (round) /* while the listing is read: k1's late removal */
			ev1(f, "removed", tn, "cpu", "k1");
		/* the master's listing: k1, the new object */
		kv_recon_table fresh = {0};
		assert_int_equal(
			kv_recon_put(&fresh, kv_state_key_hash(s, S("k1")), MKV_MEDIUM_CPU, KV_GROUP_NONE, KV_NO_BIRTH),
			MKV_OK);
		assert_int_equal(kv_recon_replay(&fresh, log.ev, log.n), MKV_OK);
		kv_objtable old;
		assert_int_equal(kv_state_adopt(s, &fresh, 0, &old), MKV_OK);
		kv_objtable_clear(&old);
		kv_recon_table_free(&fresh);
		kv_state_record_stop(s);
		kv_recon_log_free(&log);
		const kv_tenant *t = tenant(f->st, tn);
		if (!round) {
			assert_int_equal(t->stale, 0);
			assert_false(kv_state_tenant_waits(t));
			ev1(f, "removed", tn, "cpu", "k2"); /* late, of nothing held */
			ev1(f, "removed", tn, "cpu", "k1"); /* the guide's rule again */
			assert_int_equal(t->stale, 0);
		} else {
			assert_int_equal(t->stale, KV_STALE_REMOVED_AFTER_CLEARED);
			assert_true(kv_state_tenant_waits(t)); /* k2's removal is still to come */
		}
	}
}

/* The bytes of a handover stream. */
struct bytes {
	unsigned char *p;
	size_t n;
};

static int to_bytes(void *arg, const void *p, size_t n)
{
	struct bytes *b = arg;
	b->p = realloc(b->p, b->n + n);
	memcpy(b->p + b->n, p, n);
	b->n += n;
	return MKV_OK;
}

static enum kv_pack_error to_load(void *arg, unsigned type, kv_pack_r *r)
{
	return kv_state_load_record(arg, type, r);
}

/* A handover says a tenant waits, not for what: the taker expects any key,
 * so a removal of what it holds turns the tenant stale there too. */
static void test_wait_handed_over(void **state)
{
	stream_fx *f = *state;
	ev1(f, "stored", "t", "cpu", "k1");
	ev1(f, "stored", "u", "cpu", "k1");
	ev1(f, "cleared", "t", NULL, NULL);
	ev1(f, "stored", "t", "cpu", "k2");
	assert_true(kv_state_tenant_waits(tenant(f->st, "t")));
	struct bytes b = {0};
	kv_pack_w w;
	assert_int_equal(kv_pack_w_init(&w, to_bytes, &b), MKV_OK);
	kv_state_write(kv_stream_state(f->st), &w);
	assert_int_equal(kv_pack_finish(&w), MKV_OK);
	kv_pack_w_free(&w);

	mkv_budget budget;
	mkv_budget_init(&budget, 1000, 1000000);
	kv_state_load l;
	kv_state_load_init(&l, &budget, NULL);
	kv_pack_in in;
	assert_int_equal(kv_pack_in_init(&in, 1 << 20, to_load, &l), MKV_OK);
	assert_int_equal(kv_pack_in_feed(&in, b.p, b.n), KV_PACK_OK);
	assert_int_equal(kv_pack_in_end(&in), KV_PACK_OK);
	kv_pack_in_free(&in);
	free(b.p);
	kv_state *taken = NULL;
	assert_int_equal(kv_state_load_end(&l, &taken), KV_PACK_OK);
	kv_state_load_free(&l);
	kv_state_set_ha(taken, true);
	kv_stream *st = kv_stream_attach(taken);
	assert_non_null(st);
	const kv_tenant *t = tenant(st, "t"), *u = tenant(st, "u");
	assert_true(kv_state_tenant_waits(t));
	assert_false(kv_state_tenant_waits(u));
	assert_int_equal(t->stale, 0);
	ev_spec e;
	ev_init(&e, EV_UPSTREAM, "removed", 100, B, "u", "cpu", "k1"); /* u expects nothing */
	assert_int_equal(feed(st, 100, &e, 1), MKV_OK);
	assert_int_equal(u->stale, 0);
	ev_init(&e, EV_UPSTREAM, "removed", 101, B, "t", "cpu", "k2"); /* k2 was put after t's cleared */
	assert_int_equal(feed(st, 101, &e, 1), MKV_OK);
	assert_int_equal(t->stale, KV_STALE_REMOVED_AFTER_CLEARED);
	kv_stream_free(st);
	kv_state_free(taken);
}

/* A store of one master (the guide's order: every removal, then cleared)
 * keeps no wait: its removals after a cleared are the guide's. */
static void test_one_master_keeps_the_guide(void **state)
{
	stream_fx *f = *state;
	removeall_with_late_removals(f);
	ev1(f, "removed", "t", "cpu", "k1");
	const kv_tenant *t = tenant(f->st, "t");
	assert_int_equal(t->stale, 0);
	assert_false(kv_state_tenant_waits(t));
	expect_placement(f, "t", 1, 0, 0);
}

/* Out of memory at a cleared: nothing can wait for its late removals, so
 * the tenant, empty, is stale (removed_after_cleared) until reconciled,
 * never exact on a guess. */
static void test_cleared_without_memory(void **state)
{
	stream_fx *f = *state;
	ev1(f, "stored", "t", "cpu", "k1");
	calloc_fails = true;
	ev1(f, "cleared", "t", NULL, NULL);
	calloc_fails = false;
	const kv_tenant *t = tenant(f->st, "t");
	assert_false(kv_state_tenant_waits(t));
	assert_int_equal(t->stale, KV_STALE_REMOVED_AFTER_CLEARED);
	expect_placement(f, "t", 0, 0, 0);
	ev1(f, "stored", "t", "cpu", "k1");
	ev1(f, "removed", "t", "cpu", "k1"); /* the late one, or the new object's: nobody can say */
	assert_int_equal(t->stale, KV_STALE_REMOVED_AFTER_CLEARED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_late_removal_after_cleared, setup_ha, teardown),
		cmocka_unit_test_setup_teardown(test_late_removals_drained, setup_ha, teardown),
		cmocka_unit_test_setup_teardown(test_cleared_of_a_stale_tenant, setup_ha, teardown),
		cmocka_unit_test_setup_teardown(test_reconciliation_ends_the_wait, setup_ha, teardown),
		cmocka_unit_test_setup_teardown(test_wait_handed_over, setup_ha, teardown),
		cmocka_unit_test_setup_teardown(test_one_master_keeps_the_guide, setup_one, teardown),
		cmocka_unit_test_setup_teardown(test_cleared_without_memory, setup_ha, teardown),
	};
	return cmocka_run_group_tests_name("cleared", tests, NULL, NULL);
}
