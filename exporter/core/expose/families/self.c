/* SPDX-License-Identifier: Apache-2.0 */
/* The exporter itself: its build, what it holds against its limits, its
 * scrapes, and the process figures the official client libraries give. */
#include <string.h>

#include "kv_family.h"

static bool process_known(const kv_exporter_snap *x)
{
	return x->info.process.ok;
}

static void exporter_build_info(kv_emit *e, const kv_at *a)
{
	const kv_label l[] = {{"version", a->x->info.version}, {"revision", a->x->info.revision}};
	kv_sample_labels(e, l, 2, 1);
}

static void tracked_objects(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, (double)a->x->tracked_objects);
}

static void tracked_tenants(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, (double)a->x->tracked_tenants);
}

static void limit_max_objects(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, (double)a->x->max_objects);
}

static void limit_max_tenants(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, (double)a->x->max_tenants);
}

static void tenants_overflow_total(kv_emit *e, const kv_at *a)
{
	uint64_t n = 0; /* all sources' */
	for (size_t i = 0; i < a->x->n_sources; i++)
		n += a->x->sources[i].tenants_overflow;
	kv_sample_double(e, KV_NO_LABEL, (double)n);
}

static void objects_overflow_total(kv_emit *e, const kv_at *a)
{
	uint64_t n = 0; /* all sources' */
	for (size_t i = 0; i < a->x->n_sources; i++)
		n += a->x->sources[i].objects_overflow;
	kv_sample_double(e, KV_NO_LABEL, (double)n);
}

static void tracked_key_groups(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, (double)a->x->tracked_key_groups);
}

static void limit_max_key_groups(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, (double)a->x->max_key_groups);
}

static void key_groups_overflow_total(kv_emit *e, const kv_at *a)
{
	uint64_t n = 0; /* all sources' */
	for (size_t i = 0; i < a->x->n_sources; i++)
		n += a->x->sources[i].groups_overflow;
	kv_sample_double(e, KV_NO_LABEL, (double)n);
}

/* a snapshot not taken from a store (a benchmark's) has no holds */
static void scrape_lock_hold_seconds(kv_emit *e, const kv_at *a)
{
	if (a->s->scrape_hold.bounds)
		kv_sample_hist(e, &a->s->scrape_hold);
}

static void exporter_scrapes_total(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, (double)a->x->info.scrapes);
}

static void exporter_last_scrape_duration_seconds(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, a->x->info.last_scrape_seconds);
}

static void exporter_last_scrape_bytes(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, (double)a->x->info.last_scrape_bytes);
}

static void process_cpu_seconds_total(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, a->x->info.process.cpu_seconds);
}

static void process_resident_memory_bytes(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, a->x->info.process.resident_bytes);
}

static void process_virtual_memory_bytes(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, a->x->info.process.virtual_bytes);
}

static void process_open_fds(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, a->x->info.process.open_fds);
}

static void process_max_fds(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, a->x->info.process.max_fds);
}

static void process_start_time_seconds(kv_emit *e, const kv_at *a)
{
	kv_sample_double(e, KV_NO_LABEL, a->x->info.process.start_time);
}

static const kv_family families[] = {
	{.name = "mooncake_kv_exporter_build_info",
	 .kind = KV_GAUGE,
	 .help = "Version and git revision of the exporter; always 1.",
	 .scope = KV_SCOPE_EXPORTER,
	 .labels = "version,revision",
	 .samples = exporter_build_info},
	{.name = "mooncake_kv_tracked_objects",
	 .kind = KV_GAUGE,
	 .help = "Objects held in memory, all sources.",
	 .scope = KV_SCOPE_EXPORTER,
	 .samples = tracked_objects},
	{.name = "mooncake_kv_tracked_tenants",
	 .kind = KV_GAUGE,
	 .help = "Tenants held in memory, all sources.",
	 .scope = KV_SCOPE_EXPORTER,
	 .samples = tracked_tenants},
	{.name = "mooncake_kv_limit_max_objects",
	 .kind = KV_GAUGE,
	 .help = "--limits.max-objects.",
	 .scope = KV_SCOPE_EXPORTER,
	 .samples = limit_max_objects},
	{.name = "mooncake_kv_limit_max_tenants",
	 .kind = KV_GAUGE,
	 .help = "--limits.max-tenants.",
	 .scope = KV_SCOPE_EXPORTER,
	 .samples = limit_max_tenants},
	{.name = "mooncake_kv_tenants_overflow_total",
	 .kind = KV_COUNTER,
	 .help = "Events for a new tenant refused by --limits.max-tenants.",
	 .scope = KV_SCOPE_EXPORTER,
	 .samples = tenants_overflow_total},
	{.name = "mooncake_kv_objects_overflow_total",
	 .kind = KV_COUNTER,
	 .help = "stored events for a new object refused by --limits.max-objects.",
	 .scope = KV_SCOPE_EXPORTER,
	 .samples = objects_overflow_total},
	{.name = "mooncake_kv_tracked_key_groups",
	 .kind = KV_GAUGE,
	 .help = "Key groups held in memory, all sources.",
	 .scope = KV_SCOPE_EXPORTER,
	 .shown = kv_any_groups,
	 .samples = tracked_key_groups},
	{.name = "mooncake_kv_limit_max_key_groups",
	 .kind = KV_GAUGE,
	 .help = "--limits.max-key-groups.",
	 .scope = KV_SCOPE_EXPORTER,
	 .shown = kv_any_groups,
	 .samples = limit_max_key_groups},
	{.name = "mooncake_kv_key_groups_overflow_total",
	 .kind = KV_COUNTER,
	 .help = "Events whose key's new group was refused by --limits.max-key-groups (counted under "
		 "__overflow__).",
	 .scope = KV_SCOPE_EXPORTER,
	 .shown = kv_any_groups,
	 .samples = key_groups_overflow_total},
	{.name = "mooncake_kv_exporter_scrapes_total",
	 .kind = KV_COUNTER,
	 .help = "Scrapes of the metrics path served before this one.",
	 .scope = KV_SCOPE_EXPORTER,
	 .samples = exporter_scrapes_total},
	{.name = "mooncake_kv_exporter_last_scrape_duration_seconds",
	 .kind = KV_GAUGE,
	 .help = "Snapshot, render and compression time of the previous scrape.",
	 .scope = KV_SCOPE_EXPORTER,
	 .samples = exporter_last_scrape_duration_seconds},
	{.name = "mooncake_kv_exporter_last_scrape_bytes",
	 .kind = KV_GAUGE,
	 .help = "Body size of the previous scrape, before compression.",
	 .scope = KV_SCOPE_EXPORTER,
	 .samples = exporter_last_scrape_bytes},
	{.name = "mooncake_kv_scrape_lock_hold_seconds",
	 .kind = KV_HISTOGRAM,
	 .help = "How long each scrape before this one held the source's lock to copy its figures: the source's "
		 "ingestion waited that long (messages queue meanwhile, up to --zmq.rcvhwm).",
	 .scope = KV_SCOPE_SOURCE,
	 .samples = scrape_lock_hold_seconds},
	{.name = "process_cpu_seconds_total",
	 .kind = KV_COUNTER,
	 .help = "Total user and system CPU time spent in seconds.",
	 .scope = KV_SCOPE_EXPORTER,
	 .shown = process_known,
	 .samples = process_cpu_seconds_total},
	{.name = "process_resident_memory_bytes",
	 .kind = KV_GAUGE,
	 .help = "Resident memory size in bytes.",
	 .scope = KV_SCOPE_EXPORTER,
	 .shown = process_known,
	 .samples = process_resident_memory_bytes},
	{.name = "process_virtual_memory_bytes",
	 .kind = KV_GAUGE,
	 .help = "Virtual memory size in bytes.",
	 .scope = KV_SCOPE_EXPORTER,
	 .shown = process_known,
	 .samples = process_virtual_memory_bytes},
	{.name = "process_open_fds",
	 .kind = KV_GAUGE,
	 .help = "Number of open file descriptors.",
	 .scope = KV_SCOPE_EXPORTER,
	 .shown = process_known,
	 .samples = process_open_fds},
	{.name = "process_max_fds",
	 .kind = KV_GAUGE,
	 .help = "Maximum number of open file descriptors.",
	 .scope = KV_SCOPE_EXPORTER,
	 .shown = process_known,
	 .samples = process_max_fds},
	{.name = "process_start_time_seconds",
	 .kind = KV_GAUGE,
	 .help = "Start time of the process since unix epoch in seconds.",
	 .scope = KV_SCOPE_EXPORTER,
	 .shown = process_known,
	 .samples = process_start_time_seconds},
};

KV_FAMILY_TABLE(kv_self_families, families);
