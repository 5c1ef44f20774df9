/* SPDX-License-Identifier: Apache-2.0 */
/* A state taken from a peer exporter at start-up (--state.peer,
 * mooncake_kv/handover.h): for the sources that tried. */
#include "kv_family.h"

static bool tried(const kv_source_snap *s)
{
	for (int r = 0; r < MKV_BOOT__COUNT; r++)
		if (s->boot.results[r])
			return true;
	return false;
}

static bool any_tried(const kv_exporter_snap *x)
{
	return kv_any_source(x, tried);
}

static void bootstrap_total(kv_emit *e, const kv_at *a)
{
	for (int r = 0; tried(a->s) && r < MKV_BOOT__COUNT; r++)
		kv_sample_u64(e, (kv_label){"result", mkv_boot_result_name((enum mkv_boot_result)r)},
			      a->s->boot.results[r]);
}

static void bootstrap_joins_total(kv_emit *e, const kv_at *a)
{
	if (!tried(a->s))
		return;
	kv_sample_u64(e, (kv_label){"result", "continued"}, a->s->boot.continued);
	kv_sample_u64(e, (kv_label){"result", "broken"}, a->s->boot.broken);
}

static void bootstrap_joins_waiting(kv_emit *e, const kv_at *a)
{
	if (tried(a->s))
		kv_sample_u64(e, KV_NO_LABEL, a->s->boot.waiting);
}

static void bootstrap_overlap_messages_total(kv_emit *e, const kv_at *a)
{
	if (tried(a->s))
		kv_sample_u64(e, KV_NO_LABEL, a->s->boot.overlap);
}

static const kv_family families[] = {
	{.name = "mooncake_kv_bootstrap_total",
	 .kind = KV_COUNTER,
	 .help = "Attempts at start-up to take the source's state from a peer exporter (--state.peer), by result: "
		 "taken, or why not (unreachable, timeout, http_status, too_large, truncated, checksum, malformed, "
		 "version, absent, mismatch, limit, out_of_memory).",
	 .scope = KV_SCOPE_SOURCE,
	 .labels = "result",
	 .shown = any_tried,
	 .samples = bootstrap_total},
	{.name = "mooncake_kv_bootstrap_joins_total",
	 .kind = KV_COUNTER,
	 .help = "Members whose stream, after the state was taken, proved it continues the peer's (continued) or "
		 "could not (broken: every tenant turned stale, reason bootstrap).",
	 .scope = KV_SCOPE_SOURCE,
	 .labels = "result",
	 .shown = any_tried,
	 .samples = bootstrap_joins_total},
	{.name = "mooncake_kv_bootstrap_joins_waiting",
	 .kind = KV_GAUGE,
	 .help = "Members still waiting for the message that proves their stream continues the peer's.",
	 .scope = KV_SCOPE_SOURCE,
	 .shown = any_tried,
	 .samples = bootstrap_joins_waiting},
	{.name = "mooncake_kv_bootstrap_overlap_messages_total",
	 .kind = KV_COUNTER,
	 .help = "Messages received after the state was taken that the peer's state already held: not applied "
		 "again.",
	 .scope = KV_SCOPE_SOURCE,
	 .shown = any_tried,
	 .samples = bootstrap_overlap_messages_total},
};

KV_FAMILY_TABLE(kv_bootstrap_families, families);
