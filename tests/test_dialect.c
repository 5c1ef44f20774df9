/* SPDX-License-Identifier: Apache-2.0 */
/* The choice of a member's dialect (kv_dialect.h): a flag fixes it, auto
 * waits for the master's status fields, falls back to the guide's without
 * them, and a later answer that disagrees with what events were read in is
 * a switch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include "kv_dialect.h"

#include <cmocka.h>

static void test_flag_fixes_it(void **state)
{
	(void)state;
	kv_dialect_choice c;
	kv_dialect_init(&c, KV_DIALECT_OBJECT, true);
	assert_true(c.decided && c.fixed);
	assert_int_equal(c.dialect, KV_DIALECT_OBJECT);
	assert_int_equal(c.basis, KV_DIALECT_BY_FLAG);
	assert_int_equal(kv_dialect_observe(&c, KV_DIALECT_MEDIA, true), KV_DIALECT_SAME);
	assert_int_equal(kv_dialect_give_up(&c), KV_DIALECT_SAME);
	assert_int_equal(c.dialect, KV_DIALECT_OBJECT);
	kv_dialect_init(&c, KV_DIALECT_MEDIA, false);
	assert_int_equal(c.dialect, KV_DIALECT_MEDIA);
	assert_int_equal(kv_dialect_observe(&c, KV_DIALECT_OBJECT, false), KV_DIALECT_SAME);
}

static void test_auto_without_status_url_is_the_guide(void **state)
{
	(void)state;
	kv_dialect_choice c;
	kv_dialect_init(&c, -1, false);
	assert_true(c.decided && !c.fixed);
	assert_int_equal(c.dialect, KV_DIALECT_MEDIA);
	assert_string_equal(kv_dialect_basis_name(c.basis), "no_status_url");
}

/* Ingest waits: the first answer decides, whichever it says. */
static void test_auto_first_answer_decides(void **state)
{
	(void)state;
	for (int d = 0; d < KV_DIALECT__COUNT; d++) {
		kv_dialect_choice c;
		kv_dialect_init(&c, -1, true);
		assert_false(c.decided);
		assert_int_equal(kv_dialect_observe(&c, (enum kv_dialect)d, false), KV_DIALECT_DECIDED);
		assert_true(c.decided);
		assert_int_equal(c.dialect, d);
		assert_int_equal(c.basis, KV_DIALECT_BY_STATUS);
		assert_int_equal(kv_dialect_give_up(&c), KV_DIALECT_SAME); /* the wait ends: nothing to do */
		assert_int_equal(kv_dialect_observe(&c, (enum kv_dialect)d, true), KV_DIALECT_SAME);
		assert_int_equal(c.switches, 0);
	}
}

/* No answer in time: the guide's for now; an answer that says object
 * after events were read is a switch, and back again. */
static void test_fallback_then_switch_both_ways(void **state)
{
	(void)state;
	kv_dialect_choice c;
	kv_dialect_init(&c, -1, true);
	assert_int_equal(kv_dialect_give_up(&c), KV_DIALECT_DECIDED);
	assert_int_equal(c.dialect, KV_DIALECT_MEDIA);
	assert_string_equal(kv_dialect_basis_name(c.basis), "no_status_answer");
	assert_int_equal(kv_dialect_observe(&c, KV_DIALECT_OBJECT, true), KV_DIALECT_SWITCHED);
	assert_int_equal(c.dialect, KV_DIALECT_OBJECT);
	assert_int_equal(kv_dialect_observe(&c, KV_DIALECT_OBJECT, true), KV_DIALECT_SAME);
	/* the master was upgraded in place */
	assert_int_equal(kv_dialect_observe(&c, KV_DIALECT_MEDIA, true), KV_DIALECT_SWITCHED);
	assert_int_equal(c.dialect, KV_DIALECT_MEDIA);
	assert_int_equal(c.switches, 2);
}

/* A fallback under which nothing was read (a standby, which publishes
 * nothing) is corrected without a switch: no figure was read wrongly. */
static void test_fallback_corrected_before_any_event(void **state)
{
	(void)state;
	kv_dialect_choice c;
	kv_dialect_init(&c, -1, true);
	kv_dialect_give_up(&c);
	assert_int_equal(kv_dialect_observe(&c, KV_DIALECT_OBJECT, false), KV_DIALECT_DECIDED);
	assert_int_equal(c.dialect, KV_DIALECT_OBJECT);
	assert_int_equal(c.switches, 0);
	/* the same word as the fallback's, before any event: nothing to say */
	kv_dialect_init(&c, -1, true);
	kv_dialect_give_up(&c);
	assert_int_equal(kv_dialect_observe(&c, KV_DIALECT_MEDIA, false), KV_DIALECT_SAME);
	assert_int_equal(c.basis, KV_DIALECT_BY_STATUS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flag_fixes_it),
		cmocka_unit_test(test_auto_without_status_url_is_the_guide),
		cmocka_unit_test(test_auto_first_answer_decides),
		cmocka_unit_test(test_fallback_then_switch_both_ways),
		cmocka_unit_test(test_fallback_corrected_before_any_event),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
