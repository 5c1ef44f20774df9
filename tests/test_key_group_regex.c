/* SPDX-License-Identifier: Apache-2.0 */
/* A key's group (exporter/core/model/key_group_regex.c): the label rule
 * (named captures joined by '/' in pattern order), what does not match,
 * empty captures, bytes that are not UTF-8, many groups, and the start-up
 * errors.  A tenant's figures per group: test_key_group_counts.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kv_key_group_regex.h"

#include <cmocka.h>

static const char *group(const char *pattern, const char *key, size_t klen)
{
	static char out[MKV_KEYGROUP_MAX_LEN + 1];
	char err[256];
	mkv_keygroup_re *re = mkv_keygroup_compile(pattern, err, sizeof(err));
	if (!re)
		fail_msg("%s: %s", pattern, err);
	kv_keygroup_matcher *m = kv_keygroup_matcher_new(re);
	size_t n = kv_keygroup_of(m, key, klen, out);
	out[n] = '\0';
	kv_keygroup_matcher_free(m);
	mkv_keygroup_free(re);
	return out;
}
#define G(p, k) group(p, k, strlen(k))

static void test_rule(void **state)
{
	(void)state;
	assert_string_equal(G("^(?<model>[^@]+)@", "llama-3.1-8b@tp_rank:0@abcd"), "llama-3.1-8b");
	assert_string_equal(G("^(?<model>[^@]+)@", "no-at-sign"), ""); /* no match */
	assert_string_equal(G("^(?<fmt>[^@]+)@(?<model>[^@]+)@", "vllm@qwen2.5-7b@1@0@ff01"), "vllm/qwen2.5-7b");
	/* the order is the pattern's, not the names' */
	assert_string_equal(G("(?<z>a)(?<a>b)", "ab"), "a/b");
	/* unnamed groups do not count */
	assert_string_equal(G("^([^/]+)/(?<m>[^/]+)/", "x/y/z"), "y");
	/* an empty or unset capture is an empty part; all empty is no group */
	assert_string_equal(G("^(?<a>x*)@(?<b>[^@]*)", "@y"), "/y");
	assert_string_equal(G("^(?<a>x*)@(?<b>[^@]*)", "@"), "");
	assert_string_equal(G("^(?:(?<a>p)|(?<b>q))", "q"), "/q");
	/* keys are bytes: not UTF-8 still matches (the label is sanitised when rendered) */
	const char bad[] = "\xff\xfe@rest";
	assert_string_equal(group("^(?<p>[^@]+)@", bad, sizeof(bad) - 1), "\xff\xfe");
	/* a NUL inside the key is a byte like the others */
	const char nul[] = "a\0b@c";
	assert_int_equal(strlen(group("^(?<p>[^@]+)@", nul, sizeof(nul) - 1)), 1);
}

/* The regexes docs/key-groups.md gives, on keys of each integration's shape. */
static void test_documented_regexes(void **state)
{
	(void)state;
	const char *vllm = "(?<model>[^@]+)@tp_rank:", *vllm_p = "^(?:(?<prefix>[^@]+)@)?(?<model>[^@]+)@tp_rank:";
	assert_string_equal(G(vllm, "Qwen2.5-7B@tp_rank:0@pcp0@dcp0@pp_rank:0@group:0@00ff00ff00ff00ff"), "Qwen2.5-7B");
	assert_string_equal(G(vllm, "canary@Qwen2.5-7B@tp_rank:1@pcp0@dcp0@pp_rank:0@00ff00ff00ff00ff"), "Qwen2.5-7B");
	assert_string_equal(G(vllm_p, "canary@Qwen2.5-7B@tp_rank:1@pcp0@dcp0@pp_rank:0@group:2@00ff"),
			    "canary/Qwen2.5-7B");
	assert_string_equal(G(vllm_p, "Qwen2.5-7B@tp_rank:1@pcp0@dcp0@pp_rank:0@00ff"), "/Qwen2.5-7B");
	const char *lmc = "^(?<fmt>[^@]+)@(?<model>[^@]+)@";
	assert_string_equal(G(lmc, "vllm@meta-llama/Llama-3.1-8B@4@1@3f2a"), "vllm/meta-llama/Llama-3.1-8B");
	assert_string_equal(G(lmc, "vllm@llama-3.1-8b@4@1@3f2a@bfloat16@lora%a1"), "vllm/llama-3.1-8b");
	assert_string_equal(G("^[^@]+@(?<model>[^@]+)@", "vllm@llama-3.1-8b@4@1@3f2a"), "llama-3.1-8b");
	const char *h64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char key[160];
	snprintf(key, sizeof(key), "rel7_%s_0_k", h64);
	assert_string_equal(G("^(?<tag>[^_]+)_", key), "rel7");
	snprintf(key, sizeof(key), "rel7_Qwen-Qwen2.5-7B_%s_k", h64);
	assert_string_equal(G("^(?<tag>[^_]+)_(?<model>.+)_[0-9a-f]{64}", key), "rel7/Qwen-Qwen2.5-7B");
}

static void test_twenty_groups(void **state)
{
	(void)state;
	char pattern[1024] = "^", key[256] = "", want[256] = "";
	for (int i = 0; i < 20; i++) {
		char part[48];
		snprintf(part, sizeof(part), "(?<g%02d>[^.]+)%s", i, i < 19 ? "\\." : "");
		strcat(pattern, part);
		snprintf(part, sizeof(part), "%s%c%d", i ? "." : "", 'a' + i, i);
		strcat(key, part);
		snprintf(part, sizeof(part), "%s%c%d", i ? "/" : "", 'a' + i, i);
		strcat(want, part);
	}
	assert_string_equal(G(pattern, key), want);
}

static void test_long_group_is_cut(void **state)
{
	(void)state;
	char key[600];
	memset(key, 'k', 599);
	key[599] = '\0';
	assert_int_equal(strlen(G("^(?<all>.*)$", key)), MKV_KEYGROUP_MAX_LEN);
}

static void test_errors(void **state)
{
	(void)state;
	char err[256];
	assert_null(mkv_keygroup_compile("^(?<model>[^@]+", err, sizeof(err)));
	assert_non_null(strstr(err, "at offset 15"));
	assert_non_null(strstr(err, "missing closing parenthesis"));
	assert_null(mkv_keygroup_compile("^([^@]+)@", err, sizeof(err)));
	assert_non_null(strstr(err, "needs a named group"));
	mkv_keygroup_re *re = mkv_keygroup_compile("(?<a>x)(?<b>y)", err, sizeof(err));
	assert_non_null(re);
	assert_int_equal(mkv_keygroup_names(re), 2);
	mkv_keygroup_free(re);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule),          cmocka_unit_test(test_documented_regexes),
		cmocka_unit_test(test_twenty_groups), cmocka_unit_test(test_long_group_is_cut),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests_name("key_group_regex", tests, NULL, NULL);
}
