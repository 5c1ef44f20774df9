/* SPDX-License-Identifier: Apache-2.0 */
/* The status page (kv_status_page.h): its head and style, the exporter's
 * figures, and each source with its members; the tenants are
 * status_tenants.c's.  Every figure is the one /metrics gives for the same
 * snapshot, under the same family's name (families/). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kv_fmt.h"
#include "kv_status_page.h"

typedef struct mkv_buf B;

/* A yes/no figure as a pill: its family's 1 or 0. */
static void flag(B *b, const char *family, bool v, const char *yes, const char *yes_cls, const char *no,
		 const char *no_cls)
{
	char cls[32];
	snprintf(cls, sizeof(cls), "pill %s", v ? yes_cls : no_cls);
	kv_html_fig_open(b, "span", cls, family, NULL, NULL, v ? "1" : "0");
	mkv_buf_printf(b, "%s</span> ", v ? yes : no);
}

/* The word of a one-hot family (the series whose value is 1): a pill. */
static void word(B *b, const char *family, const char *ln, const char *lv, const char *cls)
{
	kv_html_fig_open(b, "span", cls, family, ln, lv, "1");
	kv_html_escs(b, lv);
	mkv_buf_adds(b, "</span> ");
}

static void dash(B *b, const char *tag)
{
	mkv_buf_printf(b, "<%s class=\"none\">&mdash;</%s>", tag, tag);
}

static const char style[] =
	":root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#eef1f4;--head:#f6f8fa;--ok:#116329;"
	"--okbg:#dafbe1;--warn:#7d4e00;--warnbg:#fff1c2;--bad:#a40e26;--badbg:#ffebe9;--link:#0969da}"
	"*{box-sizing:border-box}"
	"body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif;"
	"color:var(--fg);background:#fff}"
	"a{color:var(--link);text-decoration:none}a:hover{text-decoration:underline}"
	"header{background:#24292f;color:#f6f8fa;padding:14px 20px}"
	"header h1{margin:0;font-size:19px;font-weight:600}header h1 span{font-weight:400;color:#afb8c1}"
	"header p{margin:4px 0 0;font-size:13px;color:#afb8c1}header a{color:#8ec5ff}"
	"main{padding:8px 20px 40px}"
	"h2{font-size:16px;margin:22px 0 10px;padding-bottom:6px;border-bottom:1px solid var(--line)}"
	"h2 small,h3 small{font-weight:400;color:var(--muted);font-size:13px}"
	".totals{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0 0;padding:0;list-style:none}"
	".totals li{border:1px solid var(--line);border-radius:6px;padding:6px 14px;min-width:150px}"
	".totals b{display:block;font-size:20px;font-weight:600;font-variant-numeric:tabular-nums}"
	".totals span{color:var(--muted);font-size:12px}"
	"section.source{border:1px solid var(--line);border-radius:6px;margin:0 0 16px;overflow:hidden}"
	"section.source h3{margin:0;padding:8px 12px;font-size:15px;background:var(--head);"
	"border-bottom:1px solid var(--line)}"
	".scroll{overflow-x:auto}"
	"table{border-collapse:collapse;width:100%;font-size:12.5px}"
	"th,td{padding:5px 6px;border-bottom:1px solid var(--soft);text-align:left;vertical-align:top;"
	"white-space:nowrap}"
	/* what comes from the wire or a flag (ids, a model's name) may wrap: no table is wider
	 * than the window for a long one; a model's name anywhere, so that its cell gives way
	 * before an id does */
	"tbody th,td.id,td.stream{white-space:normal;overflow-wrap:break-word}td.stream{min-width:11em}"
	"td.stream small{overflow-wrap:anywhere}"
	"th.sum,td.sum{border-left:1px solid var(--line)}"
	"thead th{background:var(--head);color:var(--muted);font-size:12px;font-weight:600;"
	"border-bottom:1px solid var(--line)}"
	"thead tr.group th{text-align:center;border-bottom:1px solid var(--soft)}"
	"td small{color:var(--muted)}td.state{white-space:normal;min-width:13em}tbody th{font-weight:600}tbody "
	"tr:hover{background:#f6f8fa}tbody "
	"tr.stale{background:#fffbeb}"
	".n,.t{text-align:right;font-variant-numeric:tabular-nums}.t small,.none,.muted{color:var(--muted)}"
	".lead{color:var(--ok);font-size:14px;margin-left:2px}"
	".pill{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;font-weight:600;"
	"background:var(--soft);color:var(--muted)}"
	".ok{background:var(--okbg);color:var(--ok)}.warn{background:var(--warnbg);color:var(--warn)}"
	".bad{background:var(--badbg);color:var(--bad)}"
	".chip{display:inline-block;margin:1px 2px 1px 0;padding:0 6px;border:1px solid var(--line);"
	"border-radius:4px;font-size:12px;background:#fff}.chip b{font-variant-numeric:tabular-nums}"
	".chip.reason{border-color:#e4c36a;background:var(--warnbg);color:var(--warn)}"
	"dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:5px 18px;margin:0;padding:10px 12px;"
	"font-size:13px;border-top:1px solid var(--line)}"
	"dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}"
	"dl.facts dt.wide{grid-column:1}dl.facts dd.wide{grid-column:2/-1}"
	"@media (min-width:1100px){dl.facts{grid-template-columns:max-content 1fr max-content 1fr}}"
	"form{display:flex;flex-wrap:wrap;gap:10px;align-items:center;margin:0 0 10px}"
	"form label{font-size:13px;color:var(--muted)}"
	"input{font:inherit;padding:3px 8px;border:1px solid var(--line);border-radius:6px;margin-left:4px}"
	"input[name=tenant]{width:18em}input[name=limit]{width:6em}"
	"button{font:inherit;padding:3px 14px;border:1px solid var(--line);border-radius:6px;background:var(--head);"
	"cursor:pointer}"
	"p.count{margin:0 0 8px;font-size:13px;color:var(--muted)}p.count b{color:var(--fg)}"
	"code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}";

static void head(B *b, const kv_exporter_snap *x, const mkv_status_opts *o)
{
	const char *metrics = o->metrics_path ? o->metrics_path : "/metrics";
	mkv_buf_adds(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
			"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
			/* nothing but the page's own style, even if an escape were missed */
			"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src &#39;none&#39;; "
			"style-src &#39;unsafe-inline&#39;; form-action &#39;self&#39;; base-uri &#39;none&#39;\">"
			"<title>Status - Mooncake KV exporter</title><style>");
	mkv_buf_adds(b, style);
	mkv_buf_adds(b, "</style></head>\n<body><header><h1>Mooncake KV exporter <span>status</span></h1><p>");
	mkv_buf_adds(b, "Version ");
	kv_html_escs(b, x->info.version ? x->info.version : "?");
	mkv_buf_adds(b, " (");
	kv_html_escs(b, x->info.revision ? x->info.revision : "?");
	mkv_buf_adds(b, ")");
	if (x->info.now_ms) {
		mkv_buf_adds(b, " &middot; as of ");
		kv_html_utc(b, x->info.now_ms, 0);
		mkv_buf_adds(b, " (every time below in UTC)");
	}
	mkv_buf_adds(b, " &middot; <a href=\"");
	kv_html_escs(b, metrics);
	mkv_buf_adds(b, "\">");
	kv_html_escs(b, metrics);
	mkv_buf_adds(b, "</a> &middot; <a href=\"/runbook\">runbook</a> &middot; <a href=\"/\">home</a></p></header>\n"
			"<main>");
}

/* The exporter's own totals against its limits. */
static void totals(B *b, const kv_exporter_snap *x)
{
	mkv_buf_adds(b, "<ul class=\"totals\"><li>");
	kv_html_u64(b, "b", "mooncake_kv_tracked_tenants", NULL, NULL, x->tracked_tenants);
	mkv_buf_adds(b, " <span>tenants tracked &middot; limit ");
	kv_html_u64(b, "span", "mooncake_kv_limit_max_tenants", NULL, NULL, x->max_tenants);
	mkv_buf_adds(b, "</span></li><li>");
	kv_html_u64(b, "b", "mooncake_kv_tracked_objects", NULL, NULL, x->tracked_objects);
	mkv_buf_adds(b, " <span>objects tracked &middot; limit ");
	kv_html_u64(b, "span", "mooncake_kv_limit_max_objects", NULL, NULL, x->max_objects);
	mkv_buf_printf(b, "</span></li><li><b>%zu</b> <span>%s</span></li></ul>\n", x->n_sources,
		       x->n_sources == 1 ? "source" : "sources");
}

/* The model a member's publisher stamps on its events, as the labels of
 * mooncake_kv_publisher_model_info give it: text, not a figure (a figure
 * names one label, the info series has five).  Mooncake main stamps none. */
static void model(B *b, const kv_model_ctx *c, const char *before)
{
	mkv_buf_adds(b, before);
	mkv_buf_adds(b, "<small title=\"mooncake_kv_publisher_model_info\">model ");
	if (*c->model_name)
		kv_html_escs(b, c->model_name);
	else
		mkv_buf_adds(b, "<span class=\"none\">none named on its events</span>");
	if (*c->lora_name) {
		mkv_buf_adds(b, ", LoRA ");
		kv_html_escs(b, c->lora_name);
	}
	mkv_buf_adds(b, "</small>");
}

/* Every master of a source of several stamps the same model: the page
 * says it once, in the source's heading, not on each row. */
static bool one_model(const kv_source_snap *s)
{
	if (s->n_members < 2)
		return false;
	for (size_t i = 0; i < s->n_members; i++) {
		const kv_model_ctx *a = &s->members[0].model, *c = &s->members[i].model;
		if (!c->seen || strcmp(a->model_name, c->model_name) || strcmp(a->lora_name, c->lora_name))
			return false;
	}
	return true;
}

/* One member's row: its stream (connection, dialect, the model stamped
 * unless the heading says it), its master (up, its role), the sequence,
 * loss by cause, the last event. */
static void member_row(B *b, const kv_exporter_snap *x, const kv_source_snap *s, size_t idx, bool models)
{
	const kv_member_snap *m = &s->members[idx];
	const kv_master *M = &m->master;
	mkv_buf_adds(b, "<tr");
	kv_html_attr(b, "data-source", s->name);
	if (m->label)
		kv_html_attr(b, "data-member", m->label);
	mkv_buf_adds(b, "><th scope=\"row\">");
	kv_html_escs(b, m->label ? m->label : "(stream only)");
	mkv_buf_adds(b, "</th><td class=\"stream\">");
	enum kv_ha_role role = kv_ha_role_of(m->ha.state);
	if (role == KV_ROLE_UNKNOWN && m->ha.answered)
		role = m->ha.serving ? KV_ROLE_LEADER : KV_ROLE_STANDBY;
	/* a standby has no publisher to connect to: quiet, not alarming */
	bool standby = (m->has_master && M->standby) || (s->polled && role == KV_ROLE_STANDBY);
	flag(b, "mooncake_kv_subscriber_connected", m->connected, "connected", "ok",
	     standby ? "standing by" : "disconnected", standby ? "" : "bad");
	if (m->dialect.decided) /* else no word, as no sample */
		word(b, "mooncake_kv_publisher_dialect", "dialect", mkv_dialect_name(m->dialect.dialect), "pill");
	if (m->model.seen && models) /* else nothing, as no sample */
		model(b, &m->model, "<br>");
	mkv_buf_adds(b, "<br><small>reconnects: ");
	kv_html_u64(b, "span", "mooncake_kv_subscriber_reconnects_total", NULL, NULL, m->stats.reconnects);
	mkv_buf_adds(b, "</small></td><td>");
	if (m->has_master && M->standby && !s->polled)
		flag(b, "mooncake_kv_master_standby", true, "standby", "", "", "");
	else if (m->has_master)
		flag(b, "mooncake_kv_master_up", M->up, "up", "ok", "down", "bad");
	if (s->polled) {
		word(b, "mooncake_kv_master_role", "role", kv_ha_role_name(role),
		     role == KV_ROLE_LEADER ? "pill ok" : "pill");
		if (s->leadership.leader == (int)idx)
			mkv_buf_adds(b, "<span class=\"lead\" data-m=\"mooncake_kv_master_leader\" data-v=\"1\" "
					"title=\"the master that serves (mooncake_kv_master_leader)\">&#9733;</span>");
	}
	if (!m->has_master && !s->polled)
		mkv_buf_adds(b, "<span class=\"none\">no status URL</span>");
	mkv_buf_adds(b, "</td>");
	kv_html_u64(b, "td", "mooncake_kv_last_sequence", NULL, NULL, m->seq.last_seq);
	if (m->has_master && M->have_status)
		kv_html_u64(b, "td", "mooncake_kv_master_last_sequence", NULL, NULL, M->last_sequence);
	else
		dash(b, "td");
	if (m->has_master && M->loss.behind_known)
		kv_html_u64(b, "td", "mooncake_kv_sequence_behind", NULL, NULL, M->loss.behind);
	else
		dash(b, "td");
	kv_html_u64(b, "td", "mooncake_kv_messages_received_total", NULL, NULL, m->stats.messages);
	kv_html_u64(b, "td", "mooncake_kv_sequence_gaps_total", NULL, NULL, m->seq.gaps);
	/* the total, then its parts: queue + transport + unattributed = missing */
	kv_html_u64_as(b, "td", "n sum", "mooncake_kv_sequence_missing_total", m->seq.missing);
	if (m->has_master) {
		kv_html_u64(b, "td", "mooncake_kv_queue_lost_events_total", NULL, NULL, M->loss.queue);
		kv_html_u64(b, "td", "mooncake_kv_transport_lost_messages_total", NULL, NULL, M->loss.transport);
		kv_html_u64(b, "td", "mooncake_kv_unattributed_lost_messages_total", NULL, NULL, M->loss.unattributed);
		kv_html_u64(b, "td", "mooncake_kv_master_restarts_total", NULL, NULL, M->loss.restarts);
	} else { /* no master to attribute loss with: the stream's own resets */
		dash(b, "td"), dash(b, "td"), dash(b, "td");
		kv_html_u64(b, "td", "mooncake_kv_publisher_resets_total", NULL, NULL, m->seq.resets);
	}
	if (m->stats.has_timestamp)
		kv_html_time(b, "mooncake_kv_last_event_timestamp_seconds", m->stats.last_timestamp_ms, x->info.now_ms,
			     true);
	else
		dash(b, "td");
	mkv_buf_adds(b, "</tr>\n");
}

/* Loss by cause reads as a total and its parts: every missing sequence
 * number is in exactly one of queue, transport and unattributed after a
 * poll (docs/design.md, "Loss by cause"). */
static const char members_head[] =
	"<div class=\"scroll\"><table class=\"members\"><thead>"
	"<tr class=\"group\"><th colspan=\"3\"></th><th colspan=\"3\">Sequence</th><th colspan=\"2\">Messages</th>"
	"<th colspan=\"4\" class=\"sum\">Loss by cause: missing numbers</th><th colspan=\"2\"></th></tr>"
	"<tr><th scope=\"col\">Member</th><th scope=\"col\">Stream</th><th scope=\"col\">Master</th>"
	"<th scope=\"col\" class=\"n\">last</th><th scope=\"col\" class=\"n\">master's</th>"
	"<th scope=\"col\" class=\"n\">behind</th><th scope=\"col\" class=\"n\">received</th>"
	"<th scope=\"col\" class=\"n\">gaps</th>"
	"<th scope=\"col\" class=\"n sum\" title=\"mooncake_kv_sequence_missing_total: the total\">missing</th>"
	"<th scope=\"col\" class=\"n\" title=\"of them, dropped by the publisher's full queue\">= queue</th>"
	"<th scope=\"col\" class=\"n\" title=\"of them, lost after the publisher\">+ transport</th>"
	"<th scope=\"col\" class=\"n\" title=\"of them, whose counters a restart took\">+ unattributed</th>"
	"<th scope=\"col\" class=\"n\">Restarts</th>"
	"<th scope=\"col\" class=\"t\">Last event</th></tr></thead><tbody>\n";

/* Each member's rejected messages and events, by reason (the non-zero). */
static void rejected(B *b, const kv_source_snap *s)
{
	bool any = false;
	mkv_buf_adds(b, "<dt class=\"wide\">Rejected</dt><dd class=\"wide\">");
	for (size_t i = 0; i < s->n_members; i++) {
		const kv_member_snap *m = &s->members[i];
		bool opened = false;
		for (int r = MKV_R_OK + 1; r < MKV_R__COUNT; r++) {
			if (!m->stats.decode_errors[r])
				continue;
			if (!opened) {
				mkv_buf_adds(b, any ? "<br><span" : "<span");
				if (m->label)
					kv_html_attr(b, "data-member", m->label);
				mkv_buf_adds(b, ">");
				if (s->n_members > 1 && m->label) {
					kv_html_escs(b, m->label);
					mkv_buf_adds(b, ": ");
				}
				opened = any = true;
			}
			kv_html_chip(b, "mooncake_kv_decode_errors_total", "reason",
				     mkv_reason_name((enum mkv_reason)r), m->stats.decode_errors[r]);
		}
		if (opened)
			mkv_buf_adds(b, "</span>");
	}
	if (!any)
		mkv_buf_adds(b, "<span class=\"none\">nothing</span>");
	mkv_buf_adds(b, "</dd>");
}

/* Chips of a family by label, the non-zero ones only; "none" when all are. */
static void chips(B *b, const char *family, const char *ln, const char *(*name)(unsigned), const uint64_t *v,
		  unsigned n, bool zeros)
{
	bool any = false;
	for (unsigned i = 0; i < n; i++)
		if (v[i] || zeros) {
			kv_html_chip(b, family, ln, name(i), v[i]);
			any = true;
		}
	if (!any)
		mkv_buf_adds(b, "<span class=\"none\">none</span>");
}

static const char *stale_name(unsigned i)
{
	return kv_stale_reason_name(i);
}

static const char *exact_name(unsigned i)
{
	return kv_exact_cause_name((enum kv_exact_cause)i);
}

static const char *recon_name(unsigned i)
{
	return mkv_recon_result_name((enum mkv_recon_result)i);
}

static const char *correction_name(unsigned i)
{
	return kv_recon_correction_name((enum kv_recon_correction)i);
}

static const char *boot_name(unsigned i)
{
	return mkv_boot_result_name((enum mkv_boot_result)i);
}

/* The time of a figure in seconds (its text v) in a span, and its age. */
static void when(B *b, const kv_exporter_snap *x, const char *family, double seconds)
{
	char v[KV_FMT_MAX + 1];
	*kv_fmt_double(v, seconds) = '\0';
	kv_html_fig_open(b, "span", "t", family, NULL, NULL, v);
	int64_t ms = (int64_t)llround(seconds * 1000);
	kv_html_utc(b, ms, x->info.now_ms);
	if (x->info.now_ms) {
		mkv_buf_adds(b, " <small>");
		kv_html_duration(b, (double)(x->info.now_ms - ms));
		mkv_buf_adds(b, " ago</small>");
	}
	mkv_buf_adds(b, "</span>");
}

static void reconciliation(B *b, const kv_exporter_snap *x, const kv_source_snap *s)
{
	const kv_recon_stats *r = &s->recon;
	mkv_buf_adds(b, "<dt class=\"wide\">Reconciliation</dt><dd class=\"wide\">");
	if (!r->enabled) {
		mkv_buf_adds(b, "<span class=\"none\">off (on with --master.reconcile, or reconcile=true in "
				"--source)</span></dd>");
		return;
	}
	chips(b, "mooncake_kv_reconciliations_total", "result", recon_name, r->results, MKV_RECON__RESULTS, true);
	mkv_buf_adds(b, " &middot; corrected ");
	chips(b, "mooncake_kv_reconcile_corrections_total", "kind", correction_name, r->corrections, KV_CORR__KINDS,
	      true);
	if (r->has_success || r->has_duration)
		mkv_buf_adds(b, "<br>");
	if (r->has_success) {
		mkv_buf_adds(b, "last success ");
		when(b, x, "mooncake_kv_reconcile_last_success_timestamp_seconds", r->last_success);
		mkv_buf_adds(b, " ");
		kv_html_chip_named(b, "mooncake_kv_reconcile_listed_keys", "keys listed", r->last_keys);
	}
	if (r->has_duration) {
		char v[KV_FMT_MAX + 1];
		*kv_fmt_double(v, r->last_duration) = '\0';
		mkv_buf_adds(b, " the last attempt took ");
		kv_html_fig_open(b, "span", "t", "mooncake_kv_reconcile_duration_seconds", NULL, NULL, v);
		kv_html_duration(b, r->last_duration * 1000);
		mkv_buf_adds(b, "</span>");
	}
	bool first = true;
	for (size_t i = 0; i < s->n_members; i++) {
		const kv_member_snap *m = &s->members[i];
		if (!m->has_master || m->lists_tenants == KV_LISTS_UNKNOWN)
			continue;
		mkv_buf_adds(b, first ? "<br>" : " &middot; ");
		first = false;
		mkv_buf_adds(b, "<span");
		if (m->label)
			kv_html_attr(b, "data-member", m->label);
		mkv_buf_adds(b, ">");
		kv_html_escs(b, m->label ? m->label : "the master");
		mkv_buf_adds(b, " lists ");
		kv_html_fig_open(b, "span", "", "mooncake_kv_master_lists_tenants", NULL, NULL,
				 m->lists_tenants == KV_LISTS_TENANTS ? "1" : "0");
		mkv_buf_adds(b, m->lists_tenants == KV_LISTS_TENANTS ? "every tenant" : "tenant default only");
		mkv_buf_adds(b, "</span></span>");
	}
	mkv_buf_adds(b, "</dd>");
}

static bool boot_tried(const kv_source_snap *s)
{
	for (int r = 0; r < MKV_BOOT__COUNT; r++)
		if (s->boot.results[r])
			return true;
	return false;
}

static void handover(B *b, const kv_source_snap *s)
{
	mkv_buf_adds(b, "<dt>Handover</dt><dd>");
	if (!boot_tried(s)) {
		mkv_buf_adds(b, "<span class=\"none\">none: started without a peer's state</span></dd>");
		return;
	}
	chips(b, "mooncake_kv_bootstrap_total", "result", boot_name, s->boot.results, MKV_BOOT__COUNT, false);
	mkv_buf_adds(b, " &middot; joins ");
	kv_html_chip(b, "mooncake_kv_bootstrap_joins_total", "result", "continued", s->boot.continued);
	kv_html_chip(b, "mooncake_kv_bootstrap_joins_total", "result", "broken", s->boot.broken);
	kv_html_chip_named(b, "mooncake_kv_bootstrap_joins_waiting", "waiting", s->boot.waiting);
	kv_html_chip_named(b, "mooncake_kv_bootstrap_overlap_messages_total", "messages it held", s->boot.overlap);
	mkv_buf_adds(b, "</dd>");
}

static void leadership(B *b, const kv_source_snap *s)
{
	const kv_leadership *l = &s->leadership;
	if (!s->polled)
		return;
	mkv_buf_adds(b, "<dt>Leadership</dt><dd>");
	kv_html_chip_named(b, "mooncake_kv_master_failovers_total", "failovers", l->failovers);
	kv_html_chip_named(b, "mooncake_kv_master_split_brains_total", "split brains", l->split_brains);
	if (l->has_view)
		kv_html_chip_named(b, "mooncake_kv_master_view_version", "view version", l->view);
	flag(b, "mooncake_kv_master_split_brain", l->split_brain, "split brain now", "bad", "no split brain now", "ok");
	mkv_buf_adds(b, "</dd>");
}

/* A source's section: its heading, its members, its facts. */
static void source(B *b, const kv_exporter_snap *x, const kv_source_snap *s)
{
	size_t stale = 0, tenants = s->leadership.dropped ? 0 : s->n_tenants;
	uint64_t by_reason[KV_STALE__BITS] = {0};
	for (size_t t = 0; t < tenants; t++) {
		stale += s->tenants[t].stale != 0;
		for (unsigned r = 0; r < KV_STALE__BITS; r++)
			by_reason[r] += (s->tenants[t].stale >> r) & 1;
	}
	mkv_buf_adds(b, "<section class=\"source\" data-source=\"");
	kv_html_escs(b, s->name);
	mkv_buf_adds(b, "\"><h3>Source <code>");
	kv_html_escs(b, s->name);
	mkv_buf_printf(b, "</code> <small>%zu %s</small> ", s->n_members, s->n_members == 1 ? "master" : "masters");
	bool once = one_model(s);
	if (once) {
		model(b, &s->members[0].model, "");
		mkv_buf_adds(b, " <small>(every master)</small> ");
	}
	if (s->leadership.dropped)
		mkv_buf_adds(b, "<span class=\"pill warn\">its master stands by: no tenant figures</span>");
	else
		mkv_buf_printf(b,
			       "<span class=\"pill %s\" data-tenants=\"%zu\" data-stale=\"%zu\">%zu of %zu tenants "
			       "stale</span>",
			       stale ? "warn" : "ok", tenants, stale, stale, tenants);
	mkv_buf_adds(b, "</h3>");
	mkv_buf_adds(b, members_head);
	for (size_t i = 0; i < s->n_members; i++)
		member_row(b, x, s, i, !once);
	mkv_buf_adds(b, "</tbody></table></div><dl class=\"facts\"><dt>Stale tenants by reason</dt><dd>");
	chips(b, "mooncake_kv_stale_tenants", "reason", stale_name, by_reason, KV_STALE__BITS, false);
	if (!s->leadership.dropped)
		flag(b, "mooncake_kv_watched_from_empty", s->born_exact, "watched from empty: new tenants exact", "ok",
		     "not watched from empty", "");
	mkv_buf_adds(b, "</dd><dt>Turned stale</dt><dd>");
	chips(b, "mooncake_kv_tenant_stale_transitions_total", "reason", stale_name, s->turned_stale, KV_STALE__BITS,
	      false);
	mkv_buf_adds(b, "</dd><dt>Turned exact</dt><dd>");
	chips(b, "mooncake_kv_tenant_exact_transitions_total", "cause", exact_name, s->turned_exact, KV_EXACT__CAUSES,
	      false);
	mkv_buf_adds(b, "</dd><dt>Tenants expired</dt><dd>");
	kv_html_u64(b, "span", "mooncake_kv_tenants_expired_total", NULL, NULL, s->tenants_expired);
	mkv_buf_adds(b, " <small>idle longer than --limits.tenant-idle-timeout</small></dd>");
	leadership(b, s);
	handover(b, s);
	rejected(b, s);
	reconciliation(b, x, s);
	mkv_buf_adds(b, "</dl></section>\n");
}

enum mkv_err kv_status_render(B *out, const kv_exporter_snap *x, const mkv_status_opts *o)
{
	head(out, x, o);
	totals(out, x);
	mkv_buf_adds(out, "<h2>Sources <small>each master's stream, its sequence and loss by cause</small></h2>\n");
	for (size_t i = 0; i < x->n_sources; i++)
		source(out, x, &x->sources[i]);
	if (kv_status_tenants(out, x, o) != MKV_OK)
		return MKV_ENOMEM;
	mkv_buf_adds(out, "</main></body></html>\n");
	return mkv_buf_ok(out) ? MKV_OK : MKV_ENOMEM;
}
