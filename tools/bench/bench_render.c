/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake-kv-bench render: snapshot + render at 10, 1,000 and 10,000
 * tenants, each as the text format and as OpenMetrics, and at 10,000 the
 * modes of docs/sizing.md (the families an operator leaves out); at 20,000,
 * the status page (/status) beside the exposition (bench.c holds the
 * command line). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mooncake_kv/scrape.h>

#include "bench.h"
#include "kv_render.h"
#include "kv_state_impl.h"
#include "kv_status_page.h"

/* The lines of an exposition that are not comments. */
static size_t samples_of(const mkv_buf *b)
{
	size_t n = 0;
	for (size_t i = 0; i < b->len; i++)
		n += b->data[i] == '\n' && i + 1 < b->len && b->data[i + 1] != '#';
	return n;
}

/* A state of `tenants` tenants of 20 objects each, as the render benchmark
 * gives them. */
static kv_state *render_state(mkv_budget *budget, unsigned tenants, bool residency)
{
	kv_state *st = kv_state_new(budget, 1);
	kv_state_set_residency(st, residency);
	kv_event ev = {.type = MKV_EV_STORED, .has_key = true, .medium = MKV_MEDIUM_CPU};
	ev.backend_id = (mkv_str){"mooncake-master-1", 17};
	char t[32], k[32];
	for (unsigned i = 0; i < tenants; i++)
		for (unsigned j = 0; j < 20; j++) {
			ev.tenant_id = (mkv_str){t, (uint32_t)snprintf(t, sizeof(t), "tenant-%05u", i)};
			ev.object_key = (mkv_str){k, (uint32_t)snprintf(k, sizeof(k), "key-%u", j)};
			ev.medium = j % 3 ? MKV_MEDIUM_CPU : MKV_MEDIUM_DISK;
			kv_state_apply(st, &ev, MKV_DIALECT_MEDIA);
		}
	return st;
}

/* Snapshot + render of the state, `runs` times, the last text left in out:
 * prints the mean, median and best, and the snapshot's part (what a scrape
 * takes under the source's lock). */
static void render_runs(const char *what, unsigned tenants, const kv_state *st, int runs, mkv_buf *out)
{
	kv_source_snap src = {.name = "m0"};
	kv_snapshot_members(&src, 1);
	src.members[0].connected = true;
	kv_exporter_snap x = {.info = {.version = "bench", .revision = "bench"}, .sources = &src, .n_sources = 1};
	double best = 1e9, total = 0, snap_best = 1e9, snap_total = 0, each[200];
	if (runs > 200)
		runs = 200;
	for (int r = 0; r < runs; r++) {
		double a = bench_mono();
		kv_snapshot_state(&src, st);
		double m = bench_mono();
		mkv_buf_reset(out);
		kv_render(out, &x, NULL);
		double d = bench_mono() - a;
		each[r] = d;
		total += d;
		snap_total += m - a;
		if (d < best)
			best = d;
		if (m - a < snap_best)
			snap_best = m - a;
	}
	/* the median beside the mean: a shared machine's slow phases pull the
	 * mean by themselves */
	qsort(each, (size_t)runs, sizeof(each[0]), bench_cmp_double);
	printf("{\"what\":\"%s\",\"tenants\":%u,\"mean_ms\":%.3f,\"median_ms\":%.3f,\"best_ms\":%.3f,"
	       "\"snapshot_mean_ms\":%.3f,\"snapshot_best_ms\":%.3f,\"bytes\":%zu,\"samples\":%zu}\n",
	       what, tenants, total / runs * 1e3, each[runs / 2] * 1e3, best * 1e3, snap_total / runs * 1e3,
	       snap_best * 1e3, out->len, samples_of(out));
	kv_source_snap_release(&src);
}

/* Snapshot + render of the state as a scrape serves it (OpenMetrics, or
 * the families an operator left out), `runs` times: mean, median and best,
 * as render_runs prints them.  Each run writes the served text from the
 * state; no buffer is fresh (render_runs' are not either). */
static void served_runs(const char *what, unsigned tenants, const kv_state *st, int runs, const mkv_expo_opts *eo)
{
	kv_source_snap src = {.name = "m0"};
	kv_snapshot_members(&src, 1);
	src.members[0].connected = true;
	kv_exporter_snap x = {.info = {.version = "bench", .revision = "bench"}, .sources = &src, .n_sources = 1};
	mkv_buf out;
	mkv_buf_init(&out);
	double best = 1e9, total = 0, each[200];
	if (runs > 200)
		runs = 200;
	for (int r = 0; r < runs; r++) {
		double a = bench_mono();
		kv_snapshot_state(&src, st);
		mkv_buf_reset(&out);
		kv_render(&out, &x, eo);
		double d = bench_mono() - a;
		each[r] = d;
		total += d;
		if (d < best)
			best = d;
	}
	qsort(each, (size_t)runs, sizeof(each[0]), bench_cmp_double);
	printf("{\"what\":\"%s\",\"tenants\":%u,\"mean_ms\":%.3f,\"median_ms\":%.3f,\"best_ms\":%.3f,"
	       "\"bytes\":%zu,\"samples\":%zu}\n",
	       what, tenants, total / runs * 1e3, each[runs / 2] * 1e3, best * 1e3, out.len, samples_of(&out));
	mkv_buf_free(&out);
	kv_source_snap_release(&src);
}

/* Snapshot + status page of the state, `runs` times, as render_runs
 * prints snapshot + render: the page's mean, median and best. */
static void status_runs(const char *what, unsigned tenants, const kv_state *st, int runs, const mkv_status_opts *o)
{
	kv_source_snap src = {.name = "m0"};
	kv_snapshot_members(&src, 1);
	src.members[0].connected = true;
	kv_exporter_snap x = {.info = {.version = "bench", .revision = "bench", .now_ms = 1795982164612},
			      .sources = &src,
			      .n_sources = 1};
	mkv_buf out;
	mkv_buf_init(&out);
	double best = 1e9, total = 0, each[200];
	if (runs > 200)
		runs = 200;
	for (int r = 0; r < runs; r++) {
		double a = bench_mono();
		kv_snapshot_state(&src, st);
		mkv_buf_reset(&out);
		kv_status_render(&out, &x, o);
		double d = bench_mono() - a;
		each[r] = d;
		total += d;
		if (d < best)
			best = d;
	}
	qsort(each, (size_t)runs, sizeof(each[0]), bench_cmp_double);
	printf("{\"what\":\"%s\",\"tenants\":%u,\"mean_ms\":%.3f,\"median_ms\":%.3f,\"best_ms\":%.3f,"
	       "\"bytes\":%zu}\n",
	       what, tenants, total / runs * 1e3, each[runs / 2] * 1e3, best * 1e3, out.len);
	mkv_buf_free(&out);
	kv_source_snap_release(&src);
}

/* The status page of 20,000 tenants against the exposition of the same
 * state (each with its snapshot): the page keeps its first `limit` tenants
 * with a heap, so it costs a pass over the tenants, not their samples.
 * Every tenant has 20 objects and is stale (start-up): every comparison
 * goes down to the ids, the page's worst case. */
static void bench_status(void)
{
	unsigned n = 20000;
	int runs = 30;
	mkv_budget budget;
	mkv_budget_init(&budget, 100000, 100000000);
	kv_state *st = render_state(&budget, n, true);
	mkv_buf out;
	mkv_buf_init(&out);
	render_runs("snapshot + render (/metrics)", n, st, runs, &out);
	mkv_buf_free(&out);
	status_runs("snapshot + status page (/status), limit 100", n, st, runs, &(mkv_status_opts){.limit = 100});
	status_runs("snapshot + status page, limit 2000 (the most)", n, st, runs,
		    &(mkv_status_opts){.limit = MKV_STATUS_LIMIT_MAX});
	status_runs("snapshot + status page, ?tenant=tenant-1 (10,000 match)", n, st, runs,
		    &(mkv_status_opts){.filter = "tenant-1", .limit = 100});
	kv_state_free(st);
}

int bench_render(void)
{
	static const unsigned counts[] = {10, 1000, 10000};
	for (size_t c = 0; c < 3; c++) {
		mkv_budget budget;
		mkv_budget_init(&budget, 100000, 100000000);
		kv_state *st = render_state(&budget, counts[c], true);
		mkv_buf out;
		mkv_buf_init(&out);
		int runs = counts[c] >= 10000 ? 50 : 200;
		render_runs("snapshot + render", counts[c], st, runs, &out);
		/* the floor of any renderer of this text: writing its bytes, a line
		 * at a time, into a buffer already touched */
		char *copy = malloc(out.len + 1);
		double floor_best = 1e9;
		if (copy) {
			memset(copy, 0, out.len + 1);
			for (int r = 0; r < runs; r++) {
				double a = bench_mono();
				for (size_t i = 0; i < out.len;) {
					const char *nl = memchr(out.data + i, '\n', out.len - i);
					size_t n = nl ? (size_t)(nl - (out.data + i)) + 1 : out.len - i;
					memcpy(copy + i, out.data + i, n);
					i += n;
				}
				double d = bench_mono() - a;
				if (d < floor_best)
					floor_best = d;
			}
			printf("{\"what\":\"writing that text a line at a time (a renderer's floor)\",\"tenants\":%u,"
			       "\"best_ms\":%.3f,\"check\":%d}\n",
			       counts[c], floor_best * 1e3, copy[out.len / 2]);
			free(copy);
		}
		/* what Prometheus asks for, whole: snapshot + render in OpenMetrics */
		served_runs("snapshot + render, OpenMetrics", counts[c], st, runs,
			    &(mkv_expo_opts){.openmetrics = true, .created = 1700000000});
		/* what Prometheus asks for with its native histograms on */
		served_runs("snapshot + render, protobuf", counts[c], st, runs, &(mkv_expo_opts){.protobuf = true});
		if (counts[c] == 10000) {
			/* docs/sizing.md's modes: the families an operator leaves out */
			char err[128];
			mkv_family_filter *life = mkv_family_filter_new("mooncake_kv_object_lifetime_seconds", false,
									err, sizeof(err));
			mkv_family_filter *summary = mkv_family_filter_new(NULL, true, err, sizeof(err));
			served_runs("snapshot + render, --metrics.exclude=mooncake_kv_object_lifetime_seconds",
				    counts[c], st, runs, &(mkv_expo_opts){.families = life});
			served_runs("snapshot + render, --metrics.tenant-summary", counts[c], st, runs,
				    &(mkv_expo_opts){.families = summary});
			/* the series served before only news was: every zero, every family */
			served_runs("snapshot + render, --metrics.all-series", counts[c], st, runs,
				    &(mkv_expo_opts){.all_series = true});
			served_runs("snapshot + render, OpenMetrics, --metrics.tenant-summary", counts[c], st, runs,
				    &(mkv_expo_opts){.openmetrics = true, .created = 1700000000, .families = summary});
			mkv_family_filter_free(life);
			mkv_family_filter_free(summary);
			mkv_budget_init(&budget, 100000, 100000000);
			kv_state *off = render_state(&budget, counts[c], false);
			render_runs("snapshot + render, --residency.enabled=false", counts[c], off, runs, &out);
			kv_state_free(off);
		}
		mkv_buf_free(&out);
		kv_state_free(st);
	}
	bench_status();
	return 0;
}

/* Key groups' cost: the same ingest with and without a typical two-group
 * regex, alternated five times each in one run so that drift in the
 * machine's speed falls on both; the medians are compared. */
