/* SPDX-License-Identifier: Apache-2.0 */
/* The state handover (mooncake_kv/handover.h), through the public interface:
 * a store fed a random history is written, read back into a store of the
 * same configuration (another seed, read in random pieces), and the two
 * must render every per-tenant series alike, then stay alike as both take
 * the same stream on; the join's proof in each case (an overlap with the
 * same digest, the next number, a gap, another message at the peer's
 * number, a restarted publisher); every truncation and bit flip refused;
 * another store, other members, smaller limits refused; whether each master
 * lists tenants carried in the source's annex, which a later version may
 * add to. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#include <mooncake_kv/handover.h>

#include "kv_pack.h"
#include "kv_state_impl.h"
#include "kv_state_io.h"
#include "kv_store_impl.h"
#include "support/store_fixture.h"
#include "support/handover_fixture.h"

typedef struct world {
	mkv_budget budget;
	mkv_store_member members[2];
	mkv_keygroup_re *re;
	mkv_store *s;
} world;

/* The next world_make's store never hands its state over (no --state.serve). */
static bool never_handed_over;
/* The next world_make's store reconciles (mooncake_kv_master_lists_tenants shows). */
static bool reconciling;

static mkv_store *world_make(world *w, const char *name, size_t n, int dialect, bool groups, uint64_t seed,
			     size_t max_tenants)
{
	memset(w, 0, sizeof(*w));
	mkv_budget_init(&w->budget, max_tenants, 1000000);
	for (size_t i = 0; i < n; i++)
		w->members[i] = (mkv_store_member){
			.label = i ? "127.0.0.1:2" : "127.0.0.1:1", .has_status = true, .dialect = dialect};
	char err[128];
	if (groups)
		assert_non_null(w->re = mkv_keygroup_compile("^(?<model>[^/]+)/", err, sizeof(err)));
	mkv_store_cfg cfg = {.name = name,
			     .ha = n > 1,
			     .polled = true,
			     .members = w->members,
			     .n_members = n,
			     .key_groups = w->re,
			     .residency = true,
			     .budget = &w->budget,
			     .seed = seed,
			     .max_tenants = max_tenants,
			     .never_handed_over = never_handed_over,
			     .reconcile = reconciling,
			     .reconcile_interval = 600};
	assert_non_null(w->s = mkv_store_new(&cfg));
	return w->s;
}

static void world_free(world *w)
{
	mkv_store_free(w->s);
	mkv_keygroup_free(w->re);
}

/* --- a random history, the same for every store fed it --- */

static const char *const tenants[] = {"default", "tenant-a", "t\"b\\", "bad\xff", "groupless"};

typedef struct history {
	uint64_t seq, eid;
	int64_t ts;
	unsigned keys;
} history;

/* The message numbered seq of a history: 1 to 8 events of random tenants,
 * keys, media and types (cleared now and then in the media dialect). */
static void history_msg(history *h, msg *m, int dialect)
{
	ev_spec e[8];
	char keys[8][32];
	unsigned n = 1 + (unsigned)(next_rand() % 8);
	for (unsigned i = 0; i < n; i++) {
		uint64_t r = next_rand();
		const char *tenant = tenants[r % 5];
		const char *type = (r >> 8) % 3 == 0 ? "removed" : "stored";
		if (dialect == 0 && (r >> 16) % 97 == 0)
			type = "cleared";
		snprintf(keys[i], sizeof(keys[i]), "%s/k%u", (r >> 24) % 2 ? "llama" : "qwen",
			 (unsigned)((r >> 32) % h->keys));
		ev_init(&e[i], EV_UPSTREAM, type, ++h->eid, B, tenant, (r >> 40) % 2 ? "cpu" : "disk", keys[i]);
	}
	h->ts += 1 + (int64_t)(next_rand() % 1500);
	msg_build(m, ++h->seq, h->ts, e, n);
}

static mkv_ingest_report feed_msg(mkv_store *s, size_t member, msg *m, int64_t now)
{
	mkv_ingest_report rep;
	assert_int_equal(mkv_store_ingest(s, member, m->frames, 3, now, &rep), MKV_OK);
	return rep;
}

/* A lifetime histogram's native buckets hold its count: the handover
 * carries the classic buckets, and the taker rebuilds these from them. */
static uint64_t native_whole(const kv_life_hist *h)
{
	uint64_t n = h->native.zero;
	for (size_t k = 0; k < h->native.n; k++)
		n += h->native.counts[k];
	assert_int_equal(n, h->count);
	return h->count;
}

/* Every tenant's and key group's; returns the lives they hold. */
static uint64_t natives_whole(const mkv_store *s)
{
	uint64_t lives = 0;
	for (size_t i = 0; i < s->state->n_tenants; i++) {
		const kv_tenant *t = s->state->tenants[i];
		lives += native_whole(&t->counts.life);
		for (uint32_t g = 0; g < t->groups.n; g++)
			native_whole(&t->groups.v[g].life);
	}
	return lives;
}

/* n messages of the history into every store of `to` (NULL ends the list). */
static void play(history *h, int dialect, size_t n, mkv_store *a, mkv_store *b)
{
	for (size_t i = 0; i < n; i++) {
		msg m;
		msg_init(&m);
		history_msg(h, &m, dialect);
		feed_msg(a, 0, &m, h->ts + 5);
		if (b)
			feed_msg(b, 0, &m, h->ts + 5);
		msg_destroy(&m);
	}
}

/* A from empty (proven, so its tenants are exact), a history, a gap that
 * makes every tenant stale, more history; B takes A's state. */
static void setup_pair(world *a, world *b, int dialect, bool groups, history *h, bool stale)
{
	world_make(a, "m", 1, dialect, groups, 7, 100);
	world_make(b, "m", 1, dialect, groups, 99, 100);
	fixture f = {.s = a->s};
	mkv_poll_news news;
	poll(&f, 0, 0, NULL, &news); /* nothing published yet ... */
	keys_read(a->s, 0, 0, NULL); /* ... no key ... */
	poll(&f, 0, 0, NULL, &news); /* ... and still nothing: empty */
	*h = (history){.ts = TS0, .keys = 200};
	play(h, dialect, 400, a->s, NULL);
	if (stale) {
		h->seq += 3; /* lost */
		play(h, dialect, 100, a->s, NULL);
	}
}

/* Copies a history's generator, so that two runs give the same messages. */
typedef struct replay_point {
	history h;
	uint64_t rng;
} replay_point;

static replay_point mark(const history *h)
{
	return (replay_point){*h, rng};
}

static void rewind_to(history *h, const replay_point *p)
{
	*h = p->h;
	rng = p->rng;
}

static void test_round_trip(void **state)
{
	(void)state;
	for (int round = 0; round < 24; round++) {
		rng = 0x9e3779b97f4a7c15ULL + (uint64_t)round;
		int dialect = round % 2;
		bool groups = round % 3 != 0, stale = round % 4 == 3;
		world a, b;
		history h;
		/* A's last three messages come again, to B only: its queue began before A's copy */
		setup_pair(&a, &b, dialect, groups, &h, false);
		if (stale) {
			h.seq += 3;
			play(&h, dialect, 10, a.s, NULL);
		}
		replay_point before_tail = mark(&h);
		play(&h, dialect, 3, a.s, NULL);
		assert_true(has_line(a.s, "mooncake_kv_state_stale{"));
		bytes out = write_all(a.s);
		enum mkv_boot_result took;
		assert_int_equal(read_into(b.s, out.p, out.n, 1 << 30, &took), MKV_BOOT_TAKEN);
		assert_int_equal(took, MKV_BOOT_TAKEN);
		assert_same(a.s, b.s);
		assert_true(natives_whole(b.s) > 0);
		assert_int_equal(mkv_store_joins_waiting(b.s), 1);

		replay_point after_tail = mark(&h);
		rewind_to(&h, &before_tail);
		for (int i = 0; i < 3; i++) { /* held by A's state: not applied again */
			msg m;
			msg_init(&m);
			history_msg(&h, &m, dialect);
			mkv_ingest_report rep = feed_msg(b.s, 0, &m, h.ts + 5);
			assert_int_equal(rep.join, i == 2 ? MKV_JOIN_CONTINUED : MKV_JOIN_NONE);
			msg_destroy(&m);
		}
		assert_int_equal(mkv_store_joins_waiting(b.s), 0);
		rewind_to(&h, &after_tail);
		play(&h, dialect, 300, a.s, b.s);
		assert_same(a.s, b.s);
		/* and B hands on what it took */
		world c;
		world_make(&c, "m", 1, dialect, groups, 5, 100);
		bytes out2 = write_all(b.s);
		assert_int_equal(read_into(c.s, out2.p, out2.n, 1 << 30, &took), MKV_BOOT_TAKEN);
		assert_same(a.s, c.s);
		natives_whole(c.s);
		free(out.p);
		free(out2.p);
		world_free(&a);
		world_free(&b);
		world_free(&c);
	}
}

/* A from empty with a history; B took A's copy at A's last number. */
static void taken_pair(world *a, world *b, history *h)
{
	rng = 42;
	setup_pair(a, b, 1, false, h, false);
	bytes out = write_all(a->s);
	assert_int_equal(read_into(b->s, out.p, out.n, 1 << 30, NULL), MKV_BOOT_TAKEN);
	free(out.p);
}

/* The history's next message, into s (and into also, unless NULL): what it
 * decided of s's join. */
static enum mkv_join next_into(history *h, mkv_store *s, mkv_store *also)
{
	msg m;
	msg_init(&m);
	history_msg(h, &m, 1);
	enum mkv_join j = feed_msg(s, 0, &m, h->ts).join;
	if (also)
		feed_msg(also, 0, &m, h->ts);
	msg_destroy(&m);
	return j;
}

static void test_join_cases(void **state)
{
	(void)state;
	world a, b;
	history h;
	/* idle since the copy: the next number, the next event id */
	taken_pair(&a, &b, &h);
	assert_int_equal(next_into(&h, b.s, a.s), MKV_JOIN_CONTINUED);
	assert_same(a.s, b.s);
	world_free(&a);
	world_free(&b);

	/* a number skipped: not provably continuous */
	taken_pair(&a, &b, &h);
	h.seq++;
	assert_int_equal(next_into(&h, b.s, NULL), MKV_JOIN_BROKEN);
	assert_true(has_line(b.s, "mooncake_kv_state_stale_reason{source=\"m\",backend_id=\"" B
				  "\",tenant_id=\"default\",reason=\"bootstrap\"} 1"));
	assert_true(
		has_line(b.s, "mooncake_kv_state_stale{source=\"m\",backend_id=\"" B "\",tenant_id=\"default\"} 1"));
	assert_true(has_line(b.s, "mooncake_kv_bootstrap_total{source=\"m\",result=\"taken\"} 1\n"));
	assert_true(has_line(b.s, "mooncake_kv_bootstrap_joins_total{source=\"m\",result=\"broken\"} 1\n"));
	assert_true(has_line(b.s, "mooncake_kv_bootstrap_joins_waiting{source=\"m\"} 0\n"));
	assert_false(has_line(a.s, "mooncake_kv_bootstrap_total")); /* a source that never tried: none */
	world_free(&a);
	world_free(&b);

	/* the next number, from another process (its event ids start afresh) */
	taken_pair(&a, &b, &h);
	h.eid = 0;
	assert_int_equal(next_into(&h, b.s, NULL), MKV_JOIN_BROKEN);
	world_free(&a);
	world_free(&b);

	/* another message at A's last number (another publisher, same count) */
	taken_pair(&a, &b, &h);
	h.seq--;
	h.eid -= 9;      /* ids A has seen, */
	h.ts -= 1000000; /* a time before A's last: a payload A has not, and only its digest tells */
	assert_int_equal(next_into(&h, b.s, NULL), MKV_JOIN_BROKEN);
	world_free(&a);
	world_free(&b);

	/* a restarted publisher after the copy: number 1 again, newer times */
	taken_pair(&a, &b, &h);
	h.seq = 0;
	h.eid = 0;
	assert_int_equal(next_into(&h, b.s, NULL), MKV_JOIN_BROKEN);
	world_free(&a);
	world_free(&b);
}

/* B takes A's copy, then A's last message comes again to B: what B decides.
 * Only A's digest of that message proves it held by the copy. */
static enum mkv_join last_again(bool a_serves, bool b_serves)
{
	world a, b;
	history h = {.ts = TS0, .keys = 200};
	rng = 11;
	never_handed_over = !a_serves;
	world_make(&a, "m", 1, 1, false, 7, 100);
	never_handed_over = !b_serves;
	world_make(&b, "m", 1, 1, false, 99, 100);
	never_handed_over = false;
	play(&h, 1, 50, a.s, NULL);
	replay_point last = mark(&h);
	play(&h, 1, 1, a.s, NULL);
	bytes out = write_all(a.s);
	assert_int_equal(read_into(b.s, out.p, out.n, 1 << 30, NULL), MKV_BOOT_TAKEN);
	rewind_to(&h, &last);
	enum mkv_join j = next_into(&h, b.s, NULL);
	free(out.p);
	world_free(&a);
	world_free(&b);
	return j;
}

/* A store that never hands its state over keeps no digest (its copy cannot
 * prove a repeated message), and one that joins hashes while it waits,
 * served or not. */
static void test_digests_only_when_served(void **state)
{
	(void)state;
	assert_int_equal(last_again(true, true), MKV_JOIN_CONTINUED);
	assert_int_equal(last_again(true, false), MKV_JOIN_CONTINUED);
	assert_int_equal(last_again(false, true), MKV_JOIN_BROKEN);
}

/* Every truncation and every bit flip is refused: nothing taken. */
static void test_refusals(void **state)
{
	(void)state;
	world a, b;
	history h;
	rng = 7;
	setup_pair(&a, &b, 0, true, &h, true);
	bytes out = write_all(a.s);
	const char *corpus = getenv("HANDOVER_CORPUS"); /* tests/fuzz/corpus/handover/ is made so */
	if (corpus) {
		FILE *f = fopen(corpus, "wb");
		assert_non_null(f);
		fputc(0x21, f); /* the fuzz target's first byte: pieces of 1 + 33 * 37 bytes, key groups on */
		fwrite(out.p, 1, out.n, f);
		fclose(f);
	}
	size_t step = out.n / 3000 + 1;
	for (size_t n = 0; n < out.n; n += step) {
		world c;
		world_make(&c, "m", 1, 0, true, 1, 100);
		enum mkv_boot_result took;
		assert_int_not_equal(read_into(c.s, out.p, n, 1 << 30, &took), MKV_BOOT_TAKEN);
		assert_int_not_equal(took, MKV_BOOT_TAKEN);
		world_free(&c);
	}
	for (size_t at = 0; at < out.n; at += step) {
		world c;
		world_make(&c, "m", 1, 0, true, 1, 100);
		out.p[at] ^= (unsigned char)(1u << (at % 8));
		assert_int_not_equal(read_into(c.s, out.p, out.n, 1 << 30, NULL), MKV_BOOT_TAKEN);
		out.p[at] ^= (unsigned char)(1u << (at % 8));
		world_free(&c);
	}
	/* whole again: taken */
	assert_int_equal(read_into(b.s, out.p, out.n, 1 << 30, NULL), MKV_BOOT_TAKEN);
	/* too large for the limit */
	world c;
	world_make(&c, "m", 1, 0, true, 1, 100);
	assert_int_equal(read_into(c.s, out.p, out.n, out.n - 1, NULL), MKV_BOOT_TOO_LARGE);
	world_free(&c);
	/* another source's name: absent; other members or key groups: mismatch; fewer tenants allowed: limit */
	enum mkv_boot_result took;
	world_make(&c, "other", 1, 0, true, 1, 100);
	assert_int_equal(read_into(c.s, out.p, out.n, 1 << 30, &took), MKV_BOOT_TAKEN);
	assert_int_equal(took, MKV_BOOT_ABSENT);
	world_free(&c);
	world_make(&c, "m", 2, 0, true, 1, 100);
	read_into(c.s, out.p, out.n, 1 << 30, &took);
	assert_int_equal(took, MKV_BOOT_MISMATCH);
	world_free(&c);
	world_make(&c, "m", 1, 0, false, 1, 100);
	read_into(c.s, out.p, out.n, 1 << 30, &took);
	assert_int_equal(took, MKV_BOOT_MISMATCH);
	world_free(&c);
	world_make(&c, "m", 1, 1, true, 1, 100); /* told to read the object dialect */
	read_into(c.s, out.p, out.n, 1 << 30, &took);
	assert_int_equal(took, MKV_BOOT_MISMATCH);
	world_free(&c);
	world_make(&c, "m", 1, 0, true, 1, 2);
	read_into(c.s, out.p, out.n, 1 << 30, &took);
	assert_int_equal(took, MKV_BOOT_LIMIT);
	assert_int_equal(c.budget.tenants, 0); /* what was read of it went back */
	world_free(&c);
	/* another format version, whole and checksummed: refused as such */
	bytes v2 = {0};
	kv_pack_w pw;
	assert_int_equal(kv_pack_w_init(&pw, to_bytes, &v2), MKV_OK);
	kv_pack_begin(&pw, KV_REC_HEADER);
	kv_pack_bytes(&pw, "mooncake-kv-state", 17);
	kv_pack_u64(&pw, MKV_HANDOVER_VERSION + 1);
	kv_pack_i64(&pw, TS0);
	kv_pack_u64(&pw, 1);
	kv_pack_end(&pw);
	assert_int_equal(kv_pack_finish(&pw), MKV_OK);
	kv_pack_w_free(&pw);
	world_make(&c, "m", 1, 0, true, 1, 100);
	assert_int_equal(read_into(c.s, v2.p, v2.n, 1 << 30, &took), MKV_BOOT_VERSION);
	world_free(&c);
	free(v2.p);
	/* a sink that stops: the writer says so */
	bytes cut = {.fail_after = 1000};
	mkv_store *stores[] = {a.s};
	assert_int_equal(mkv_handover_write(stores, 1, TS0, to_bytes, &cut), MKV_EINVAL);
	free(cut.p);
	free(out.p);
	world_free(&a);
	world_free(&b);
}

/* A stream copied record by record, as a later version might write it:
 * each member's annex with a field more, and the annex with a record of a
 * type this version does not know. */
typedef struct later {
	kv_pack_w w;
	bool in_annex;
} later;

static enum kv_pack_error copy_later(void *arg, unsigned type, kv_pack_r *r)
{
	later *l = arg;
	size_t n = (size_t)(r->end - r->p);
	if (type == KV_REC_SOURCE)
		l->in_annex = n > 7 && !memcmp(r->p + 1, "annex:", 6);
	if (type == KV_REC_SOURCE_END && l->in_annex) {
		kv_pack_begin(&l->w, 77);
		kv_pack_bytes(&l->w, "later", 5);
		kv_pack_end(&l->w);
	}
	kv_pack_begin(&l->w, type);
	kv_pack_raw(&l->w, r->p, n);
	if (type == KV_REC_MEMBER_ANNEX)
		kv_pack_u64(&l->w, 12345);
	kv_pack_end(&l->w);
	return KV_PACK_OK;
}

static bytes as_later(const bytes *in)
{
	bytes out = {0};
	later l = {0};
	kv_pack_in pin;
	assert_int_equal(kv_pack_w_init(&l.w, to_bytes, &out), MKV_OK);
	assert_int_equal(kv_pack_in_init(&pin, 1 << 30, copy_later, &l), MKV_OK);
	assert_int_equal(kv_pack_in_feed(&pin, in->p, in->n), KV_PACK_OK);
	assert_int_equal(kv_pack_in_end(&pin), KV_PACK_OK);
	assert_int_equal(kv_pack_finish(&l.w), MKV_OK);
	kv_pack_in_free(&pin);
	kv_pack_w_free(&l.w);
	return out;
}

/* Whether each master lists tenants is handed over: the taker serves
 * mooncake_kv_master_lists_tenants at once, as its peer knew it, instead of
 * learning it at a tenant's periodic turn.  A peer that never asked writes
 * no annex (its stream is what version 1 wrote); an annex with what a later
 * version adds is taken all the same. */
static void test_listing_carried(void **state)
{
	(void)state;
	static const struct {
		enum kv_listed how;
		const char *line;
	} cases[] = {
		{KV_LISTED_TAKE, "mooncake_kv_master_lists_tenants{source=\"m\",member=\"127.0.0.1:1\"} 1\n"},
		{KV_LISTED_DEFAULT_ONLY, "mooncake_kv_master_lists_tenants{source=\"m\",member=\"127.0.0.1:1\"} 0\n"},
		{KV_LISTED_TAKE, NULL}, /* never asked */
	};
	reconciling = true;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		world a, b, c;
		history h;
		rng = 11 + i;
		setup_pair(&a, &b, 1, false, &h, false);
		assert_false(has_line(a.s, "mooncake_kv_master_lists_tenants{"));
		if (cases[i].line) {
			kv_store_lists_note(a.s, 0, cases[i].how, 1795982100.0);
			assert_true(has_line(a.s, cases[i].line));
		}
		bytes out = write_all(a.s);
		enum mkv_boot_result took;
		assert_int_equal(read_into(b.s, out.p, out.n, 1 << 30, &took), MKV_BOOT_TAKEN);
		assert_int_equal(took, MKV_BOOT_TAKEN);
		assert_true(cases[i].line ? has_line(b.s, cases[i].line)
					  : !has_line(b.s, "mooncake_kv_master_lists_tenants{"));
		/* the annex is a source of its own: only where there is something to say */
		assert_int_equal(memmem(out.p, out.n, "annex:m", 7) != NULL, cases[i].line != NULL);
		bytes ext = as_later(&out);
		assert_int_equal(ext.n > out.n, cases[i].line != NULL);
		world_make(&c, "m", 1, 1, false, 5, 100);
		assert_int_equal(read_into(c.s, ext.p, ext.n, 1 << 30, &took), MKV_BOOT_TAKEN);
		assert_int_equal(took, MKV_BOOT_TAKEN);
		assert_true(cases[i].line ? has_line(c.s, cases[i].line)
					  : !has_line(c.s, "mooncake_kv_master_lists_tenants{"));
		assert_same(a.s, c.s);
		const char *corpus = getenv("HANDOVER_CORPUS_ANNEX"); /* tests/fuzz/corpus/handover/annex.bin */
		if (corpus && i == 0) {
			FILE *f = fopen(corpus, "wb");
			assert_non_null(f);
			fputc(0x20, f); /* the fuzz target's first byte: pieces of 1 + 32 * 37 bytes, key groups off */
			fwrite(ext.p, 1, ext.n, f);
			fclose(f);
		}
		free(out.p);
		free(ext.p);
		world_free(&a);
		world_free(&b);
		world_free(&c);
	}
	reconciling = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_join_cases),
		cmocka_unit_test(test_digests_only_when_served),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_listing_carried),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
