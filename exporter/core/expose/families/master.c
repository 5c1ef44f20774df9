/* SPDX-License-Identifier: Apache-2.0 */
/* Each member's master, from its GET /kv_events/status (and master_key_count
 * of its /metrics): its own counters, restarts, and loss by cause. */
#include "kv_family.h"

static bool any_master(const kv_exporter_snap *x)
{
	for (size_t i = 0; i < x->n_sources; i++)
		for (size_t j = 0; j < x->sources[i].n_members; j++)
			if (x->sources[i].members[j].has_master)
				return true;
	return false;
}

/* The member's master, NULL for a member without one (no admin URL): none
 * of its families has a sample then. */
static const kv_master *master(const kv_at *a)
{
	return a->m->has_master ? &a->m->master : NULL;
}

static void master_up(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m)
		kv_sample_u64(e, KV_NO_LABEL, m->up);
}

static void master_standby(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m)
		kv_sample_u64(e, KV_NO_LABEL, m->standby);
}

static void master_publisher_enabled(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m)
		kv_sample_u64(e, KV_NO_LABEL, m->status.enabled);
}

static void master_published_batches_total(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m && m->have_status)
		kv_sample_u64(e, KV_NO_LABEL, m->status.published_batches);
}

static void master_published_events_total(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m && m->have_status)
		kv_sample_u64(e, KV_NO_LABEL, m->status.published_events);
}

static void master_dropped_events_total(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m && m->have_status)
		kv_sample_u64(e, KV_NO_LABEL, m->status.dropped_events);
}

static void master_skipped_keyless_events_total(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m && m->status.has_keyless)
		kv_sample_u64(e, KV_NO_LABEL, m->status.skipped_keyless_events);
}

static void master_unparsed_keys_total(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m && m->status.has_unparsed)
		kv_sample_u64(e, KV_NO_LABEL, m->status.skipped_unparsed_keys);
}

static void master_last_sequence(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m && m->have_status)
		kv_sample_u64(e, KV_NO_LABEL, m->last_sequence);
}

static void sequence_behind(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m && m->loss.behind_known)
		kv_sample_u64(e, KV_NO_LABEL, m->loss.behind);
}

static void master_restarts_total(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m)
		kv_sample_u64(e, KV_NO_LABEL, m->loss.restarts);
}

static void queue_lost_events_total(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m)
		kv_sample_u64(e, KV_NO_LABEL, m->loss.queue);
}

static void transport_lost_messages_total(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m)
		kv_sample_u64(e, KV_NO_LABEL, m->loss.transport);
}

static void unattributed_lost_messages_total(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m)
		kv_sample_u64(e, KV_NO_LABEL, m->loss.unattributed);
}

static void master_keys(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m && m->keys_known)
		kv_sample_double(e, KV_NO_LABEL, m->keys);
}

static void master_poll_duration_seconds(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m && m->polled)
		kv_sample_double(e, KV_NO_LABEL, m->last_poll_duration);
}

static void master_last_poll_timestamp_seconds(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m && m->polled)
		kv_sample_double(e, KV_NO_LABEL, m->last_poll_time);
}

static void master_drop_ratio(kv_emit *e, const kv_at *a)
{
	const kv_master *m = master(a);
	if (m && m->polled)
		kv_sample_double(e, KV_NO_LABEL, m->drop_ratio);
}

static void master_poll_errors_total(kv_emit *e, const kv_at *a)
{
	if (a->m->has_master)
		kv_sample_poll_errors(e, a->m->master.poll_errors);
}

static void master_keys_poll_errors_total(kv_emit *e, const kv_at *a)
{
	if (a->m->has_master)
		kv_sample_poll_errors(e, a->m->master.keys_errors);
}

static const kv_family families[] = {
	{.name = "mooncake_kv_master_up",
	 .kind = KV_GAUGE,
	 .help = "1 when the last status poll got an answer (a valid body, or 503 from a standby).",
	 .scope = KV_SCOPE_MEMBER,
	 .shown = any_master,
	 .samples = master_up},
	{.name = "mooncake_kv_master_standby",
	 .kind = KV_GAUGE,
	 .help = "1 when the master answered 503: a standby whose service plane is not active.",
	 .scope = KV_SCOPE_MEMBER,
	 .shown = any_master,
	 .samples = master_standby},
	{.name = "mooncake_kv_master_publisher_enabled",
	 .kind = KV_GAUGE,
	 .help = "The master's `enabled` in its last valid answer: 1 while a KV event publisher is live.",
	 .scope = KV_SCOPE_MEMBER,
	 .shown = any_master,
	 .samples = master_publisher_enabled},
	{.name = "mooncake_kv_master_published_batches_total",
	 .kind = KV_COUNTER,
	 .help = "published_batches reported by the master: ZMQ messages sent.",
	 .scope = KV_SCOPE_MEMBER,
	 .flags = KV_FAM_MIRRORED,
	 .shown = any_master,
	 .samples = master_published_batches_total},
	{.name = "mooncake_kv_master_published_events_total",
	 .kind = KV_COUNTER,
	 .help = "published_events reported by the master: events inside those messages.",
	 .scope = KV_SCOPE_MEMBER,
	 .flags = KV_FAM_MIRRORED,
	 .shown = any_master,
	 .samples = master_published_events_total},
	{.name = "mooncake_kv_master_dropped_events_total",
	 .kind = KV_COUNTER,
	 .help = "dropped_events reported by the master: events its full queue dropped (each leaves a sequence gap).",
	 .scope = KV_SCOPE_MEMBER,
	 .flags = KV_FAM_MIRRORED,
	 .shown = any_master,
	 .samples = master_dropped_events_total},
	{.name = "mooncake_kv_master_skipped_keyless_events_total",
	 .kind = KV_COUNTER,
	 .help = "skipped_keyless_events reported by the master (the spec's field): per-object events not published "
		 "for want of an object key.",
	 .scope = KV_SCOPE_MEMBER,
	 .flags = KV_FAM_MIRRORED,
	 .shown = any_master,
	 .samples = master_skipped_keyless_events_total},
	{.name = "mooncake_kv_master_unparsed_keys_total",
	 .kind = KV_COUNTER,
	 .help = "skipped_unparsed_keys reported by the master (upstream's field): events whose key is not a decimal "
		 "or 0x number, published with object_key all the same unless kv_events_emit_object_key=false.",
	 .scope = KV_SCOPE_MEMBER,
	 .flags = KV_FAM_MIRRORED,
	 .shown = any_master,
	 .samples = master_unparsed_keys_total},
	{.name = "mooncake_kv_master_last_sequence",
	 .kind = KV_GAUGE,
	 .help = "Last sequence number the master's publisher process used: published_batches + dropped_events.",
	 .scope = KV_SCOPE_MEMBER,
	 .shown = any_master,
	 .samples = master_last_sequence},
	{.name = "mooncake_kv_sequence_behind",
	 .kind = KV_GAUGE,
	 .help = "Sequence numbers the master had used by the previous poll that this exporter has neither received "
		 "nor counted lost: above 0, it is more than a poll interval behind (only while the stream and the "
		 "master describe the same publisher process).",
	 .scope = KV_SCOPE_MEMBER,
	 .shown = any_master,
	 .samples = sequence_behind},
	{.name = "mooncake_kv_master_restarts_total",
	 .kind = KV_COUNTER,
	 .help = "Publisher process restarts: the stream's sequence or event id went back, or the master's counters "
		 "did (each restart counted once).",
	 .scope = KV_SCOPE_MEMBER,
	 .shown = any_master,
	 .samples = master_restarts_total},
	{.name = "mooncake_kv_queue_lost_events_total",
	 .kind = KV_COUNTER,
	 .help = "Missing sequence numbers explained by the master's dropped_events: events its full queue dropped.",
	 .scope = KV_SCOPE_MEMBER,
	 .shown = any_master,
	 .samples = queue_lost_events_total},
	{.name = "mooncake_kv_transport_lost_messages_total",
	 .kind = KV_COUNTER,
	 .help = "Missing sequence numbers the master's dropped_events does not explain: messages lost in transport "
		 "(PUB high-water mark, slow subscriber, lost tail), each up to 64 events.",
	 .scope = KV_SCOPE_MEMBER,
	 .shown = any_master,
	 .samples = transport_lost_messages_total},
	{.name = "mooncake_kv_unattributed_lost_messages_total",
	 .kind = KV_COUNTER,
	 .help = "Missing sequence numbers whose cause is unknown: the master's counters that could explain them were "
		 "lost with a restart before a poll saw them. queue + transport + unattributed = sequence_missing "
		 "after each poll.",
	 .scope = KV_SCOPE_MEMBER,
	 .shown = any_master,
	 .samples = unattributed_lost_messages_total},
	{.name = "mooncake_kv_master_keys",
	 .kind = KV_GAUGE,
	 .help = "master_key_count of the master's /metrics: keys of all its tenants, as the master counts them.",
	 .scope = KV_SCOPE_MEMBER,
	 .shown = any_master,
	 .samples = master_keys},
	{.name = "mooncake_kv_master_poll_duration_seconds",
	 .kind = KV_GAUGE,
	 .help = "Duration of the last status poll.",
	 .scope = KV_SCOPE_MEMBER,
	 .shown = any_master,
	 .samples = master_poll_duration_seconds},
	{.name = "mooncake_kv_master_last_poll_timestamp_seconds",
	 .kind = KV_GAUGE,
	 .help = "When the last status poll finished, in unix seconds.",
	 .scope = KV_SCOPE_MEMBER,
	 .shown = any_master,
	 .samples = master_last_poll_timestamp_seconds},
	{.name = "mooncake_kv_master_drop_ratio",
	 .kind = KV_GAUGE,
	 .help = "dropped / (published + dropped) events over the last 60 s of polls.",
	 .scope = KV_SCOPE_MEMBER,
	 .shown = any_master,
	 .samples = master_drop_ratio},
	{.name = "mooncake_kv_master_poll_errors_total",
	 .kind = KV_COUNTER,
	 .help = "Failed status polls, by reason.",
	 .scope = KV_SCOPE_MEMBER,
	 .labels = "reason",
	 .shown = any_master,
	 .samples = master_poll_errors_total},
	{.name = "mooncake_kv_master_keys_poll_errors_total",
	 .kind = KV_COUNTER,
	 .help = "Failed reads of master_key_count from the master's /metrics, by reason (field: no such metric).",
	 .scope = KV_SCOPE_MEMBER,
	 .labels = "reason",
	 .shown = any_master,
	 .samples = master_keys_poll_errors_total},
};

KV_FAMILY_TABLE(kv_master_families, families);
