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

/* A figure of a member with a master, when `when` holds (both of kv_master M). */
#define M                        a->m->master
#define M_U64(fn, when, expr)    KV_U64(fn, a->m->has_master && (when), expr)
#define M_DOUBLE(fn, when, expr) KV_DOUBLE(fn, a->m->has_master && (when), expr)

M_U64(up, true, M.up)
M_U64(standby, true, M.standby)
M_U64(enabled, true, M.status.enabled)
M_U64(batches, M.have_status, M.status.published_batches)
M_U64(events, M.have_status, M.status.published_events)
M_U64(dropped, M.have_status, M.status.dropped_events)
M_U64(keyless, M.status.has_keyless, M.status.skipped_keyless_events)
M_U64(unparsed, M.status.has_unparsed, M.status.skipped_unparsed_keys)
M_U64(last_sequence, M.have_status, M.last_sequence)
M_U64(behind, M.loss.behind_known, M.loss.behind)
M_U64(restarts, true, M.loss.restarts)
M_U64(queue, true, M.loss.queue)
M_U64(transport, true, M.loss.transport)
M_U64(unattributed, true, M.loss.unattributed)
M_DOUBLE(keys, M.keys_known, M.keys)
M_DOUBLE(poll_duration, M.polled, M.last_poll_duration)
M_DOUBLE(poll_time, M.polled, M.last_poll_time)
M_DOUBLE(drop_ratio, M.polled, M.drop_ratio)

static void poll_errors(kv_emit *e, const kv_at *a)
{
	if (a->m->has_master)
		kv_sample_poll_errors(e, a->m->master.poll_errors);
}

static void keys_poll_errors(kv_emit *e, const kv_at *a)
{
	if (a->m->has_master)
		kv_sample_poll_errors(e, a->m->master.keys_errors);
}

#define MASTER   KV_SCOPE_MEMBER, 0, any_master
#define MIRRORED KV_SCOPE_MEMBER, KV_FAM_MIRRORED, any_master

static const kv_family families[] = {
	{"mooncake_kv_master_up", "gauge",
	 "1 when the last status poll got an answer (a valid body, or 503 from a standby).", MASTER, up},
	{"mooncake_kv_master_standby", "gauge",
	 "1 when the master answered 503: a standby whose service plane is not active.", MASTER, standby},
	{"mooncake_kv_master_publisher_enabled", "gauge",
	 "The master's `enabled` in its last valid answer: 1 while a KV event publisher is live.", MASTER, enabled},
	{"mooncake_kv_master_published_batches_total", "counter",
	 "published_batches reported by the master: ZMQ messages sent.", MIRRORED, batches},
	{"mooncake_kv_master_published_events_total", "counter",
	 "published_events reported by the master: events inside those messages.", MIRRORED, events},
	{"mooncake_kv_master_dropped_events_total", "counter",
	 "dropped_events reported by the master: events its full queue dropped (each leaves a sequence gap).", MIRRORED,
	 dropped},
	{"mooncake_kv_master_skipped_keyless_events_total", "counter",
	 "skipped_keyless_events reported by the master (the spec's field): per-object events not published for want "
	 "of an object key.",
	 MIRRORED, keyless},
	{"mooncake_kv_master_unparsed_keys_total", "counter",
	 "skipped_unparsed_keys reported by the master (upstream's field): events whose key is not a decimal or 0x "
	 "number, published with object_key all the same unless kv_events_emit_object_key=false.",
	 MIRRORED, unparsed},
	{"mooncake_kv_master_last_sequence", "gauge",
	 "Last sequence number the master's publisher process used: published_batches + dropped_events.", MASTER,
	 last_sequence},
	{"mooncake_kv_sequence_behind", "gauge",
	 "Sequence numbers the master had used by the previous poll that this exporter has neither received nor "
	 "counted lost: above 0, it is more than a poll interval behind (only while the stream and the master "
	 "describe the same publisher process).",
	 MASTER, behind},
	{"mooncake_kv_master_restarts_total", "counter",
	 "Publisher process restarts: the stream's sequence or event id went back, or the master's counters did "
	 "(each restart counted once).",
	 MASTER, restarts},
	{"mooncake_kv_queue_lost_events_total", "counter",
	 "Missing sequence numbers explained by the master's dropped_events: events its full queue dropped.", MASTER,
	 queue},
	{"mooncake_kv_transport_lost_messages_total", "counter",
	 "Missing sequence numbers the master's dropped_events does not explain: messages lost in transport "
	 "(PUB high-water mark, slow subscriber, lost tail), each up to 64 events.",
	 MASTER, transport},
	{"mooncake_kv_unattributed_lost_messages_total", "counter",
	 "Missing sequence numbers whose cause is unknown: the master's counters that could explain them were lost "
	 "with a restart before a poll saw them. queue + transport + unattributed = sequence_missing after each poll.",
	 MASTER, unattributed},
	{"mooncake_kv_master_keys", "gauge",
	 "master_key_count of the master's /metrics: keys of all its tenants, as the master counts them.", MASTER,
	 keys},
	{"mooncake_kv_master_poll_duration_seconds", "gauge", "Duration of the last status poll.", MASTER,
	 poll_duration},
	{"mooncake_kv_master_last_poll_timestamp_seconds", "gauge",
	 "When the last status poll finished, in unix seconds.", MASTER, poll_time},
	{"mooncake_kv_master_drop_ratio", "gauge",
	 "dropped / (published + dropped) events over the last 60 s of polls.", MASTER, drop_ratio},
	{"mooncake_kv_master_poll_errors_total", "counter", "Failed status polls, by reason.", MASTER, poll_errors},
	{"mooncake_kv_master_keys_poll_errors_total", "counter",
	 "Failed reads of master_key_count from the master's /metrics, by reason (field: no such metric).", MASTER,
	 keys_poll_errors},
};

KV_FAMILY_TABLE(kv_master_families, families);
