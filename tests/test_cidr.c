/* SPDX-License-Identifier: Apache-2.0 */
/* The addresses and networks of --web.login-penalty-exempt
 * (exporter/daemon/cidr.c): what each matches, IPv4 against the
 * IPv4-mapped addresses the HTTP server gives IPv4 peers, IPv6 against
 * IPv6, and what is refused, with why. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kv_cidr.h"

static const unsigned char v4_10[16] = {[10] = 0xff, [11] = 0xff, [12] = 10, [13] = 200, [15] = 9};
static const unsigned char v4_11[16] = {[10] = 0xff, [11] = 0xff, [12] = 11, [15] = 1};
static const unsigned char v4_7[16] = {[10] = 0xff, [11] = 0xff, [12] = 192, [14] = 2, [15] = 7};
static const unsigned char v4_8[16] = {[10] = 0xff, [11] = 0xff, [12] = 192, [14] = 2, [15] = 8};
static const unsigned char v4_172[16] = {[10] = 0xff, [11] = 0xff, [12] = 172, [13] = 31, [15] = 1};
static const unsigned char v6_fd[16] = {0xfd, 0x99, [15] = 1};
static const unsigned char v6_fe[16] = {0xfe, 0x80, [15] = 1};
static const unsigned char v6_lo[16] = {[15] = 1};
static const unsigned char v6_compat[16] = {[12] = 10, [15] = 1}; /* ::10.0.0.1, not mapped */

static kvd_cidr one(const char *text)
{
	kvd_cidr c;
	const char *why = kvd_cidr_parse(text, &c);
	if (why)
		fail_msg("%s: %s", text, why);
	return c;
}

static bool in(const char *text, const unsigned char addr[16])
{
	kvd_cidr c = one(text);
	return kvd_cidr_match(&c, 1, addr);
}

static void test_matches(void **state)
{
	(void)state;
	assert_true(in("10.0.0.0/8", v4_10));
	assert_false(in("10.0.0.0/8", v4_11));
	assert_false(in("10.0.0.0/8", v6_compat)); /* an IPv6 address whose last bytes are 10.0.0.1 */
	assert_true(in("172.16.0.0/12", v4_172));  /* a prefix within a byte */
	assert_false(in("172.16.0.0/13", v4_172));
	assert_true(in("192.0.2.7", v4_7)); /* an address alone: /32 */
	assert_false(in("192.0.2.7", v4_8));
	assert_true(in("192.0.2.7/32", v4_7));
	assert_true(in("192.0.2.6/31", v4_7) && !in("192.0.2.6/31", v4_8));
	assert_true(in("0.0.0.0/0", v4_11) && in("0.0.0.0/0", v4_8)); /* every IPv4 peer */
	assert_false(in("0.0.0.0/0", v6_lo) || in("0.0.0.0/0", v6_compat));
	assert_true(in("fd00::/8", v6_fd));
	assert_false(in("fd00::/8", v6_fe));
	assert_true(in("fc00::/7", v6_fd));
	assert_true(in("::1", v6_lo) && !in("::1", v6_fd));
	assert_true(in("::ffff:10.0.0.0/104", v4_10));       /* the mapped form, spelled out */
	assert_true(in("::/0", v6_fd) && in("::/0", v4_10)); /* every address */
	kvd_cidr list[] = {one("10.0.0.0/8"), one("fd00::/8")};
	assert_true(kvd_cidr_match(list, 2, v4_10) && kvd_cidr_match(list, 2, v6_fd));
	assert_false(kvd_cidr_match(list, 2, v4_8) || kvd_cidr_match(list, 2, v6_fe));
	assert_false(kvd_cidr_match(list, 0, v4_10));
}

static void test_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *text, *why;
	} bad[] = {
		{"10.0.0.0/33", "has a prefix length that is not a number from 0 to 32"},
		{"::/129", "has a prefix length that is not a number from 0 to 128"},
		{"::1/1280", "has a prefix length that is not a number from 0 to 128"},
		{"10.0.0.0/", "has a prefix length that is not a number from 0 to 32"},
		{"10.0.0.0/+8", "has a prefix length that is not a number from 0 to 32"},
		{"10.0.0.0/08", "has a prefix length that is not a number from 0 to 32"},
		{"10.0.0.0/8x", "has a prefix length that is not a number from 0 to 32"},
		{"10.1.0.0/8", "has bits set beyond its prefix length (write the network's first address)"},
		{"fd00::/7", "has bits set beyond its prefix length (write the network's first address)"},
		{"10.0.0/8", "is not an IPv4 or IPv6 address or network (like 10.0.0.0/8, fd00::/8, 192.0.2.7)"},
		{"[::1]", "is not an IPv4 or IPv6 address or network (like 10.0.0.0/8, fd00::/8, 192.0.2.7)"},
		{"", "is not an IPv4 or IPv6 address or network (like 10.0.0.0/8, fd00::/8, 192.0.2.7)"},
		{"/8", "is not an IPv4 or IPv6 address or network (like 10.0.0.0/8, fd00::/8, 192.0.2.7)"},
		{"10.0.0.1 ", "is not an IPv4 or IPv6 address or network (like 10.0.0.0/8, fd00::/8, 192.0.2.7)"},
		{"prometheus", "is not an IPv4 or IPv6 address or network (like 10.0.0.0/8, fd00::/8, 192.0.2.7)"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		kvd_cidr c;
		const char *why = kvd_cidr_parse(bad[i].text, &c);
		if (!why || strcmp(why, bad[i].why))
			fail_msg("\"%s\": %s", bad[i].text, why ? why : "accepted");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
