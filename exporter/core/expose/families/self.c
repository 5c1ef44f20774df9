/* SPDX-License-Identifier: Apache-2.0 */
/* The exporter itself: its build, what it holds against its limits, its
 * scrapes, and the process figures the official client libraries give. */
#include <string.h>

#include "kv_family.h"

static bool process_known(const kv_exporter_snap *x)
{
	return x->info.process.ok;
}

static void build_info(kv_emit *e, const kv_at *a)
{
	const kv_label l[] = {{"version", a->x->info.version}, {"revision", a->x->info.revision}};
	kv_sample_labels(e, l, 2, 1);
}

#define X_VALUE(fn, expr) KV_DOUBLE(fn, true, expr)

/* the sum of a source figure over all sources */
#define SUM_SOURCES(field)                                     \
	static uint64_t sum_##field(const kv_exporter_snap *x) \
	{                                                      \
		uint64_t n = 0;                                \
		for (size_t i = 0; i < x->n_sources; i++)      \
			n += x->sources[i].field;              \
		return n;                                      \
	}

SUM_SOURCES(tenants_overflow)
SUM_SOURCES(objects_overflow)
SUM_SOURCES(groups_overflow)

X_VALUE(tracked_objects, a->x->tracked_objects)
X_VALUE(tracked_tenants, a->x->tracked_tenants)
X_VALUE(max_objects, a->x->max_objects)
X_VALUE(max_tenants, a->x->max_tenants)
X_VALUE(tenants_overflow, sum_tenants_overflow(a->x))
X_VALUE(objects_overflow, sum_objects_overflow(a->x))
X_VALUE(tracked_groups, a->x->tracked_key_groups)
X_VALUE(max_groups, a->x->max_key_groups)
X_VALUE(groups_overflow, sum_groups_overflow(a->x))
/* a snapshot not taken from a store (a benchmark's) has no holds */
static void lock_hold(kv_emit *e, const kv_at *a)
{
	if (a->s->scrape_hold.bounds)
		kv_sample_hist(e, &a->s->scrape_hold);
}

X_VALUE(scrapes, a->x->info.scrapes)
X_VALUE(scrape_seconds, a->x->info.last_scrape_seconds)
X_VALUE(scrape_bytes, a->x->info.last_scrape_bytes)
X_VALUE(cpu, a->x->info.process.cpu_seconds)
X_VALUE(resident, a->x->info.process.resident_bytes)
X_VALUE(virtual_bytes, a->x->info.process.virtual_bytes)
X_VALUE(open_fds, a->x->info.process.open_fds)
X_VALUE(max_fds, a->x->info.process.max_fds)
X_VALUE(start_time, a->x->info.process.start_time)

#define SELF    KV_SCOPE_EXPORTER, 0, NULL
#define GROUPS  KV_SCOPE_EXPORTER, 0, kv_any_groups
#define PROCESS KV_SCOPE_EXPORTER, 0, process_known

static const kv_family families[] = {
	{"mooncake_kv_exporter_build_info", "gauge", "Version and git revision of the exporter; always 1.", SELF,
	 build_info},
	{"mooncake_kv_tracked_objects", "gauge", "Objects held in memory, all sources.", SELF, tracked_objects},
	{"mooncake_kv_tracked_tenants", "gauge", "Tenants held in memory, all sources.", SELF, tracked_tenants},
	{"mooncake_kv_limit_max_objects", "gauge", "--limits.max-objects.", SELF, max_objects},
	{"mooncake_kv_limit_max_tenants", "gauge", "--limits.max-tenants.", SELF, max_tenants},
	{"mooncake_kv_tenants_overflow_total", "counter", "Events for a new tenant refused by --limits.max-tenants.",
	 SELF, tenants_overflow},
	{"mooncake_kv_objects_overflow_total", "counter",
	 "stored events for a new object refused by --limits.max-objects.", SELF, objects_overflow},
	{"mooncake_kv_tracked_key_groups", "gauge", "Key groups held in memory, all sources.", GROUPS, tracked_groups},
	{"mooncake_kv_limit_max_key_groups", "gauge", "--limits.max-key-groups.", GROUPS, max_groups},
	{"mooncake_kv_key_groups_overflow_total", "counter",
	 "Events whose key's new group was refused by --limits.max-key-groups (counted under "
	 "__overflow__).",
	 GROUPS, groups_overflow},
	{"mooncake_kv_exporter_scrapes_total", "counter", "Scrapes of the metrics path served before this one.", SELF,
	 scrapes},
	{"mooncake_kv_exporter_last_scrape_duration_seconds", "gauge",
	 "Snapshot, render and compression time of the previous scrape.", SELF, scrape_seconds},
	{"mooncake_kv_exporter_last_scrape_bytes", "gauge", "Body size of the previous scrape, before compression.",
	 SELF, scrape_bytes},
	{"mooncake_kv_scrape_lock_hold_seconds", "histogram",
	 "How long each scrape before this one held the source's lock to copy its figures: the source's "
	 "ingestion waited that long (messages queue meanwhile, up to --zmq.rcvhwm).",
	 KV_SCOPE_SOURCE, 0, NULL, lock_hold},
	{"process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", PROCESS, cpu},
	{"process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", PROCESS, resident},
	{"process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", PROCESS, virtual_bytes},
	{"process_open_fds", "gauge", "Number of open file descriptors.", PROCESS, open_fds},
	{"process_max_fds", "gauge", "Maximum number of open file descriptors.", PROCESS, max_fds},
	{"process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", PROCESS,
	 start_time},
};

KV_FAMILY_TABLE(kv_self_families, families);
