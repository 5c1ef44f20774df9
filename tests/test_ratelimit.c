/* SPDX-License-Identifier: Apache-2.0 */
/* kvd_ratelimit_allow: at most `burst` lines in a window, the ones dropped
 * counted and told with the next line allowed, whatever the clock's
 * origin (a machine up a minute, or ten years).  The expectations are a
 * model written here: a window opens at the first try after the last one
 * ended. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "kv_log.h"

static void run_at(double t0)
{
	kvd_ratelimit r = KVD_RATELIMIT(10, 3);
	unsigned held = 99;
	for (int i = 0; i < 3; i++) {
		assert_true(kvd_ratelimit_allow(&r, t0 + i, &held));
		assert_int_equal(held, 0);
	}
	for (int i = 0; i < 5; i++) /* the burst is spent until the window ends */
		assert_false(kvd_ratelimit_allow(&r, t0 + 3 + i, &held));
	assert_false(kvd_ratelimit_allow(&r, t0 + 9.9, &held));
	assert_true(kvd_ratelimit_allow(&r, t0 + 10, &held)); /* a new window */
	assert_int_equal(held, 6);                            /* the six dropped, told once */
	assert_true(kvd_ratelimit_allow(&r, t0 + 11, &held));
	assert_int_equal(held, 0);
}

static void test_burst_then_quiet(void **state)
{
	(void)state;
	run_at(1);             /* a clock that started a second ago */
	run_at(60);            /* a machine up a minute */
	run_at(315360000.0);   /* ten years */
	run_at(1796000000.25); /* the wall clock */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_then_quiet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
