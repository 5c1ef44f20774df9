/* The ZMQ shell around kv_stream: one SUB socket and one monitor socket,
 * set up by kv_source_init (so that a bad endpoint fails at start-up) and
 * then owned by the ingest thread, polled with a short timeout so that a
 * stop is noticed within 100 ms. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "kv_clock.h"
#include "kv_log.h"
#include "kv_reconcile.h"
#include "kv_source.h"
#include "kv_status_poll.h"

#define POLL_MS          100
#define MAX_FRAMES       4 /* frames kept of a message; more are counted and dropped */
#define DRAIN_PER_WAKEUP 256
/* A busy streak this long (messages from a wake-up until the socket is
 * empty) has left freed message buffers in the allocator's arenas: hand
 * them back (docs/performance.md, "Memory after a burst"). */
#define TRIM_AFTER_MESSAGES 1024

static int setopt_int(void *sock, int opt, int v)
{
	return zmq_setsockopt(sock, opt, &v, sizeof(v));
}

static void close_sockets(kv_source *s)
{
	if (s->sub)
		zmq_socket_monitor(s->sub, NULL, 0);
	if (s->mon)
		zmq_close(s->mon);
	if (s->sub)
		zmq_close(s->sub);
	s->sub = s->mon = NULL;
}

/* Returns 0, or KV_EINVAL with the failed step and ZMQ's reason in err. */
static int open_sockets(kv_source *s, void *zctx, char *err, size_t errlen)
{
	const kv_config *c = s->config;
	const char *step = "create a socket for";
	char mon_ep[128];
	int64_t maxmsg = c->zmq_max_message_size;
	if (!(s->sub = zmq_socket(zctx, ZMQ_SUB)))
		goto fail;
	step = "set the socket options for";
	if (zmq_setsockopt(s->sub, ZMQ_SUBSCRIBE, "", 0) || setopt_int(s->sub, ZMQ_LINGER, 0) ||
	    setopt_int(s->sub, ZMQ_RCVHWM, c->zmq_rcvhwm) ||
	    zmq_setsockopt(s->sub, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg)) ||
	    setopt_int(s->sub, ZMQ_RECONNECT_IVL, 100) || setopt_int(s->sub, ZMQ_RECONNECT_IVL_MAX, 5000) ||
	    setopt_int(s->sub, ZMQ_HEARTBEAT_IVL, 5000) || setopt_int(s->sub, ZMQ_HEARTBEAT_TIMEOUT, 15000))
		goto fail;
	step = "monitor the connection to";
	snprintf(mon_ep, sizeof(mon_ep), "inproc://monitor-%s", s->cfg->name);
	if (zmq_socket_monitor(s->sub, mon_ep, ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) ||
	    !(s->mon = zmq_socket(zctx, ZMQ_PAIR)) || setopt_int(s->mon, ZMQ_LINGER, 0) || zmq_connect(s->mon, mon_ep))
		goto fail;
	step = "connect to";
	if (zmq_connect(s->sub, s->cfg->zmq))
		goto fail;
	return KV_OK;
fail:
	snprintf(err, errlen, "source \"%s\": cannot %s %s: %s", s->cfg->name, step, s->cfg->zmq,
		 zmq_strerror(zmq_errno()));
	close_sockets(s);
	return KV_EINVAL;
}

int kv_source_init(kv_source *s, const kv_config *cfg, const kv_source_cfg *src, void *zctx, kv_budget *budget,
		   uint64_t seed, const atomic_bool *stop, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	s->cfg = src;
	s->config = cfg;
	s->stop = stop;
	atomic_init(&s->connected, false);
	atomic_init(&s->ever_connected, false);
	atomic_init(&s->backlog, 0);
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		snprintf(err, errlen, "source \"%s\": cannot create a mutex", src->name);
		return KV_ENOMEM;
	}
	int rc = KV_ENOMEM;
	const kv_keygroup_re *re = kv_config_keygroups(cfg, src);
	if (!(s->stream = kv_stream_new(budget, seed)) || (re && kv_stream_set_keygroups(s->stream, re) != KV_OK))
		snprintf(err, errlen, "source \"%s\": out of memory", src->name);
	else
		rc = open_sockets(s, zctx, err, errlen);
	if (rc != KV_OK) {
		kv_stream_free(s->stream);
		pthread_mutex_destroy(&s->lock);
		memset(s, 0, sizeof(*s));
	}
	return rc;
}

static void on_monitor_event(kv_source *s)
{
	zmq_msg_t m;
	zmq_msg_init(&m);
	if (zmq_msg_recv(&m, s->mon, ZMQ_DONTWAIT) < 0) {
		zmq_msg_close(&m);
		return;
	}
	uint16_t event = 0;
	if (zmq_msg_size(&m) >= 6)
		memcpy(&event, zmq_msg_data(&m), sizeof(event));
	while (zmq_msg_more(&m)) { /* the endpoint frame */
		zmq_msg_close(&m);
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, s->mon, 0) < 0)
			break;
	}
	zmq_msg_close(&m);

	if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
		bool again = atomic_exchange(&s->ever_connected, true);
		atomic_store(&s->connected, true);
		if (again) {
			pthread_mutex_lock(&s->lock);
			kv_stream_reconnected(s->stream);
			pthread_mutex_unlock(&s->lock);
		}
		kv_log(KV_LOG_INFO, again ? "reconnected to the publisher" : "connected to the publisher", "source",
		       s->cfg->name, "endpoint", s->cfg->zmq, NULL);
	} else if (event == ZMQ_EVENT_DISCONNECTED) {
		atomic_store(&s->connected, false);
		pthread_mutex_lock(&s->lock);
		kv_stream_disconnected(s->stream);
		pthread_mutex_unlock(&s->lock);
		kv_log(KV_LOG_WARN, "disconnected from the publisher", "source", s->cfg->name, "endpoint", s->cfg->zmq,
		       NULL);
	}
}

/* Called without the lock: a slow stderr must not hold up scrapes. */
static void log_rejection(const kv_source *s, enum kv_reason r, uint64_t seq, kv_ratelimit *rl)
{
	unsigned held;
	if (!kv_ratelimit_allow(rl, kv_now(), &held))
		return;
	char seqs[24], sup[16];
	snprintf(seqs, sizeof(seqs), "%llu", (unsigned long long)seq);
	snprintf(sup, sizeof(sup), "%u", held);
	kv_log(KV_LOG_WARN, "rejected input", "source", s->cfg->name, "reason", kv_reason_name(r), "seq", seqs,
	       "suppressed", sup, NULL);
}

/* A gap or a reset, once per message, rate-limited; the poller logs the
 * cause once the master's counters have been compared. */
static void log_break(const kv_source *s, const kv_ingest_report *rep, kv_ratelimit *rl)
{
	unsigned held;
	if (!kv_ratelimit_allow(rl, kv_now(), &held))
		return;
	char prev[24], seq[24], missing[24], sup[16];
	snprintf(prev, sizeof(prev), "%llu", (unsigned long long)rep->prev_seq);
	snprintf(seq, sizeof(seq), "%llu", (unsigned long long)rep->seq);
	snprintf(missing, sizeof(missing), "%llu", (unsigned long long)rep->missing);
	snprintf(sup, sizeof(sup), "%u", held);
	kv_log(KV_LOG_WARN, rep->verdict == KV_SEQ_RESET ? "publisher reset: sequence restarted" : "sequence gap",
	       "source", s->cfg->name, "previous_seq", prev, "seq", seq, "missing", missing, "suppressed", sup, NULL);
}

/* Receives one whole multipart message (non-blocking) and ingests it.
 * Returns false when nothing was waiting. */
static bool ingest_one(kv_source *s, kv_ratelimit *rl, kv_ratelimit *rl_break)
{
	zmq_msg_t parts[MAX_FRAMES], extra;
	kv_frame frames[MAX_FRAMES];
	size_t n = 0, total = 0;
	bool more = true;
	/* multipart delivery is atomic: once the first frame is here, so is the
	 * rest.  Frames beyond MAX_FRAMES are received and dropped: n == 3
	 * exactly when the message had 3 frames, which is all the decoder asks. */
	while (more) {
		zmq_msg_t *m = n < MAX_FRAMES ? &parts[n] : &extra;
		zmq_msg_init(m);
		if (zmq_msg_recv(m, s->sub, total == 0 ? ZMQ_DONTWAIT : 0) < 0) {
			zmq_msg_close(m);
			break;
		}
		total++;
		more = zmq_msg_more(m);
		if (n < MAX_FRAMES)
			n++;
		else
			zmq_msg_close(&extra);
	}
	if (total == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		frames[i] = (kv_frame){zmq_msg_data(&parts[i]), zmq_msg_size(&parts[i])};
	int64_t now_ms = (int64_t)(kv_now() * 1000);

	kv_ingest_report rep;
	pthread_mutex_lock(&s->lock);
	int rc = kv_stream_ingest(s->stream, frames, n, now_ms, &rep);
	pthread_mutex_unlock(&s->lock);
	if (rep.reject != KV_R_OK)
		log_rejection(s, rep.reject, rep.seq, rl);
	if (rep.verdict == KV_SEQ_GAP || rep.verdict == KV_SEQ_RESET)
		log_break(s, &rep, rl_break);
	if (rc != KV_OK)
		kv_log(KV_LOG_ERROR, "out of memory: a message or an event was lost", "source", s->cfg->name, NULL);
	for (size_t i = 0; i < n; i++)
		zmq_msg_close(&parts[i]);
	return true;
}

static void *ingest_main(void *arg)
{
	kv_source *s = arg;
	kv_ratelimit rl = KV_RATELIMIT(10.0, 5), rl_break = KV_RATELIMIT(60.0, 10);
	zmq_pollitem_t items[2] = {{s->sub, 0, ZMQ_POLLIN, 0}, {s->mon, 0, ZMQ_POLLIN, 0}};
	while (!atomic_load(s->stop)) {
		int n = zmq_poll(items, 2, POLL_MS);
		if (n < 0) {
			if (zmq_errno() == EINTR)
				continue;
			kv_log(KV_LOG_ERROR, "zmq_poll failed", "source", s->cfg->name, "err",
			       zmq_strerror(zmq_errno()), NULL);
			break;
		}
		if (items[1].revents & ZMQ_POLLIN)
			on_monitor_event(s);
		if (!(items[0].revents & ZMQ_POLLIN))
			continue;
		int i = 0;
		while (i < DRAIN_PER_WAKEUP && ingest_one(s, &rl, &rl_break))
			i++;
		uint64_t streak = atomic_load_explicit(&s->backlog, memory_order_relaxed) + (uint64_t)i;
		if (i == DRAIN_PER_WAKEUP) { /* more waiting: still catching up */
			atomic_store_explicit(&s->backlog, streak, memory_order_relaxed);
			continue;
		}
		atomic_store_explicit(&s->backlog, 0, memory_order_relaxed);
		if (streak >= TRIM_AFTER_MESSAGES)
			malloc_trim(0);
	}
	close_sockets(s);
	return NULL;
}

int kv_source_start(kv_source *s)
{
	/* the sockets move to the ingest thread: pthread_create is the full
	 * memory barrier ZMQ asks for when a socket changes threads */
	if (pthread_create(&s->ingest_thread, NULL, ingest_main, s) != 0)
		return KV_ENOMEM;
	s->ingest_started = true;
	/* named so that top, perf and the benchmark can find it */
	char name[16];
	snprintf(name, sizeof(name), "kvx-in:%s", s->cfg->name);
	pthread_setname_np(s->ingest_thread, name);
	if (s->cfg->status) {
		if (pthread_create(&s->poll_thread, NULL, kv_status_poll_main, s) != 0)
			return KV_ENOMEM;
		s->poll_started = true;
	}
	if (s->cfg->reconcile) {
		if (pthread_create(&s->recon_thread, NULL, kv_reconcile_main, s) != 0)
			return KV_ENOMEM;
		s->recon_started = true;
	}
	return KV_OK;
}

void kv_source_destroy(kv_source *s)
{
	if (s->ingest_started)
		pthread_join(s->ingest_thread, NULL);
	else
		close_sockets(s); /* never handed to a thread */
	if (s->poll_started)
		pthread_join(s->poll_thread, NULL);
	if (s->recon_started)
		pthread_join(s->recon_thread, NULL);
	kv_stream_free(s->stream);
	pthread_mutex_destroy(&s->lock);
}

int kv_source_snapshot(kv_source *s, kv_source_snap *out)
{
	out->name = s->cfg->name;
	out->connected = atomic_load(&s->connected);
	out->backlog = atomic_load_explicit(&s->backlog, memory_order_relaxed);
	out->has_master = s->cfg->status != NULL;
	pthread_mutex_lock(&s->lock);
	int rc = kv_snapshot_stream(out, s->stream);
	out->master = s->master;
	out->recon = s->recon;
	out->recon.enabled = s->cfg->reconcile;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

bool kv_source_ready(kv_source *s)
{
	if (!atomic_load(&s->ever_connected))
		return false;
	if (!s->cfg->status)
		return true;
	pthread_mutex_lock(&s->lock);
	bool polled = s->master.polled;
	pthread_mutex_unlock(&s->lock);
	return polled;
}
