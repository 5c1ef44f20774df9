/* SPDX-License-Identifier: Apache-2.0 */
/* What a tenant costs in series (issue 58, docs/guide.md "Metrics"): a
 * steady tenant's render, its series counted (a histogram as one), against
 * a model written here of which events happened: by default a counter of
 * rare events appears at its first event, an event type at its first event,
 * a family that others determine not at all; with --metrics.all-series the
 * set served before, zeros and all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kv_render.h"
#include "kv_state.h"

#include <cmocka.h>

#define T0     1795982000000ll /* the publisher's clock, unix ms */
#define BE     "mooncake-master-1"
#define STEADY "steady"

/* What happened to the tenant: the truth the render is held to. */
typedef struct model {
	uint64_t events[MKV_EV__COUNT];
	uint64_t duplicates, unknown, lives, live;
} model;

typedef struct fx {
	mkv_budget budget;
	kv_state *st;
	model m;
	int64_t now;
} fx;

static void apply(fx *f, enum mkv_event_type type, enum mkv_medium medium, const char *key)
{
	kv_event ev = {.type = type, .has_key = true, .medium = (uint8_t)medium, .timestamp_ms = f->now += 250};
	ev.backend_id = (mkv_str){BE, sizeof(BE) - 1};
	ev.tenant_id = (mkv_str){STEADY, sizeof(STEADY) - 1};
	ev.object_key = (mkv_str){key, (uint32_t)strlen(key)};
	assert_int_equal(kv_state_apply(f->st, &ev, MKV_DIALECT_MEDIA), MKV_OK);
	f->m.events[type]++;
}

/* Steady traffic, from an empty store: each round stores one new object on
 * the CPU (every third on disk too) and removes, medium by medium, the one
 * stored five rounds before, whose life then ends whole. */
static void steady(fx *f, bool residency)
{
	mkv_budget_init(&f->budget, 100, 100000);
	f->st = kv_state_new(&f->budget, 7);
	kv_state_set_residency(f->st, residency);
	kv_state_prove_empty(f->st); /* every tenant first seen is exact */
	f->m = (model){0};
	f->now = T0;
	char key[32];
	for (int r = 0; r < 40; r++) {
		snprintf(key, sizeof(key), "k%d", r);
		apply(f, MKV_EV_STORED, MKV_MEDIUM_CPU, key);
		if (r % 3 == 0)
			apply(f, MKV_EV_STORED, MKV_MEDIUM_DISK, key);
		f->m.live++;
		if (r < 5)
			continue;
		snprintf(key, sizeof(key), "k%d", r - 5);
		apply(f, MKV_EV_REMOVED, MKV_MEDIUM_CPU, key);
		if ((r - 5) % 3 == 0)
			apply(f, MKV_EV_REMOVED, MKV_MEDIUM_DISK, key);
		f->m.live--;
		f->m.lives++;
	}
}

static void render(const fx *f, bool all_series, mkv_buf *out)
{
	kv_source_snap src = {.name = "m0"};
	assert_int_equal(kv_snapshot_members(&src, 1), MKV_OK);
	assert_int_equal(kv_snapshot_state(&src, f->st), MKV_OK);
	kv_exporter_snap x = {.info = {.version = "t", .revision = "t"}, .sources = &src, .n_sources = 1};
	mkv_buf_reset(out);
	assert_int_equal(kv_render(out, &x, &(mkv_expo_opts){.all_series = all_series}), MKV_OK);
	kv_source_snap_release(&src);
}

/* The tenant's series in the text: its samples, a histogram's _bucket, _sum
 * and _count lines one series (as a native histogram is). */
static size_t tenant_series(const mkv_buf *out)
{
	const char *tenant = "tenant_id=\"" STEADY "\"";
	size_t n = 0;
	for (const char *p = out->data, *end; p < out->data + out->len; p = end + 1) {
		end = memchr(p, '\n', (size_t)(out->data + out->len - p));
		if (!end)
			break;
		size_t len = (size_t)(end - p);
		char line[512];
		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		if (line[0] == '#' || !strstr(line, tenant))
			continue;
		/* of a histogram, only the _count line counts */
		const char *brace = strchr(line, '{');
		bool hist_part = brace && ((brace - line > 7 && !strncmp(brace - 7, "_bucket", 7)) ||
					   (brace - line > 4 && !strncmp(brace - 4, "_sum", 4)));
		n += !hist_part;
	}
	return n;
}

static bool has_line(const mkv_buf *b, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = b->data; p && (p = strstr(p, line)); p += n)
		if ((p == b->data || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

/* The series the model says a tenant has by default: what it always has,
 * and each counter whose event happened. */
static size_t news_series(const model *m, bool residency)
{
	size_t n = 1 + 2 + 1; /* objects, by medium (cpu, disk), stale */
	for (int t = 0; t < MKV_EV__COUNT; t++)
		n += m->events[t] > 0;
	n += (m->duplicates > 0) + (m->unknown > 0);
	if (residency)
		n += 1 + (m->lives > 0) + (m->live > 0); /* tracked; the lifetime histogram; the mean age */
	return n;
}

#define TENANT "{source=\"m0\",backend_id=\"" BE "\",tenant_id=\"" STEADY "\""

static void test_steady_tenant(void **state)
{
	(void)state;
	mkv_buf out;
	mkv_buf_init(&out);
	for (int residency = 0; residency < 2; residency++) {
		fx f;
		steady(&f, residency);
		render(&f, false, &out);
		size_t got = tenant_series(&out);
		print_message("steady tenant, residency %s: %zu series\n", residency ? "on" : "off", got);
		assert_int_equal(got, news_series(&f.m, residency));
		assert_true(got <= 12); /* issue 58's bound, residency on, a histogram as one */
		assert_true(has_line(&out, "mooncake_kv_objects" TENANT "} 5"));
		assert_null(strstr(out.data, "objects_by_placement"));
		assert_null(strstr(out.data, "mooncake_kv_stored_duplicates_total{"));
		assert_null(strstr(out.data, "event_type=\"cleared\""));
		if (residency)
			assert_true(has_line(&out, "mooncake_kv_object_lifetime_seconds_count" TENANT "} 35"));

		/* the rare events: each series appears with its first */
		apply(&f, MKV_EV_STORED, MKV_MEDIUM_CPU, "k39"); /* held on the CPU already */
		f.m.duplicates++;
		apply(&f, MKV_EV_REMOVED, MKV_MEDIUM_CPU, "never-stored");
		f.m.unknown++;
		render(&f, false, &out);
		assert_int_equal(tenant_series(&out), news_series(&f.m, residency));
		assert_true(has_line(&out, "mooncake_kv_stored_duplicates_total" TENANT "} 1"));
		assert_true(has_line(&out, "mooncake_kv_removed_unknown_total" TENANT "} 1"));
		apply(&f, MKV_EV_CLEARED, 0, "");
		f.m.live = 0;
		render(&f, false, &out);
		assert_true(has_line(&out, "mooncake_kv_events_received_total" TENANT ",event_type=\"cleared\"} 1"));
		assert_null(strstr(out.data, "mooncake_kv_tenant_clears_total{")); /* the cleared count's other name */
		kv_state_free(f.st);
	}
	mkv_buf_free(&out);
}

/* --metrics.all-series: every family of a tenant, each at its full set of
 * label values, zeros and all (as served before news only). */
static void test_all_series(void **state)
{
	(void)state;
	mkv_buf out;
	mkv_buf_init(&out);
	for (int residency = 0; residency < 2; residency++) {
		fx f;
		steady(&f, residency);
		render(&f, true, &out);
		/* events (stored, removed, cleared), objects, by medium (2), by placement (3), stale, clears,
		 * duplicates, unknown, overflow; with residency the lifetime histogram, unobserved, mean age,
		 * tracked */
		size_t want = 3 + 1 + 2 + 3 + 1 + 4 + (residency ? 4 : 0);
		assert_int_equal(tenant_series(&out), want);
		assert_true(has_line(&out, "mooncake_kv_tenant_clears_total" TENANT "} 0"));
		assert_true(has_line(&out, "mooncake_kv_objects_by_placement" TENANT ",placement=\"cpu_and_disk\"} 2"));
		kv_state_free(f.st);
	}
	mkv_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steady_tenant),
		cmocka_unit_test(test_all_series),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
