/* Rendered metric-major: each family once, with its HELP and TYPE, then
 * its samples for every source and tenant, as the text format requires. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kv_render.h"
#include "kv_utf8.h"

typedef struct kv_buf B;

void kv_render_label_value(B *b, const char *s, size_t n, bool sanitize)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t run = 0; /* start of the bytes not yet copied */
	for (size_t i = 0; i < n;) {
		unsigned char c = p[i];
		const char *esc = c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : NULL;
		size_t l = 1;
		if (!esc && sanitize && (l = kv_utf8_seq_len(p + i, n - i)) == 0)
			esc = "\xef\xbf\xbd", l = 1;
		if (esc) {
			kv_buf_add(b, s + run, i - run);
			kv_buf_adds(b, esc);
			run = i + l;
		}
		i += l;
	}
	kv_buf_add(b, s + run, n - run);
}

static void header(B *b, const char *name, const char *type, const char *help)
{
	kv_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void source_label(B *b, const kv_source_snap *s)
{
	kv_buf_adds(b, "source=\"");
	kv_render_label_value(b, s->name, strlen(s->name), true);
	kv_buf_addc(b, '"');
}

/* source, and member for the families of each master of a source given as
 * several (always, with always_member: the HA families) */
static void member_labels(B *b, const kv_source_snap *s, const kv_member_snap *m, bool always_member)
{
	source_label(b, s);
	if (m->label && (s->ha || always_member)) {
		kv_buf_adds(b, ",member=\"");
		kv_render_label_value(b, m->label, strlen(m->label), true);
		kv_buf_addc(b, '"');
	}
}

/* Runs the statement that follows once for every member m of every source s. */
#define FOR_MEMBERS(x, s, m)                                                    \
	for (size_t si_ = 0; si_ < (x)->n_sources; si_++)                       \
		for (const kv_source_snap *s = &(x)->sources[si_]; s; s = NULL) \
			for (size_t mi_ = 0; mi_ < s->n_members; mi_++)         \
				for (const kv_member_snap *m = &s->members[mi_]; m; m = NULL)

static void tenant_labels(B *b, const kv_source_snap *s, const kv_tenant_snap *t)
{
	source_label(b, s);
	kv_buf_adds(b, ",backend_id=\"");
	kv_render_label_value(b, t->backend_id, t->backend_len, t->labels_unclean);
	kv_buf_adds(b, "\",tenant_id=\"");
	kv_render_label_value(b, t->tenant_id, t->tenant_len, t->labels_unclean);
	kv_buf_addc(b, '"');
}

/* name{<labels>[,extra="value"]} */
static void open_sample(B *b, const char *name)
{
	kv_buf_adds(b, name);
	kv_buf_addc(b, '{');
}

static void close_u64(B *b, const char *extra_name, const char *extra_value, uint64_t v)
{
	if (extra_name)
		kv_buf_printf(b, ",%s=\"%s\"", extra_name, extra_value);
	kv_buf_adds(b, "} ");
	kv_buf_add_u64(b, v);
	kv_buf_addc(b, '\n');
}

static void close_double(B *b, double v)
{
	kv_buf_adds(b, "} ");
	kv_buf_add_double(b, v);
	kv_buf_addc(b, '\n');
}

/* --- per source --- */

struct src_u64 {
	const char *name, *type, *help;
	size_t off;
};
#define MEM(f) offsetof(kv_member_snap, f)
#define SRC(f) offsetof(kv_source_snap, f)

/* per member: of its stream */
static const struct src_u64 member_u64[] = {
	{"mooncake_kv_messages_received_total", "counter",
	 "Multipart messages received from the publisher, valid or not.", MEM(stats.messages)},
	{"mooncake_kv_sequence_gaps_total", "counter",
	 "Forward jumps of the transport sequence number: messages or events were lost.", MEM(seq.gaps)},
	{"mooncake_kv_sequence_missing_total", "counter",
	 "Sequence numbers skipped by those jumps (one per event the publisher's queue dropped, one per message lost "
	 "after it).",
	 MEM(seq.missing)},
	{"mooncake_kv_sequence_duplicates_total", "counter",
	 "Messages whose sequence number repeated the previous one; their events are not applied again.",
	 MEM(seq.duplicates)},
	{"mooncake_kv_publisher_resets_total", "counter",
	 "Publisher restarts seen as the sequence number or the event id moving backwards.", MEM(seq.resets)},
	{"mooncake_kv_last_sequence", "gauge", "Transport sequence number of the last message.", MEM(seq.last_seq)},
	{"mooncake_kv_event_id_gaps_total", "counter",
	 "Forward jumps of the event id. The publisher numbers events only when it sends them, so these are losses "
	 "after it.",
	 MEM(seq.event_id_gaps)},
	{"mooncake_kv_transport_lost_events_total", "counter",
	 "Events missing from the event id sequence: lost in transport or by this subscriber, never by the publisher's "
	 "queue.",
	 MEM(seq.event_ids_missing)},
	{"mooncake_kv_keyless_events_total", "counter",
	 "stored/removed events without object_key (kv_events_emit_object_key=false), counted and skipped.",
	 MEM(stats.keyless_events)},
	{"mooncake_kv_limit_dropped_events_total", "counter",
	 "Events not applied because the tenant or object limit refused them.", MEM(stats.limit_dropped_events)},
	{"mooncake_kv_duplicate_message_events_total", "counter",
	 "Events inside messages whose sequence number repeated, not applied.", MEM(stats.duplicate_message_events)},
	{"mooncake_kv_alloc_failures_total", "counter",
	 "Messages or events lost because memory could not be allocated (each is logged).", MEM(stats.alloc_failures)},
	{"mooncake_kv_sequence_tail_losses_total", "counter",
	 "Lost tails: the master's last sequence number stayed ahead of this exporter with nothing arriving (counted "
	 "in the gaps and missing numbers too).",
	 MEM(seq.tail_losses)},
	{"mooncake_kv_subscriber_reconnects_total", "counter",
	 "Times the connection to the publisher came back after a disconnect.", MEM(stats.reconnects)},
	{"mooncake_kv_receive_backlog_messages", "gauge",
	 "Messages the ingest thread has drained since it last found its socket empty: 0 or a few while it keeps up, "
	 "growing while it works through a backlog (ZMQ does not tell its queue's length).",
	 MEM(backlog)},
};

/* per source: of its state */
static const struct src_u64 source_u64[] = {
	{"mooncake_kv_label_values_sanitized_total", "counter",
	 "Tenants whose backend_id or tenant_id was not valid UTF-8 (or held NUL) and is shown with U+FFFD.",
	 SRC(unclean_labels)},
	{"mooncake_kv_object_table_bytes", "gauge", "Bytes held by this source's object tables.", SRC(table_bytes)},
};

static uint64_t field_u64(const void *base, size_t off)
{
	uint64_t v;
	memcpy(&v, (const char *)base + off, sizeof(v));
	return v;
}

static void render_hist(B *b, const char *name, const char *help, const kv_exporter_snap *x, size_t hist_off)
{
	char n_bucket[128], n_sum[128], n_count[128];
	snprintf(n_bucket, sizeof(n_bucket), "%s_bucket", name);
	snprintf(n_sum, sizeof(n_sum), "%s_sum", name);
	snprintf(n_count, sizeof(n_count), "%s_count", name);
	header(b, name, "histogram", help);
	FOR_MEMBERS(x, s, m)
	{
		const kv_hist *h = (const kv_hist *)((const char *)m + hist_off);
		uint64_t cum = 0;
		for (size_t k = 0; k <= h->n_bounds; k++) {
			char le[32];
			cum += h->counts[k];
			if (k < h->n_bounds)
				snprintf(le, sizeof(le), "%g", h->bounds[k]);
			else
				strcpy(le, "+Inf");
			open_sample(b, n_bucket);
			member_labels(b, s, m, false);
			close_u64(b, "le", le, cum);
		}
		open_sample(b, n_sum);
		member_labels(b, s, m, false);
		close_double(b, h->sum);
		open_sample(b, n_count);
		member_labels(b, s, m, false);
		close_u64(b, NULL, NULL, h->count);
	}
}

static void render_sources(B *b, const kv_exporter_snap *x)
{
	for (size_t f = 0; f < sizeof(member_u64) / sizeof(member_u64[0]); f++) {
		const struct src_u64 *mu = &member_u64[f];
		header(b, mu->name, mu->type, mu->help);
		FOR_MEMBERS(x, s, m)
		{
			open_sample(b, mu->name);
			member_labels(b, s, m, false);
			close_u64(b, NULL, NULL, field_u64(m, mu->off));
		}
	}
	for (size_t f = 0; f < sizeof(source_u64) / sizeof(source_u64[0]); f++) {
		const struct src_u64 *m = &source_u64[f];
		header(b, m->name, m->type, m->help);
		for (size_t i = 0; i < x->n_sources; i++) {
			open_sample(b, m->name);
			source_label(b, &x->sources[i]);
			close_u64(b, NULL, NULL, field_u64(&x->sources[i], m->off));
		}
	}

	header(b, "mooncake_kv_decode_errors_total", "counter",
	       "Messages (frame_count, sequence_length, msgpack_parse, payload_shape) and events (the rest) rejected, "
	       "by reason.");
	FOR_MEMBERS(x, s, m)
	for (int r = KV_R_OK + 1; r < KV_R__COUNT; r++) {
		open_sample(b, "mooncake_kv_decode_errors_total");
		member_labels(b, s, m, false);
		close_u64(b, "reason", kv_reason_name(r), m->stats.decode_errors[r]);
	}

	/* Why tenants are stale, counted per source: every tenant is stale from
	 * start-up (there is no snapshot), so it is the other reasons that
	 * call for action. */
	header(b, "mooncake_kv_stale_tenants", "gauge",
	       "Tenants whose figures may be incomplete, by reason (a tenant can have several) since its last cleared "
	       "event.");
	for (size_t i = 0; i < x->n_sources; i++) {
		const kv_source_snap *s = &x->sources[i];
		for (unsigned r = 0; r < KV_STALE__BITS; r++) {
			uint64_t n = 0;
			for (size_t t = 0; !s->dropped && t < s->n_tenants; t++)
				n += (s->tenants[t].stale >> r) & 1;
			open_sample(b, "mooncake_kv_stale_tenants");
			source_label(b, s);
			close_u64(b, "reason", kv_stale_reason_name(r), n);
		}
	}

	header(b, "mooncake_kv_subscriber_connected", "gauge",
	       "1 while the ZMQ subscriber has a connection to the publisher.");
	FOR_MEMBERS(x, s, m)
	{
		open_sample(b, "mooncake_kv_subscriber_connected");
		member_labels(b, s, m, false);
		close_u64(b, NULL, NULL, m->connected);
	}

	header(b, "mooncake_kv_publisher_dialect", "gauge",
	       "1 for the dialect the member's removed events are read in: media (the subscriber guide's: that "
	       "medium only) or object (Mooncake main's: the whole object). Absent until it is known.");
	FOR_MEMBERS(x, s, m)
	{
		if (!m->dialect.decided)
			continue;
		open_sample(b, "mooncake_kv_publisher_dialect");
		member_labels(b, s, m, true);
		close_u64(b, "dialect", kv_dialect_name(m->dialect.dialect), 1);
	}

	header(b, "mooncake_kv_last_event_timestamp_seconds", "gauge",
	       "Publisher timestamp of the last decoded message, in unix seconds.");
	FOR_MEMBERS(x, s, m)
	{
		if (!m->stats.has_timestamp)
			continue;
		open_sample(b, "mooncake_kv_last_event_timestamp_seconds");
		member_labels(b, s, m, false);
		close_double(b, (double)m->stats.last_timestamp_ms / 1000.0);
	}

	render_hist(b, "mooncake_kv_event_lag_seconds",
		    "Receive time minus the message timestamp (clock skew clamps at 0).", x, MEM(stats.lag_seconds));
	render_hist(b, "mooncake_kv_batch_events", "Events per message (the publisher sends up to 64).", x,
		    MEM(stats.batch_events));
}

/* --- per tenant --- */

#define TEN(f) offsetof(kv_tenant_snap, counts.f)

static const struct src_u64 tenant_u64[] = {
	{"mooncake_kv_tenant_clears_total", "counter",
	 "cleared events applied: every object of the tenant was dropped.", TEN(events[KV_EV_CLEARED])},
	{"mooncake_kv_stored_duplicates_total", "counter",
	 "stored events for a medium the object was already on (idempotent).", TEN(stored_duplicates)},
	{"mooncake_kv_removed_unknown_total", "counter",
	 "removed events of nothing held: a medium the object was not on (media dialect), an object not held "
	 "(object dialect); idempotent, never below zero.",
	 TEN(removed_unknown)},
	{"mooncake_kv_tenant_objects_overflow_total", "counter",
	 "stored events of this tenant refused by --limits.max-objects.", TEN(objects_overflow)},
};

/* Runs the statement that follows once for every tenant t of every source s. */
#define FOR_TENANTS(x, s, t)                                                           \
	for (size_t si_ = 0; si_ < (x)->n_sources; si_++)                              \
		for (const kv_source_snap *s = &(x)->sources[si_]; s; s = NULL)        \
			for (size_t ti_ = 0; !s->dropped && ti_ < s->n_tenants; ti_++) \
				for (const kv_tenant_snap *t = &s->tenants[ti_]; t; t = NULL)

static void tenant_sample(B *b, const char *name, const kv_source_snap *s, const kv_tenant_snap *t,
			  const char *extra_name, const char *extra_value, uint64_t v)
{
	open_sample(b, name);
	tenant_labels(b, s, t);
	close_u64(b, extra_name, extra_value, v);
}

static void render_tenants(B *b, const kv_exporter_snap *x)
{
	header(b, "mooncake_kv_events_received_total", "counter",
	       "Events accepted and applied to the tenant's state, by type.");
	/* a publisher of the object dialect never sends cleared: no series
	 * that can only ever be 0 (two per tenant) */
	FOR_TENANTS(x, s, t)
	for (int e = 0; e < KV_EV__COUNT - s->object_dialect; e++)
		tenant_sample(b, "mooncake_kv_events_received_total", s, t, "event_type", kv_event_type_name(e),
			      t->counts.events[e]);

	header(b, "mooncake_kv_objects", "gauge", "Live objects of the tenant (on at least one medium).");
	FOR_TENANTS(x, s, t)
	tenant_sample(b, "mooncake_kv_objects", s, t, NULL, NULL, kv_counts_objects(&t->counts));

	header(b, "mooncake_kv_objects_by_medium", "gauge",
	       "Live objects readable on a medium; an object on both media counts under both.");
	FOR_TENANTS(x, s, t)
	{
		for (enum kv_medium m = KV_MEDIUM_CPU; m <= KV_MEDIUM_DISK; m++)
			tenant_sample(b, "mooncake_kv_objects_by_medium", s, t, "medium", kv_medium_name(m),
				      kv_counts_on_medium(&t->counts, m));
	}

	header(b, "mooncake_kv_objects_by_placement", "gauge",
	       "Live objects by the set of media they are on (these add up to mooncake_kv_objects).");
	FOR_TENANTS(x, s, t)
	for (int p = 0; p < KV_PLACE__COUNT; p++)
		tenant_sample(b, "mooncake_kv_objects_by_placement", s, t, "placement", kv_placement_name(p),
			      t->counts.placement[p]);

	header(b, "mooncake_kv_state_stale", "gauge",
	       "1 when the tenant's figures may be incomplete (joined late, gap, reset, reconnect, overflow) "
	       "since its last cleared event.");
	FOR_TENANTS(x, s, t)
	tenant_sample(b, "mooncake_kv_state_stale", s, t, NULL, NULL, t->stale != 0);

	header(b, "mooncake_kv_state_stale_since_timestamp_seconds", "gauge",
	       "While the tenant is stale: when it stopped being exact (start-up, or the first loss since it was "
	       "last exact), in unix seconds. Absent while it is exact.");
	FOR_TENANTS(x, s, t)
	{
		if (!t->stale)
			continue;
		open_sample(b, "mooncake_kv_state_stale_since_timestamp_seconds");
		tenant_labels(b, s, t);
		close_double(b, (double)t->stale_since_ms / 1000.0);
	}

	for (size_t f = 0; f < sizeof(tenant_u64) / sizeof(tenant_u64[0]); f++) {
		const struct src_u64 *m = &tenant_u64[f];
		header(b, m->name, m->type, m->help);
		FOR_TENANTS(x, s, t)
		if (!(s->object_dialect && m->off == TEN(events[KV_EV_CLEARED])))
			tenant_sample(b, m->name, s, t, NULL, NULL, field_u64(t, m->off));
	}
}

/* --- key groups --- */

static void group_sample(B *b, const char *name, const kv_source_snap *s, const kv_tenant_snap *t,
			 const kv_group_counts *g, const char *extra_name, const char *extra_value, uint64_t v)
{
	open_sample(b, name);
	tenant_labels(b, s, t);
	kv_str gn = g->id < s->n_group_names ? s->group_names[g->id] : (kv_str){"", 0};
	kv_buf_adds(b, ",key_group=\"");
	kv_render_label_value(b, gn.ptr, gn.len, true); /* from the keys: sanitised */
	kv_buf_addc(b, '"');
	close_u64(b, extra_name, extra_value, v);
}

#define FOR_GROUPS(s, t, g)                            \
	FOR_TENANTS(x, s, t)                           \
	for (size_t gi_ = 0; gi_ < t->n_groups; gi_++) \
		for (const kv_group_counts *g = &s->group_pool[t->group_at + gi_]; g; g = NULL)

static void render_groups(B *b, const kv_exporter_snap *x)
{
	bool any = false;
	for (size_t i = 0; i < x->n_sources; i++)
		any |= x->sources[i].has_groups;
	if (!any)
		return;
	header(b, "mooncake_kv_objects_by_key_group", "gauge",
	       "Live objects of the tenant whose key falls in the key group (--key.group-regex; \"\" when it "
	       "does not match, \"__overflow__\" beyond --limits.max-key-groups).");
	FOR_GROUPS(s, t, g)
	group_sample(b, "mooncake_kv_objects_by_key_group", s, t, g, NULL, NULL, kv_group_objects(g));

	header(b, "mooncake_kv_objects_by_key_group_medium", "gauge",
	       "Live objects of the key group readable on a medium; an object on both counts under both.");
	FOR_GROUPS(s, t, g)
	{
		uint64_t both = g->placement[KV_PLACE_CPU_AND_DISK];
		group_sample(b, "mooncake_kv_objects_by_key_group_medium", s, t, g, "medium",
			     kv_medium_name(KV_MEDIUM_CPU), g->placement[KV_PLACE_CPU_ONLY] + both);
		group_sample(b, "mooncake_kv_objects_by_key_group_medium", s, t, g, "medium",
			     kv_medium_name(KV_MEDIUM_DISK), g->placement[KV_PLACE_DISK_ONLY] + both);
	}

	header(b, "mooncake_kv_key_group_events_total", "counter",
	       "stored and removed events applied to the key group's objects.");
	FOR_GROUPS(s, t, g)
	for (int e = KV_EV_STORED; e <= KV_EV_REMOVED; e++)
		group_sample(b, "mooncake_kv_key_group_events_total", s, t, g, "event_type", kv_event_type_name(e),
			     g->events[e]);
}

/* --- master --- */

#define MST(f) offsetof(kv_master, f)

enum value_kind { V_U64, V_DOUBLE, V_BOOL };
/* A sample is rendered when the bool at this offset of kv_master is true:
 * the offset plus one, 0 for always. */
#define ALWAYS    0
#define IF(field) (MST(field) + 1)

static const struct master_metric {
	const char *name, *type, *help;
	size_t off;
	enum value_kind kind;
	size_t gate;
} master_metrics[] = {
	{"mooncake_kv_master_up", "gauge",
	 "1 when the last status poll got an answer (a valid body, or 503 from a standby).", MST(up), V_BOOL, ALWAYS},
	{"mooncake_kv_master_standby", "gauge",
	 "1 when the master answered 503: a standby whose service plane is not active.", MST(standby), V_BOOL, ALWAYS},
	{"mooncake_kv_master_publisher_enabled", "gauge",
	 "The master's `enabled` in its last valid answer: 1 while a KV event publisher is live.", MST(status.enabled),
	 V_BOOL, ALWAYS},
	{"mooncake_kv_master_published_batches_total", "counter",
	 "published_batches reported by the master: ZMQ messages sent.", MST(status.published_batches), V_U64,
	 IF(have_status)},
	{"mooncake_kv_master_published_events_total", "counter",
	 "published_events reported by the master: events inside those messages.", MST(status.published_events), V_U64,
	 IF(have_status)},
	{"mooncake_kv_master_dropped_events_total", "counter",
	 "dropped_events reported by the master: events its full queue dropped (each leaves a sequence gap).",
	 MST(status.dropped_events), V_U64, IF(have_status)},
	{"mooncake_kv_master_skipped_keyless_events_total", "counter",
	 "skipped_keyless_events reported by the master (the spec's field): per-object events not published for want "
	 "of an object key.",
	 MST(status.skipped_keyless_events), V_U64, IF(status.has_keyless)},
	{"mooncake_kv_master_unparsed_keys_total", "counter",
	 "skipped_unparsed_keys reported by the master (upstream's field): events whose key is not a decimal or 0x "
	 "number, published with object_key all the same unless kv_events_emit_object_key=false.",
	 MST(status.skipped_unparsed_keys), V_U64, IF(status.has_unparsed)},
	{"mooncake_kv_master_last_sequence", "gauge",
	 "Last sequence number the master's publisher process used: published_batches + dropped_events.",
	 MST(last_sequence), V_U64, IF(have_status)},
	{"mooncake_kv_sequence_behind", "gauge",
	 "Sequence numbers the master had used by the previous poll that this exporter has neither received nor "
	 "counted lost: above 0, it is more than a poll interval behind (only while the stream and the master "
	 "describe the same publisher process).",
	 MST(loss.behind), V_U64, IF(loss.behind_known)},
	{"mooncake_kv_master_restarts_total", "counter",
	 "Publisher process restarts: the stream's sequence or event id went back, or the master's counters did "
	 "(each restart counted once).",
	 MST(loss.restarts), V_U64, ALWAYS},
	{"mooncake_kv_queue_lost_events_total", "counter",
	 "Missing sequence numbers explained by the master's dropped_events: events its full queue dropped.",
	 MST(loss.queue), V_U64, ALWAYS},
	{"mooncake_kv_transport_lost_messages_total", "counter",
	 "Missing sequence numbers the master's dropped_events does not explain: messages lost in transport "
	 "(PUB high-water mark, slow subscriber, lost tail), each up to 64 events.",
	 MST(loss.transport), V_U64, ALWAYS},
	{"mooncake_kv_unattributed_lost_messages_total", "counter",
	 "Missing sequence numbers whose cause is unknown: the master's counters that could explain them were lost "
	 "with a restart before a poll saw them. queue + transport + unattributed = sequence_missing after each poll.",
	 MST(loss.unattributed), V_U64, ALWAYS},
	{"mooncake_kv_master_keys", "gauge",
	 "master_key_count of the master's /metrics: keys of all its tenants, as the master counts them.", MST(keys),
	 V_DOUBLE, IF(keys_known)},
	{"mooncake_kv_master_poll_duration_seconds", "gauge", "Duration of the last status poll.",
	 MST(last_poll_duration), V_DOUBLE, IF(polled)},
	{"mooncake_kv_master_last_poll_timestamp_seconds", "gauge",
	 "When the last status poll finished, in unix seconds.", MST(last_poll_time), V_DOUBLE, IF(polled)},
	{"mooncake_kv_master_drop_ratio", "gauge",
	 "dropped / (published + dropped) events over the last 60 s of polls.", MST(drop_ratio), V_DOUBLE, IF(polled)},
};

static bool gate_open(const kv_master *m, size_t gate)
{
	bool v = true;
	if (gate)
		memcpy(&v, (const char *)m + gate - 1, sizeof(v));
	return v;
}

static void master_value(B *b, const kv_master *m, const struct master_metric *mm)
{
	const char *p = (const char *)m + mm->off;
	double d;
	bool v;
	switch (mm->kind) {
	case V_U64:
		close_u64(b, NULL, NULL, field_u64(m, mm->off));
		break;
	case V_DOUBLE:
		memcpy(&d, p, sizeof(d));
		close_double(b, d);
		break;
	case V_BOOL:
		memcpy(&v, p, sizeof(v));
		close_u64(b, NULL, NULL, v);
		break;
	}
}

static void render_master(B *b, const kv_exporter_snap *x)
{
	bool any = false;
	FOR_MEMBERS(x, s, m)
	any |= m->has_master;
	if (!any)
		return;
	for (size_t f = 0; f < sizeof(master_metrics) / sizeof(master_metrics[0]); f++) {
		const struct master_metric *mm = &master_metrics[f];
		header(b, mm->name, mm->type, mm->help);
		FOR_MEMBERS(x, s, m)
		{
			if (!m->has_master || !gate_open(&m->master, mm->gate))
				continue;
			open_sample(b, mm->name);
			member_labels(b, s, m, false);
			master_value(b, &m->master, mm);
		}
	}
	static const struct {
		const char *name, *help;
		size_t off;
	} errs[] = {
		{"mooncake_kv_master_poll_errors_total", "Failed status polls, by reason.", MST(poll_errors)},
		{"mooncake_kv_master_keys_poll_errors_total",
		 "Failed reads of master_key_count from the master's /metrics, by reason (field: no such metric).",
		 MST(keys_errors)},
	};
	for (size_t e = 0; e < sizeof(errs) / sizeof(errs[0]); e++) {
		header(b, errs[e].name, "counter", errs[e].help);
		FOR_MEMBERS(x, s, m)
		{
			if (!m->has_master)
				continue;
			const uint64_t *n = (const uint64_t *)((const char *)&m->master + errs[e].off);
			for (int r = KV_POLL_OK + 1; r < KV_POLL__COUNT; r++) {
				open_sample(b, errs[e].name);
				member_labels(b, s, m, false);
				close_u64(b, "reason", kv_poll_error_name(r), n[r]);
			}
		}
	}
}

/* --- highly available masters: every source whose members are polled --- */

enum ha_figure { HA_FAILOVERS, HA_SPLIT_BRAIN, HA_SPLIT_BRAINS, HA_VIEW };

/* A source's leadership figure; false when it has none (no view yet). */
static bool ha_figure(const kv_leadership *h, enum ha_figure f, uint64_t *v)
{
	switch (f) {
	case HA_FAILOVERS:
		*v = h->failovers;
		return true;
	case HA_SPLIT_BRAIN:
		*v = h->split_brain;
		return true;
	case HA_SPLIT_BRAINS:
		*v = h->split_brains;
		return true;
	case HA_VIEW:
		*v = h->view;
		return h->has_view;
	}
	return false;
}

static void render_ha(B *b, const kv_exporter_snap *x)
{
	bool any = false;
	for (size_t i = 0; i < x->n_sources; i++)
		any |= x->sources[i].polled;
	if (!any)
		return;
	static const struct {
		const char *name, *type, *help;
		enum ha_figure figure;
	} per_source[] = {
		{"mooncake_kv_master_failovers_total", "counter",
		 "Leadership changes among the source's masters: the serving master changed or view_version moved "
		 "(each change counted once).",
		 HA_FAILOVERS},
		{"mooncake_kv_master_split_brain", "gauge", "1 while more than one of the source's masters serves.",
		 HA_SPLIT_BRAIN},
		{"mooncake_kv_master_split_brains_total", "counter",
		 "Times more than one of the source's masters began to serve at once.", HA_SPLIT_BRAINS},
		{"mooncake_kv_master_view_version", "gauge",
		 "The highest view_version the source's masters report in /leader; it grows with every leadership "
		 "change.",
		 HA_VIEW},
	};
	for (size_t f = 0; f < sizeof(per_source) / sizeof(per_source[0]); f++) {
		header(b, per_source[f].name, per_source[f].type, per_source[f].help);
		for (size_t i = 0; i < x->n_sources; i++) {
			const kv_source_snap *s = &x->sources[i];
			uint64_t v;
			if (!s->polled || !ha_figure(&s->leadership, per_source[f].figure, &v))
				continue;
			open_sample(b, per_source[f].name);
			source_label(b, s);
			close_u64(b, NULL, NULL, v);
		}
	}
	header(b, "mooncake_kv_master_leader", "gauge", "1 for the master that serves (the leader), 0 for the others.");
	FOR_MEMBERS(x, s, m)
	{
		if (!s->polled)
			continue;
		open_sample(b, "mooncake_kv_master_leader");
		member_labels(b, s, m, true);
		close_u64(b, NULL, NULL, s->leadership.leader == (int)(m - s->members));
	}
	header(b, "mooncake_kv_master_role", "gauge",
	       "The master's role, one series per role with 1 for the current one: leader (serving or warming up), "
	       "standby (standing by, a candidate, recovering, catching up) or unknown (no answer, or no /ha_status: "
	       "then leader while its status answers 200).");
	FOR_MEMBERS(x, s, m)
	{
		if (!s->polled)
			continue;
		enum kv_ha_role role = kv_ha_role_of(m->ha.state);
		if (role == KV_ROLE_UNKNOWN && m->ha.answered)
			role = m->ha.serving ? KV_ROLE_LEADER : KV_ROLE_STANDBY;
		for (int r = 0; r < KV_ROLE__COUNT; r++) {
			open_sample(b, "mooncake_kv_master_role");
			member_labels(b, s, m, true);
			close_u64(b, "role", kv_ha_role_name(r), role == (enum kv_ha_role)r);
		}
	}
	header(b, "mooncake_kv_standby_events_total", "counter",
	       "Events received from a master that does not serve (applied all the same: they are real mutations).");
	FOR_MEMBERS(x, s, m)
	{
		if (!s->polled)
			continue;
		open_sample(b, "mooncake_kv_standby_events_total");
		member_labels(b, s, m, true);
		close_u64(b, NULL, NULL, m->standby_events);
	}
	header(b, "mooncake_kv_master_ha_poll_errors_total", "counter",
	       "Failed reads of the master's /ha_status or /leader, by reason (a master without them, 404, is not "
	       "counted).");
	FOR_MEMBERS(x, s, m)
	{
		if (!s->polled)
			continue;
		for (int r = KV_POLL_OK + 1; r < KV_POLL__COUNT; r++) {
			open_sample(b, "mooncake_kv_master_ha_poll_errors_total");
			member_labels(b, s, m, true);
			close_u64(b, "reason", kv_poll_error_name(r), m->ha_errors[r]);
		}
	}
}

/* --- tenant quotas, from the leader --- */

#define FOR_QUOTAS(x, s, q)                                                     \
	for (size_t si_ = 0; si_ < (x)->n_sources; si_++)                       \
		for (const kv_source_snap *s = &(x)->sources[si_]; s; s = NULL) \
			for (size_t qi_ = 0; qi_ < s->quotas.n; qi_++)          \
				for (const kv_quota *q = &s->quotas.v[qi_]; q; q = NULL)

static void quota_sample(B *b, const char *name, const kv_source_snap *s, const kv_quota *q, const char *kind,
			 uint64_t v)
{
	open_sample(b, name);
	source_label(b, s);
	kv_buf_adds(b, ",tenant_id=\"");
	kv_render_label_value(b, s->quotas.names.data + q->name_at, q->name_len, true);
	kv_buf_addc(b, '"');
	close_u64(b, kind ? "kind" : NULL, kind, v);
}

static void render_quotas(B *b, const kv_exporter_snap *x)
{
	bool any = false;
	for (size_t i = 0; i < x->n_sources; i++)
		any |= x->sources[i].polled;
	if (!any)
		return;
	header(b, "mooncake_kv_tenant_quota_bytes", "gauge",
	       "The tenant's quota as the leader reports it: requested, and effective (what it enforces).");
	FOR_QUOTAS(x, s, q)
	{
		quota_sample(b, "mooncake_kv_tenant_quota_bytes", s, q, "requested", q->requested);
		quota_sample(b, "mooncake_kv_tenant_quota_bytes", s, q, "effective", q->effective);
	}
	header(b, "mooncake_kv_tenant_charged_bytes", "gauge", "Bytes the leader charges to the tenant's quota.");
	FOR_QUOTAS(x, s, q)
	quota_sample(b, "mooncake_kv_tenant_charged_bytes", s, q, NULL, q->charged);
	header(b, "mooncake_kv_tenant_over_quota", "gauge", "1 when the leader says the tenant is over its quota.");
	FOR_QUOTAS(x, s, q)
	quota_sample(b, "mooncake_kv_tenant_over_quota", s, q, NULL, q->over_quota);
	header(b, "mooncake_kv_tenant_admission_closed", "gauge",
	       "1 when the leader admits no new objects of the tenant.");
	FOR_QUOTAS(x, s, q)
	quota_sample(b, "mooncake_kv_tenant_admission_closed", s, q, NULL, q->admission_closed);
	header(b, "mooncake_kv_tenant_quotas_enabled", "gauge",
	       "1 when the leader enforces tenant quotas, 0 when it answered 409 (not enabled); absent until known.");
	for (size_t i = 0; i < x->n_sources; i++) {
		const kv_source_snap *s = &x->sources[i];
		if (!s->polled || s->quotas.mode == KV_QUOTAS_UNKNOWN)
			continue;
		open_sample(b, "mooncake_kv_tenant_quotas_enabled");
		source_label(b, s);
		close_u64(b, NULL, NULL, s->quotas.mode == KV_QUOTAS_ON);
	}
	header(b, "mooncake_kv_tenant_quotas_overflow", "gauge",
	       "Tenants of the leader's last quota answer left out: beyond --limits.max-tenants.");
	for (size_t i = 0; i < x->n_sources; i++) {
		const kv_source_snap *s = &x->sources[i];
		if (!s->polled || s->quotas.mode != KV_QUOTAS_ON)
			continue;
		open_sample(b, "mooncake_kv_tenant_quotas_overflow");
		source_label(b, s);
		close_u64(b, NULL, NULL, s->quotas.overflow);
	}
	header(b, "mooncake_kv_master_quota_poll_errors_total", "counter",
	       "Failed reads of the leader's /api/v1/tenant_quotas, by reason (409, quotas not enabled, is not "
	       "counted).");
	for (size_t i = 0; i < x->n_sources; i++) {
		const kv_source_snap *s = &x->sources[i];
		if (!s->polled)
			continue;
		for (int r = KV_POLL_OK + 1; r < KV_POLL__COUNT; r++) {
			open_sample(b, "mooncake_kv_master_quota_poll_errors_total");
			source_label(b, s);
			close_u64(b, "reason", kv_poll_error_name(r), s->quota_errors[r]);
		}
	}
}

/* --- reconciliation, for the sources that reconcile --- */

static void render_recon(B *b, const kv_exporter_snap *x)
{
	bool any = false;
	for (size_t i = 0; i < x->n_sources; i++)
		any |= x->sources[i].recon.enabled;
	if (!any)
		return;
	header(b, "mooncake_kv_reconciliations_total", "counter",
	       "Reconciliations of tenant default with the master, by result (ok, failed, aborted by a limit, "
	       "superseded by a break in the stream).");
	for (size_t i = 0; i < x->n_sources; i++) {
		const kv_source_snap *s = &x->sources[i];
		for (int r = 0; s->recon.enabled && r < KV_RECON__RESULTS; r++) {
			open_sample(b, "mooncake_kv_reconciliations_total");
			source_label(b, s);
			close_u64(b, "result", kv_recon_result_name(r), s->recon.results[r]);
		}
	}
	header(b, "mooncake_kv_reconcile_corrections_total", "counter",
	       "Objects reconciliation corrected: added (the master had them, the stream's view did not), removed "
	       "(the other way round), medium (on other media): the drift the stream alone would have shown.");
	for (size_t i = 0; i < x->n_sources; i++) {
		const kv_source_snap *s = &x->sources[i];
		for (int k = 0; s->recon.enabled && k < KV_CORR__KINDS; k++) {
			open_sample(b, "mooncake_kv_reconcile_corrections_total");
			source_label(b, s);
			close_u64(b, "kind", kv_recon_correction_name(k), s->recon.corrections[k]);
		}
	}
	static const struct {
		const char *name, *help;
		size_t off;
		bool double_value, after_success;
	} gauges[] = {
		{"mooncake_kv_reconcile_duration_seconds", "Duration of the last reconciliation attempt.",
		 offsetof(kv_recon_stats, last_duration), true, false},
		{"mooncake_kv_reconcile_last_success_timestamp_seconds",
		 "When the last reconciliation succeeded, in unix seconds.", offsetof(kv_recon_stats, last_success),
		 true, true},
		{"mooncake_kv_reconcile_listed_keys", "Keys the master listed in the last successful reconciliation.",
		 offsetof(kv_recon_stats, last_keys), false, true},
	};
	for (size_t g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++) {
		header(b, gauges[g].name, "gauge", gauges[g].help);
		for (size_t i = 0; i < x->n_sources; i++) {
			const kv_recon_stats *r = &x->sources[i].recon;
			if (!r->enabled || !(gauges[g].after_success ? r->has_success : r->has_duration))
				continue;
			open_sample(b, gauges[g].name);
			source_label(b, &x->sources[i]);
			if (gauges[g].double_value) {
				double d;
				memcpy(&d, (const char *)r + gauges[g].off, sizeof(d));
				close_double(b, d);
			} else {
				close_u64(b, NULL, NULL, field_u64(r, gauges[g].off));
			}
		}
	}
}

/* --- the exporter itself --- */

static void plain(B *b, const char *name, const char *type, const char *help, double v)
{
	header(b, name, type, help);
	kv_buf_adds(b, name);
	kv_buf_addc(b, ' ');
	kv_buf_add_double(b, v);
	kv_buf_addc(b, '\n');
}

static void render_exporter(B *b, const kv_exporter_snap *x)
{
	header(b, "mooncake_kv_exporter_build_info", "gauge", "Version and git revision of the exporter; always 1.");
	kv_buf_adds(b, "mooncake_kv_exporter_build_info{version=\"");
	kv_render_label_value(b, x->version, strlen(x->version), true);
	kv_buf_adds(b, "\",revision=\"");
	kv_render_label_value(b, x->revision, strlen(x->revision), true);
	kv_buf_adds(b, "\"} 1\n");

	uint64_t tov = 0, oov = 0;
	for (size_t i = 0; i < x->n_sources; i++) {
		tov += x->sources[i].tenants_overflow;
		oov += x->sources[i].objects_overflow;
	}
	plain(b, "mooncake_kv_tracked_objects", "gauge", "Objects held in memory, all sources.",
	      (double)x->tracked_objects);
	plain(b, "mooncake_kv_tracked_tenants", "gauge", "Tenants held in memory, all sources.",
	      (double)x->tracked_tenants);
	plain(b, "mooncake_kv_limit_max_objects", "gauge", "--limits.max-objects.", (double)x->max_objects);
	plain(b, "mooncake_kv_limit_max_tenants", "gauge", "--limits.max-tenants.", (double)x->max_tenants);
	plain(b, "mooncake_kv_tenants_overflow_total", "counter",
	      "Events for a new tenant refused by --limits.max-tenants.", (double)tov);
	plain(b, "mooncake_kv_objects_overflow_total", "counter",
	      "stored events for a new object refused by --limits.max-objects.", (double)oov);
	bool groups = false;
	uint64_t gov = 0;
	for (size_t i = 0; i < x->n_sources; i++) {
		groups |= x->sources[i].has_groups;
		gov += x->sources[i].groups_overflow;
	}
	if (groups) {
		plain(b, "mooncake_kv_tracked_key_groups", "gauge", "Key groups held in memory, all sources.",
		      (double)x->tracked_key_groups);
		plain(b, "mooncake_kv_limit_max_key_groups", "gauge", "--limits.max-key-groups.",
		      (double)x->max_key_groups);
		plain(b, "mooncake_kv_key_groups_overflow_total", "counter",
		      "Events whose key's new group was refused by --limits.max-key-groups (counted under "
		      "__overflow__).",
		      (double)gov);
	}
	plain(b, "mooncake_kv_exporter_scrapes_total", "counter", "Scrapes of the metrics path served before this one.",
	      (double)x->scrapes);
	plain(b, "mooncake_kv_exporter_last_scrape_duration_seconds", "gauge",
	      "Snapshot, render and compression time of the previous scrape.", x->last_scrape_seconds);
	plain(b, "mooncake_kv_exporter_last_scrape_bytes", "gauge",
	      "Body size of the previous scrape, before compression.", (double)x->last_scrape_bytes);

	const kv_process_snap *p = &x->process;
	if (!p->ok)
		return;
	plain(b, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
	      p->cpu_seconds);
	plain(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", p->resident_bytes);
	plain(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", p->virtual_bytes);
	plain(b, "process_open_fds", "gauge", "Number of open file descriptors.", p->open_fds);
	plain(b, "process_max_fds", "gauge", "Maximum number of open file descriptors.", p->max_fds);
	plain(b, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
	      p->start_time);
}

int kv_render(B *out, const kv_exporter_snap *x)
{
	render_sources(out, x);
	render_tenants(out, x);
	render_groups(out, x);
	render_master(out, x);
	render_ha(out, x);
	render_quotas(out, x);
	render_recon(out, x);
	render_exporter(out, x);
	return kv_buf_ok(out) ? KV_OK : KV_ENOMEM;
}
