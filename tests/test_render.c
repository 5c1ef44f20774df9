/* SPDX-License-Identifier: Apache-2.0 */
/* The exposition: one HELP/TYPE per family, samples contiguous, values
 * equal to the state, label values escaped and made valid UTF-8. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "kv_family.h"
#include "kv_render.h"
#include "kv_utf8.h"
#include "support/feed.h"
#include "support/msgbuild.h"

#include <cmocka.h>

struct fx {
	mkv_budget budget;
	kv_stream *st;
	kv_source_snap src[2];
	kv_exporter_snap x;
	mkv_buf out;
};

static void stored(kv_stream *st, uint64_t seq, const char *tenant_id, size_t tlen, const char *medium, const char *key)
{
	ev_spec e;
	ev_init(&e, EV_UPSTREAM, "stored", seq, B, "x", medium, key);
	ev_set(&e, STRN("tenant_id", tenant_id, tlen));
	assert_int_equal(feed(st, seq, &e, 1), MKV_OK);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	mkv_budget_init(&f->budget, 100, 1000);
	f->st = kv_stream_new(&f->budget, 7);
	stored(f->st, 1, "plain", 5, "cpu", "k1");
	stored(f->st, 2, "plain", 5, "disk", "k1");
	stored(f->st, 3, "plain", 5, "disk", "k2");
	stored(f->st, 4, "a\"b\\c\nd", 7, "cpu", "k");
	stored(f->st, 5, "bad\xff\xfeutf8", 9, "cpu", "k");
	stored(f->st, 6, "nul\0in", 6, "cpu", "k");
	stored(f->st, 7, "\xce\xba\xce\xbb", 4, "cpu", "k");
	f->src[0].name = "m0";
	assert_int_equal(kv_snapshot_stream(&f->src[0], f->st), MKV_OK);
	f->src[0].members[0].connected = true;
	/* a second source with a master and no tenants */
	f->src[1].name = "m\"1";
	assert_int_equal(kv_snapshot_members(&f->src[1], 1), MKV_OK);
	kv_member_snap *m1 = &f->src[1].members[0];
	m1->has_master = true;
	kv_hist_init(&m1->stats.lag_seconds, kv_lag_bounds, kv_lag_bounds_n);
	kv_hist_init(&m1->stats.batch_events, kv_batch_bounds, kv_batch_bounds_n);
	kv_master_status ms = {.enabled = true,
			       .published_batches = 10,
			       .published_events = 600,
			       .dropped_events = 25,
			       .has_unparsed = true,
			       .skipped_unparsed_keys = 3};
	kv_stream_pos none = {0};
	kv_master_record(&m1->master, 1700000000.5, 0.004, MKV_POLL_OK, 200, &ms, &none);
	f->x = (kv_exporter_snap){.info = {.version = "1.2.3", .revision = "abc"},
				  .sources = f->src,
				  .n_sources = 2,
				  .tracked_objects = 7,
				  .max_objects = 1000};
	mkv_buf_init(&f->out);
	assert_int_equal(kv_render(&f->out, &f->x, NULL), MKV_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	mkv_buf_free(&f->out);
	kv_source_snap_release(&f->src[0]);
	kv_source_snap_release(&f->src[1]);
	kv_stream_free(f->st);
	free(f);
	return 0;
}

static bool has_line(const mkv_buf *b, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = b->data; (p = strstr(p, line)); p += n)
		if ((p == b->data || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

#define LINE(f, s)                                       \
	do {                                             \
		if (!has_line(&(f)->out, s))             \
			fail_msg("missing line: %s", s); \
	} while (0)

static void test_values(void **state)
{
	struct fx *f = *state;
	const char *T = "source=\"m0\",backend_id=\"" B "\",tenant_id=\"plain\"";
	char l[512];
#define L(fmt, ...) (snprintf(l, sizeof(l), fmt, __VA_ARGS__), l)
	LINE(f, L("mooncake_kv_objects{%s} 2", T));
	LINE(f, L("mooncake_kv_objects_by_medium{%s,medium=\"cpu\"} 1", T));
	LINE(f, L("mooncake_kv_objects_by_medium{%s,medium=\"disk\"} 2", T));
	LINE(f, L("mooncake_kv_events_received_total{%s,event_type=\"stored\"} 3", T));
	/* no news by default: no removed nor cleared yet, and the placement is
	 * the objects and the medium mix's (both = 2 + 1 - 2) */
	assert_false(has_line(&f->out, L("mooncake_kv_events_received_total{%s,event_type=\"cleared\"} 0", T)));
	assert_null(strstr(f->out.data, "mooncake_kv_objects_by_placement"));
	LINE(f, L("mooncake_kv_state_stale{%s} 1", T));
	LINE(f, "mooncake_kv_messages_received_total{source=\"m0\"} 7");
	LINE(f, "mooncake_kv_last_sequence{source=\"m0\"} 7");
	LINE(f, "mooncake_kv_decode_errors_total{source=\"m0\",reason=\"unknown_medium\"} 0");
	LINE(f, "mooncake_kv_subscriber_connected{source=\"m0\"} 1");
	LINE(f, "mooncake_kv_batch_events_bucket{source=\"m0\",le=\"1\"} 7");
	LINE(f, "mooncake_kv_batch_events_bucket{source=\"m0\",le=\"+Inf\"} 7");
	LINE(f, "mooncake_kv_batch_events_count{source=\"m0\"} 7");
	LINE(f, "mooncake_kv_event_lag_seconds_bucket{source=\"m0\",le=\"0.0005\"} 7");
	LINE(f, "mooncake_kv_last_event_timestamp_seconds{source=\"m0\"} 1795982104.612");
	LINE(f, "mooncake_kv_label_values_sanitized_total{source=\"m0\"} 2");
	LINE(f, "mooncake_kv_stale_tenants{source=\"m0\",reason=\"startup\"} 5");
	LINE(f, "mooncake_kv_stale_tenants{source=\"m0\",reason=\"gap\"} 0");
	/* master figures only for the source that has a master */
	LINE(f, "mooncake_kv_master_up{source=\"m\\\"1\"} 1");
	LINE(f, "mooncake_kv_master_dropped_events_total{source=\"m\\\"1\"} 25");
	LINE(f, "mooncake_kv_master_unparsed_keys_total{source=\"m\\\"1\"} 3");
	LINE(f, "mooncake_kv_master_last_sequence{source=\"m\\\"1\"} 35");
	LINE(f, "mooncake_kv_queue_lost_events_total{source=\"m\\\"1\"} 0");
	LINE(f, "mooncake_kv_unattributed_lost_messages_total{source=\"m\\\"1\"} 0");
	/* a master that reports upstream's field only has no spec field to show */
	assert_null(strstr(f->out.data, "mooncake_kv_master_skipped_keyless_events_total{"));
	/* no stream to compare with: how far behind is not known */
	assert_null(strstr(f->out.data, "mooncake_kv_sequence_behind{"));
	LINE(f, "mooncake_kv_master_poll_errors_total{source=\"m\\\"1\",reason=\"timeout\"} 0");
	LINE(f, "mooncake_kv_master_last_poll_timestamp_seconds{source=\"m\\\"1\"} 1700000000.5");
	assert_null(strstr(f->out.data, "mooncake_kv_master_up{source=\"m0\"}"));
	LINE(f, "mooncake_kv_exporter_build_info{version=\"1.2.3\",revision=\"abc\"} 1");
	LINE(f, "mooncake_kv_tracked_objects 7");
	LINE(f, "mooncake_kv_limit_max_objects 1000");
	/* --metrics.all-series: the old set, zeros and the placement too */
	mkv_buf all;
	mkv_buf_init(&all);
	assert_int_equal(kv_render(&all, &f->x, &(mkv_expo_opts){.all_series = true}), MKV_OK);
	const char *want[] = {"mooncake_kv_objects_by_placement{%s,placement=\"cpu_only\"} 0",
			      "mooncake_kv_objects_by_placement{%s,placement=\"disk_only\"} 1",
			      "mooncake_kv_objects_by_placement{%s,placement=\"cpu_and_disk\"} 1",
			      "mooncake_kv_events_received_total{%s,event_type=\"removed\"} 0",
			      "mooncake_kv_events_received_total{%s,event_type=\"cleared\"} 0",
			      "mooncake_kv_tenant_clears_total{%s} 0",
			      "mooncake_kv_stored_duplicates_total{%s} 0"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!has_line(&all, L(want[i], T)))
			fail_msg("missing line with --metrics.all-series: %s", l);
	mkv_buf_free(&all);
}

static void test_escaping(void **state)
{
	struct fx *f = *state;
	assert_non_null(strstr(f->out.data, "tenant_id=\"a\\\"b\\\\c\\nd\""));
	assert_non_null(strstr(f->out.data, "tenant_id=\"bad\xef\xbf\xbd\xef\xbf\xbdutf8\""));
	assert_non_null(strstr(f->out.data, "tenant_id=\"nul\xef\xbf\xbdin\""));
	assert_non_null(strstr(f->out.data, "tenant_id=\"\xce\xba\xce\xbb\""));
	/* the whole page is valid UTF-8 without NUL */
	assert_true(mkv_label_value_clean(f->out.data, f->out.len));
	assert_int_equal(f->out.data[f->out.len - 1], '\n');
}

/* HELP and TYPE once per family, before its samples, and every family's
 * samples in one block. */
static void test_structure(void **state)
{
	struct fx *f = *state;
	char family[256] = "", seen[512][128];
	size_t n_seen = 0, samples = 0;
	char *text = test_malloc(f->out.len + 1), *save = NULL;
	memcpy(text, f->out.data, f->out.len + 1);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[256];
		if (sscanf(line, "# HELP %255s", name) == 1) {
			for (size_t i = 0; i < n_seen; i++)
				if (strcmp(seen[i], name) == 0)
					fail_msg("family %s twice", name);
			strcpy(seen[n_seen++], name);
			strcpy(family, name);
			continue;
		}
		if (sscanf(line, "# TYPE %255s", name) == 1) {
			assert_string_equal(name, family);
			continue;
		}
		size_t len = strcspn(line, "{ ");
		assert_true(len < sizeof(name));
		memcpy(name, line, len);
		name[len] = '\0';
		size_t fl = strlen(family);
		bool ok = strcmp(name, family) == 0 || (strncmp(name, family, fl) == 0 &&
							(!strcmp(name + fl, "_bucket") || !strcmp(name + fl, "_sum") ||
							 !strcmp(name + fl, "_count")));
		if (!ok)
			fail_msg("sample %s outside its family (current %s)", name, family);
		samples++;
	}
	test_free(text);
	assert_true(n_seen > 40);
	assert_true(samples > 100);
}

/* The family tables keep the conventions by construction: one row per
 * name, the project's prefix, units in names, _total on every counter
 * (but none on the rest), an accessor for every row; a flag only where it
 * means something (a tenant's detail on a tenant's family, mirrored on a
 * counter); and every family found by its name at its number. */
static void test_family_tables(void **state)
{
	(void)state;
	const char *seen[256];
	size_t n = 0;
	for (size_t t = 0; t < kv_family_tables_n; t++) {
		assert_true(kv_family_tables[t]->n > 0);
		for (size_t i = 0; i < kv_family_tables[t]->n; i++) {
			const kv_family *f = &kv_family_tables[t]->v[i];
			size_t len = strlen(f->name), at = SIZE_MAX;
			assert_non_null(f->samples);
			assert_true(strlen(f->help) > 10);
			assert_true(!strncmp(f->name, "mooncake_kv_", 12) || !strncmp(f->name, "process_", 8));
			bool total = len > 6 && !strcmp(f->name + len - 6, "_total");
			if (f->kind == KV_COUNTER)
				assert_true(total);
			else
				assert_true(!total && (f->kind == KV_GAUGE || f->kind == KV_HISTOGRAM));
			if (f->flags & KV_FAM_TENANT_DETAIL)
				assert_true(kv_scope_per_tenant(f->scope));
			if (f->flags & KV_FAM_MIRRORED)
				assert_int_equal(f->kind, KV_COUNTER);
			assert_ptr_equal(kv_family_find(f->name, len, &at), f);
			assert_int_equal(at, n);
			for (size_t j = 0; j < n; j++)
				if (!strcmp(seen[j], f->name))
					fail_msg("family %s twice", f->name);
			assert_true(n < sizeof(seen) / sizeof(seen[0]));
			seen[n++] = f->name;
		}
	}
	assert_true(n > 90);
	size_t at;
	assert_null(kv_family_find("mooncake_kv_objects_", 20, &at));
}

static void test_label_value_escaping(void **state)
{
	(void)state;
	mkv_buf b;
	mkv_buf_init(&b);
	kv_render_label_value(&b, "a\\b\"c\nd", 7, false);
	assert_string_equal(b.data, "a\\\\b\\\"c\\nd");
	mkv_buf_reset(&b);
	/* sanitised: each byte that starts no character becomes one U+FFFD */
	kv_render_label_value(&b, "x\xff\xfey\0z\xce\xba", 8, true);
	assert_string_equal(b.data, "x\xef\xbf\xbd\xef\xbf\xbdy\xef\xbf\xbdz\xce\xba");
	assert_true(mkv_label_value_clean(b.data, b.len));
	mkv_buf_free(&b);
}

/* Each member's model context as its publisher stamps it: one info series,
 * its labels escaped and bounded, the member labelled even for a lone
 * master (as its dialect), the salt's value nowhere; none before an event. */
static void test_model_info(void **state)
{
	(void)state;
	mkv_budget budget;
	mkv_budget_init(&budget, 100, 1000);
	kv_stream *st = kv_stream_new(&budget, 7);
	ev_spec e[2];
	for (int i = 0; i < 2; i++) {
		ev_init(&e[i], EV_SPEC, "stored", (uint64_t)i + 1, B, "t", "cpu", "k");
		ev_set(&e[i], STR("model_name", i ? "a\"b\\c\nd" : "first-model"));
		ev_set(&e[i], STR("lora_name", "bad\xffutf8"));
		ev_set(&e[i], STR("additional_salt", "SECRET-SALT"));
		ev_set(&e[i], UINT("block_size", 16));
		ev_set(&e[i], UINT("dp_rank", 2));
	}
	assert_int_equal(feed(st, 1, e, 2), MKV_OK);
	kv_source_snap src[2] = {{.name = "m0"}, {.name = "m1"}};
	assert_int_equal(kv_snapshot_stream(&src[0], st), MKV_OK);
	src[0].members[0].label = "127.0.0.1:9003";
	assert_int_equal(kv_snapshot_members(&src[1], 1), MKV_OK); /* no event yet */
	kv_hist_init(&src[1].members[0].stats.lag_seconds, kv_lag_bounds, kv_lag_bounds_n);
	kv_hist_init(&src[1].members[0].stats.batch_events, kv_batch_bounds, kv_batch_bounds_n);
	kv_exporter_snap x = {.info = {.version = "1", .revision = "r"}, .sources = src, .n_sources = 2};
	mkv_buf out;
	mkv_buf_init(&out);
	assert_int_equal(kv_render(&out, &x, NULL), MKV_OK);
	assert_true(has_line(&out, "mooncake_kv_publisher_model_info{source=\"m0\",member=\"127.0.0.1:9003\","
				   "model_name=\"a\\\"b\\\\c\\nd\",lora_name=\"bad\xef\xbf\xbdutf8\",block_size=\"16\","
				   "dp_rank=\"2\",additional_salt=\"present\"} 1"));
	assert_true(
		has_line(&out, "mooncake_kv_publisher_model_changes_total{source=\"m0\",member=\"127.0.0.1:9003\"} 1"));
	assert_null(strstr(out.data, "SECRET"));
	assert_null(strstr(out.data, "first-model")); /* one context per member: the latest */
	assert_non_null(strstr(out.data, "# TYPE mooncake_kv_publisher_model_info gauge\n"));
	assert_null(strstr(out.data, "mooncake_kv_publisher_model_info{source=\"m1\""));
	assert_true(has_line(&out, "mooncake_kv_publisher_model_changes_total{source=\"m1\"} 0"));
	assert_true(mkv_label_value_clean(out.data, out.len));
	mkv_buf_free(&out);
	kv_source_snap_release(&src[0]);
	kv_source_snap_release(&src[1]);
	kv_stream_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escaping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_structure, setup, teardown),
		cmocka_unit_test(test_family_tables),
		cmocka_unit_test(test_label_value_escaping),
		cmocka_unit_test(test_model_info),
	};
	return cmocka_run_group_tests_name("render", tests, NULL, NULL);
}
