/* SPDX-License-Identifier: Apache-2.0 */
/* The leader's /metrics as the exporter reads it
 * (exporter/core/master/master_metrics.c): master_key_count and the
 * per-tenant counters kept, in pieces of any size, bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "kv_master_metrics.h"

#include <cmocka.h>

/* The leader's /metrics read as it arrives (upstream's master_metric_manager.cpp
 * and master_admin_service.cpp shapes): master_key_count summed, the quota
 * rejects kept, everything else passed over, in pieces of any size. */
static enum mkv_poll_error read_metrics(kv_metrics_reader *r, const char *body, size_t step)
{
	kv_metrics_reader_reset(r);
	size_t len = strlen(body);
	for (size_t at = 0; at < len; at += step)
		assert_int_equal(kv_metrics_reader_feed(r, body + at, len - at < step ? len - at : step), MKV_OK);
	return kv_metrics_reader_end(r);
}

static void test_metrics_reader(void **state)
{
	(void)state;
	const char *body =
		"# HELP master_key_count Total number of keys\n"
		"# TYPE master_key_count gauge\n"
		"master_key_count 12\n"
		"master_key_count_total 1000\n"
		"master_key_count{segment=\"a b\"} 30\n"
		"# TYPE mooncake_tenant_quota_reject_total counter\n"
		"mooncake_tenant_quota_reject_total{tenant_id=\"t-1\",reason=\"quota_exceeded\"} 7\n"
		"mooncake_tenant_quota_reject_total{reason=\"quota_exceeded\",tenant_id=\"q\\\"uo\\\\te\"} 2\n"
		"mooncake_tenant_quota_requested_bytes{tenant_id=\"t-1\"} 1048576\n"
		"other 5";
	kv_metrics_reader r;
	kv_metrics_reader_init(&r, 10);
	for (size_t step = 1; step <= strlen(body); step += 7) {
		assert_int_equal(read_metrics(&r, body, step), MKV_POLL_OK);
		assert_true(r.keys == 42);
		assert_int_equal(r.rejects.n, 2);
		assert_string_equal(r.rejects.names.data + r.rejects.v[0].tenant_at, "t-1");
		assert_string_equal(r.rejects.names.data + r.rejects.v[0].reason_at, "quota_exceeded");
		assert_true(r.rejects.v[0].count == 7);
		/* label order free, escapes undone */
		assert_string_equal(r.rejects.names.data + r.rejects.v[1].tenant_at, "q\"uo\\te");
		assert_true(r.rejects.v[1].count == 2);
	}
	/* no key count, or a value that is no number: the answer is not used */
	assert_int_equal(read_metrics(&r, "other 1\n", 3), MKV_POLL_FIELD);
	assert_int_equal(read_metrics(&r, "master_key_count NaN\n", 5), MKV_POLL_FIELD);
	assert_int_equal(
		read_metrics(&r, "master_key_count 1\nmooncake_tenant_quota_reject_total{tenant_id=\"x\"} 3\n", 9),
		MKV_POLL_FIELD);
	/* the eviction counter per tenant (reason empty); a counter below 0 is no counter */
	const char *ev = "master_key_count 1\n"
			 "mooncake_tenant_evict_bytes_total{tenant_id=\"t-1\"} 4096\n"
			 "mooncake_tenant_evict_bytes_total{tenant_id=\"t-2\"} 0\n";
	assert_int_equal(read_metrics(&r, ev, 5), MKV_POLL_OK);
	assert_int_equal(r.evictions.n, 2);
	assert_string_equal(r.evictions.names.data + r.evictions.v[0].tenant_at, "t-1");
	assert_int_equal(r.evictions.v[0].reason_len, 0);
	assert_true(r.evictions.v[0].count == 4096);
	kv_tenant_index ix;
	double v = -1;
	assert_int_equal(kv_tenant_index_build(&ix, &r.evictions), MKV_OK);
	assert_true(kv_tenant_index_get(&ix, &r.evictions, "t-2", 3, &v) && v == 0);
	assert_true(kv_tenant_index_get(&ix, &r.evictions, "t-1", 3, &v) && v == 4096);
	assert_false(kv_tenant_index_get(&ix, &r.evictions, "t-3", 3, &v));
	kv_tenant_index_free(&ix);
	assert_int_equal(
		read_metrics(&r, "master_key_count 1\nmooncake_tenant_evict_bytes_total{tenant_id=\"t\"} -8192\n", 7),
		MKV_POLL_FIELD);
	assert_int_equal(
		read_metrics(&r,
			     "master_key_count 1\nmooncake_tenant_quota_reject_total{tenant_id=\"t\",reason=\"r\"} "
			     "-1\n",
			     7),
		MKV_POLL_FIELD);
	/* beyond the limit: counted, not kept */
	kv_metrics_reader small;
	kv_metrics_reader_init(&small, 1);
	assert_int_equal(read_metrics(&small, body, 64), MKV_POLL_OK);
	assert_int_equal(small.rejects.n, 1);
	assert_int_equal(small.rejects.overflow, 1);
	kv_metrics_reader_free(&small);
	kv_metrics_reader_free(&r);
}

/* 20,000 tenants' worth of upstream's per-tenant series (~450 bytes each):
 * read in 16 KiB pieces, nothing held but one line and what is kept. */
static void test_metrics_reader_many_tenants(void **state)
{
	(void)state;
	mkv_buf body;
	mkv_buf_init(&body);
	mkv_buf_adds(&body, "master_key_count 123456\n");
	for (int t = 0; t < 20000; t++) {
		mkv_buf_printf(&body,
			       "mooncake_tenant_quota_requested_bytes{tenant_id=\"tenant-%d\"} 1048576\n"
			       "mooncake_tenant_quota_effective_bytes{tenant_id=\"tenant-%d\"} 1048576\n"
			       "mooncake_tenant_quota_charged_bytes{tenant_id=\"tenant-%d\"} 4096\n"
			       "mooncake_tenant_quota_admission_closed{tenant_id=\"tenant-%d\"} 0\n"
			       "mooncake_tenant_evict_bytes_total{tenant_id=\"tenant-%d\"} 0\n",
			       t, t, t, t, t);
		if (t % 3 == 0)
			mkv_buf_printf(&body,
				       "mooncake_tenant_quota_reject_total{tenant_id=\"tenant-%d\",reason=\"quota_"
				       "exceeded\"} %d\n",
				       t, t);
	}
	assert_true(mkv_buf_ok(&body) && body.len > 20000 * 300);
	kv_metrics_reader r;
	kv_metrics_reader_init(&r, 4 * 20000);
	assert_int_equal(read_metrics(&r, body.data, 16384), MKV_POLL_OK);
	assert_true(r.keys == 123456);
	assert_int_equal(r.rejects.n, 6667);
	assert_int_equal(r.rejects.overflow, 0);
	assert_true(r.line.cap <= 2 * KV_METRICS_MAX_LINE);
	assert_string_equal(r.rejects.names.data + r.rejects.v[6666].tenant_at, "tenant-19998");
	kv_metrics_reader_free(&r);
	mkv_buf_free(&body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_reader),
		cmocka_unit_test(test_metrics_reader_many_tenants),
	};
	return cmocka_run_group_tests_name("master_metrics", tests, NULL, NULL);
}
