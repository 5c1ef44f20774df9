/* SPDX-License-Identifier: Apache-2.0 */
/* Sequence and event-id continuity, one row per story. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include "kv_seqtrack.h"

#include <cmocka.h>

struct seq_case {
	const char *name;
	uint64_t seqs[8];
	size_t n;
	enum mkv_seq_verdict last_verdict;
	uint64_t gaps, missing, duplicates, resets, last_seq;
};

static const struct seq_case seq_cases[] = {
	{"first sets baseline anywhere", {500}, 1, MKV_SEQ_FIRST, 0, 0, 0, 0, 500},
	{"contiguous", {1, 2, 3, 4}, 4, MKV_SEQ_NEXT, 0, 0, 0, 0, 4},
	{"one gap", {1, 2093}, 2, MKV_SEQ_GAP, 1, 2091, 0, 0, 2093},
	{"upstream drops capture",
	 {1, 2093, 2094, 2103, 3096, 3101},
	 6,
	 MKV_SEQ_GAP,
	 4,
	 2091 + 8 + 992 + 4,
	 0,
	 0,
	 3101},
	{"duplicate", {7, 7}, 2, MKV_SEQ_DUPLICATE, 0, 0, 1, 0, 7},
	{"reset to 1", {1, 2, 10, 1}, 4, MKV_SEQ_RESET, 1, 7, 0, 1, 1},
	{"reset then continue", {9, 10, 1, 2}, 4, MKV_SEQ_NEXT, 0, 0, 0, 1, 2},
	{"reset then gap", {9, 1, 5}, 3, MKV_SEQ_GAP, 1, 3, 0, 1, 5},
	/* a new process that dropped 50 events before its first send */
	{"reset to a later first number", {200, 51}, 2, MKV_SEQ_RESET, 1, 50, 0, 1, 51},
	{"reset to 51 then gap", {99, 100, 51, 53}, 4, MKV_SEQ_GAP, 2, 50 + 1, 0, 1, 53},
	{"near u64 max", {UINT64_MAX - 1, UINT64_MAX}, 2, MKV_SEQ_NEXT, 0, 0, 0, 0, UINT64_MAX},
	{"huge jump", {0, UINT64_MAX}, 2, MKV_SEQ_GAP, 1, UINT64_MAX - 1, 0, 0, UINT64_MAX},
};

static void test_sequences(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(seq_cases) / sizeof(seq_cases[0]); i++) {
		const struct seq_case *c = &seq_cases[i];
		kv_seqtrack t = {0};
		enum mkv_seq_verdict v = MKV_SEQ_FIRST;
		print_message("case: %s\n", c->name);
		for (size_t j = 0; j < c->n; j++)
			v = kv_seq_observe(&t, c->seqs[j], false, 0);
		assert_int_equal(v, c->last_verdict);
		assert_int_equal(t.gaps, c->gaps);
		assert_int_equal(t.missing, c->missing);
		assert_int_equal(t.duplicates, c->duplicates);
		assert_int_equal(t.resets, c->resets);
		assert_int_equal(t.last_seq, c->last_seq);
	}
}

static void test_event_ids(void **state)
{
	(void)state;
	kv_seqtrack t = {0};
	assert_false(kv_seq_observe_event_id(&t, 5, false)); /* baseline */
	assert_false(kv_seq_observe_event_id(&t, 6, false));
	assert_false(kv_seq_observe_event_id(&t, 70, false)); /* lost in transport */
	assert_int_equal(t.event_id_gaps, 1);
	assert_int_equal(t.event_ids_missing, 63);
	assert_false(kv_seq_observe_event_id(&t, 70, false)); /* repeat: nothing */
	assert_int_equal(t.resets, 0);
	assert_true(kv_seq_observe_event_id(&t, 1, false)); /* backwards: a reset */
	assert_int_equal(t.resets, 1);
	assert_false(kv_seq_observe_event_id(&t, 2, false));
	/* when the sequence already showed the reset, the ids do not count it twice */
	assert_int_equal(kv_seq_observe(&t, 10, false, 0), MKV_SEQ_FIRST);
	assert_int_equal(kv_seq_observe(&t, 1, false, 0), MKV_SEQ_RESET);
	assert_int_equal(t.resets, 2);
	assert_false(kv_seq_observe_event_id(&t, 1, true));
	assert_int_equal(t.resets, 2);
}

/* A sequence reset drops the event-id baseline, so the first id after it
 * is neither a reset nor a gap. */
static void test_reset_rebases_event_ids(void **state)
{
	(void)state;
	kv_seqtrack t = {0};
	kv_seq_observe(&t, 1, false, 0);
	kv_seq_observe_event_id(&t, 100, false);
	kv_seq_observe(&t, 2, false, 0);
	kv_seq_observe_event_id(&t, 101, false);
	assert_int_equal(kv_seq_observe(&t, 1, false, 0), MKV_SEQ_RESET);
	assert_false(kv_seq_observe_event_id(&t, 40, true));
	assert_false(kv_seq_observe_event_id(&t, 41, true));
	assert_int_equal(t.resets, 1);
	assert_int_equal(t.event_id_gaps, 0);
}

/* A restart whose new process is already past the old one's last number
 * is told by the event ids starting again. */
static void test_reset_by_event_id(void **state)
{
	(void)state;
	kv_seqtrack t = {0};
	assert_int_equal(kv_seq_observe(&t, 1, true, 1), MKV_SEQ_FIRST);
	kv_seq_observe_event_id(&t, 1, false);
	assert_int_equal(kv_seq_observe(&t, 2, true, 2), MKV_SEQ_NEXT);
	kv_seq_observe_event_id(&t, 2, false);
	assert_true(t.epoch_whole);
	/* new process: 5,050 events dropped before its first send, event id 1 */
	assert_int_equal(kv_seq_observe(&t, 5051, true, 1), MKV_SEQ_RESET);
	assert_int_equal(t.resets, 1);
	assert_int_equal(t.missing, 5050);
	assert_int_equal(t.epoch_missing, 5050);
	assert_int_equal(t.gaps, 1);
	assert_false(kv_seq_observe_event_id(&t, 1, true));
	assert_int_equal(t.resets, 1); /* counted once */
	/* the next message of that process is just the next */
	assert_int_equal(kv_seq_observe(&t, 5052, true, 2), MKV_SEQ_NEXT);
	/* a payload that did not decode has no id: the number alone decides */
	assert_int_equal(kv_seq_observe(&t, 5053, false, 0), MKV_SEQ_NEXT);
	assert_int_equal(t.resets, 1);
}

static void test_epochs(void **state)
{
	(void)state;
	kv_seqtrack t = {0};
	kv_seq_observe(&t, 40, false, 0); /* joined part-way */
	assert_false(t.epoch_whole);
	kv_seq_observe(&t, 45, false, 0);
	assert_int_equal(t.epoch_missing, 4);
	kv_seq_observe(&t, 3, false, 0); /* a new process: 2 numbers before its first */
	assert_true(t.epoch_whole);
	assert_int_equal(t.epoch_missing, 2);
	assert_int_equal(t.missing, 6);
	kv_seqtrack u = {0};
	kv_seq_observe(&u, 1, false, 0); /* joined at the very start */
	assert_true(u.epoch_whole);
}

/* A tail the master says was sent and that never came: counted once, and
 * not again when part of it turns up after all. */
/* Issue 21: a publisher the master said was absent (a standby, down,
 * disabled) before the first message started at 1 when it came: the numbers
 * and event ids before the first received are missing.  One that was
 * publishing when we started watching was joined part-way. */
static void test_publisher_seen_before_the_first_message(void **state)
{
	(void)state;
	kv_seqtrack t = {0};
	kv_seq_publisher_seen(&t, true); /* already publishing: joined part-way */
	assert_int_equal(kv_seq_observe(&t, 500, true, 7000), MKV_SEQ_FIRST);
	assert_int_equal(t.missing, 0);
	assert_false(t.epoch_whole);

	t = (kv_seqtrack){0};
	kv_seq_publisher_seen(&t, false); /* a standby */
	kv_seq_publisher_seen(&t, true);  /* promoted: still started after we watched */
	assert_int_equal(kv_seq_observe(&t, 2028, true, 2028 * 3), MKV_SEQ_GAP);
	assert_int_equal(t.gaps, 1);
	assert_int_equal(t.missing, 2027);
	assert_int_equal(t.epoch_missing, 2027);
	assert_true(t.epoch_whole);
	assert_false(kv_seq_observe_event_id(&t, 2028 * 3, false));
	assert_int_equal(t.event_ids_missing, 2028 * 3 - 1);
	assert_int_equal(t.resets, 0);

	t = (kv_seqtrack){0};
	kv_seq_publisher_seen(&t, false);
	assert_int_equal(kv_seq_observe(&t, 1, true, 1), MKV_SEQ_FIRST); /* found in time: nothing lost */
	assert_int_equal(t.missing, 0);
	assert_true(t.epoch_whole);
	kv_seq_publisher_seen(&t, false); /* after the first message: a new process shows as a reset */
	assert_int_equal(kv_seq_observe(&t, 2, true, 2), MKV_SEQ_NEXT);
	assert_int_equal(t.missing, 0);

	/* seen absent, then a first burst lost whole: a tail from 0, counted
	 * once; its late messages and the next ones count nothing more */
	t = (kv_seqtrack){0};
	assert_int_equal(kv_seq_tail_lost(&t, 50, 200), 0); /* nothing known of it yet */
	kv_seq_publisher_seen(&t, false);
	assert_int_equal(kv_seq_position(&t), 0);
	assert_int_equal(kv_seq_tail_lost(&t, 50, 200), 50);
	assert_int_equal(t.missing, 50);
	assert_int_equal(t.event_ids_missing, 200);
	assert_int_equal(kv_seq_observe(&t, 49, true, 190), MKV_SEQ_NEXT); /* late */
	assert_false(kv_seq_observe_event_id(&t, 190, false));
	assert_int_equal(kv_seq_observe(&t, 50, true, 195), MKV_SEQ_NEXT); /* late, the tail's last */
	assert_false(kv_seq_observe_event_id(&t, 195, false));
	assert_int_equal(t.tail_late, 2);
	assert_int_equal(kv_seq_observe(&t, 51, true, 201), MKV_SEQ_NEXT);
	assert_false(kv_seq_observe_event_id(&t, 201, false));
	assert_int_equal(t.tail_late, 2); /* past the tail: on time */
	assert_int_equal(t.missing, 50);
	assert_int_equal(t.event_ids_missing, 200);
	assert_int_equal(t.resets, 0);
	assert_int_equal(kv_seq_observe(&t, 55, true, 210), MKV_SEQ_GAP); /* and a real gap after it */
	assert_int_equal(t.missing, 53);
}

/* Issue 21: a master restarts while the stream is away, and its new process
 * has passed the old one's numbers and event ids by the time the stream is
 * back.  A poll saw it absent in between: the jump is a restart from 1, not
 * a gap.  A message that follows on says the publisher lived through it. */
static void test_publisher_seen_absent_after_the_first_message(void **state)
{
	(void)state;
	kv_seqtrack t = {0};
	for (uint64_t s = 1; s <= 100; s++)
		kv_seq_observe(&t, s, true, s);
	kv_seq_publisher_seen(&t, false); /* down, or unreachable */
	kv_seq_publisher_seen(&t, true);  /* back */
	assert_int_equal(kv_seq_observe(&t, 700, true, 700), MKV_SEQ_RESET);
	assert_int_equal(t.resets, 1);
	assert_int_equal(t.missing, 699); /* all of the new process's before it */
	assert_int_equal(t.epoch_missing, 699);
	assert_true(t.epoch_whole);
	assert_int_equal(kv_seq_observe(&t, 702, true, 702), MKV_SEQ_GAP); /* once: a gap is a gap again */
	assert_int_equal(t.missing, 700);

	/* only its admin API was gone: the stream follows on, and a later gap is a gap */
	t = (kv_seqtrack){0};
	for (uint64_t s = 1; s <= 100; s++)
		kv_seq_observe(&t, s, true, s);
	kv_seq_publisher_seen(&t, false);
	assert_int_equal(kv_seq_observe(&t, 101, true, 101), MKV_SEQ_NEXT);
	assert_int_equal(kv_seq_observe(&t, 110, true, 110), MKV_SEQ_GAP);
	assert_int_equal(t.missing, 8);
	assert_int_equal(t.resets, 0);

	/* a duplicate is no answer either way */
	t = (kv_seqtrack){0};
	kv_seq_observe(&t, 5, true, 5);
	kv_seq_publisher_seen(&t, false);
	assert_int_equal(kv_seq_observe(&t, 5, true, 5), MKV_SEQ_DUPLICATE);
	assert_int_equal(kv_seq_observe(&t, 9, true, 9), MKV_SEQ_RESET);
	assert_int_equal(t.missing, 8);
}

static void test_tail(void **state)
{
	(void)state;
	kv_seqtrack t = {0};
	assert_int_equal(kv_seq_tail_lost(&t, 10, 0), 0); /* nothing received: no position */
	kv_seq_observe(&t, 1, true, 1);
	kv_seq_observe_event_id(&t, 1, false);
	kv_seq_observe(&t, 2, true, 2);
	kv_seq_observe_event_id(&t, 2, false);
	assert_int_equal(kv_seq_tail_lost(&t, 2, 2), 0); /* not behind */
	assert_int_equal(kv_seq_tail_lost(&t, 10, 10), 8);
	assert_int_equal(t.gaps, 1);
	assert_int_equal(t.missing, 8);
	assert_int_equal(t.epoch_missing, 8);
	assert_int_equal(t.event_ids_missing, 8);
	assert_int_equal(t.tail_losses, 1);
	assert_int_equal(kv_seq_position(&t), 10);
	assert_int_equal(kv_seq_tail_lost(&t, 10, 10), 0); /* once */
	/* a late message of the tail: applied, not a reset, not missing again,
	 * counted late */
	assert_int_equal(t.tail_late, 0);
	assert_int_equal(kv_seq_observe(&t, 7, true, 7), MKV_SEQ_NEXT);
	assert_false(kv_seq_observe_event_id(&t, 7, false));
	assert_int_equal(t.missing, 8);
	assert_int_equal(t.event_ids_missing, 8);
	assert_int_equal(t.resets, 0);
	assert_int_equal(t.tail_late, 1);
	assert_int_equal(kv_seq_observe(&t, 7, true, 7), MKV_SEQ_DUPLICATE); /* once */
	assert_int_equal(t.tail_late, 1);
	/* the stream goes on past the tail: only numbers after it count */
	assert_int_equal(kv_seq_observe(&t, 11, true, 11), MKV_SEQ_NEXT);
	assert_false(kv_seq_observe_event_id(&t, 11, false));
	assert_int_equal(kv_seq_observe(&t, 14, true, 14), MKV_SEQ_GAP);
	kv_seq_observe_event_id(&t, 14, false);
	assert_int_equal(t.missing, 8 + 2);
	assert_int_equal(t.event_ids_missing, 8 + 2);
	assert_int_equal(t.tail_late, 1);
	/* a restart forgets the counted tail: the new process's numbers are on time */
	assert_int_equal(kv_seq_observe(&t, 1, true, 1), MKV_SEQ_RESET);
	assert_int_equal(kv_seq_position(&t), 1);
	assert_int_equal(kv_seq_observe(&t, 2, true, 2), MKV_SEQ_NEXT);
	assert_int_equal(t.tail_late, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequences),
		cmocka_unit_test(test_reset_by_event_id),
		cmocka_unit_test(test_epochs),
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_publisher_seen_before_the_first_message),
		cmocka_unit_test(test_publisher_seen_absent_after_the_first_message),
		cmocka_unit_test(test_event_ids),
		cmocka_unit_test(test_reset_rebases_event_ids),
	};
	return cmocka_run_group_tests_name("seqtrack", tests, NULL, NULL);
}
