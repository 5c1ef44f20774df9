/* SPDX-License-Identifier: Apache-2.0 */
/* The leader's /api/v1/tenant_quotas answer (kv_quotas,
 * exporter/core/master/master_quotas.c): parsed whole or
 * not at all, bounded, copied for a scrape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <mooncake_kv/buf.h>

#include "kv_common.h"
#include "kv_master_quotas.h"

#define ENTRY(id, req, eff, chg, closed, over)                                                         \
	"{\"tenant_id\":\"" id "\",\"requested_quota_bytes\":" #req ",\"effective_quota_bytes\":" #eff \
	",\"charged_bytes\":" #chg ",\"admission_closed\":" #closed ",\"over_quota\":" #over           \
	",\"has_explicit_policy\":true}"

static const char two[] = "{\"success\":true,\"data\":[" ENTRY("default", 1000, 900, 950, true, true) "," ENTRY(
	"team-\\u00e9", 4096, 4096, 10, false, false) "]}";

static void parse(kv_quotas *q, const char *body, size_t max, enum mkv_poll_error want)
{
	assert_int_equal(kv_quotas_parse(q, body, strlen(body), max), want);
}

static void test_parse(void **state)
{
	(void)state;
	kv_quotas q = {0};
	parse(&q, two, 100, MKV_POLL_OK);
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
		enum mkv_poll_error e = kv_quotas_parse(&q, bad[i], strlen(bad[i]), 100);
		assert_true(e == MKV_POLL_PARSE || e == MKV_POLL_FIELD);
		assert_int_equal(q.n, 2);
		assert_int_equal(q.v[0].charged, 950);
	}
	parse(&q, "{\"success\":true,\"data\":[]}", 100, MKV_POLL_OK);
	assert_int_equal(q.n, 0);
	kv_quotas_free(&q);
}

/* More tenants than the limit: the first ones kept, the rest counted;
 * a bad entry past the limit still fails the answer. */
static void test_bounded(void **state)
{
	(void)state;
	kv_quotas q = {0};
	parse(&q, two, 1, MKV_POLL_OK);
	assert_int_equal(q.n, 1);
	assert_int_equal(q.overflow, 1);
	parse(&q, "{\"success\":true,\"data\":[" ENTRY("a", 1, 1, 1, true, true) ",{}]}", 1, MKV_POLL_FIELD);
	assert_int_equal(q.n, 1);
	kv_quotas_free(&q);
}

static void test_copy(void **state)
{
	(void)state;
	kv_quotas q = {0}, c = {0};
	parse(&q, two, 100, MKV_POLL_OK);
	assert_int_equal(kv_quotas_copy(&c, &q), MKV_OK);
	assert_int_equal(kv_quotas_copy(&c, &q), MKV_OK); /* reusing its memory */
	assert_int_equal(c.n, 2);
	assert_int_equal(c.mode, KV_QUOTAS_ON);
	assert_memory_equal(c.names.data + c.v[1].name_at, "team-\xc3\xa9", 7);
	kv_quotas_free(&q);
	q.mode = KV_QUOTAS_OFF;
	assert_int_equal(kv_quotas_copy(&c, &q), MKV_OK);
	assert_int_equal(c.n, 0);
	assert_int_equal(c.mode, KV_QUOTAS_OFF);
	kv_quotas_free(&c);
}

/* Read as it arrives: in pieces of every size, any key order, white space
 * anywhere JSON allows it; a key twice, bytes after the document, or an
 * element that is no object fail it. */
static enum mkv_poll_error stream(kv_quotas_reader *r, kv_quotas *q, const char *body, size_t step)
{
	kv_quotas_reader_reset(r);
	size_t len = strlen(body);
	for (size_t at = 0; at < len; at += step)
		assert_int_equal(kv_quotas_reader_feed(r, body + at, len - at < step ? len - at : step), MKV_OK);
	return kv_quotas_reader_end(r, q);
}

static void test_streamed(void **state)
{
	(void)state;
	static const char spaced[] = " {\n \"data\" : [ " ENTRY("default", 1000, 900, 950, true, true) " ,\n\t" ENTRY(
		"a \\\"}{[", 4096, 4096, 10, false,
		false) " ] , \"other\": {\"x\": [1, \"]}\"]},\"success\" : true }\n";
	kv_quotas_reader r;
	kv_quotas_reader_init(&r, 100);
	for (size_t step = 1; step <= sizeof(spaced); step++) {
		kv_quotas q = {0};
		assert_int_equal(stream(&r, &q, spaced, step), MKV_POLL_OK);
		assert_int_equal(q.n, 2);
		assert_int_equal(q.v[0].charged, 950);
		assert_int_equal(q.v[1].name_len, 6); /* the escape undone */
		assert_memory_equal(q.names.data + q.v[1].name_at, "a \"}{[", 6);
		kv_quotas_free(&q);
	}
	static const char *const bad[] = {
		"{\"success\":true,\"data\":[],\"data\":[]}",
		"{\"success\":true,\"success\":true,\"data\":[]}",
		"{\"success\":true,\"data\":[]} x",
		"{\"success\":true,\"data\":[1]}",
		"{\"success\":true,\"data\":[" ENTRY("a", 1, 1, 1, true, true),
		"{\"success\":\"true\",\"data\":[]}",
		"{\"data\":[]}",
	};
	kv_quotas q = {0};
	parse(&q, two, 100, MKV_POLL_OK);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum mkv_poll_error e = stream(&r, &q, bad[i], 3);
		assert_true(e == MKV_POLL_PARSE || e == MKV_POLL_FIELD);
		assert_int_equal(q.n, 2); /* the last good answer stays */
	}
	kv_quotas_free(&q);
	kv_quotas_reader_free(&r);
}

/* 20,000 tenants (some 190 bytes each), read in 16 KiB pieces with room
 * for 10,000: the first 10,000 kept, the rest counted, and nothing held but
 * one element at a time besides them. */
static void test_many_tenants(void **state)
{
	(void)state;
	mkv_buf body;
	mkv_buf_init(&body);
	mkv_buf_adds(&body, "{\"success\":true,\"data\":[");
	for (int t = 0; t < 20000; t++)
		mkv_buf_printf(&body,
			       "%s{\"tenant_id\":\"tenant-%d\",\"requested_quota_bytes\":1048576,"
			       "\"effective_quota_bytes\":1048576,\"charged_bytes\":%d,\"admission_closed\":false,"
			       "\"over_quota\":false,\"has_explicit_policy\":true}",
			       t ? "," : "", t, t * 4096);
	mkv_buf_adds(&body, "]}");
	assert_true(mkv_buf_ok(&body) && body.len > 20000 * 180);
	kv_quotas_reader r;
	kv_quotas_reader_init(&r, 10000);
	kv_quotas q = {0};
	assert_int_equal(stream(&r, &q, body.data, 16384), MKV_POLL_OK);
	assert_int_equal(q.n, 10000);
	assert_int_equal(q.overflow, 10000);
	assert_int_equal(q.v[9999].charged, 9999 * 4096);
	assert_memory_equal(q.names.data + q.v[9999].name_at, "tenant-9999", 11);
	assert_true(r.buf.cap <= 4096);
	kv_quotas_free(&q);
	kv_quotas_reader_free(&r);
	mkv_buf_free(&body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),    cmocka_unit_test(test_bounded),      cmocka_unit_test(test_copy),
		cmocka_unit_test(test_streamed), cmocka_unit_test(test_many_tenants),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
