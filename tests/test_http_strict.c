/* SPDX-License-Identifier: Apache-2.0 */
/* kvd_http_path_bad: a request target is refused when its path (before ? or
 * #) has %00 or a % without two hex digits, as RFC 3986's pct-encoded rule
 * says; its query is not the path's business.  The expectations are
 * written from the RFC's grammar. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "kv_http_strict.h"

static void test_paths(void **state)
{
	(void)state;
	static const char *const good[] = {
		"/metrics", "/", "/status?tenant=a%00b", "/a%20b", "/%41%7e", "/%0a", "/x#%zz", "/state?%", "/%ff", ""};
	static const char *const bad[] = {"/state%00x", "/%00", "/%",   "/a%2",   "/a%2?x=1",
					  "/%zz",       "/%g1", "/%1g", "/ok/%0", "/a%%41"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (kvd_http_path_bad(good[i]))
			fail_msg("%s refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!kvd_http_path_bad(bad[i]))
			fail_msg("%s taken", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
