/* SPDX-License-Identifier: Apache-2.0 */
/* The stream of each member: what arrived, its numbering, what was refused,
 * the connection, the dialect, lag; and each source's state's own figures. */
#include "kv_family.h"
#include "kv_fmt.h"

#define M_U64(fn, field) KV_U64(fn, true, a->m->field)

M_U64(messages, stats.messages)
M_U64(gaps, seq.gaps)
M_U64(missing, seq.missing)
M_U64(duplicates, seq.duplicates)
M_U64(resets, seq.resets)
M_U64(last_seq, seq.last_seq)
M_U64(eid_gaps, seq.event_id_gaps)
M_U64(eid_missing, seq.event_ids_missing)
M_U64(keyless, stats.keyless_events)
M_U64(limit_dropped, stats.limit_dropped_events)
M_U64(dup_events, stats.duplicate_message_events)
M_U64(alloc_failures, stats.alloc_failures)
M_U64(tail_losses, seq.tail_losses)
M_U64(tail_late, seq.tail_late)
M_U64(reconnects, stats.reconnects)
M_U64(backlog, backlog)
M_U64(connected, connected)
KV_U64(unclean_labels, true, a->s->unclean_labels)
KV_U64(tenants_expired, true, a->s->tenants_expired)
KV_U64(table_bytes, true, a->s->table_bytes)

static void decode_errors(kv_emit *e, const kv_at *a)
{
	for (int r = KV_R_OK + 1; r < KV_R__COUNT; r++)
		kv_sample_u64(e, (kv_label){"reason", kv_reason_name(r)}, a->m->stats.decode_errors[r]);
}

/* Why tenants are stale, counted per source: every tenant is stale from
 * start-up (there is no snapshot), so it is the other reasons that call
 * for action. */
static void stale_tenants(kv_emit *e, const kv_at *a)
{
	const kv_source_snap *s = a->s;
	for (unsigned r = 0; r < KV_STALE__BITS; r++) {
		uint64_t n = 0;
		for (size_t t = 0; !s->leadership.dropped && t < s->n_tenants; t++)
			n += (s->tenants[t].stale >> r) & 1;
		kv_sample_u64(e, (kv_label){"reason", kv_stale_reason_name(r)}, n);
	}
}

/* How tenants came to be stale, and exact again: each transition counted
 * once, by the reason that ended its exactness or the cause that restored
 * it (a tenant is born stale, since start-up, unless an empty store was
 * proven: that birth is no transition). */
static void stale_transitions(kv_emit *e, const kv_at *a)
{
	for (unsigned r = 0; r < KV_STALE__BITS; r++)
		kv_sample_u64(e, (kv_label){"reason", kv_stale_reason_name(r)}, a->s->turned_stale[r]);
}

static void exact_transitions(kv_emit *e, const kv_at *a)
{
	for (unsigned c = 0; c < KV_EXACT__CAUSES; c++)
		kv_sample_u64(e, (kv_label){"cause", kv_exact_cause_name((enum kv_exact_cause)c)},
			      a->s->turned_exact[c]);
}

KV_U64(watched_from_empty, !a->s->leadership.dropped, a->s->born_exact)

static void dialect(kv_emit *e, const kv_at *a)
{
	if (a->m->dialect.decided)
		kv_sample_u64(e, (kv_label){"dialect", kv_dialect_name(a->m->dialect.dialect)}, 1);
}

/* The model context the member's publisher stamps (kv_decode.h), as its
 * last usable event carried it; none before the first.  The salt's value
 * is the publisher's hash namespace, not for a label: only whether it has
 * one. */
static void model_info(kv_emit *e, const kv_at *a)
{
	const kv_model_ctx *c = &a->m->model;
	if (!c->seen)
		return;
	char bs[KV_FMT_MAX + 1] = "", dp[KV_FMT_MAX + 1] = "";
	if (c->has_block_size)
		*kv_fmt_u64(bs, c->block_size) = '\0';
	if (c->has_dp_rank)
		*kv_fmt_u64(dp, c->dp_rank) = '\0';
	const kv_label l[] = {{"model_name", c->model_name},
			      {"lora_name", c->lora_name},
			      {"block_size", bs},
			      {"dp_rank", dp},
			      {"additional_salt", c->has_salt ? "present" : "absent"}};
	kv_sample_labels(e, l, sizeof(l) / sizeof(l[0]), 1);
}

M_U64(model_changes, model.changes)
#define CAP_S(n) #n
#define CAP_X(n) CAP_S(n)
#define CAP      CAP_X(KV_MODEL_VALUE_MAX) /* in the help: the cap's figure as the code has it */
M_U64(model_truncated, model.truncated)

KV_MS(last_timestamp, a->m->stats.has_timestamp, a->m->stats.last_timestamp_ms)

static void lag(kv_emit *e, const kv_at *a)
{
	kv_sample_hist(e, &a->m->stats.lag_seconds);
}

static void batch_events(kv_emit *e, const kv_at *a)
{
	kv_sample_hist(e, &a->m->stats.batch_events);
}

static const kv_family families[] = {
	{"mooncake_kv_messages_received_total", "counter",
	 "Multipart messages received from the publisher, valid or not.", KV_SCOPE_MEMBER, 0, NULL, messages},
	{"mooncake_kv_sequence_gaps_total", "counter",
	 "Forward jumps of the transport sequence number: messages or events were lost.", KV_SCOPE_MEMBER, 0, NULL,
	 gaps},
	{"mooncake_kv_sequence_missing_total", "counter",
	 "Sequence numbers skipped by those jumps (one per event the publisher's queue dropped, one per message lost "
	 "after it).",
	 KV_SCOPE_MEMBER, 0, NULL, missing},
	{"mooncake_kv_sequence_duplicates_total", "counter",
	 "Messages whose sequence number repeated the previous one; their events are not applied again.",
	 KV_SCOPE_MEMBER, 0, NULL, duplicates},
	{"mooncake_kv_publisher_resets_total", "counter",
	 "Publisher restarts seen as the sequence number or the event id moving backwards.", KV_SCOPE_MEMBER, 0, NULL,
	 resets},
	{"mooncake_kv_last_sequence", "gauge", "Transport sequence number of the last message.", KV_SCOPE_MEMBER, 0,
	 NULL, last_seq},
	{"mooncake_kv_event_id_gaps_total", "counter",
	 "Forward jumps of the event id. The publisher numbers events only when it sends them, so these are losses "
	 "after it.",
	 KV_SCOPE_MEMBER, 0, NULL, eid_gaps},
	{"mooncake_kv_transport_lost_events_total", "counter",
	 "Events missing from the event id sequence: lost in transport or by this subscriber, never by the publisher's "
	 "queue.",
	 KV_SCOPE_MEMBER, 0, NULL, eid_missing},
	{"mooncake_kv_keyless_events_total", "counter",
	 "stored/removed events without object_key (kv_events_emit_object_key=false), counted and skipped.",
	 KV_SCOPE_MEMBER, 0, NULL, keyless},
	{"mooncake_kv_limit_dropped_events_total", "counter",
	 "Events not applied because the tenant or object limit refused them.", KV_SCOPE_MEMBER, 0, NULL,
	 limit_dropped},
	{"mooncake_kv_duplicate_message_events_total", "counter",
	 "Events inside messages whose sequence number repeated, not applied.", KV_SCOPE_MEMBER, 0, NULL, dup_events},
	{"mooncake_kv_alloc_failures_total", "counter",
	 "Messages or events lost because memory could not be allocated (each is logged).", KV_SCOPE_MEMBER, 0, NULL,
	 alloc_failures},
	{"mooncake_kv_sequence_tail_losses_total", "counter",
	 "Lost tails: the master's last sequence number stayed ahead of this exporter with nothing arriving (counted "
	 "in the gaps and missing numbers too).",
	 KV_SCOPE_MEMBER, 0, NULL, tail_losses},
	{"mooncake_kv_sequence_tail_late_messages_total", "counter",
	 "Messages of a lost tail that arrived after all: applied, and already in the missing numbers (received + "
	 "missing - these = the numbers the publisher used). Above 0, the loss was overstated by that much.",
	 KV_SCOPE_MEMBER, 0, NULL, tail_late},
	{"mooncake_kv_subscriber_reconnects_total", "counter",
	 "Times the connection to the publisher came back after a disconnect.", KV_SCOPE_MEMBER, 0, NULL, reconnects},
	{"mooncake_kv_receive_backlog_messages", "gauge",
	 "Messages the ingest thread has drained since it last found its socket empty: 0 or a few while it keeps up, "
	 "growing while it works through a backlog (ZMQ does not tell its queue's length).",
	 KV_SCOPE_MEMBER, 0, NULL, backlog},
	{"mooncake_kv_label_values_sanitized_total", "counter",
	 "Tenants whose backend_id or tenant_id was not valid UTF-8 (or held NUL) and is shown with U+FFFD.",
	 KV_SCOPE_SOURCE, 0, NULL, unclean_labels},
	{"mooncake_kv_object_table_bytes", "gauge", "Bytes held by this source's object tables.", KV_SCOPE_SOURCE, 0,
	 NULL, table_bytes},
	{"mooncake_kv_tenants_expired_total", "counter",
	 "Tenants forgotten with their series: no object and no event for --limits.tenant-idle-timeout.",
	 KV_SCOPE_SOURCE, 0, NULL, tenants_expired},
	{"mooncake_kv_decode_errors_total", "counter",
	 "Messages (frame_count, sequence_length, msgpack_parse, payload_shape) and events (the rest) rejected, "
	 "by reason.",
	 KV_SCOPE_MEMBER, 0, NULL, decode_errors},
	{"mooncake_kv_stale_tenants", "gauge",
	 "Tenants whose figures may be incomplete, by reason (a tenant can have several) since its last cleared "
	 "event.",
	 KV_SCOPE_SOURCE, 0, NULL, stale_tenants},
	{"mooncake_kv_tenant_stale_transitions_total", "counter",
	 "Tenants that stopped being exact, by the reason that did it (one count per transition).", KV_SCOPE_SOURCE, 0,
	 NULL, stale_transitions},
	{"mooncake_kv_tenant_exact_transitions_total", "counter",
	 "Stale tenants that became exact again, by cause: cleared (the media dialect), reconciled, empty_store (the "
	 "master proved the store empty before its publisher's first message).",
	 KV_SCOPE_SOURCE, 0, NULL, exact_transitions},
	{"mooncake_kv_watched_from_empty", "gauge",
	 "1 while the store is watched from empty: the master proved it empty before its publisher's first message "
	 "and nothing was lost since, so every tenant first seen is exact.",
	 KV_SCOPE_SOURCE, 0, NULL, watched_from_empty},
	{"mooncake_kv_subscriber_connected", "gauge", "1 while the ZMQ subscriber has a connection to the publisher.",
	 KV_SCOPE_MEMBER, 0, NULL, connected},
	{"mooncake_kv_publisher_dialect", "gauge",
	 "1 for the dialect the member's removed events are read in: media (the subscriber guide's: that "
	 "medium only) or object (Mooncake main's: the whole object). Absent until it is known.",
	 KV_SCOPE_MEMBER, KV_FAM_MEMBER_ALWAYS, NULL, dialect},
	{"mooncake_kv_publisher_model_info", "gauge",
	 "The model context the member's publisher stamps on its events, as the last one carried it: model_name, "
	 "lora_name, block_size, dp_rank (empty for none; names cut to " CAP " bytes) and whether an additional_salt "
	 "is set (its value is never shown). Always 1; absent until an event arrives.",
	 KV_SCOPE_MEMBER, KV_FAM_MEMBER_ALWAYS, NULL, model_info},
	{"mooncake_kv_publisher_model_changes_total", "counter",
	 "Events whose model context differed from the member's event before (the first is no change): a "
	 "publisher reconfigured or replaced, or one that stamps each key's own model.",
	 KV_SCOPE_MEMBER, KV_FAM_MEMBER_ALWAYS, NULL, model_changes},
	{"mooncake_kv_publisher_model_values_truncated_total", "counter",
	 "Model or LoRA names cut to " CAP " bytes for their label, counted each time the member's context changed to "
	 "one with such a name.",
	 KV_SCOPE_MEMBER, KV_FAM_MEMBER_ALWAYS, NULL, model_truncated},
	{"mooncake_kv_last_event_timestamp_seconds", "gauge",
	 "Publisher timestamp of the last decoded message, in unix seconds.", KV_SCOPE_MEMBER, 0, NULL, last_timestamp},
	{"mooncake_kv_event_lag_seconds", "histogram",
	 "Receive time minus the message timestamp (clock skew clamps at 0).", KV_SCOPE_MEMBER, 0, NULL, lag},
	{"mooncake_kv_batch_events", "histogram", "Events per message (the publisher sends up to 64).", KV_SCOPE_MEMBER,
	 0, NULL, batch_events},
};

KV_FAMILY_TABLE(kv_stream_families, families);
