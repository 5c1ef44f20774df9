/* SPDX-License-Identifier: Apache-2.0 */
/* Loss by cause against a scripted publisher: the test plays the publisher
 * process (its numbers, drops, restarts and counters) and the transport,
 * feeds a real kv_stream, and polls kv_loss at chosen moments.  Every
 * expected figure comes from the script, never from the code under test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "support/feed.h"
#include "support/msgbuild.h"
#include "kv_loss.h"

#include <cmocka.h>

struct world {
	mkv_budget budget;
	kv_stream *st;
	/* the publisher process */
	uint64_t next_seq, next_eid, batches, events, dropped;
	/* the master's answers */
	kv_loss loss;
	kv_loss_counters prev;
	bool have_prev;
	double now;
};

static int setup(void **state)
{
	static struct world w;
	memset(&w, 0, sizeof(w));
	mkv_budget_init(&w.budget, 100, 100000);
	w.st = kv_stream_new(&w.budget, 5);
	w.next_seq = w.next_eid = 1;
	w.now = 1000;
	*state = &w;
	return w.st ? 0 : -1;
}

static int teardown(void **state)
{
	kv_stream_free(((struct world *)*state)->st);
	return 0;
}

static void restart(struct world *w)
{
	w->next_seq = w->next_eid = 1;
	w->batches = w->events = w->dropped = 0;
}

static void drop(struct world *w, uint64_t n)
{
	w->next_seq += n; /* each dropped event reserves its number */
	w->dropped += n;
}

/* One message of one event; the subscriber gets it or not. */
static void publish(struct world *w, bool delivered)
{
	uint64_t seq = w->next_seq++, eid = w->next_eid++;
	w->batches++;
	w->events++;
	if (!delivered)
		return;
	char key[24];
	snprintf(key, sizeof(key), "k%llu", (unsigned long long)eid);
	ev_spec e;
	ev_init(&e, EV_UPSTREAM, "stored", eid, B, "t", "cpu", key);
	msg m;
	msg_init(&m);
	msg_build(&m, seq, (int64_t)(w->now * 1000), &e, 1);
	assert_int_equal(kv_stream_ingest(w->st, m.frames, 3, (int64_t)(w->now * 1000), NULL), MKV_OK);
	msg_destroy(&m);
}

static void sends(struct world *w, int n, bool delivered)
{
	for (int i = 0; i < n; i++)
		publish(w, delivered);
}

/* A poll: the stream's position first, then the master's answer.  The
 * books must balance after every one. */
static uint64_t poll(struct world *w)
{
	kv_stream_pos pos;
	kv_stream_position(w->st, &pos);
	kv_loss_counters c = {w->batches, w->events, w->dropped};
	uint64_t r = kv_loss_poll(&w->loss, w->have_prev ? &w->prev : NULL, &c, &pos);
	w->prev = c;
	w->have_prev = true;
	w->now += 5;
	assert_int_equal(w->loss.queue + w->loss.transport + w->loss.unattributed, kv_stream_seq(w->st)->missing);
	return r;
}

static void expect(const struct world *w, uint64_t restarts, uint64_t queue, uint64_t transport, uint64_t unattributed)
{
	const kv_loss *l = &w->loss;
	if (l->restarts != restarts || l->queue != queue || l->transport != transport ||
	    l->unattributed != unattributed)
		fail_msg("restarts %llu queue %llu transport %llu unattributed %llu; want %llu %llu %llu %llu",
			 (unsigned long long)l->restarts, (unsigned long long)l->queue,
			 (unsigned long long)l->transport, (unsigned long long)l->unattributed,
			 (unsigned long long)restarts, (unsigned long long)queue, (unsigned long long)transport,
			 (unsigned long long)unattributed);
}

static void test_queue_drops_explained(void **state)
{
	struct world *w = *state;
	sends(w, 5, true);
	poll(w);
	drop(w, 100);
	poll(w); /* counted by the master, gap not seen yet: nothing to explain */
	expect(w, 0, 0, 0, 0);
	publish(w, true); /* the gap arrives */
	poll(w);
	expect(w, 0, 100, 0, 0);
	publish(w, false); /* a message lost after the publisher */
	publish(w, true);
	poll(w);
	expect(w, 0, 100, 1, 0);
	assert_int_equal(kv_stream_seq(w->st)->event_ids_missing, 1);
}

/* Issue 9, item 1: burst with drops, restart, burst with more drops, all
 * before the next poll; the new process's counters pass the old one's. */
static void test_fast_restart_is_not_transport(void **state)
{
	struct world *w = *state;
	sends(w, 10, true);
	poll(w);
	drop(w, 50);
	sends(w, 2, true); /* process A: a gap of 50 its counters explain, but no poll sees them */
	restart(w);
	drop(w, 100); /* process B drops before its first send */
	sends(w, 20, true);
	assert_true(w->batches + w->dropped > 12 + 50); /* B passed A: the counters did not go back */
	assert_int_equal(poll(w), 1);
	expect(w, 1, 100, 0, 50);
	/* item 2: the numbers B reserved before its first message are counted */
	assert_int_equal(kv_stream_seq(w->st)->missing, 150);
	sends(w, 3, true);
	assert_int_equal(poll(w), 0);
	expect(w, 1, 100, 0, 50);
}

/* A restart the counters show before the stream does counts once. */
static void test_restart_seen_by_counters_first(void **state)
{
	struct world *w = *state;
	sends(w, 10, true);
	poll(w);
	restart(w);
	assert_int_equal(poll(w), 1); /* backwards */
	expect(w, 1, 0, 0, 0);
	drop(w, 7);
	sends(w, 2, true); /* B's first message: the stream's reset, 7 missing */
	assert_int_equal(kv_stream_seq(w->st)->resets, 1);
	assert_int_equal(poll(w), 0);
	/* the orphaned epoch closed with nothing lost; B's 7 are explained by B */
	expect(w, 1, 7, 0, 0);
}

/* The publisher counts a batch after sending it: a stream one message ahead
 * of the counters is no restart. */
static void test_counters_a_message_late(void **state)
{
	struct world *w = *state;
	sends(w, 10, true);
	poll(w);
	publish(w, true);
	w->batches--, w->events--; /* sent and received, not counted yet */
	assert_int_equal(poll(w), 0);
	w->batches++, w->events++;
	assert_int_equal(poll(w), 0);
	expect(w, 0, 0, 0, 0);
}

/* Seen by both at the same poll: once. */
static void test_restart_seen_by_both(void **state)
{
	struct world *w = *state;
	sends(w, 10, true);
	poll(w);
	restart(w);
	sends(w, 2, true);
	assert_int_equal(poll(w), 1);
	expect(w, 1, 0, 0, 0);
}

/* Two restarts between polls, both seen by the stream. */
static void test_two_restarts_between_polls(void **state)
{
	struct world *w = *state;
	sends(w, 10, true);
	poll(w);
	restart(w);
	drop(w, 3);
	sends(w, 5, true);
	restart(w);
	sends(w, 4, true);
	assert_int_equal(poll(w), 2);
	/* the middle process's 3 drops: its counters were never seen */
	expect(w, 2, 0, 0, 3);
}

/* The new process is past the old one in numbers and ids when the poll comes,
 * and its first message arrives after the poll. */
static void test_reset_seen_after_the_poll(void **state)
{
	struct world *w = *state;
	sends(w, 10, true);
	poll(w);
	restart(w);
	drop(w, 30);
	sends(w, 12, false);          /* sent, but not here yet: held back below */
	assert_int_equal(poll(w), 0); /* not backwards, not behind: not visible yet */
	/* now its messages arrive (played again as delivered, same numbers) */
	restart(w);
	drop(w, 30);
	sends(w, 12, true);
	assert_int_equal(poll(w), 1);
	expect(w, 1, 30, 0, 0);
}

/* Issue 9, item 3: the stream falls behind and the publisher goes quiet. */
static void test_tail_loss(void **state)
{
	struct world *w = *state;
	sends(w, 10, true);
	poll(w);
	drop(w, 4);
	sends(w, 20, false); /* the tail never comes */
	kv_loss_counters c = {w->batches, w->events, w->dropped};
	uint64_t upto, eid;
	kv_stream_pos pos;
	poll(w);
	kv_stream_position(w->st, &pos);
	double t0 = (double)pos.last_receive_ms / 1000;                         /* the tail's last message */
	assert_false(kv_loss_tail(&w->loss, &c, &pos, t0 + 1, 6, &upto, &eid)); /* once is not enough */
	assert_false(w->loss.behind_known);                                     /* no earlier answer to compare with */
	poll(w);
	kv_stream_position(w->st, &pos);
	/* quiet for less than the interval: not yet */
	assert_false(kv_loss_tail(&w->loss, &c, &pos, t0 + 5, 6, &upto, &eid));
	assert_true(w->loss.behind_known);
	assert_int_equal(w->loss.behind, 24); /* what the master had used by the last poll, not here */
	poll(w);
	kv_stream_position(w->st, &pos);
	assert_true(kv_loss_tail(&w->loss, &c, &pos, t0 + 7, 6, &upto, &eid));
	assert_int_equal(upto, 34);
	assert_int_equal(eid, 30);
	assert_int_equal(kv_stream_tail_lost(w->st, upto, eid), 24);
	assert_int_equal(w->loss.behind, 0);
	/* counted at once: the tail's own drops are queue, the rest transport */
	expect(w, 0, 4, 20, 0);
	assert_int_equal(kv_stream_seq(w->st)->event_ids_missing, 20);
	poll(w);
	expect(w, 0, 4, 20, 0);
	/* the publisher goes on: nothing counted twice */
	sends(w, 2, true);
	poll(w);
	expect(w, 0, 4, 20, 0);
	assert_int_equal(kv_stream_seq(w->st)->event_ids_missing, 20);
}

/* Issue 21: a publisher seen absent before the first message (a standby
 * promoted, a master down) whose first burst is lost whole, then silence:
 * the stream has received nothing, and the burst is a lost tail all the
 * same, counted from 1, once; a late message of it counts nothing more.
 * Two polls a moment apart (the ingest thread asked for one while it
 * awaited the dialect, the burst queued in ZMQ) are not two looks. */
static void test_first_burst_lost_whole(void **state)
{
	struct world *w = *state;
	kv_stream_publisher_seen(w->st, false); /* it stood by when we looked */
	drop(w, 3);
	sends(w, 40, false); /* the new process's burst: none of it arrives */
	kv_loss_counters c = {w->batches, w->events, w->dropped};
	uint64_t upto = 0, eid = 0;
	kv_stream_pos pos;
	poll(w);
	kv_stream_position(w->st, &pos);
	assert_true(pos.started && pos.epoch_whole); /* it stands at 0 */
	assert_int_equal(pos.position, 0);
	double t0 = w->now;
	assert_false(kv_loss_tail(&w->loss, &c, &pos, t0, 6, &upto, &eid)); /* once is not enough */
	poll(w);
	kv_stream_position(w->st, &pos);
	assert_false(kv_loss_tail(&w->loss, &c, &pos, t0 + 0.001, 6, &upto, &eid)); /* a moment later */
	assert_false(kv_loss_tail(&w->loss, &c, &pos, t0 + 2.9, 6, &upto, &eid));   /* under half the interval */
	poll(w);
	kv_stream_position(w->st, &pos);
	assert_true(kv_loss_tail(&w->loss, &c, &pos, t0 + 3, 6, &upto, &eid));
	assert_int_equal(upto, 43);
	assert_int_equal(eid, 40);
	assert_int_equal(kv_stream_tail_lost(w->st, upto, eid), 43);
	/* the books balance: the queue's 3, the transport's 40 */
	expect(w, 0, 3, 40, 0);
	assert_int_equal(kv_stream_seq(w->st)->event_ids_missing, 40);
	poll(w);
	expect(w, 0, 3, 40, 0);
	/* the publisher goes on: the next message is no gap and no restart */
	sends(w, 2, true);
	poll(w);
	expect(w, 0, 3, 40, 0);
	assert_int_equal(kv_stream_seq(w->st)->missing, 43);
	assert_int_equal(kv_stream_seq(w->st)->resets, 0);
	assert_int_equal(kv_stream_seq(w->st)->event_ids_missing, 40);
}

/* A stream that keeps up is never behind, however busy: only what the master
 * had used by the previous poll counts. */
static void test_busy_is_not_behind(void **state)
{
	struct world *w = *state;
	uint64_t upto, eid;
	for (int i = 0; i < 5; i++) {
		sends(w, 50, true);
		poll(w);
		kv_loss_counters c = {w->batches + 7, w->events + 7, w->dropped}; /* 7 more in flight */
		kv_stream_pos pos;
		kv_stream_position(w->st, &pos);
		assert_false(kv_loss_tail(&w->loss, &c, &pos, w->now, 6, &upto, &eid));
		if (i > 0)
			assert_true(w->loss.behind_known);
		assert_int_equal(w->loss.behind, 0);
		sends(w, 7, true); /* they arrive */
	}
}

/* Joined part-way: drops from before we joined explain nothing later. */
static void test_joined_part_way(void **state)
{
	struct world *w = *state;
	drop(w, 500);
	sends(w, 40, false); /* before the exporter started */
	sends(w, 5, true);
	poll(w);
	expect(w, 0, 0, 0, 0);
	publish(w, false);
	publish(w, true);
	poll(w);
	expect(w, 0, 0, 1, 0);
}

/* Drops counted just before the first poll whose gap arrives after it are
 * still explained (no false transport loss at start-up). */
static void test_first_poll_race(void **state)
{
	struct world *w = *state;
	sends(w, 5, true);
	drop(w, 9);
	poll(w);
	publish(w, true);
	poll(w);
	expect(w, 0, 9, 0, 0);
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Random histories: the books balance after every poll, and without
 * restarts, once the last gap has shown, every bucket is exact. */
static void test_random_histories(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 300; seed++) {
		void *ws;
		assert_int_equal(setup(&ws), 0);
		struct world *w = ws;
		uint64_t r = seed, lost = 0, dropped = 0;
		bool restarts = seed % 2 == 0;
		sends(w, 1, true);
		for (int op = 0; op < 200; op++) {
			unsigned k = (unsigned)(rnd(&r) % 100);
			if (k < 60) {
				bool ok = rnd(&r) % 10 != 0;
				publish(w, ok);
				lost += !ok;
			} else if (k < 75) {
				uint64_t n = 1 + rnd(&r) % 50;
				drop(w, n);
				dropped += n;
			} else if (k < 95 || !restarts) {
				poll(w);
			} else {
				restart(w);
			}
		}
		publish(w, true); /* shows the last gap */
		poll(w);
		if (!restarts)
			expect(w, 0, dropped, lost, 0);
		teardown(&ws);
	}
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_queue_drops_explained),
		T(test_fast_restart_is_not_transport),
		T(test_restart_seen_by_counters_first),
		T(test_restart_seen_by_both),
		T(test_counters_a_message_late),
		T(test_two_restarts_between_polls),
		T(test_reset_seen_after_the_poll),
		T(test_tail_loss),
		T(test_first_burst_lost_whole),
		T(test_busy_is_not_behind),
		T(test_joined_part_way),
		T(test_first_poll_race),
		cmocka_unit_test(test_random_histories),
	};
	return cmocka_run_group_tests_name("loss", tests, NULL, NULL);
}
