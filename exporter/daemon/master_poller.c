/* SPDX-License-Identifier: Apache-2.0 */
/* The poller of one member: every --master.poll-interval, over one reused
 * connection, GET <url>/kv_events/status, /ha_status and /leader, and from
 * the serving member only /metrics and /api/v1/tenant_quotas, each handed
 * to the core's store (mooncake_kv/store.h says what it makes of them);
 * this file fetches, holds the lock and logs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_clock.h"
#include "kv_fetch.h"
#include "kv_log.h"
#include "kv_source.h"
#include "kv_master_poller.h"

static const char *u64s(char *buf, size_t n, uint64_t v)
{
	snprintf(buf, n, "%llu", (unsigned long long)v);
	return buf;
}

static void log_outcome(const kvd_member *mb, const mkv_poll_news *n, kvd_ratelimit *rl)
{
	const kvd_source *s = mb->src;
	char a[24], b[24], c[24], d[24];
	if (n->change == MKV_POLL_BECAME_STANDBY)
		kvd_log(KVD_LOG_INFO, "master is a standby (503)", "source", s->cfg->name, "url", mb->cfg->status,
			NULL);
	else if (n->change == MKV_POLL_FAILED)
		kvd_log(KVD_LOG_WARN, "master status poll failed", "source", s->cfg->name, "url", mb->cfg->status,
			"reason", mkv_poll_error_name((enum mkv_poll_error)n->err), "http_status",
			u64s(a, sizeof(a), (uint64_t)n->http), NULL);
	else if (n->change == MKV_POLL_RECOVERED)
		kvd_log(KVD_LOG_INFO, "master status poll ok", "source", s->cfg->name, "url", mb->cfg->status, NULL);

	unsigned held;
	if (n->restarts && kvd_ratelimit_allow(rl, kvd_now(), &held))
		kvd_log(KVD_LOG_WARN, "publisher restarted", "source", s->cfg->name, "url", mb->cfg->status, "restarts",
			u64s(a, sizeof(a), n->restarts), NULL);
	if (n->tail && kvd_ratelimit_allow(rl, kvd_now(), &held))
		kvd_log(KVD_LOG_WARN, "lost the tail of the stream", "source", s->cfg->name, "missing",
			u64s(a, sizeof(a), n->tail), "master_last_sequence", u64s(b, sizeof(b), n->last_sequence),
			NULL);
	if ((n->queue || n->transport || n->unattributed) && kvd_ratelimit_allow(rl, kvd_now(), &held))
		kvd_log(KVD_LOG_WARN, "missing sequence numbers attributed", "source", s->cfg->name, "queue",
			u64s(a, sizeof(a), n->queue), "transport", u64s(b, sizeof(b), n->transport), "unattributed",
			u64s(c, sizeof(c), n->unattributed), "suppressed", u64s(d, sizeof(d), held), NULL);
}

struct urls {
	char status[KVD_URL_MAX + KVD_URL_PATH_MAX], keys[KVD_URL_MAX + KVD_URL_PATH_MAX],
		ha[KVD_URL_MAX + KVD_URL_PATH_MAX], leader[KVD_URL_MAX + KVD_URL_PATH_MAX],
		quotas[KVD_URL_MAX + KVD_URL_PATH_MAX];
};

/* A read of the leader's /metrics or quotas: counted by the store every
 * time it fails, told here when reads start failing and when they recover. */
static void log_read(const kvd_member *m, const char *url, const mkv_read_news *n)
{
	char a[24];
	if (n->change == MKV_POLL_FAILED)
		kvd_log(KVD_LOG_WARN, "master read failed: its last good answer stands", "source", m->src->cfg->name,
			"url", url, "reason", mkv_poll_error_name(n->err), NULL);
	else if (n->change == MKV_POLL_RECOVERED)
		kvd_log(KVD_LOG_INFO, "master read ok", "source", m->src->cfg->name, "url", url, NULL);
	if (n->evicted)
		kvd_log(KVD_LOG_WARN, "the master evicted objects for a tenant's quota without events: tenants stale",
			"source", m->src->cfg->name, "tenants", u64s(a, sizeof(a), n->evicted), NULL);
	if (n->quotas_off)
		kvd_log(KVD_LOG_INFO, "tenant quotas are not enabled on the master (409): none exported", "source",
			m->src->cfg->name, "url", m->cfg->status, NULL);
}

static bool into_metrics(const void *p, size_t n, void *ctx)
{
	kvd_member *m = ctx;
	return mkv_store_metrics_feed(m->src->store, m->index, p, n) == MKV_OK;
}

/* The leader's /metrics, read as it arrives (the member's own reader: no
 * lock), applied under the lock. */
static void poll_metrics(kvd_member *m, kvd_fetch *f, const struct urls *u)
{
	kvd_source *s = m->src;
	long http;
	mkv_store_metrics_reset(s->store, m->index);
	enum mkv_poll_error err = kvd_fetch_stream(f, u->keys, into_metrics, m, &http);
	mkv_read_news news;
	pthread_mutex_lock(&s->lock);
	mkv_store_metrics_end(s->store, m->index, err, &news);
	pthread_mutex_unlock(&s->lock);
	log_read(m, u->keys, &news);
}

static bool into_quotas(const void *p, size_t n, void *ctx)
{
	kvd_member *m = ctx;
	return mkv_store_quotas_feed(m->src->store, m->index, p, n) == MKV_OK;
}

/* The tenant quotas, from the serving member: 409 says quotas are off on
 * that master (said once in the log, nothing exported). */
static void poll_quotas(kvd_member *m, kvd_fetch *f, const struct urls *u)
{
	kvd_source *s = m->src;
	long http;
	mkv_store_quotas_reset(s->store, m->index);
	enum mkv_poll_error err = kvd_fetch_stream(f, u->quotas, into_quotas, m, &http);
	mkv_read_news news;
	pthread_mutex_lock(&s->lock);
	mkv_store_quotas_end(s->store, m->index, err, http, &news);
	pthread_mutex_unlock(&s->lock);
	log_read(m, u->quotas, &news);
}

/* GETs url into *a; its body stays in f->body until the next fetch on f. */
static void fetch_into(kvd_fetch *f, const char *url, mkv_answer *a, mkv_buf *keep)
{
	a->err = kvd_fetch_get(f, url, &a->http);
	mkv_buf_reset(keep);
	mkv_buf_add(keep, f->body.data, f->body.len);
	a->body = mkv_buf_str(keep);
	a->len = keep->len;
	if (!mkv_buf_ok(keep) && a->err == MKV_POLL_OK)
		a->err = MKV_POLL_NO_MEMORY;
}

static const char *member_label(const kvd_source *s, int i)
{
	return i >= 0 && s->members[i].cfg->label ? s->members[i].cfg->label : "none";
}

static void log_ha(const kvd_member *m, const mkv_poll_news *n)
{
	const char *name = m->src->cfg->name;
	char v[24];
	snprintf(v, sizeof(v), "%llu", (unsigned long long)n->view);
	if (n->failover_told)
		kvd_log(KVD_LOG_WARN, "master failover: tenants stale until reconciled", "source", name, "new_leader",
			member_label(m->src, n->leader), "old_leader", member_label(m->src, n->failover_from),
			"view_version", v, NULL);
	if (n->leadership & MKV_LEAD_SPLIT)
		kvd_log(KVD_LOG_ERROR, "split brain: several masters serve at once", "source", name, "also",
			m->cfg->label ? m->cfg->label : "", NULL);
	if (n->leadership & MKV_LEAD_DROPPED)
		kvd_log(KVD_LOG_INFO, "the master stands by: its tenant figures are dropped until it serves", "source",
			name, NULL);
	if (n->leadership & MKV_LEAD_RESUMED)
		kvd_log(KVD_LOG_INFO, "the master serves again: tenant figures start afresh", "source", name, NULL);
	if (n->ha_change == MKV_POLL_FAILED)
		kvd_log(KVD_LOG_WARN, "master HA read failed (/ha_status or /leader): its leadership is not known",
			"source", name, "url", m->cfg->status, "reason", mkv_poll_error_name(n->ha_err), NULL);
	else if (n->ha_change == MKV_POLL_RECOVERED)
		kvd_log(KVD_LOG_INFO, "master HA read ok", "source", name, "url", m->cfg->status, NULL);
}

void *kvd_master_poller_main(void *arg)
{
	kvd_member *m = arg;
	kvd_source *s = m->src;
	const kvd_config *c = s->config;
	struct urls u;
	snprintf(u.status, sizeof(u.status), "%s/kv_events/status", m->cfg->status);
	snprintf(u.keys, sizeof(u.keys), "%s/metrics", m->cfg->status);
	snprintf(u.ha, sizeof(u.ha), "%s/ha_status", m->cfg->status);
	snprintf(u.leader, sizeof(u.leader), "%s/leader", m->cfg->status);
	snprintf(u.quotas, sizeof(u.quotas), "%s/api/v1/tenant_quotas", m->cfg->status);
	kvd_fetch f;
	mkv_buf bodies[3]; /* the status, HA and leader answers of one poll */
	for (int i = 0; i < 3; i++)
		mkv_buf_init(&bodies[i]);
	if (kvd_fetch_init(&f, c->poll_timeout, c->max_status_bytes) != MKV_OK) {
		kvd_log(KVD_LOG_ERROR, "curl_easy_init failed", "source", s->cfg->name, NULL);
		kvd_fetch_free(&f);
		return NULL;
	}
	kvd_ratelimit rl = KVD_RATELIMIT(60.0, 10);
	double next = kvd_mono(); /* rounds fall due on the monotonic clock: a wall clock stepped back stretches none */
	while (!atomic_load(s->stop)) {
		pthread_mutex_lock(&s->lock);
		mkv_store_poll_begin(s->store, m->index);
		pthread_mutex_unlock(&s->lock);

		mkv_poll_answers a = {.interval = c->poll_interval,
				      .ha = {.err = MKV_POLL_CONNECT},
				      .leader = {.err = MKV_POLL_CONNECT}};
		a.t0 = kvd_now();
		fetch_into(&f, u.status, &a.status, &bodies[0]);
		a.t1 = kvd_now();
		if (a.status.http == 200 || a.status.http == 503) { /* a dead master is not asked twice more */
			fetch_into(&f, u.ha, &a.ha, &bodies[1]);
			if (a.ha.err == MKV_POLL_OK)
				fetch_into(&f, u.leader, &a.leader, &bodies[2]);
		}

		mkv_poll_news news;
		pthread_mutex_lock(&s->lock);
		mkv_store_poll_answers(s->store, m->index, &a, &news);
		if (news.dialect_news != MKV_DIALECT_SAME) /* decided: an ingest thread may wait for it */
			pthread_cond_broadcast(&s->decided);
		pthread_mutex_unlock(&s->lock);
		log_outcome(m, &news, &rl);
		if (news.proved_empty)
			kvd_log(KVD_LOG_INFO,
				"the master's store is empty before its publisher's first message: every tenant "
				"exact from here",
				"source", s->cfg->name, "url", m->cfg->status, NULL);
		log_ha(m, &news);
		kvd_member_log_dialect(m, news.dialect_news, &news.dialect);
		if (news.leads) {
			poll_metrics(m, &f, &u);
			poll_quotas(m, &f, &u);
		}

		next += c->poll_interval;
		if (next < kvd_mono()) /* a slow poll: do not try to catch up */
			next = kvd_mono() + c->poll_interval;
		if (kvd_source_wait(s, &m->poll_now, next - kvd_mono())) /* ingest waits for an answer */
			next = kvd_mono();
	}
	kvd_fetch_free(&f);
	for (int i = 0; i < 3; i++)
		mkv_buf_free(&bodies[i]);
	return NULL;
}
