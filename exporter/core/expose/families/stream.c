/* SPDX-License-Identifier: Apache-2.0 */
/* The stream of each member: what arrived, its numbering, what was refused,
 * the connection, the dialect, lag; and each source's state's own figures. */
#include "kv_family.h"
#include "kv_fmt.h"

static void messages_received_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->stats.messages);
}

static void sequence_gaps_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->seq.gaps);
}

static void sequence_missing_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->seq.missing);
}

static void sequence_duplicates_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->seq.duplicates);
}

static void publisher_resets_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->seq.resets);
}

static void last_sequence(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->seq.last_seq);
}

static void event_id_gaps_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->seq.event_id_gaps);
}

static void transport_lost_events_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->seq.event_ids_missing);
}

static void keyless_events_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->stats.keyless_events);
}

static void limit_dropped_events_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->stats.limit_dropped_events);
}

static void duplicate_message_events_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->stats.duplicate_message_events);
}

static void alloc_failures_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->stats.alloc_failures);
}

static void sequence_tail_losses_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->seq.tail_losses);
}

static void sequence_tail_late_messages_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->seq.tail_late);
}

static void subscriber_reconnects_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->stats.reconnects);
}

static void receive_backlog_messages(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->backlog);
}

static void label_values_sanitized_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->s->unclean_labels);
}

static void object_table_bytes(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->s->table_bytes);
}

static void tenants_expired_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->s->tenants_expired);
}

static void decode_errors_total(kv_emit *e, const kv_at *a)
{
	for (int r = MKV_R_OK + 1; r < MKV_R__COUNT; r++)
		kv_sample_u64(e, (kv_label){"reason", mkv_reason_name((enum mkv_reason)r)},
			      a->m->stats.decode_errors[r]);
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
static void tenant_stale_transitions_total(kv_emit *e, const kv_at *a)
{
	for (unsigned r = 0; r < KV_STALE__BITS; r++)
		kv_sample_u64(e, (kv_label){"reason", kv_stale_reason_name(r)}, a->s->turned_stale[r]);
}

static void tenant_exact_transitions_total(kv_emit *e, const kv_at *a)
{
	for (unsigned c = 0; c < KV_EXACT__CAUSES; c++)
		kv_sample_u64(e, (kv_label){"cause", kv_exact_cause_name((enum kv_exact_cause)c)},
			      a->s->turned_exact[c]);
}

static void watched_from_empty(kv_emit *e, const kv_at *a)
{
	if (!a->s->leadership.dropped)
		kv_sample_u64(e, KV_NO_LABEL, a->s->born_exact);
}

static void subscriber_connected(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->connected);
}

static void publisher_dialect(kv_emit *e, const kv_at *a)
{
	if (a->m->dialect.decided)
		kv_sample_u64(e, (kv_label){"dialect", mkv_dialect_name(a->m->dialect.dialect)}, 1);
}

/* The model context the member's publisher stamps (kv_decode.h), as its
 * last usable event carried it; none before the first.  The salt's value
 * is the publisher's hash namespace, not for a label: only whether it has
 * one. */
static void publisher_model_info(kv_emit *e, const kv_at *a)
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

static void publisher_model_changes_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->model.changes);
}

static void publisher_model_values_truncated_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->m->model.truncated);
}

/* in a help text: the cap's figure as the code has it */
#define CAP_S(n) #n
#define CAP_X(n) CAP_S(n)
#define CAP      CAP_X(KV_MODEL_VALUE_MAX)

static void last_event_timestamp_seconds(kv_emit *e, const kv_at *a)
{
	if (a->m->stats.has_timestamp)
		kv_sample_ms_as_s(e, KV_NO_LABEL, a->m->stats.last_timestamp_ms);
}

static void event_lag_seconds(kv_emit *e, const kv_at *a)
{
	kv_sample_hist(e, &a->m->stats.lag_seconds);
}

static void batch_events(kv_emit *e, const kv_at *a)
{
	kv_sample_hist(e, &a->m->stats.batch_events);
}

static const kv_family families[] = {
	{.name = "mooncake_kv_messages_received_total",
	 .kind = KV_COUNTER,
	 .help = "Multipart messages received from the publisher, valid or not.",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = messages_received_total},
	{.name = "mooncake_kv_sequence_gaps_total",
	 .kind = KV_COUNTER,
	 .help = "Forward jumps of the transport sequence number: messages or events were lost.",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = sequence_gaps_total},
	{.name = "mooncake_kv_sequence_missing_total",
	 .kind = KV_COUNTER,
	 .help = "Sequence numbers skipped by those jumps (one per event the publisher's queue dropped, one per "
		 "message lost after it).",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = sequence_missing_total},
	{.name = "mooncake_kv_sequence_duplicates_total",
	 .kind = KV_COUNTER,
	 .help = "Messages whose sequence number repeated the previous one; their events are not applied again.",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = sequence_duplicates_total},
	{.name = "mooncake_kv_publisher_resets_total",
	 .kind = KV_COUNTER,
	 .help = "Publisher restarts seen as the sequence number or the event id moving backwards.",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = publisher_resets_total},
	{.name = "mooncake_kv_last_sequence",
	 .kind = KV_GAUGE,
	 .help = "Transport sequence number of the last message.",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = last_sequence},
	{.name = "mooncake_kv_event_id_gaps_total",
	 .kind = KV_COUNTER,
	 .help = "Forward jumps of the event id. The publisher numbers events only when it sends them, so these are "
		 "losses after it.",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = event_id_gaps_total},
	{.name = "mooncake_kv_transport_lost_events_total",
	 .kind = KV_COUNTER,
	 .help = "Events missing from the event id sequence: lost in transport or by this subscriber, never by the "
		 "publisher's queue.",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = transport_lost_events_total},
	{.name = "mooncake_kv_keyless_events_total",
	 .kind = KV_COUNTER,
	 .help = "stored/removed events without object_key (kv_events_emit_object_key=false), counted and skipped.",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = keyless_events_total},
	{.name = "mooncake_kv_limit_dropped_events_total",
	 .kind = KV_COUNTER,
	 .help = "Events not applied because the tenant or object limit refused them.",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = limit_dropped_events_total},
	{.name = "mooncake_kv_duplicate_message_events_total",
	 .kind = KV_COUNTER,
	 .help = "Events inside messages whose sequence number repeated, not applied.",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = duplicate_message_events_total},
	{.name = "mooncake_kv_alloc_failures_total",
	 .kind = KV_COUNTER,
	 .help = "Messages or events lost because memory could not be allocated (each is logged).",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = alloc_failures_total},
	{.name = "mooncake_kv_sequence_tail_losses_total",
	 .kind = KV_COUNTER,
	 .help = "Lost tails: the master's last sequence number stayed ahead of this exporter with nothing arriving "
		 "(counted in the gaps and missing numbers too).",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = sequence_tail_losses_total},
	{.name = "mooncake_kv_sequence_tail_late_messages_total",
	 .kind = KV_COUNTER,
	 .help = "Messages of a lost tail that arrived after all: applied, and already in the missing numbers "
		 "(received + missing - these = the numbers the publisher used). Above 0, the loss was overstated "
		 "by that much.",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = sequence_tail_late_messages_total},
	{.name = "mooncake_kv_subscriber_reconnects_total",
	 .kind = KV_COUNTER,
	 .help = "Times the connection to the publisher came back after a disconnect.",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = subscriber_reconnects_total},
	{.name = "mooncake_kv_receive_backlog_messages",
	 .kind = KV_GAUGE,
	 .help = "Messages the ingest thread has drained since it last found its socket empty: 0 or a few while it "
		 "keeps up, growing while it works through a backlog (ZMQ does not tell its queue's length).",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = receive_backlog_messages},
	{.name = "mooncake_kv_label_values_sanitized_total",
	 .kind = KV_COUNTER,
	 .help = "Tenants whose backend_id or tenant_id was not valid UTF-8 (or held NUL) and is shown with U+FFFD.",
	 .scope = KV_SCOPE_SOURCE,
	 .samples = label_values_sanitized_total},
	{.name = "mooncake_kv_object_table_bytes",
	 .kind = KV_GAUGE,
	 .help = "Bytes held by this source's object tables.",
	 .scope = KV_SCOPE_SOURCE,
	 .samples = object_table_bytes},
	{.name = "mooncake_kv_tenants_expired_total",
	 .kind = KV_COUNTER,
	 .help = "Tenants forgotten with their series: no object and no event for --limits.tenant-idle-timeout.",
	 .scope = KV_SCOPE_SOURCE,
	 .samples = tenants_expired_total},
	{.name = "mooncake_kv_decode_errors_total",
	 .kind = KV_COUNTER,
	 .help = "Messages (frame_count, sequence_length, msgpack_parse, payload_shape) and events (the rest) "
		 "rejected, by reason.",
	 .scope = KV_SCOPE_MEMBER,
	 .labels = "reason",
	 .samples = decode_errors_total},
	{.name = "mooncake_kv_stale_tenants",
	 .kind = KV_GAUGE,
	 .help = "Tenants whose figures may be incomplete, by reason (a tenant can have several) since its last "
		 "cleared event.",
	 .scope = KV_SCOPE_SOURCE,
	 .labels = "reason",
	 .samples = stale_tenants},
	{.name = "mooncake_kv_tenant_stale_transitions_total",
	 .kind = KV_COUNTER,
	 .help = "Tenants that stopped being exact, by the reason that did it (one count per transition).",
	 .scope = KV_SCOPE_SOURCE,
	 .labels = "reason",
	 .samples = tenant_stale_transitions_total},
	{.name = "mooncake_kv_tenant_exact_transitions_total",
	 .kind = KV_COUNTER,
	 .help = "Stale tenants that became exact again, by cause: cleared (the media dialect), reconciled, "
		 "empty_store (the master proved the store empty before its publisher's first message).",
	 .scope = KV_SCOPE_SOURCE,
	 .labels = "cause",
	 .samples = tenant_exact_transitions_total},
	{.name = "mooncake_kv_watched_from_empty",
	 .kind = KV_GAUGE,
	 .help = "1 while the store is watched from empty: the master proved it empty before its publisher's first "
		 "message and nothing was lost since, so every tenant first seen is exact.",
	 .scope = KV_SCOPE_SOURCE,
	 .samples = watched_from_empty},
	{.name = "mooncake_kv_subscriber_connected",
	 .kind = KV_GAUGE,
	 .help = "1 while the ZMQ subscriber has a connection to the publisher.",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = subscriber_connected},
	{.name = "mooncake_kv_publisher_dialect",
	 .kind = KV_GAUGE,
	 .help = "1 for the dialect the member's removed events are read in: media (the subscriber guide's, Mooncake "
		 "main since #3818: that medium only) or object (release v0.3.12's: the whole object). Absent until it "
		 "is known.",
	 .scope = KV_SCOPE_MEMBER,
	 .labels = "dialect",
	 .flags = KV_FAM_MEMBER_ALWAYS,
	 .samples = publisher_dialect},
	{.name = "mooncake_kv_publisher_model_info",
	 .kind = KV_GAUGE,
	 .help = "The model context the member's publisher stamps on its events, as the last one carried it: "
		 "model_name, lora_name, block_size, dp_rank (empty for none; names cut to " CAP " bytes) and whether "
		 "an additional_salt is set (its value is never shown). Always 1; absent until an event arrives.",
	 .scope = KV_SCOPE_MEMBER,
	 .labels = "model_name,lora_name,block_size,dp_rank,additional_salt",
	 .flags = KV_FAM_MEMBER_ALWAYS,
	 .samples = publisher_model_info},
	{.name = "mooncake_kv_publisher_model_changes_total",
	 .kind = KV_COUNTER,
	 .help = "Events whose model context differed from the member's event before (the first is no change): a "
		 "publisher reconfigured or replaced, or one that stamps each key's own model.",
	 .scope = KV_SCOPE_MEMBER,
	 .flags = KV_FAM_MEMBER_ALWAYS,
	 .samples = publisher_model_changes_total},
	{.name = "mooncake_kv_publisher_model_values_truncated_total",
	 .kind = KV_COUNTER,
	 .help = "Model or LoRA names cut to " CAP " bytes for their label, counted each time the member's context "
		 "changed to one with such a name.",
	 .scope = KV_SCOPE_MEMBER,
	 .flags = KV_FAM_MEMBER_ALWAYS,
	 .samples = publisher_model_values_truncated_total},
	{.name = "mooncake_kv_last_event_timestamp_seconds",
	 .kind = KV_GAUGE,
	 .help = "Publisher timestamp of the last decoded message, in unix seconds.",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = last_event_timestamp_seconds},
	{.name = "mooncake_kv_event_lag_seconds",
	 .kind = KV_HISTOGRAM,
	 .help = "Receive time minus the message timestamp (clock skew clamps at 0).",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = event_lag_seconds},
	{.name = "mooncake_kv_batch_events",
	 .kind = KV_HISTOGRAM,
	 .help = "Events per message (the publisher sends up to 64).",
	 .scope = KV_SCOPE_MEMBER,
	 .samples = batch_events},
};

KV_FAMILY_TABLE(kv_stream_families, families);
