/* The poller: every --master.poll-interval, GET <url>/kv_events/status
 * (kv_master: restarts, loss by cause, a lost tail) and GET <url>/metrics
 * for master_key_count (the drift of the stream's view), over one reused
 * connection. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_clock.h"
#include "kv_fetch.h"
#include "kv_log.h"
#include "kv_promtext.h"
#include "kv_source.h"
#include "kv_status_poll.h"

#define DRIFT_POLLS 3 /* polls in a row before a difference counts as drift */

static const char *u64s(char *buf, size_t n, uint64_t v)
{
	snprintf(buf, n, "%llu", (unsigned long long)v);
	return buf;
}

static void log_outcome(const kv_source *s, const kv_master *before, const kv_master *after, enum kv_poll_error err,
			long http, uint64_t tail, kv_ratelimit *rl)
{
	char a[24], b[24], c[24], d[24];
	/* log changes of state, not every failed poll: a dead master must not
	 * turn into an error storm */
	if (after->standby && !before->standby)
		kv_log(KV_LOG_INFO, "master is a standby (503)", "source", s->cfg->name, NULL);
	else if (!after->up && (before->up || !before->polled))
		kv_log(KV_LOG_WARN, "master status poll failed", "source", s->cfg->name, "url", s->cfg->status,
		       "reason", kv_poll_error_name(err), "http_status", u64s(a, sizeof(a), (uint64_t)http), NULL);
	else if (after->up && !after->standby && (!before->up || before->standby))
		kv_log(KV_LOG_INFO, "master status poll ok", "source", s->cfg->name, NULL);

	const kv_loss *l0 = &before->loss, *l1 = &after->loss;
	unsigned held;
	if (l1->restarts != l0->restarts && kv_ratelimit_allow(rl, kv_now(), &held))
		kv_log(KV_LOG_WARN, "publisher restarted", "source", s->cfg->name, "restarts",
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

/* Objects of the source, and whether all of them are in tenant `default`
 * of one backend (the only tenant the master's listing covers). */
static uint64_t source_objects(const kv_stream *st, bool *all_default)
{
	const kv_state *state = kv_stream_state(st);
	uint64_t n = 0;
	*all_default = true;
	for (size_t i = 0; i < kv_state_tenant_count(state); i++) {
		const kv_tenant *t = kv_state_tenant_at(state, i);
		uint64_t o = kv_tenant_objects(t);
		n += o;
		if (o && (t->tenant_len != 7 || memcmp(t->tenant_id, "default", 7)))
			*all_default = false;
	}
	return n;
}

/* The master's key count: kept in kv_master, and compared with the
 * stream's view (drift: see the reconciler). */
static void poll_keys(kv_source *s, kv_fetch *f, const char *url)
{
	long http;
	double keys = 0;
	enum kv_poll_error err = kv_fetch_get(f, url, &http);
	if (err == KV_POLL_OK &&
	    kv_promtext_sum(f->body.data ? f->body.data : "", f->body.len, "master_key_count", &keys) != KV_OK)
		err = KV_POLL_FIELD;
	pthread_mutex_lock(&s->lock);
	kv_master_record_keys(&s->master, err, keys);
	bool all_default;
	double objects = (double)source_objects(s->stream, &all_default);
	bool apart = err == KV_POLL_OK && all_default && fabs(objects - keys) > fmax(16, keys / 100);
	s->drift_polls = apart ? s->drift_polls + 1 : 0;
	pthread_mutex_unlock(&s->lock);
	atomic_store(&s->drift, s->drift_polls >= DRIFT_POLLS);
}

void *kv_status_poll_main(void *arg)
{
	kv_source *s = arg;
	const kv_config *c = s->config;
	char url[2048], keys_url[2048];
	snprintf(url, sizeof(url), "%s/kv_events/status", s->cfg->status);
	snprintf(keys_url, sizeof(keys_url), "%s/metrics", s->cfg->status);
	kv_fetch f;
	if (kv_fetch_init(&f, c->poll_timeout, c->max_status_bytes) != KV_OK) {
		kv_log(KV_LOG_ERROR, "curl_easy_init failed", "source", s->cfg->name, NULL);
		kv_fetch_free(&f);
		return NULL;
	}
	kv_ratelimit rl = KV_RATELIMIT(60.0, 10);
	double next = kv_now();
	while (!atomic_load(s->stop)) {
		kv_stream_pos pos;
		pthread_mutex_lock(&s->lock);
		kv_stream_position(s->stream, &pos);
		pthread_mutex_unlock(&s->lock);

		double t0 = kv_now();
		long http;
		enum kv_poll_error err = kv_fetch_get(&f, url, &http);
		double t1 = kv_now();
		kv_master_status st;
		if (err == KV_POLL_OK)
			err = kv_master_parse(f.body.data ? f.body.data : "", f.body.len, &st);

		uint64_t tail = 0;
		pthread_mutex_lock(&s->lock);
		kv_master before = s->master;
		kv_master_record(&s->master, t1, t1 - t0, err, http, err == KV_POLL_OK ? &st : NULL, &pos);
		if (err == KV_POLL_OK) {
			/* the stream now, to tell a tail that is not coming */
			uint64_t upto_seq, upto_eid;
			kv_stream_position(s->stream, &pos);
			if (kv_master_tail(&s->master, &pos, t1, c->poll_interval + pos.last_lag, &upto_seq, &upto_eid))
				tail = kv_stream_tail_lost(s->stream, upto_seq, upto_eid);
		}
		kv_master after = s->master;
		pthread_mutex_unlock(&s->lock);
		log_outcome(s, &before, &after, err, http, tail, &rl);
		if (err == KV_POLL_OK)
			poll_keys(s, &f, keys_url);

		next += c->poll_interval;
		if (next < kv_now()) /* a slow poll: do not try to catch up */
			next = kv_now() + c->poll_interval;
		kv_sleep_until(s->stop, next);
	}
	kv_fetch_free(&f);
	return NULL;
}
