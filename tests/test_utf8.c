/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 validation (exporter/core/base/utf8.c): the check that keeps one bad
 * tenant id from failing a whole scrape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "kv_utf8.h"

#include <cmocka.h>

static void test_utf8(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		size_t n;
		bool clean;
	} cases[] = {
		{"", 0, true},
		{"tenant-a", 8, true},
		{"\xce\xba\xce\xbb", 4, true}, /* κλ */
		{"\xe2\x82\xac", 3, true},     /* € */
		{"\xf0\x9f\x98\x80", 4, true}, /* U+1F600 */
		{"\xf4\x8f\xbf\xbf", 4, true}, /* U+10FFFF, the last */
		{"a\0b", 3, false},            /* NUL */
		{"\xff", 1, false},
		{"\xc0\xaf", 2, false},         /* overlong '/' */
		{"\xe0\x80\xaf", 3, false},     /* overlong, 3 bytes */
		{"\xed\xa0\x80", 3, false},     /* surrogate U+D800 */
		{"\xf4\x90\x80\x80", 4, false}, /* above U+10FFFF */
		{"\xce", 1, false},             /* truncated */
		{"\xe2\x82", 2, false},
		{"\xce\x41", 2, false}, /* bad continuation */
		{"\x80", 1, false},     /* lone continuation */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (mkv_label_value_clean(cases[i].s, cases[i].n) != cases[i].clean)
			fail_msg("case %zu", i);
	assert_int_equal(kv_utf8_seq_len((const unsigned char *)"\xf0\x9f\x98\x80", 4), 4);
	assert_int_equal(kv_utf8_seq_len((const unsigned char *)"\xf0\x9f\x98\x80", 3), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8),
	};
	return cmocka_run_group_tests_name("utf8", tests, NULL, NULL);
}
