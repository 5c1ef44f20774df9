/* SPDX-License-Identifier: Apache-2.0 */
/* The leader's /api/v1/tenant_quotas answer (kv_quotas): parsed whole or
 * not at all, bounded, copied for a scrape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "kv_common.h"
#include "kv_master_quotas.h"

#define ENTRY(id, req, eff, chg, closed, over)                                                         \
	"{\"tenant_id\":\"" id "\",\"requested_quota_bytes\":" #req ",\"effective_quota_bytes\":" #eff \
	",\"charged_bytes\":" #chg ",\"admission_closed\":" #closed ",\"over_quota\":" #over           \
	",\"has_explicit_policy\":true}"

static const char two[] = "{\"success\":true,\"data\":[" ENTRY("default", 1000, 900, 950, true, true) "," ENTRY(
	"team-\\u00e9", 4096, 4096, 10, false, false) "]}";

static void parse(kv_quotas *q, const char *body, size_t max, enum kv_poll_error want)
{
	assert_int_equal(kv_quotas_parse(q, body, strlen(body), max), want);
}

static void test_parse(void **state)
{
	(void)state;
	kv_quotas q = {0};
	parse(&q, two, 100, KV_POLL_OK);
	assert_int_equal(q.mode, KV_QUOTAS_ON);
	assert_int_equal(q.n, 2);
	assert_int_equal(q.overflow, 0);
	assert_int_equal(q.v[0].requested, 1000);
	assert_int_equal(q.v[0].effective, 900);
	assert_int_equal(q.v[0].charged, 950);
	assert_true(q.v[0].admission_closed && q.v[0].over_quota && q.v[0].explicit_policy);
	assert_false(q.v[1].admission_closed || q.v[1].over_quota);
	assert_int_equal(q.v[1].name_len, 7);
	assert_memory_equal(q.names.data + q.v[1].name_at, "team-\xc3\xa9", 7);
	assert_memory_equal(q.names.data + q.v[0].name_at, "default", 7);

	/* a bad answer leaves the last good one */
	static const char *const bad[] = {
		"",
		"{\"success\":false,\"data\":[]}",
		"{\"success\":true}",
		"{\"success\":true,\"data\":{}}",
		"{\"success\":true,\"data\":[{\"tenant_id\":\"x\"}]}",
		"{\"success\":true,\"data\":[" ENTRY("a", 1, 1, 1, true, true) ",7]}",
		"{\"success\":true,\"data\":[" ENTRY("a", -1, 1, 1, true, true) "]}",
		"{\"success\":true,\"data\":[" ENTRY("a", 1, 1, 1, 1, true) "]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum kv_poll_error e = kv_quotas_parse(&q, bad[i], strlen(bad[i]), 100);
		assert_true(e == KV_POLL_PARSE || e == KV_POLL_FIELD);
		assert_int_equal(q.n, 2);
		assert_int_equal(q.v[0].charged, 950);
	}
	parse(&q, "{\"success\":true,\"data\":[]}", 100, KV_POLL_OK);
	assert_int_equal(q.n, 0);
	kv_quotas_free(&q);
}

/* More tenants than the limit: the first ones kept, the rest counted;
 * a bad entry past the limit still fails the answer. */
static void test_bounded(void **state)
{
	(void)state;
	kv_quotas q = {0};
	parse(&q, two, 1, KV_POLL_OK);
	assert_int_equal(q.n, 1);
	assert_int_equal(q.overflow, 1);
	parse(&q, "{\"success\":true,\"data\":[" ENTRY("a", 1, 1, 1, true, true) ",{}]}", 1, KV_POLL_FIELD);
	assert_int_equal(q.n, 1);
	kv_quotas_free(&q);
}

static void test_copy(void **state)
{
	(void)state;
	kv_quotas q = {0}, c = {0};
	parse(&q, two, 100, KV_POLL_OK);
	assert_int_equal(kv_quotas_copy(&c, &q), KV_OK);
	assert_int_equal(kv_quotas_copy(&c, &q), KV_OK); /* reusing its memory */
	assert_int_equal(c.n, 2);
	assert_int_equal(c.mode, KV_QUOTAS_ON);
	assert_memory_equal(c.names.data + c.v[1].name_at, "team-\xc3\xa9", 7);
	kv_quotas_free(&q);
	q.mode = KV_QUOTAS_OFF;
	assert_int_equal(kv_quotas_copy(&c, &q), KV_OK);
	assert_int_equal(c.n, 0);
	assert_int_equal(c.mode, KV_QUOTAS_OFF);
	kv_quotas_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
