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
	enum kv_seq_verdict last_verdict;
	uint64_t gaps, missing, duplicates, resets, last_seq;
};

static const struct seq_case seq_cases[] = {
	{"first sets baseline anywhere", {500}, 1, KV_SEQ_FIRST, 0, 0, 0, 0, 500},
	{"contiguous", {1, 2, 3, 4}, 4, KV_SEQ_NEXT, 0, 0, 0, 0, 4},
	{"one gap", {1, 2093}, 2, KV_SEQ_GAP, 1, 2091, 0, 0, 2093},
	{"upstream drops capture", {1, 2093, 2094, 2103, 3096, 3101}, 6, KV_SEQ_GAP, 4, 2091 + 8 + 992 + 4, 0, 0, 3101},
	{"duplicate", {7, 7}, 2, KV_SEQ_DUPLICATE, 0, 0, 1, 0, 7},
	{"reset to 1", {1, 2, 10, 1}, 4, KV_SEQ_RESET, 1, 7, 0, 1, 1},
	{"reset then continue", {9, 10, 1, 2}, 4, KV_SEQ_NEXT, 0, 0, 0, 1, 2},
	{"reset then gap", {9, 1, 5}, 3, KV_SEQ_GAP, 1, 3, 0, 1, 5},
	{"near u64 max", {UINT64_MAX - 1, UINT64_MAX}, 2, KV_SEQ_NEXT, 0, 0, 0, 0, UINT64_MAX},
	{"huge jump", {0, UINT64_MAX}, 2, KV_SEQ_GAP, 1, UINT64_MAX - 1, 0, 0, UINT64_MAX},
};

static void test_sequences(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(seq_cases) / sizeof(seq_cases[0]); i++) {
		const struct seq_case *c = &seq_cases[i];
		kv_seqtrack t = {0};
		enum kv_seq_verdict v = KV_SEQ_FIRST;
		print_message("case: %s\n", c->name);
		for (size_t j = 0; j < c->n; j++)
			v = kv_seq_observe(&t, c->seqs[j]);
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
	assert_int_equal(kv_seq_observe(&t, 10), KV_SEQ_FIRST);
	assert_int_equal(kv_seq_observe(&t, 1), KV_SEQ_RESET);
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
	kv_seq_observe(&t, 1);
	kv_seq_observe_event_id(&t, 100, false);
	kv_seq_observe(&t, 2);
	kv_seq_observe_event_id(&t, 101, false);
	assert_int_equal(kv_seq_observe(&t, 1), KV_SEQ_RESET);
	assert_false(kv_seq_observe_event_id(&t, 40, true));
	assert_false(kv_seq_observe_event_id(&t, 41, true));
	assert_int_equal(t.resets, 1);
	assert_int_equal(t.event_id_gaps, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequences),
		cmocka_unit_test(test_event_ids),
		cmocka_unit_test(test_reset_rebases_event_ids),
	};
	return cmocka_run_group_tests_name("seqtrack", tests, NULL, NULL);
}
