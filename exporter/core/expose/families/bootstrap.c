/* SPDX-License-Identifier: Apache-2.0 */
/* A state taken from a peer exporter at start-up (--state.peer,
 * mooncake_kv/handover.h): for the sources that tried. */
#include "kv_family.h"

static bool tried(const kv_source_snap *s)
{
	for (int r = 0; r < KV_BOOT__COUNT; r++)
		if (s->boot.results[r])
			return true;
	return false;
}

KV_ANY_SOURCE(static, any_tried, tried(s))

static void results(kv_emit *e, const kv_at *a)
{
	for (int r = 0; tried(a->s) && r < KV_BOOT__COUNT; r++)
		kv_sample_u64(e, (kv_label){"result", kv_boot_result_name(r)}, a->s->boot.results[r]);
}

static void joins(kv_emit *e, const kv_at *a)
{
	if (!tried(a->s))
		return;
	kv_sample_u64(e, (kv_label){"result", "continued"}, a->s->boot.continued);
	kv_sample_u64(e, (kv_label){"result", "broken"}, a->s->boot.broken);
}

KV_U64(waiting, tried(a->s), a->s->boot.waiting)
KV_U64(overlap, tried(a->s), a->s->boot.overlap)

#define SOURCE KV_SCOPE_SOURCE, 0, any_tried

static const kv_family families[] = {
	{"mooncake_kv_bootstrap_total", "counter",
	 "Attempts at start-up to take the source's state from a peer exporter (--state.peer), by result: taken, "
	 "or why not (unreachable, timeout, http_status, too_large, truncated, checksum, malformed, version, "
	 "absent, mismatch, limit, out_of_memory).",
	 SOURCE, results},
	{"mooncake_kv_bootstrap_joins_total", "counter",
	 "Members whose stream, after the state was taken, proved it continues the peer's (continued) or could "
	 "not (broken: every tenant turned stale, reason bootstrap).",
	 SOURCE, joins},
	{"mooncake_kv_bootstrap_joins_waiting", "gauge",
	 "Members still waiting for the message that proves their stream continues the peer's.", SOURCE, waiting},
	{"mooncake_kv_bootstrap_overlap_messages_total", "counter",
	 "Messages received after the state was taken that the peer's state already held: not applied again.", SOURCE,
	 overlap},
};

KV_FAMILY_TABLE(kv_bootstrap_families, families);
