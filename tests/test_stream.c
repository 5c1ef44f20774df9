/* SPDX-License-Identifier: Apache-2.0 */
/* Stream-level behaviour: continuity decides trust, and no event is
 * discarded because the sequence misbehaved. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "kv_stream.h"
#include "support/feed.h"
#include "support/msgbuild.h"

#include <cmocka.h>

struct fx {
	mkv_budget budget;
	kv_stream *st;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	mkv_budget_init(&f->budget, 100, 100000);
	assert_non_null(f->st = kv_stream_new(&f->budget, 99));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	kv_stream_free(f->st);
	free(f);
	return 0;
}

static void stored_at(kv_stream *st, uint64_t seq, uint64_t eid, const char *t, const char *key)
{
	ev_spec e;
	ev_init(&e, EV_UPSTREAM, "stored", eid, B, t, "cpu", key);
	assert_int_equal(feed(st, seq, &e, 1), MKV_OK);
}

static void cleared_at(kv_stream *st, uint64_t seq, uint64_t eid, const char *t)
{
	ev_spec e;
	ev_init(&e, EV_SPEC, "cleared", eid, B, t, NULL, NULL);
	assert_int_equal(feed(st, seq, &e, 1), MKV_OK);
}

static void test_gap_marks_every_tenant_stale(void **state)
{
	kv_stream *st = ((struct fx *)*state)->st;
	cleared_at(st, 1, 1, "a");
	cleared_at(st, 2, 2, "b");
	stored_at(st, 3, 3, "a", "k1");
	assert_int_equal(tenant(st, "a")->stale, 0);
	assert_int_equal(tenant(st, "b")->stale, 0);
	stored_at(st, 10, 4, "a", "k2"); /* 6 messages lost */
	assert_int_equal(kv_stream_seq(st)->gaps, 1);
	assert_int_equal(kv_stream_seq(st)->missing, 6);
	assert_int_equal(tenant(st, "a")->stale, KV_STALE_GAP);
	assert_int_equal(tenant(st, "b")->stale, KV_STALE_GAP);
	/* the message after the gap is applied */
	assert_int_equal(kv_tenant_objects(tenant(st, "a")), 2);
	/* a cleared restores trust for that tenant only */
	cleared_at(st, 11, 5, "b");
	assert_int_equal(tenant(st, "b")->stale, 0);
	assert_int_equal(tenant(st, "a")->stale, KV_STALE_GAP);
}

/* A restart resets the sequence to 1 without a signal: count it, take the
 * new baseline, apply the new events. */
static void test_reset_applies_new_events(void **state)
{
	kv_stream *st = ((struct fx *)*state)->st;
	cleared_at(st, 1, 1, "a");
	for (uint64_t s = 2; s <= 10; s++) {
		char k[8];
		snprintf(k, sizeof(k), "%llu", (unsigned long long)s);
		stored_at(st, s, s, "a", k);
	}
	assert_int_equal(tenant(st, "a")->stale, 0);
	stored_at(st, 1, 1, "a", "after-restart");
	assert_int_equal(kv_stream_seq(st)->resets, 1);
	assert_int_equal(kv_stream_seq(st)->gaps, 0);
	assert_int_equal(tenant(st, "a")->stale, KV_STALE_RESET);
	assert_int_equal(media_of(st, "a", "after-restart"), MKV_MEDIUM_CPU);
	assert_int_equal(kv_tenant_objects(tenant(st, "a")), 10);
	stored_at(st, 2, 2, "a", "next");
	assert_int_equal(kv_stream_seq(st)->resets, 1); /* counted once */
	assert_int_equal(kv_stream_seq(st)->event_id_gaps, 0);
	assert_int_equal(kv_stream_seq(st)->last_seq, 2);
}

/* The event id moving backwards with the sequence going on is a restart
 * too: a new process that numbered past the old one before its first
 * message arrived.  It numbers from 1, so the numbers before are missing. */
static void test_event_id_reset(void **state)
{
	kv_stream *st = ((struct fx *)*state)->st;
	cleared_at(st, 1, 50, "a");
	stored_at(st, 2, 51, "a", "x");
	stored_at(st, 3, 1, "a", "y");
	assert_int_equal(kv_stream_seq(st)->resets, 1);
	assert_int_equal(kv_stream_seq(st)->missing, 2);
	assert_int_equal(tenant(st, "a")->stale, KV_STALE_RESET | KV_STALE_GAP);
	assert_int_equal(media_of(st, "a", "y"), MKV_MEDIUM_CPU);
}

static void test_duplicate_message_skipped(void **state)
{
	kv_stream *st = ((struct fx *)*state)->st;
	stored_at(st, 1, 1, "a", "x");
	ev_spec e[2];
	ev_init(&e[0], EV_UPSTREAM, "removed", 1, B, "a", "cpu", "x");
	ev_init(&e[1], EV_UPSTREAM, "stored", 2, B, "a", "cpu", "y");
	feed(st, 1, e, 2); /* the same sequence again */
	assert_int_equal(kv_stream_seq(st)->duplicates, 1);
	assert_int_equal(kv_stream_stats_of(st)->duplicate_message_events, 2);
	assert_int_equal(media_of(st, "a", "x"), MKV_MEDIUM_CPU);
	assert_int_equal(media_of(st, "a", "y"), 0);
	assert_int_equal(kv_stream_stats_of(st)->messages, 2);
}

/* The sequence of a message whose payload is bad still counts: the next
 * good message is not a gap, and a bad message after lost ones is. */
static void test_bad_payload_keeps_sequence(void **state)
{
	kv_stream *st = ((struct fx *)*state)->st;
	msg m;
	msg_init(&m);
	stored_at(st, 1, 1, "a", "x");
	msg_set_raw_payload(&m, 2, "\xc1", 1);
	kv_stream_ingest(st, m.frames, 3, 0, NULL);
	stored_at(st, 3, 2, "a", "y");
	assert_int_equal(kv_stream_seq(st)->gaps, 0);
	assert_int_equal(kv_stream_stats_of(st)->decode_errors[MKV_R_MSGPACK_PARSE], 1);
	msg_set_raw_payload(&m, 9, "\x90", 1);
	kv_stream_ingest(st, m.frames, 3, 0, NULL);
	assert_int_equal(kv_stream_seq(st)->gaps, 1);
	assert_int_equal(kv_stream_seq(st)->missing, 5);
	assert_int_equal(kv_stream_stats_of(st)->decode_errors[MKV_R_PAYLOAD_SHAPE], 1);
	/* without a valid sequence frame there is nothing to track */
	m.frames[1].len = 4;
	kv_stream_ingest(st, m.frames, 3, 0, NULL);
	kv_stream_ingest(st, m.frames, 2, 0, NULL);
	assert_int_equal(kv_stream_stats_of(st)->decode_errors[MKV_R_SEQUENCE_LENGTH], 1);
	assert_int_equal(kv_stream_stats_of(st)->decode_errors[MKV_R_FRAME_COUNT], 1);
	assert_int_equal(kv_stream_seq(st)->last_seq, 9);
	assert_int_equal(kv_stream_stats_of(st)->messages, 6);
	msg_destroy(&m);
}

static void test_transport_loss_by_event_id(void **state)
{
	kv_stream *st = ((struct fx *)*state)->st;
	ev_spec e[64];
	for (int i = 0; i < 64; i++)
		ev_init(&e[i], EV_UPSTREAM, "stored", (uint64_t)i + 1, B, "a", "disk", "k");
	feed(st, 1, e, 64);
	/* message 2 (event ids 65..128) is lost in transport */
	for (int i = 0; i < 64; i++)
		e[i].f[0].u = (uint64_t)i + 129;
	feed(st, 3, e, 64);
	assert_int_equal(kv_stream_seq(st)->missing, 1);
	assert_int_equal(kv_stream_seq(st)->event_ids_missing, 64);
	/* a publisher queue drop reserves sequence numbers but no event ids */
	for (int i = 0; i < 64; i++)
		e[i].f[0].u = (uint64_t)i + 193;
	feed(st, 10, e, 64);
	assert_int_equal(kv_stream_seq(st)->missing, 1 + 6);
	assert_int_equal(kv_stream_seq(st)->event_ids_missing, 64);
	assert_int_equal(tenant(st, "a")->counts.events[MKV_EV_STORED], 192);
	assert_int_equal(tenant(st, "a")->counts.stored_duplicates, 191);
}

/* Issue 21: a rejected event is no evidence.  A poison event (an unknown
 * event_type) whose event_id is 2^63, or repeats the next valid id, at the
 * start, the middle or the end of a good message, moves no sequence, reset
 * or loss figure; it arrived, so it is not transport loss either. */
static void test_rejected_event_is_no_evidence(void **state)
{
	(void)state;
	static const uint64_t poison_ids[] = {1ull << 63, 0 /* the next valid id */, 1};
	for (size_t v = 0; v < sizeof(poison_ids) / sizeof(poison_ids[0]); v++) {
		mkv_budget budget;
		mkv_budget_init(&budget, 100, 100000);
		kv_stream *st = kv_stream_new(&budget, 7);
		uint64_t seq = 0, eid = 0;
		stored_at(st, ++seq, ++eid, "a", "k0");
		for (int where = 0; where < 3; where++) { /* poison first, in the middle, last */
			ev_spec e[3];
			for (int i = 0, good = 0; i < 3; i++) {
				uint64_t id = poison_ids[v] ? poison_ids[v] : eid + 1;
				if (i == where) {
					ev_init(&e[i], EV_UPSTREAM, "stored", id, B, "a", "cpu", "poison");
					ev_set(&e[i], STR("event_type", "exploded"));
					ev_set(&e[i], STR("type", "Exploded"));
				} else {
					ev_init(&e[i], EV_UPSTREAM, "stored", ++eid, B, "a", "cpu",
						good++ ? "k2" : "k1");
				}
			}
			assert_int_equal(feed(st, ++seq, e, 3), MKV_OK);
			stored_at(st, ++seq, ++eid, "a", "k3");
		}
		const kv_seqtrack *t = kv_stream_seq(st);
		print_message("poison id %llu\n", (unsigned long long)poison_ids[v]);
		assert_int_equal(t->resets, 0);
		assert_int_equal(t->gaps, 0);
		assert_int_equal(t->missing, 0);
		assert_int_equal(t->event_id_gaps, 0);
		assert_int_equal(t->event_ids_missing, 0);
		assert_int_equal(t->last_event_id, eid);
		assert_int_equal(kv_stream_stats_of(st)->decode_errors[MKV_R_UNKNOWN_EVENT_TYPE], 3);
		assert_int_equal(tenant(st, "a")->stale, KV_STALE_STARTUP);
		assert_int_equal(media_of(st, "a", "poison"), 0);
		kv_stream_free(st);
	}
}

/* A rejected event took an event id at the publisher: a valid id right after
 * it that is one higher than expected is no loss; two higher is one. */
static void test_rejected_event_takes_one_id(void **state)
{
	kv_stream *st = ((struct fx *)*state)->st;
	stored_at(st, 1, 1, "a", "x");
	ev_spec e[2];
	ev_init(&e[0], EV_UPSTREAM, "stored", 2, B, "a", "cpu", "y");
	ev_set(&e[0], UINT("medium", 7)); /* field_type: its id is not read */
	ev_init(&e[1], EV_UPSTREAM, "stored", 3, B, "a", "cpu", "z");
	feed(st, 2, e, 2);
	assert_int_equal(kv_stream_seq(st)->event_ids_missing, 0);
	e[1].f[0].u = 6; /* one rejected between 3 and 6: 4 or 5 was lost */
	feed(st, 3, e, 2);
	assert_int_equal(kv_stream_seq(st)->event_ids_missing, 1);
	assert_int_equal(kv_stream_seq(st)->resets, 0);
}

static void test_histograms_and_timestamp(void **state)
{
	kv_stream *st = ((struct fx *)*state)->st;
	ev_spec e[64];
	for (int i = 0; i < 64; i++)
		ev_init(&e[i], EV_SPEC, "stored", (uint64_t)i + 1, B, "a", "cpu", "k");
	msg m;
	msg_init(&m);
	msg_build(&m, 1, 1000000, e, 64);
	kv_stream_ingest(st, m.frames, 3, 1000003, NULL); /* 3 ms late */
	msg_build(&m, 2, 1000000, e, 1);
	kv_stream_ingest(st, m.frames, 3, 999000, NULL); /* clock skew: clamps to 0 */
	msg_build(&m, 3, 2000000, e, 0);
	kv_stream_ingest(st, m.frames, 3, 2000000, NULL);
	const kv_stream_stats *ss = kv_stream_stats_of(st);
	assert_true(ss->has_timestamp);
	assert_int_equal(ss->last_timestamp_ms, 2000000);
	assert_int_equal(ss->lag_seconds.count, 3);
	assert_int_equal(ss->lag_seconds.counts[0], 2); /* <= 0.5 ms: 0 and 0 */
	assert_int_equal(ss->lag_seconds.counts[3], 1); /* (2.5 ms, 5 ms] */
	assert_true(ss->lag_seconds.sum > 0.0029 && ss->lag_seconds.sum < 0.0031);
	assert_int_equal(ss->batch_events.count, 3);
	assert_int_equal(ss->batch_events.counts[0], 2);  /* 0 and 1 events */
	assert_int_equal(ss->batch_events.counts[10], 1); /* 64 */
	assert_int_equal(ss->batch_events.counts[11], 0); /* above 64 */
	msg_destroy(&m);
}

/* A reconnect is not a loss: the next message (or the master's last
 * number) tells whether anything went missing meanwhile. */
static void test_reconnect_stale_only_on_loss(void **state)
{
	kv_stream *st = ((struct fx *)*state)->st;
	cleared_at(st, 1, 1, "a");
	kv_stream_reconnected(st);
	assert_int_equal(kv_stream_stats_of(st)->reconnects, 1);
	assert_int_equal(tenant(st, "a")->stale, 0);
	stored_at(st, 2, 2, "a", "k"); /* nothing was lost */
	assert_int_equal(tenant(st, "a")->stale, 0);

	kv_stream_reconnected(st);
	stored_at(st, 5, 5, "a", "k2"); /* two messages were lost */
	assert_int_equal(tenant(st, "a")->stale, KV_STALE_RECONNECT | KV_STALE_GAP);

	cleared_at(st, 6, 6, "a");
	kv_stream_reconnected(st);
	stored_at(st, 7, 7, "a", "k3");
	assert_int_equal(tenant(st, "a")->stale, 0);
	/* nothing arrives after this reconnect, but the master says 9 were sent */
	cleared_at(st, 8, 8, "a");
	kv_stream_reconnected(st);
	assert_int_equal(kv_stream_tail_lost(st, 9, 9), 1);
	assert_int_equal(tenant(st, "a")->stale, KV_STALE_RECONNECT | KV_STALE_GAP);
	assert_int_equal(kv_stream_stats_of(st)->reconnects, 4);

	/* the monitor's word of the reconnect came after the first message */
	cleared_at(st, 10, 10, "a");
	kv_stream_disconnected(st);
	stored_at(st, 12, 12, "a", "k4");
	assert_int_equal(tenant(st, "a")->stale, KV_STALE_GAP);
	kv_stream_reconnected(st);
	assert_int_equal(tenant(st, "a")->stale, KV_STALE_GAP | KV_STALE_RECONNECT);

	kv_stream_pos pos;
	cleared_at(st, 13, 13, "a");
	kv_stream_tail_lost(st, 13, 13);
	kv_stream_position(st, &pos);
	assert_true(pos.started);
	assert_int_equal(pos.position, 13);
	assert_int_equal(pos.last_event_id, 13);
	assert_int_equal(pos.missing, 2 + 1 + 1);
	assert_int_equal(pos.messages, 9);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#define U(f) cmocka_unit_test(f)
	const struct CMUnitTest tests[] = {
		T(test_gap_marks_every_tenant_stale),
		T(test_reset_applies_new_events),
		T(test_event_id_reset),
		T(test_duplicate_message_skipped),
		T(test_bad_payload_keeps_sequence),
		T(test_transport_loss_by_event_id),
		T(test_histograms_and_timestamp),
		T(test_reconnect_stale_only_on_loss),
		U(test_rejected_event_is_no_evidence),
		T(test_rejected_event_takes_one_id),
	};
	return cmocka_run_group_tests_name("stream", tests, NULL, NULL);
}
