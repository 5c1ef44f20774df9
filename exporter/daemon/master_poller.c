/* SPDX-License-Identifier: Apache-2.0 */
/* The poller of one member: every --master.poll-interval, over one reused
 * connection, GET <url>/kv_events/status (kv_master: restarts, loss by
 * cause, a lost tail), /ha_status and /leader (leadership: who serves, failovers,
 * split brains), and from the serving member only /metrics for
 * master_key_count (the drift of the stream's view) and
 * /api/v1/tenant_quotas. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_clock.h"
#include "kv_fetch.h"
#include "kv_log.h"
#include "kv_master_metrics.h"
#include "kv_source.h"
#include "kv_master_poller.h"

static const char *u64s(char *buf, size_t n, uint64_t v)
{
	snprintf(buf, n, "%llu", (unsigned long long)v);
	return buf;
}

static void log_outcome(const kv_member *mb, const kv_master *before, const kv_master *after, enum kv_poll_error err,
			long http, uint64_t tail, kv_ratelimit *rl)
{
	const kv_source *s = mb->src;
	char a[24], b[24], c[24], d[24];
	/* log changes of state, not every failed poll: a dead master must not
	 * turn into an error storm */
	if (after->standby && !before->standby)
		kv_log(KV_LOG_INFO, "master is a standby (503)", "source", s->cfg->name, "url", mb->cfg->status, NULL);
	else if (!after->up && (before->up || !before->polled))
		kv_log(KV_LOG_WARN, "master status poll failed", "source", s->cfg->name, "url", mb->cfg->status,
		       "reason", kv_poll_error_name(err), "http_status", u64s(a, sizeof(a), (uint64_t)http), NULL);
	else if (after->up && !after->standby && (!before->up || before->standby))
		kv_log(KV_LOG_INFO, "master status poll ok", "source", s->cfg->name, "url", mb->cfg->status, NULL);

	const kv_loss *l0 = &before->loss, *l1 = &after->loss;
	unsigned held;
	if (l1->restarts != l0->restarts && kv_ratelimit_allow(rl, kv_now(), &held))
		kv_log(KV_LOG_WARN, "publisher restarted", "source", s->cfg->name, "url", mb->cfg->status, "restarts",
		       u64s(a, sizeof(a), l1->restarts - l0->restarts), NULL);
	if (tail && kv_ratelimit_allow(rl, kv_now(), &held))
		kv_log(KV_LOG_WARN, "lost the tail of the stream", "source", s->cfg->name, "missing",
		       u64s(a, sizeof(a), tail), "master_last_sequence", u64s(b, sizeof(b), after->last_sequence),
		       NULL);
	if ((l1->queue != l0->queue || l1->transport != l0->transport || l1->unattributed != l0->unattributed) &&
	    kv_ratelimit_allow(rl, kv_now(), &held))
		kv_log(KV_LOG_WARN, "missing sequence numbers attributed", "source", s->cfg->name, "queue",
		       u64s(a, sizeof(a), l1->queue - l0->queue), "transport",
		       u64s(b, sizeof(b), l1->transport - l0->transport), "unattributed",
		       u64s(c, sizeof(c), l1->unattributed - l0->unattributed), "suppressed", u64s(d, sizeof(d), held),
		       NULL);
}

struct urls {
	char status[2048], keys[2048], ha[2048], leader[2048], quotas[2048];
};

static bool into_reader(const void *p, size_t n, void *ctx)
{
	return kv_metrics_reader_feed(ctx, p, n) == KV_OK;
}

/* The leader's /metrics, read as it arrives: its key count (kept in
 * kv_master, and compared with the stream's view: drift, see the
 * reconciler) and the puts it refused for a tenant's quota. */
static void poll_metrics(kv_member *m, kv_fetch *f, const struct urls *u, kv_metrics_reader *r)
{
	kv_source *s = m->src;
	long http;
	kv_metrics_reader_reset(r);
	enum kv_poll_error err = kv_fetch_stream(f, u->keys, into_reader, r, &http);
	if (err == KV_POLL_OK)
		err = kv_metrics_reader_end(r);
	pthread_mutex_lock(&s->lock);
	kv_master_record_keys(&m->master, err, r->keys);
	atomic_store(&s->drifting, kv_drift_observe(&s->drift, err == KV_POLL_OK, r->keys, s->state));
	if (err == KV_POLL_OK) { /* the new answer in, the old one's memory to the reader */
		kv_quota_rejects t = s->rejects;
		s->rejects = r->rejects;
		r->rejects = t;
	}
	pthread_mutex_unlock(&s->lock);
}

/* The tenant quotas, from the serving member: 409 says quotas are off on
 * that master (said once in the log, nothing exported), 503 that it no
 * longer serves (nothing to say). */
static bool into_quotas(const void *p, size_t n, void *ctx)
{
	return kv_quotas_reader_feed(ctx, p, n) == KV_OK;
}

static void poll_quotas(kv_member *m, kv_fetch *f, const struct urls *u, kv_quotas_reader *r)
{
	kv_source *s = m->src;
	long http;
	kv_quotas_reader_reset(r);
	enum kv_poll_error err = kv_fetch_stream(f, u->quotas, into_quotas, r, &http);
	if (http == 503)
		return;
	pthread_mutex_lock(&s->lock);
	enum kv_quota_mode was = s->quotas.mode;
	if (http == 409) {
		kv_quotas_free(&s->quotas);
		s->quotas.mode = KV_QUOTAS_OFF;
	} else {
		if (err == KV_POLL_OK) /* read outside the lock; swapped in under it */
			err = kv_quotas_reader_end(r, &s->quotas);
		if (err != KV_POLL_OK)
			s->quota_errors[err]++;
	}
	enum kv_quota_mode now = s->quotas.mode;
	pthread_mutex_unlock(&s->lock);
	if (now == KV_QUOTAS_OFF && was != KV_QUOTAS_OFF)
		kv_log(KV_LOG_INFO, "tenant quotas are not enabled on the master (409): none exported", "source",
		       s->cfg->name, "url", m->cfg->status, NULL);
}

/* What /ha_status and /leader say of the member: state KV_HA_UNKNOWN when
 * it has no /ha_status (404: a master without HA), else a failure counted. */
static void poll_ha(kv_member *m, kv_fetch *f, const struct urls *u, kv_ha_obs *o)
{
	long http;
	enum kv_poll_error err = kv_fetch_get(f, u->ha, &http);
	o->state = KV_HA_UNKNOWN;
	if (err == KV_POLL_OK)
		err = kv_ha_parse_state(kv_buf_str(&f->body), f->body.len, &o->state);
	if (err == KV_POLL_OK && (err = kv_fetch_get(f, u->leader, &http)) == KV_POLL_OK)
		err = kv_ha_parse_leader(kv_buf_str(&f->body), f->body.len, &o->has_view, &o->view_version);
	if (err != KV_POLL_OK && http != 404) {
		pthread_mutex_lock(&m->src->lock);
		m->ha_errors[err]++;
		pthread_mutex_unlock(&m->src->lock);
	}
}

static void log_ha(const kv_member *m, unsigned news, const kv_leadership *h)
{
	const char *name = m->src->cfg->name;
	char v[24];
	snprintf(v, sizeof(v), "%llu", (unsigned long long)h->view);
	const char *leader = h->leader >= 0 && m->src->members[h->leader].cfg->label
				     ? m->src->members[h->leader].cfg->label
				     : "none";
	if (news & KV_LEAD_FAILOVER)
		kv_log(KV_LOG_WARN, "master failover: tenants stale until reconciled", "source", name, "leader", leader,
		       "view_version", v, NULL);
	if (news & KV_LEAD_SPLIT)
		kv_log(KV_LOG_ERROR, "split brain: several masters serve at once", "source", name, "also",
		       m->cfg->label ? m->cfg->label : "", NULL);
	if (news & KV_LEAD_DROPPED)
		kv_log(KV_LOG_INFO, "the master stands by: its tenant figures are dropped until it serves", "source",
		       name, NULL);
	if (news & KV_LEAD_RESUMED)
		kv_log(KV_LOG_INFO, "the master serves again: tenant figures start afresh", "source", name, NULL);
}

void *kv_master_poller_main(void *arg)
{
	kv_member *m = arg;
	kv_source *s = m->src;
	const kv_config *c = s->config;
	struct urls u;
	snprintf(u.status, sizeof(u.status), "%s/kv_events/status", m->cfg->status);
	snprintf(u.keys, sizeof(u.keys), "%s/metrics", m->cfg->status);
	snprintf(u.ha, sizeof(u.ha), "%s/ha_status", m->cfg->status);
	snprintf(u.leader, sizeof(u.leader), "%s/leader", m->cfg->status);
	snprintf(u.quotas, sizeof(u.quotas), "%s/api/v1/tenant_quotas", m->cfg->status);
	kv_fetch f;
	kv_metrics_reader metrics;
	kv_metrics_reader_init(&metrics, 4 * c->max_tenants); /* a few reasons per tenant */
	kv_quotas_reader quotas;
	kv_quotas_reader_init(&quotas, c->max_tenants);
	if (kv_fetch_init(&f, c->poll_timeout, c->max_status_bytes) != KV_OK) {
		kv_log(KV_LOG_ERROR, "curl_easy_init failed", "source", s->cfg->name, NULL);
		kv_fetch_free(&f);
		kv_metrics_reader_free(&metrics);
		kv_quotas_reader_free(&quotas);
		return NULL;
	}
	kv_ratelimit rl = KV_RATELIMIT(60.0, 10);
	double next = kv_now();
	while (!atomic_load(s->stop)) {
		kv_stream_pos pos;
		pthread_mutex_lock(&s->lock);
		kv_stream_position(m->stream, &pos);
		pthread_mutex_unlock(&s->lock);

		double t0 = kv_now();
		long http;
		enum kv_poll_error err = kv_fetch_get(&f, u.status, &http);
		double t1 = kv_now();
		kv_master_status st;
		if (err == KV_POLL_OK)
			err = kv_master_parse(kv_buf_str(&f.body), f.body.len, &st);

		kv_ha_obs o = {.answered = http == 200 || http == 503};
		if (o.answered) /* a dead master is not asked twice more */
			poll_ha(m, &f, &u, &o);
		o.serving = o.state != KV_HA_UNKNOWN ? o.state == KV_HA_SERVING : http == 200;

		uint64_t tail = 0;
		pthread_mutex_lock(&s->lock);
		kv_state_set_now(s->state, (int64_t)(t1 * 1000)); /* for the losses and failovers it marks */
		kv_master before = m->master;
		kv_master_record(&m->master, t1, t1 - t0, err, http, err == KV_POLL_OK ? &st : NULL, &pos);
		int seen = kv_master_publisher_seen(err, http, err == KV_POLL_OK ? &st : NULL);
		if (seen >= 0) /* where its next publisher starts (issue 21) */
			kv_stream_publisher_seen(m->stream, seen);
		enum kv_dialect_news dnews = KV_DIALECT_SAME;
		if (err == KV_POLL_OK) {
			dnews = kv_dialect_observe(&m->dialect, st.dialect,
						   kv_stream_stats_of(m->stream)->messages > 0);
			kv_member_dialect_news(m, dnews);
			/* the stream now, to tell a tail that is not coming */
			uint64_t upto_seq, upto_eid;
			kv_stream_position(m->stream, &pos);
			if (kv_master_tail(&m->master, &pos, t1, c->poll_interval, &upto_seq, &upto_eid))
				tail = kv_stream_tail_lost(m->stream, upto_seq, upto_eid);
		}
		kv_master after = m->master;
		kv_dialect_choice dialect = m->dialect;
		unsigned news = kv_leadership_observe(&s->leadership, s->roles, s->n_members, (size_t)(m - s->members),
						      &o, m->master.standby, s->state);
		kv_leadership ha = s->leadership;
		bool leads = err == KV_POLL_OK && o.serving && ha.leader >= 0 && &s->members[ha.leader] == m;
		pthread_mutex_unlock(&s->lock);
		log_outcome(m, &before, &after, err, http, tail, &rl);
		log_ha(m, news, &ha);
		kv_member_log_dialect(m, dnews, &dialect);
		if (leads) {
			poll_metrics(m, &f, &u, &metrics);
			poll_quotas(m, &f, &u, &quotas);
		}

		next += c->poll_interval;
		if (next < kv_now()) /* a slow poll: do not try to catch up */
			next = kv_now() + c->poll_interval;
		if (kv_sleep_until_woken(s->stop, &m->poll_now, next)) /* ingest waits for an answer */
			next = kv_now();
	}
	kv_fetch_free(&f);
	kv_metrics_reader_free(&metrics);
	kv_quotas_reader_free(&quotas);
	return NULL;
}
