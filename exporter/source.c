/* The ZMQ shell around kv_stream: one SUB socket and one monitor socket,
 * owned by the ingest thread, polled with a short timeout so that a stop is
 * noticed within 100 ms. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "kv_log.h"
#include "kv_source.h"

#define POLL_MS 100
#define MAX_FRAMES 4        /* frames kept of a message; more are counted and dropped */
#define DRAIN_PER_WAKEUP 256

double kv_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int kv_source_init(kv_source *s, const kv_config *cfg, const kv_source_cfg *src, void *zctx,
                   kv_budget *budget, uint64_t seed, const atomic_bool *stop)
{
	memset(s, 0, sizeof(*s));
	s->cfg = src;
	s->config = cfg;
	s->stop = stop;
	s->zctx = zctx;
	atomic_init(&s->connected, false);
	atomic_init(&s->ever_connected, false);
	if (pthread_mutex_init(&s->lock, NULL) != 0)
		return KV_ENOMEM;
	int rc = kv_stream_init(&s->stream, budget, seed);
	if (rc != KV_OK)
		pthread_mutex_destroy(&s->lock);
	return rc;
}

struct sockets {
	void *sub;
	void *mon;
};

static int setopt_int(void *sock, int opt, int v)
{
	return zmq_setsockopt(sock, opt, &v, sizeof(v));
}

static int open_sockets(kv_source *s, struct sockets *k)
{
	const kv_config *c = s->config;
	char mon_ep[128];
	int64_t maxmsg = c->zmq_max_message_size;
	k->sub = zmq_socket(s->zctx, ZMQ_SUB);
	k->mon = NULL;
	if (!k->sub)
		return KV_ENOMEM;
	if (zmq_setsockopt(k->sub, ZMQ_SUBSCRIBE, "", 0) || setopt_int(k->sub, ZMQ_LINGER, 0) ||
	    setopt_int(k->sub, ZMQ_RCVHWM, c->zmq_rcvhwm) ||
	    zmq_setsockopt(k->sub, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg)) ||
	    setopt_int(k->sub, ZMQ_RECONNECT_IVL, 100) || setopt_int(k->sub, ZMQ_RECONNECT_IVL_MAX, 5000) ||
	    setopt_int(k->sub, ZMQ_HEARTBEAT_IVL, 5000) || setopt_int(k->sub, ZMQ_HEARTBEAT_TIMEOUT, 15000))
		goto fail;
	snprintf(mon_ep, sizeof(mon_ep), "inproc://monitor-%s", s->cfg->name);
	if (zmq_socket_monitor(k->sub, mon_ep, ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED))
		goto fail;
	k->mon = zmq_socket(s->zctx, ZMQ_PAIR);
	if (!k->mon || setopt_int(k->mon, ZMQ_LINGER, 0) || zmq_connect(k->mon, mon_ep))
		goto fail;
	if (zmq_connect(k->sub, s->cfg->zmq)) {
		kv_log(KV_LOG_ERROR, "cannot connect the subscriber", "source", s->cfg->name, "endpoint",
		       s->cfg->zmq, "err", zmq_strerror(zmq_errno()), NULL);
		goto fail;
	}
	return KV_OK;
fail:
	if (k->mon)
		zmq_close(k->mon);
	zmq_close(k->sub);
	return KV_EINVAL;
}

static void on_monitor_event(kv_source *s, void *mon)
{
	zmq_msg_t m;
	zmq_msg_init(&m);
	if (zmq_msg_recv(&m, mon, ZMQ_DONTWAIT) < 0) {
		zmq_msg_close(&m);
		return;
	}
	uint16_t event = 0;
	if (zmq_msg_size(&m) >= 6)
		memcpy(&event, zmq_msg_data(&m), sizeof(event));
	while (zmq_msg_more(&m)) {  /* the endpoint frame */
		zmq_msg_close(&m);
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, mon, 0) < 0)
			break;
	}
	zmq_msg_close(&m);

	if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
		bool again = atomic_exchange(&s->ever_connected, true);
		atomic_store(&s->connected, true);
		if (again) {
			/* whatever was sent while we were away is gone without a trace */
			pthread_mutex_lock(&s->lock);
			kv_stream_reconnected(&s->stream);
			pthread_mutex_unlock(&s->lock);
		}
		kv_log(KV_LOG_INFO, again ? "reconnected to the publisher" : "connected to the publisher", "source",
		       s->cfg->name, "endpoint", s->cfg->zmq, NULL);
	} else if (event == ZMQ_EVENT_DISCONNECTED) {
		atomic_store(&s->connected, false);
		kv_log(KV_LOG_WARN, "disconnected from the publisher", "source", s->cfg->name, "endpoint",
		       s->cfg->zmq, NULL);
	}
}

/* The first reason whose count moved, or KV_R_OK. */
static enum kv_reason new_rejection(const uint64_t *before, const uint64_t *now)
{
	for (int r = KV_R_OK + 1; r < KV_R__COUNT; r++)
		if (now[r] != before[r])
			return (enum kv_reason)r;
	return KV_R_OK;
}

/* Called without the lock: a slow stderr must not hold up scrapes. */
static void log_rejection(const kv_source *s, enum kv_reason r, uint64_t last_seq, kv_ratelimit *rl)
{
	unsigned held;
	if (!kv_ratelimit_allow(rl, kv_now(), &held))
		return;
	char seq[24], sup[16];
	snprintf(seq, sizeof(seq), "%llu", (unsigned long long)last_seq);
	snprintf(sup, sizeof(sup), "%u", held);
	kv_log(KV_LOG_WARN, "rejected input", "source", s->cfg->name, "reason", kv_reason_name(r), "last_seq", seq,
	       "suppressed", sup, NULL);
}

/* Receives one whole multipart message (non-blocking) and ingests it.
 * Returns false when nothing was waiting. */
static bool ingest_one(kv_source *s, void *sub, kv_ratelimit *rl)
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
		if (zmq_msg_recv(m, sub, total == 0 ? ZMQ_DONTWAIT : 0) < 0) {
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

	uint64_t before[KV_R__COUNT];
	pthread_mutex_lock(&s->lock);
	memcpy(before, s->stream.stats.decode_errors, sizeof(before));
	int rc = kv_stream_ingest(&s->stream, frames, n, now_ms);
	enum kv_reason rejected = new_rejection(before, s->stream.stats.decode_errors);
	uint64_t last_seq = s->stream.seq.last_seq;
	pthread_mutex_unlock(&s->lock);
	if (rejected != KV_R_OK)
		log_rejection(s, rejected, last_seq, rl);
	if (rc != KV_OK)
		kv_log(KV_LOG_ERROR, "out of memory applying an event", "source", s->cfg->name, NULL);
	for (size_t i = 0; i < n; i++)
		zmq_msg_close(&parts[i]);
	return true;
}

static void *ingest_main(void *arg)
{
	kv_source *s = arg;
	struct sockets k;
	if (open_sockets(s, &k) != KV_OK)
		return NULL;
	kv_ratelimit rl = KV_RATELIMIT(10.0, 5);
	zmq_pollitem_t items[2] = {{k.sub, 0, ZMQ_POLLIN, 0}, {k.mon, 0, ZMQ_POLLIN, 0}};
	while (!atomic_load(s->stop)) {
		int n = zmq_poll(items, 2, POLL_MS);
		if (n < 0) {
			if (zmq_errno() == EINTR)
				continue;
			kv_log(KV_LOG_ERROR, "zmq_poll failed", "source", s->cfg->name, "err", zmq_strerror(zmq_errno()), NULL);
			break;
		}
		if (items[1].revents & ZMQ_POLLIN)
			on_monitor_event(s, k.mon);
		if (items[0].revents & ZMQ_POLLIN)
			for (int i = 0; i < DRAIN_PER_WAKEUP && ingest_one(s, k.sub, &rl); i++)
				;
	}
	zmq_socket_monitor(k.sub, NULL, 0);
	zmq_close(k.mon);
	zmq_close(k.sub);
	return NULL;
}

int kv_source_start(kv_source *s)
{
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
	return KV_OK;
}

void kv_source_destroy(kv_source *s)
{
	if (s->ingest_started)
		pthread_join(s->ingest_thread, NULL);
	if (s->poll_started)
		pthread_join(s->poll_thread, NULL);
	kv_stream_destroy(&s->stream);
	pthread_mutex_destroy(&s->lock);
}

int kv_source_snapshot(kv_source *s, kv_source_snap *out)
{
	out->name = s->cfg->name;
	out->connected = atomic_load(&s->connected);
	out->has_master = s->cfg->status != NULL;
	pthread_mutex_lock(&s->lock);
	int rc = kv_snapshot_stream(out, &s->stream);
	out->master = s->master;
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
