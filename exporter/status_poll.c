/* The libcurl shell around kv_master: one easy handle per source, reused so
 * the connection stays open, polled every --master.poll-interval. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>

#include "kv_buf.h"
#include "kv_clock.h"
#include "kv_log.h"
#include "kv_source.h"
#include "kv_status_poll.h"

struct body {
	kv_buf buf;
	size_t limit;
	bool too_large;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t len = size * n;
	if (b->buf.len + len > b->limit) {
		b->too_large = true;
		return 0; /* a short count aborts the transfer */
	}
	kv_buf_add(&b->buf, p, len);
	return kv_buf_ok(&b->buf) ? len : 0;
}

static enum kv_poll_error classify(CURLcode rc, const struct body *b)
{
	if (b->too_large)
		return KV_POLL_BODY_TOO_LARGE;
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return KV_POLL_TIMEOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_SSL_CONNECT_ERROR:
		return KV_POLL_CONNECT;
	default:
		/* the peer closed or spoke something other than HTTP: what came
		 * back cannot be read */
		return rc == CURLE_GOT_NOTHING || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ? KV_POLL_CONNECT
												   : KV_POLL_PARSE;
	}
}

/* Sleeps until `until` (unix seconds) or the stop flag, in short steps. */
static void wait_until(const kv_source *s, double until)
{
	while (!atomic_load(s->stop)) {
		double left = until - kv_now();
		if (left <= 0)
			return;
		if (left > 0.05)
			left = 0.05;
		struct timespec ts = {0, (long)(left * 1e9)};
		nanosleep(&ts, NULL);
	}
}

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

void *kv_status_poll_main(void *arg)
{
	kv_source *s = arg;
	const kv_config *c = s->config;
	char url[2048];
	snprintf(url, sizeof(url), "%s/kv_events/status", s->cfg->status);
	CURL *h = curl_easy_init();
	if (!h) {
		kv_log(KV_LOG_ERROR, "curl_easy_init failed", "source", s->cfg->name, NULL);
		return NULL;
	}
	struct body b = {.limit = c->max_status_bytes};
	kv_buf_init(&b.buf);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(c->poll_timeout * 1000));
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(c->poll_timeout * 1000));
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "mooncake-kv-exporter");
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);

	kv_ratelimit rl = KV_RATELIMIT(60.0, 10);
	double next = kv_now();
	while (!atomic_load(s->stop)) {
		kv_buf_reset(&b.buf);
		b.too_large = false;

		kv_stream_pos pos;
		pthread_mutex_lock(&s->lock);
		kv_stream_position(s->stream, &pos);
		pthread_mutex_unlock(&s->lock);

		double t0 = kv_now();
		CURLcode rc = curl_easy_perform(h);
		double t1 = kv_now();
		long http = 0;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http);

		enum kv_poll_error err = KV_POLL_OK;
		kv_master_status st;
		if (rc != CURLE_OK)
			err = classify(rc, &b);
		else if (http != 200)
			err = KV_POLL_HTTP_STATUS;
		else
			err = kv_master_parse(b.buf.data ? b.buf.data : "", b.buf.len, &st);
		if (rc != CURLE_OK)
			http = 0;

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

		next += c->poll_interval;
		if (next < kv_now()) /* a slow poll: do not try to catch up */
			next = kv_now() + c->poll_interval;
		wait_until(s, next);
	}
	kv_buf_free(&b.buf);
	curl_easy_cleanup(h);
	return NULL;
}
