/* SPDX-License-Identifier: Apache-2.0 */
/* One watched store (mooncake_kv/store.h): the tenants, every member's
 * stream, the dialect each is read in, and what the shell asks of them.
 * The master's answers are store_poll.c's. */
#include <stdlib.h>
#include <string.h>

#include "kv_store_impl.h"

void kv_dialect_info_of(const kv_dialect_choice *c, mkv_dialect_info *out)
{
	*out = (mkv_dialect_info){
		.decided = c->decided,
		.from_start = c->decided && (c->basis == KV_DIALECT_BY_FLAG || c->basis == KV_DIALECT_BY_NO_STATUS),
		.name = mkv_dialect_name(c->dialect),
		.basis = kv_dialect_basis_name(c->basis),
	};
}

void mkv_store_free(mkv_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->parts && i < s->n; i++) {
		kv_stream_free(s->parts[i].stream);
		kv_metrics_reader_free(&s->parts[i].metrics);
		kv_quotas_reader_free(&s->parts[i].quotas_in);
	}
	free(s->parts);
	free(s->roles);
	kv_state_free(s->state);
	kv_quotas_free(&s->quotas);
	kv_quota_rejects_free(&s->rejects);
	kv_quota_rejects_free(&s->evictions);
	free(s);
}

mkv_store *mkv_store_new(const mkv_store_cfg *cfg)
{
	mkv_store *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cfg = *cfg;
	s->cfg.members = NULL; /* copied into the parts below: the caller's array need not outlive the store */
	s->n = cfg->n_members;
	kv_leadership_init(&s->leadership);
	kv_failover_tell_init(&s->tell);
	kv_hist_init(&s->scrape_hold, kv_hold_bounds, kv_hold_bounds_n);
	kv_reconcile_plan_init(&s->plan, cfg->reconcile_interval);
	s->recon.enabled = cfg->reconcile;
	if (!(s->state = kv_state_new(cfg->budget, cfg->seed)) ||
	    (cfg->key_groups && kv_state_set_keygroups(s->state, cfg->key_groups) != MKV_OK) ||
	    !(s->parts = calloc(s->n, sizeof(*s->parts))) || !(s->roles = calloc(s->n, sizeof(*s->roles))))
		goto fail;
	kv_state_set_residency(s->state, cfg->residency);
	/* several masters: a RemoveAll's removals may follow its cleared */
	kv_state_set_ha(s->state, cfg->ha);
	for (size_t i = 0; i < s->n; i++) {
		kv_store_part *p = &s->parts[i];
		p->cfg = cfg->members[i];
		kv_metrics_reader_init(&p->metrics, 4 * cfg->max_tenants); /* a few reasons per tenant */
		kv_quotas_reader_init(&p->quotas_in, cfg->max_tenants);
		if (!(p->stream = kv_stream_attach(s->state)))
			goto fail;
		kv_dialect_init(&p->dialect, p->cfg.dialect, p->cfg.has_status);
		kv_stream_set_dialect(p->stream, p->dialect.dialect);
		kv_stream_set_digests(p->stream, !cfg->never_handed_over);
	}
	return s;
fail:
	mkv_store_free(s);
	return NULL;
}

enum mkv_err mkv_store_ingest(mkv_store *s, size_t member, const mkv_frame *frames, size_t n_frames, int64_t now_ms,
			      mkv_ingest_report *rep)
{
	mkv_ingest_report r;
	enum mkv_err rc = kv_stream_ingest(s->parts[member].stream, frames, n_frames, now_ms, &r);
	/* a member that does not serve and publishes all the same */
	kv_member_role_published(&s->roles[member], r.events);
	if (r.verdict == MKV_SEQ_RESET) /* a new master process, maybe an upgraded one: ask again */
		s->parts[member].lists = KV_LISTS_UNKNOWN;
	if (r.join == MKV_JOIN_CONTINUED)
		s->boot.continued++;
	if (r.join == MKV_JOIN_BROKEN) { /* its numbering starts afresh: so do the loss books that follow it */
		s->boot.broken++;
		kv_master *m = &s->parts[member].master;
		m->have_status = false;
		m->behind_known = false;
		m->loss = (kv_loss){0};
	}
	if (rep)
		*rep = r;
	return rc;
}

void mkv_store_note_disconnect(mkv_store *s, size_t member)
{
	kv_store_part *p = &s->parts[member];
	p->connected = false;
	kv_stream_disconnected(p->stream);
	/* a master that restarts closes its publisher: a proof under way ends */
	p->empty = KV_EMPTY_NONE;
}

bool mkv_store_note_connect(mkv_store *s, size_t member, int64_t now_ms)
{
	kv_store_part *p = &s->parts[member];
	bool again = p->ever_connected;
	p->connected = p->ever_connected = true;
	if (again) {
		kv_state_set_now(s->state, now_ms);
		kv_stream_reconnected(p->stream);
	}
	return again;
}

bool mkv_store_is_connected(const mkv_store *s, size_t member)
{
	return s->parts[member].connected;
}

bool mkv_store_settle(mkv_store *s, size_t slots)
{
	return kv_state_settle(s->state, slots);
}

size_t mkv_store_expire(mkv_store *s, int64_t now_ms, int64_t idle_ms)
{
	return kv_state_expire(s->state, now_ms, idle_ms);
}

void mkv_store_dialect(const mkv_store *s, size_t member, mkv_dialect_info *out)
{
	kv_dialect_info_of(&s->parts[member].dialect, out);
}

/* Applies a decision: the stream is read so from now on; a switch marks
 * the tenants stale (its events so far were read by the wrong rule), which
 * a reconciling store answers with a reconciliation. */
void kv_store_dialect_news(mkv_store *s, size_t member, enum mkv_dialect_news news)
{
	kv_store_part *p = &s->parts[member];
	if (news == MKV_DIALECT_SAME)
		return;
	kv_stream_set_dialect(p->stream, p->dialect.dialect);
	if (news == MKV_DIALECT_SWITCHED)
		kv_state_mark_stale(s->state, KV_STALE_DIALECT);
}

enum mkv_dialect_news mkv_store_dialect_give_up(mkv_store *s, size_t member, mkv_dialect_info *out)
{
	enum mkv_dialect_news news = kv_dialect_give_up(&s->parts[member].dialect);
	kv_store_dialect_news(s, member, news);
	kv_dialect_info_of(&s->parts[member].dialect, out);
	return news;
}

int mkv_store_leader(const mkv_store *s)
{
	if (s->leadership.leader >= 0)
		return s->leadership.leader;
	return s->n == 1 && !s->parts[0].master.standby ? 0 : -1;
}

bool mkv_store_ready(const mkv_store *s)
{
	/* every master polled once; whichever serves, connected; and one of
	 * them telling something: connected, or answering as a standby */
	bool all = true, one = false;
	for (size_t i = 0; i < s->n; i++) {
		const kv_store_part *p = &s->parts[i];
		const kv_ha_obs *o = &s->roles[i].obs;
		bool connected = p->ever_connected;
		if (p->cfg.has_status && !p->master.polled)
			all = false;
		else if (p->cfg.has_status && o->serving && !connected)
			all = false;
		one |= connected || (p->cfg.has_status && o->answered && !o->serving);
	}
	return all && one;
}

uint64_t mkv_store_breaks(const mkv_store *s)
{
	uint64_t n = 0;
	for (size_t i = 0; i < s->n; i++) {
		kv_stream_pos pos;
		kv_stream_position(s->parts[i].stream, &pos);
		n += pos.breaks;
	}
	return n;
}

enum mkv_err kv_store_snapshot(const mkv_store *s, const mkv_member_live *live, kv_source_snap *out)
{
	out->name = s->cfg.name;
	out->ha = s->cfg.ha;
	out->polled = s->cfg.polled;
	if (kv_snapshot_members(out, s->n) != MKV_OK)
		return MKV_ENOMEM;
	bool object = true;
	for (size_t i = 0; i < s->n; i++) {
		const kv_store_part *p = &s->parts[i];
		kv_member_snap *o = &out->members[i];
		o->label = p->cfg.label;
		o->has_master = p->cfg.has_status;
		o->connected = p->connected;
		o->backlog = live ? live[i].backlog : 0;
		kv_snapshot_member_stream(o, p->stream);
		o->master = p->master;
		o->ha = s->roles[i].obs;
		memcpy(o->ha_errors, p->ha_errors, sizeof(o->ha_errors));
		o->standby_events = s->roles[i].standby_events;
		o->dialect = p->dialect;
		o->lists_tenants = p->lists;
		object &= p->dialect.decided && p->dialect.dialect == MKV_DIALECT_OBJECT;
	}
	out->object_dialect = object;
	out->leadership = s->leadership;
	memcpy(out->quota_errors, s->quota_errors, sizeof(out->quota_errors));
	enum mkv_err rc = kv_quotas_copy(&out->quotas, &s->quotas);
	if (rc == MKV_OK)
		rc = kv_quota_rejects_copy(&out->rejects, &s->rejects);
	if (rc == MKV_OK)
		rc = kv_quota_rejects_copy(&out->evictions, &s->evictions);
	enum mkv_err rs = kv_snapshot_state(out, s->state);
	out->recon = s->recon;
	out->scrape_hold = s->scrape_hold;
	out->boot = s->boot;
	out->boot.waiting = mkv_store_joins_waiting(s);
	for (size_t i = 0; i < s->n; i++)
		out->boot.overlap += kv_stream_stats_of(s->parts[i].stream)->overlap_messages;
	return rc != MKV_OK ? rc : rs;
}
