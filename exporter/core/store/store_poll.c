/* SPDX-License-Identifier: Apache-2.0 */
/* The master's answers to a store (mooncake_kv/store.h): each member's
 * /kv_events/status (kv_master: restarts, loss by cause, a lost tail),
 * /ha_status and /leader (leadership: who serves, failovers, split
 * brains), and from the serving member its /metrics (master_key_count: the
 * drift of the stream's view; the puts refused for a quota) and its tenant
 * quotas. */
#include <string.h>

#include "kv_store_impl.h"

void mkv_store_poll_begin(mkv_store *s, size_t member)
{
	kv_store_part *p = &s->parts[member];
	kv_stream_position(p->stream, &p->before);
	p->events_before = kv_stream_stats_of(p->stream)->batch_events.sum;
}

/* How many events may lie between the master's key count and the state
 * when the count is applied: those received during the poll, and those of
 * the messages the stream was behind the master by (at twice the mean
 * batch, 64 at least: the publisher's batch).  < 0: unknown. */
static double events_in_flight(const kv_store_part *p)
{
	if (!p->master.behind_known)
		return -1;
	const kv_hist *b = &kv_stream_stats_of(p->stream)->batch_events;
	double batch = b->count ? 2 * b->sum / (double)b->count : 0;
	return (b->sum - p->events_before) + (double)p->master.behind * (batch > 64 ? batch : 64);
}

/* What /ha_status and /leader say of the member: state KV_HA_UNKNOWN when
 * it has no /ha_status (404: a master without HA), else a failure counted.
 * Returns the failure (MKV_POLL_OK for none, and for a master without HA). */
static enum mkv_poll_error read_ha(kv_store_part *p, const mkv_poll_answers *a, kv_ha_obs *o)
{
	const mkv_answer *ha = &a->ha, *leader = &a->leader;
	enum mkv_poll_error err = (enum mkv_poll_error)ha->err;
	long http = ha->http;
	o->state = KV_HA_UNKNOWN;
	if (err == MKV_POLL_OK)
		err = kv_ha_parse_state(ha->body, ha->len, &o->state);
	if (err == MKV_POLL_OK) {
		err = (enum mkv_poll_error)leader->err;
		http = leader->http;
		if (err == MKV_POLL_OK)
			err = kv_ha_parse_leader(leader->body, leader->len, &o->has_view, &o->view_version);
	}
	if (err == MKV_POLL_OK || http == 404)
		return MKV_POLL_OK;
	p->ha_errors[err]++;
	return err;
}

/* A read's outcome against the last one's: MKV_POLL_FAILED or _RECOVERED
 * once at each turn, MKV_POLL_SAME between. */
static enum mkv_poll_change read_change(bool *failing, enum mkv_poll_error err)
{
	enum mkv_poll_change c = MKV_POLL_SAME;
	if (err != MKV_POLL_OK && !*failing)
		c = MKV_POLL_FAILED;
	else if (err == MKV_POLL_OK && *failing)
		c = MKV_POLL_RECOVERED;
	*failing = err != MKV_POLL_OK;
	return c;
}

/* Nothing reached us from the member's publisher, and nothing was lost. */
static bool untouched(const mkv_store *s, const kv_store_part *p)
{
	return kv_stream_stats_of(p->stream)->messages == 0 && mkv_store_breaks(s) == p->empty_breaks;
}

/* A status answer in the proof of an empty store (kv_empty_step): nothing
 * published yet by the serving member's publisher.  The key count comes
 * between two such answers (empty_step_keys), so that no event can have
 * been published, nor an object stored and erased, on either side of it
 * unseen.  Returns true when the proof is complete (and was not before). */
static bool empty_step_status(mkv_store *s, size_t member, const kv_master_status *st, bool leads)
{
	kv_store_part *p = &s->parts[member];
	bool quiet = st && leads && st->enabled && st->published_batches == 0 && st->dropped_events == 0 &&
		     kv_stream_stats_of(p->stream)->messages == 0;
	if (!quiet) {
		p->empty = KV_EMPTY_NONE;
		return false;
	}
	if (p->empty == KV_EMPTY_KEYS && untouched(s, p)) {
		bool again = kv_state_born_exact(s->state);
		kv_state_prove_empty(s->state);
		p->empty = KV_EMPTY_QUIET; /* a later count may prove it again, until the first message */
		p->empty_breaks = mkv_store_breaks(s);
		return !again;
	}
	if (p->empty == KV_EMPTY_NONE || !untouched(s, p)) {
		p->empty = KV_EMPTY_QUIET;
		p->empty_breaks = mkv_store_breaks(s);
	}
	return false;
}

/* The serving member's key count in the proof: 0 after a quiet status. */
static void empty_step_keys(mkv_store *s, kv_store_part *p, bool ok, double keys)
{
	if (p->empty == KV_EMPTY_NONE)
		return;
	p->empty = ok && keys == 0 && untouched(s, p) ? KV_EMPTY_KEYS : KV_EMPTY_NONE;
}

/* Whether the member's master erases objects for a tenant's quota without
 * an event: the one place that judges it.  Release v0.3.12 (the object
 * dialect) publishes nothing for a quota eviction; Mooncake main since
 * #3818 (the media dialect, the guide's five status fields) publishes
 * nothing for an object the eviction empties (docs/upstream.md, "What main
 * still does not publish"); dev/conductor, whose status has
 * invalid_event_hashes, publishes each.  A media master whose status has
 * not been read yet is taken for main, the one a subscriber meets today. */
static bool quota_evictions_silent(const kv_store_part *p)
{
	if (!p->dialect.decided)
		return false;
	if (p->dialect.dialect == MKV_DIALECT_OBJECT)
		return true;
	return !(p->master.have_status && p->master.status.has_invalid_hashes);
}

/* The leader's quota eviction erased objects of the tenants whose
 * mooncake_tenant_evict_bytes_total rose since the last answer: where it
 * does so silently (quota_evictions_silent) such a tenant's figures can no
 * longer be trusted.  The first answer is the baseline: what was evicted
 * before it, the stream never held.  Returns the tenants that turned
 * stale. */
static size_t evictions_seen(mkv_store *s, const kv_store_part *p, const kv_quota_rejects *now)
{
	size_t n = 0;
	if (!s->evictions_known || !quota_evictions_silent(p))
		return 0;
	kv_tenant_index ix;
	if (kv_tenant_index_build(&ix, &s->evictions) != MKV_OK) /* cannot tell which: none is trusted */
		return kv_state_mark_exact_stale(s->state, KV_STALE_QUOTA_EVICTION, (mkv_str){NULL, 0});
	for (size_t i = 0; i < now->n; i++) {
		const kv_quota_reject *e = &now->v[i];
		const char *tenant = now->names.data + e->tenant_at;
		double before = 0; /* a series that appears has risen from 0 */
		kv_tenant_index_get(&ix, &s->evictions, tenant, e->tenant_len, &before);
		if (e->count > before)
			n += kv_state_mark_tenant_stale(s->state, (mkv_str){tenant, e->tenant_len},
							KV_STALE_QUOTA_EVICTION);
	}
	kv_tenant_index_free(&ix);
	return n;
}

static enum mkv_poll_change change_of(const kv_master *before, const kv_master *after)
{
	/* changes of state, not every failed poll: a dead master must not turn
	 * into an error storm */
	if (after->standby && !before->standby)
		return MKV_POLL_BECAME_STANDBY;
	if (!after->up && (before->up || !before->polled))
		return MKV_POLL_FAILED;
	if (after->up && !after->standby && (!before->up || before->standby))
		return MKV_POLL_RECOVERED;
	return MKV_POLL_SAME;
}

void mkv_store_poll_answers(mkv_store *s, size_t member, const mkv_poll_answers *a, mkv_poll_news *news)
{
	kv_store_part *p = &s->parts[member];
	const mkv_answer *sa = &a->status;
	enum mkv_poll_error err = (enum mkv_poll_error)sa->err;
	kv_master_status st;
	if (err == MKV_POLL_OK)
		err = kv_master_parse(sa->body, sa->len, &st);

	kv_ha_obs o = {.answered = sa->http == 200 || sa->http == 503};
	enum mkv_poll_error ha_err = MKV_POLL_OK;
	if (o.answered) /* a dead master is not asked twice more */
		ha_err = read_ha(p, a, &o);
	else
		o.state = KV_HA_UNKNOWN;
	o.serving = o.state != KV_HA_UNKNOWN ? o.state == KV_HA_SERVING : sa->http == 200;

	memset(news, 0, sizeof(*news));
	if (o.answered) { /* unasked, they neither failed nor recovered */
		news->ha_err = ha_err;
		news->ha_change = read_change(&p->ha_failing, ha_err);
	}
	news->err = err;
	news->http = sa->http;
	kv_state_set_now(s->state, (int64_t)(a->t1 * 1000)); /* for the losses and failovers it marks */
	kv_master before = p->master;
	kv_master_record(&p->master, a->t1, a->t1 - a->t0, err, sa->http, err == MKV_POLL_OK ? &st : NULL, &p->before);
	enum kv_publisher_seen seen = kv_master_publisher_seen(err, sa->http, err == MKV_POLL_OK ? &st : NULL);
	if (seen != KV_PUBLISHER_UNKNOWN) /* where its next publisher starts (issue 21) */
		kv_stream_publisher_seen(p->stream, seen == KV_PUBLISHER_PUBLISHING);
	news->dialect_news = MKV_DIALECT_SAME;
	if (err == MKV_POLL_OK) {
		news->dialect_news = kv_dialect_observe(&p->dialect, st.dialect,
							kv_stream_stats_of(p->stream)->messages > 0);
		kv_store_dialect_news(s, member, news->dialect_news);
		/* the stream now, to tell a tail that is not coming */
		kv_stream_pos pos;
		uint64_t upto_seq, upto_eid;
		kv_stream_position(p->stream, &pos);
		if (kv_master_tail(&p->master, &pos, a->t1, a->interval, &upto_seq, &upto_eid))
			news->tail = kv_stream_tail_lost(p->stream, upto_seq, upto_eid);
	}
	const kv_master *after = &p->master;
	news->change = change_of(&before, after);
	news->restarts = after->loss.restarts - before.loss.restarts;
	news->queue = after->loss.queue - before.loss.queue;
	news->transport = after->loss.transport - before.loss.transport;
	news->unattributed = after->loss.unattributed - before.loss.unattributed;
	news->last_sequence = after->last_sequence;
	kv_dialect_info_of(&p->dialect, &news->dialect);
	news->leadership = kv_leadership_observe(&s->leadership, s->roles, s->n, member, &o, after->standby, s->state);
	news->leader = s->leadership.leader;
	news->view = s->leadership.view;
	news->leads = err == MKV_POLL_OK && o.serving && s->leadership.leader == (int)member;
	news->failover_from = -1;
	news->failover_told = kv_failover_tell_step(&s->tell, news->leadership, news->leader, news->leads, a->t1,
						    a->interval, &news->failover_from);
	if (news->leadership) /* another master's store, or two: no proof goes on across it */
		for (size_t i = 0; i < s->n; i++)
			s->parts[i].empty = KV_EMPTY_NONE;
	news->proved_empty = empty_step_status(s, member, err == MKV_POLL_OK ? &st : NULL, news->leads);
}

void mkv_store_metrics_reset(mkv_store *s, size_t member)
{
	kv_metrics_reader_reset(&s->parts[member].metrics);
}

enum mkv_err mkv_store_metrics_feed(mkv_store *s, size_t member, const void *p, size_t n)
{
	return kv_metrics_reader_feed(&s->parts[member].metrics, p, n);
}

static void swap_tables(kv_quota_rejects *a, kv_quota_rejects *b)
{
	kv_quota_rejects t = *a;
	*a = *b;
	*b = t;
}

/* A read's outcome against the last one's. */
static void read_news(bool *failing, enum mkv_poll_error err, mkv_read_news *news)
{
	news->err = err;
	news->change = read_change(failing, err);
}

void mkv_store_metrics_end(mkv_store *s, size_t member, enum mkv_poll_error transfer_err, mkv_read_news *news)
{
	*news = (mkv_read_news){0};
	kv_store_part *p = &s->parts[member];
	kv_metrics_reader *r = &p->metrics;
	enum mkv_poll_error err = transfer_err;
	if (err == MKV_POLL_OK)
		err = kv_metrics_reader_end(r);
	kv_master_record_keys(&p->master, err, r->keys);
	empty_step_keys(s, p, err == MKV_POLL_OK, r->keys);
	read_news(&p->metrics_failing, err, news);
	if (err == MKV_POLL_OK) { /* the new answers in, the old ones' memory to the reader */
		news->evicted = evictions_seen(s, p, &r->evictions);
		swap_tables(&s->rejects, &r->rejects);
		swap_tables(&s->evictions, &r->evictions);
		s->evictions_known = true;
	}
	kv_drift_observe(&s->drift, err == MKV_POLL_OK, events_in_flight(p), r->keys, s->state);
	bool spare;
	if (kv_drift_blame(&s->drift, s->cfg.reconcile, &spare)) {
		kv_state_mark_exact_stale(s->state, KV_STALE_DRIFT, spare ? KV_TENANT_DEFAULT : (mkv_str){NULL, 0});
		s->drift.polls = 0; /* judged again from scratch once tenants are exact */
		s->drift.on = s->drift.attempted = s->drift.reconciled = false;
	}
}

void mkv_store_quotas_reset(mkv_store *s, size_t member)
{
	kv_quotas_reader_reset(&s->parts[member].quotas_in);
}

enum mkv_err mkv_store_quotas_feed(mkv_store *s, size_t member, const void *p, size_t n)
{
	return kv_quotas_reader_feed(&s->parts[member].quotas_in, p, n);
}

/* 409 says quotas are off on that master (an answer, no failure), 503 that
 * it no longer serves (nothing to say). */
void mkv_store_quotas_end(mkv_store *s, size_t member, enum mkv_poll_error transfer_err, long http, mkv_read_news *news)
{
	*news = (mkv_read_news){0};
	if (http == 503)
		return;
	enum kv_quota_mode was = s->quotas.mode;
	enum mkv_poll_error err = transfer_err;
	if (http == 409) {
		kv_quotas_free(&s->quotas);
		s->quotas.mode = KV_QUOTAS_OFF;
		err = MKV_POLL_OK;
	} else {
		if (err == MKV_POLL_OK) /* read outside the lock; swapped in under it */
			err = kv_quotas_reader_end(&s->parts[member].quotas_in, &s->quotas);
		if (err != MKV_POLL_OK)
			s->quota_errors[err]++;
	}
	read_news(&s->parts[member].quotas_failing, err, news);
	news->quotas_off = s->quotas.mode == KV_QUOTAS_OFF && was != KV_QUOTAS_OFF;
}
