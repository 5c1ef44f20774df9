/* SPDX-License-Identifier: Apache-2.0 */
/* The ZMQ shell around the core's mkv_store: per member, one SUB socket and one
 * monitor socket, set up by kvd_source_init (so that a bad endpoint fails at
 * start-up) and then owned by the member's ingest thread, which waits in a
 * receive with a short timeout so that a stop is noticed within 100 ms. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "kv_clock.h"
#include "kv_log.h"
#include "kv_reconciler.h"
#include "kv_source.h"
#include "kv_master_poller.h"

#define POLL_MS 100
/* Reconnect attempts to a publisher that is not there, without backing off:
 * a standby binds no PUB port until it is promoted, and a new leader's first
 * messages are lost for as long as we take to find it (docs/design.md,
 * "Highly available masters"). */
#define RECONNECT_MS     100
#define MONITOR_ASK_S    0.01 /* a tenth of it */
#define MAX_FRAMES       4    /* frames kept of a message; more are counted and dropped */
#define DRAIN_PER_WAKEUP 256
/* A busy streak this long (messages from a wake-up until the socket is
 * empty) has left freed message buffers in the allocator's arenas: hand
 * them back (docs/performance.md, "Memory after a burst"). */
#define TRIM_AFTER_MESSAGES 1024
/* Slots of the object tables' old arrays drained per idle moment (a few
 * ms under the lock): a table that grew and then went quiet gives its old
 * array back within seconds, not at its next events. */
#define SETTLE_SLOTS (64 * 1024)
/* Before a bootstrap: how long a connected member may stay silent before
 * the peer is asked all the same (kvd_source_await_connected). */
#define AWAIT_FIRST_MESSAGE_S 2.0

static int setopt_int(void *sock, int opt, int v)
{
	return zmq_setsockopt(sock, opt, &v, sizeof(v));
}

static void close_sockets(kvd_member *m)
{
	if (m->sub)
		zmq_socket_monitor(m->sub, NULL, 0);
	if (m->mon)
		zmq_close(m->mon);
	if (m->sub)
		zmq_close(m->sub);
	m->sub = m->mon = NULL;
}

/* Returns 0, or MKV_EINVAL with the failed step and ZMQ's reason in err. */
static int open_sockets(kvd_member *m, size_t index, void *zctx, char *err, size_t errlen)
{
	const kvd_config *c = m->src->config;
	const char *name = m->src->cfg->name, *step = "create a socket for";
	char mon_ep[128];
	int64_t maxmsg = c->zmq_max_message_size;
	if (!(m->sub = zmq_socket(zctx, ZMQ_SUB)))
		goto fail;
	step = "set the socket options for";
	if (zmq_setsockopt(m->sub, ZMQ_SUBSCRIBE, "", 0) || setopt_int(m->sub, ZMQ_LINGER, 0) ||
	    setopt_int(m->sub, ZMQ_RCVHWM, c->zmq_rcvhwm) ||
	    zmq_setsockopt(m->sub, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg)) ||
	    setopt_int(m->sub, ZMQ_RECONNECT_IVL, RECONNECT_MS) || setopt_int(m->sub, ZMQ_RECONNECT_IVL_MAX, 0) ||
	    setopt_int(m->sub, ZMQ_RCVTIMEO, POLL_MS) || setopt_int(m->sub, ZMQ_HEARTBEAT_IVL, 5000) ||
	    setopt_int(m->sub, ZMQ_HEARTBEAT_TIMEOUT, 15000))
		goto fail;
	step = "monitor the connection to";
	snprintf(mon_ep, sizeof(mon_ep), "inproc://monitor-%s-%zu", name, index);
	if (zmq_socket_monitor(m->sub, mon_ep, ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) ||
	    !(m->mon = zmq_socket(zctx, ZMQ_PAIR)) || setopt_int(m->mon, ZMQ_LINGER, 0) || zmq_connect(m->mon, mon_ep))
		goto fail;
	step = "connect to";
	if (zmq_connect(m->sub, m->cfg->zmq))
		goto fail;
	return MKV_OK;
fail:
	snprintf(err, errlen, "source \"%s\": cannot %s %s: %s", name, step, m->cfg->zmq, zmq_strerror(zmq_errno()));
	close_sockets(m);
	return MKV_EINVAL;
}

static void free_members(kvd_source *s)
{
	for (size_t i = 0; s->members && i < s->n_members; i++)
		close_sockets(&s->members[i]);
	free(s->members);
	mkv_store_free(s->store);
}

/* A condition the threads wait on (a dialect, a round), timed on the
 * monotonic clock: a wall clock stepped back must not stretch the wait. */
static int init_cond(pthread_cond_t *c)
{
	pthread_condattr_t a;
	if (pthread_condattr_init(&a) != 0)
		return -1;
	int rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	if (rc == 0)
		rc = pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
	return rc;
}

int kvd_source_init(kvd_source *s, const kvd_config *cfg, const kvd_source_cfg *src, void *zctx, mkv_budget *budget,
		    uint64_t seed, const atomic_bool *stop, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	s->cfg = src;
	s->config = cfg;
	s->stop = stop;
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		snprintf(err, errlen, "source \"%s\": cannot create a mutex", src->name);
		return MKV_ENOMEM;
	}
	if (init_cond(&s->decided) != 0) {
		snprintf(err, errlen, "source \"%s\": cannot create a condition variable", src->name);
		pthread_mutex_destroy(&s->lock);
		return MKV_ENOMEM;
	}
	if (init_cond(&s->wake) != 0) {
		snprintf(err, errlen, "source \"%s\": cannot create a condition variable", src->name);
		pthread_cond_destroy(&s->decided);
		pthread_mutex_destroy(&s->lock);
		return MKV_ENOMEM;
	}
	int rc = MKV_ENOMEM;
	s->n_members = src->n_members;
	mkv_store_member *sm = calloc(src->n_members, sizeof(*sm)); /* copied by mkv_store_new */
	if (!(s->members = calloc(src->n_members, sizeof(*s->members))) || !sm) {
		free(sm);
		snprintf(err, errlen, "source \"%s\": out of memory", src->name);
		goto fail;
	}
	for (size_t i = 0; i < s->n_members; i++)
		sm[i] = (mkv_store_member){.label = src->members[i].label,
					   .has_status = src->members[i].status != NULL,
					   .dialect = kvd_config_dialect(cfg, src)};
	/* the flags in the library's terms: without --state.serve no handover
	 * is ever written */
	mkv_store_cfg sc = {.name = src->name,
			    .ha = src->ha,
			    .polled = src->polled,
			    .reconcile = src->reconcile,
			    .reconcile_interval = cfg->reconcile_interval,
			    .backend = src->backend,
			    .members = sm,
			    .n_members = s->n_members,
			    .key_groups = kvd_config_keygroups(cfg, src),
			    .residency = cfg->residency,
			    .budget = budget,
			    .seed = seed,
			    .max_tenants = cfg->max_tenants,
			    .never_handed_over = !cfg->state_serve};
	s->store = mkv_store_new(&sc);
	free(sm);
	if (!s->store) {
		snprintf(err, errlen, "source \"%s\": out of memory", src->name);
		goto fail;
	}
	for (size_t i = 0; i < s->n_members; i++) {
		kvd_member *m = &s->members[i];
		m->src = s;
		m->cfg = &src->members[i];
		m->index = i;
		atomic_init(&m->backlog, 0);
		atomic_init(&m->poll_now, false);
		if ((rc = open_sockets(m, i, zctx, err, errlen)) != MKV_OK)
			goto fail;
	}
	return MKV_OK;
fail:
	free_members(s);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->decided);
	pthread_mutex_destroy(&s->lock);
	memset(s, 0, sizeof(*s));
	return rc;
}

static void log_member(enum kvd_log_level level, const char *msg, const kvd_member *m)
{
	kvd_log(level, msg, "source", m->src->cfg->name, "endpoint", m->cfg->zmq, NULL);
}

/* Takes one event of the monitor's, without waiting; false when none. */
static bool on_monitor_event(kvd_member *m)
{
	kvd_source *s = m->src;
	zmq_msg_t msg;
	zmq_msg_init(&msg);
	if (zmq_msg_recv(&msg, m->mon, ZMQ_DONTWAIT) < 0) {
		zmq_msg_close(&msg);
		return false;
	}
	uint16_t event = 0;
	if (zmq_msg_size(&msg) >= 6)
		memcpy(&event, zmq_msg_data(&msg), sizeof(event));
	while (zmq_msg_more(&msg)) { /* the endpoint frame */
		zmq_msg_close(&msg);
		zmq_msg_init(&msg);
		if (zmq_msg_recv(&msg, m->mon, 0) < 0)
			break;
	}
	zmq_msg_close(&msg);

	if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
		pthread_mutex_lock(&s->lock);
		bool again = mkv_store_note_connect(s->store, m->index, (int64_t)(kvd_now() * 1000));
		pthread_mutex_unlock(&s->lock);
		log_member(KVD_LOG_INFO, again ? "reconnected to the publisher" : "connected to the publisher", m);
	} else if (event == ZMQ_EVENT_DISCONNECTED) {
		pthread_mutex_lock(&s->lock);
		mkv_store_note_disconnect(s->store, m->index);
		pthread_mutex_unlock(&s->lock);
		log_member(KVD_LOG_WARN, "disconnected from the publisher", m);
	}
	return true;
}

/* Whatever the monitor has to say, without waiting: a receive that finds
 * nothing is one poll(2) in libzmq, where zmq_poll made two or three. */
static void take_monitor_events(kvd_member *m, double now)
{
	m->monitor_asked_at = now;
	while (on_monitor_event(m))
		;
}

static bool member_connected(kvd_member *m)
{
	pthread_mutex_lock(&m->src->lock);
	bool up = mkv_store_is_connected(m->src->store, m->index);
	pthread_mutex_unlock(&m->src->lock);
	return up;
}

void kvd_source_await_connected(kvd_source *s, double until)
{
	for (size_t i = 0; i < s->n_members; i++) {
		kvd_member *m = &s->members[i];
		zmq_pollitem_t items[2] = {{m->mon, 0, ZMQ_POLLIN, 0}, {m->sub, 0, ZMQ_POLLIN, 0}};
		while (!member_connected(m) && kvd_mono() < until) {
			if (zmq_poll(items, 1, 10) > 0)
				on_monitor_event(m);
		}
		/* A handshake is not yet a subscription: the publisher drops what
		 * it sends until our subscription reaches it.  A message waiting
		 * (not taken) says it has; an idle publisher gets a moment. */
		double idle_until = kvd_mono() + AWAIT_FIRST_MESSAGE_S;
		while (member_connected(m) && kvd_mono() < until && kvd_mono() < idle_until) {
			if (zmq_poll(items, 2, 10) <= 0)
				continue;
			if (items[1].revents & ZMQ_POLLIN)
				break;
			if (items[0].revents & ZMQ_POLLIN)
				on_monitor_event(m);
		}
	}
}

/* Called without the lock: a slow stderr must not hold up scrapes. */
static void log_rejection(const kvd_member *m, enum mkv_reason r, uint64_t seq, kvd_ratelimit *rl)
{
	unsigned held;
	if (!kvd_ratelimit_allow(rl, kvd_now(), &held))
		return;
	char seqs[24], sup[16];
	snprintf(seqs, sizeof(seqs), "%llu", (unsigned long long)seq);
	snprintf(sup, sizeof(sup), "%u", held);
	kvd_log(KVD_LOG_WARN, "rejected input", "source", m->src->cfg->name, "endpoint", m->cfg->zmq, "reason",
		mkv_reason_name(r), "seq", seqs, "suppressed", sup, NULL);
}

/* A gap or a reset, once per message, rate-limited; the poller logs the
 * cause once the master's counters have been compared. */
static void log_break(const kvd_member *m, const mkv_ingest_report *rep, kvd_ratelimit *rl)
{
	unsigned held;
	if (!kvd_ratelimit_allow(rl, kvd_now(), &held))
		return;
	char prev[24], seq[24], missing[24], sup[16];
	snprintf(prev, sizeof(prev), "%llu", (unsigned long long)rep->prev_seq);
	snprintf(seq, sizeof(seq), "%llu", (unsigned long long)rep->seq);
	snprintf(missing, sizeof(missing), "%llu", (unsigned long long)rep->missing);
	snprintf(sup, sizeof(sup), "%u", held);
	kvd_log(KVD_LOG_WARN, rep->verdict == MKV_SEQ_RESET ? "publisher reset: sequence restarted" : "sequence gap",
		"source", m->src->cfg->name, "endpoint", m->cfg->zmq, "previous_seq", prev, "seq", seq, "missing",
		missing, "suppressed", sup, NULL);
}

/* Reading a stream needs its dialect, which the store decides.  With
 * auto, the status answer tells it: when the first message is waiting and
 * the store has not decided, the poller is asked to poll at once, and its
 * decision awaited on s->decided, at most --master.timeout (messages queue
 * in ZMQ meanwhile); without it, the guide's.  Call under the lock (the
 * wait releases it); returns the news of a give-up, for the log (what a
 * poll decided, its poller says). */
static enum mkv_dialect_news await_dialect(kvd_member *m, mkv_dialect_info *d)
{
	kvd_source *s = m->src;
	mkv_store_dialect(s->store, m->index, d);
	if (d->decided)
		return MKV_DIALECT_SAME;
	double secs = s->config->poll_timeout;
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until); /* the clock s->decided waits on */
	until.tv_sec += (time_t)secs;
	until.tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	atomic_store(&m->poll_now, true);
	pthread_cond_broadcast(&s->wake);
	int rc = 0;
	while (!d->decided && rc == 0 && !atomic_load(s->stop)) { /* 0: woken; ETIMEDOUT: given up */
		rc = pthread_cond_timedwait(&s->decided, &s->lock, &until);
		mkv_store_dialect(s->store, m->index, d);
	}
	return mkv_store_dialect_give_up(s->store, m->index, d);
}

/* Receives one whole multipart message and ingests it.  wait: the first
 * frame may be waited for, at most POLL_MS (the socket's ZMQ_RCVTIMEO); then
 * the monitor's news is taken first, so that a reconnection is known before
 * the first message it brought.  Returns false when nothing came. */
static bool ingest_one(kvd_member *m, bool wait, kvd_ratelimit *rl, kvd_ratelimit *rl_break)
{
	kvd_source *s = m->src;
	zmq_msg_t parts[MAX_FRAMES], extra;
	mkv_frame frames[MAX_FRAMES];
	size_t n = 0, total = 0;
	bool more = true;
	/* multipart delivery is atomic: once the first frame is here, so is the
	 * rest.  Frames beyond MAX_FRAMES are received and dropped: n == 3
	 * exactly when the message had 3 frames, which is all the decoder asks. */
	while (more) {
		zmq_msg_t *msg = n < MAX_FRAMES ? &parts[n] : &extra;
		zmq_msg_init(msg);
		if (zmq_msg_recv(msg, m->sub, total == 0 && !wait ? ZMQ_DONTWAIT : 0) < 0) {
			zmq_msg_close(msg);
			break;
		}
		total++;
		more = zmq_msg_more(msg);
		if (n < MAX_FRAMES)
			n++;
		else
			zmq_msg_close(&extra);
	}
	if (total == 0)
		return false;
	double now = kvd_now();
	if (wait) { /* the first message of a stream always comes after a wait */
		/* The monitor's news first, so that a reconnection is known before
		 * the first message it brought.  A reconnection comes after 100 ms
		 * of silence at least (ZMQ_RECONNECT_IVL), so after MONITOR_ASK_S
		 * of it the monitor is asked; on a busy stream only that often:
		 * asked at every wake-up of a paced stream, it cost two system
		 * calls a message (docs/performance.md, "System calls"). */
		if (now - m->last_message_at >= MONITOR_ASK_S || now - m->monitor_asked_at >= MONITOR_ASK_S)
			take_monitor_events(m, now);
	}
	m->last_message_at = now;
	for (size_t i = 0; i < n; i++)
		frames[i] = (mkv_frame){zmq_msg_data(&parts[i]), zmq_msg_size(&parts[i])};
	int64_t now_ms = (int64_t)(now * 1000);

	mkv_ingest_report rep;
	mkv_dialect_info d;
	enum mkv_dialect_news news = MKV_DIALECT_SAME;
	pthread_mutex_lock(&s->lock);
	if (wait) /* a decided dialect stays decided: a drain's later messages need not ask */
		news = await_dialect(m, &d);
	int rc = mkv_store_ingest(s->store, m->index, frames, n, now_ms, &rep);
	pthread_mutex_unlock(&s->lock);
	if (news != MKV_DIALECT_SAME)
		kvd_member_log_dialect(m, news, &d);
	if (rep.reject != MKV_R_OK)
		log_rejection(m, rep.reject, rep.seq, rl);
	if (rep.verdict == MKV_SEQ_GAP || rep.verdict == MKV_SEQ_RESET)
		log_break(m, &rep, rl_break);
	if (rep.join == MKV_JOIN_CONTINUED)
		log_member(KVD_LOG_INFO, "the stream continues the peer's state: exact where it was", m);
	else if (rep.join == MKV_JOIN_BROKEN)
		log_member(KVD_LOG_WARN,
			   "the peer's state is not provably continuous with the stream: tenants stale (bootstrap)", m);
	if (rc != MKV_OK)
		log_member(KVD_LOG_ERROR, "out of memory: a message or an event was lost", m);
	for (size_t i = 0; i < n; i++)
		zmq_msg_close(&parts[i]);
	return true;
}

void kvd_member_log_dialect(const kvd_member *m, enum mkv_dialect_news news, const mkv_dialect_info *d)
{
	if (news == MKV_DIALECT_SAME)
		return;
	const char *msg = news == MKV_DIALECT_DECIDED ? "publisher dialect"
						      : "publisher dialect changed: tenants stale until reconciled";
	kvd_log(news == MKV_DIALECT_DECIDED ? KVD_LOG_INFO : KVD_LOG_WARN, msg, "source", m->src->cfg->name, "endpoint",
		m->cfg->zmq, "dialect", d->name, "reason", d->basis, NULL);
}

/* Forgets idle tenants (kv_state_expire), looking a tenth of the timeout
 * apart, at most every 10 s.  The members share one state: the first
 * member's thread looks for all (its loop wakes every POLL_MS at least). */
static void expire_idle(kvd_member *m, double *next)
{
	double idle = m->src->config->tenant_idle_timeout;
	if (idle <= 0 || m != &m->src->members[0])
		return;
	double now = kvd_now();
	if (now < *next)
		return;
	*next = now + (idle / 10 < 10 ? idle / 10 : 10);
	pthread_mutex_lock(&m->src->lock);
	size_t gone = mkv_store_expire(m->src->store, (int64_t)(now * 1000), (int64_t)(idle * 1000));
	pthread_mutex_unlock(&m->src->lock);
	if (gone) {
		char n[24];
		snprintf(n, sizeof(n), "%zu", gone);
		kvd_log(KVD_LOG_INFO, "idle tenants forgotten", "source", m->src->cfg->name, "tenants", n, NULL);
	}
}

static void *ingest_main(void *arg)
{
	kvd_member *m = arg;
	kvd_ratelimit rl = KVD_RATELIMIT(10.0, 5), rl_break = KVD_RATELIMIT(60.0, 10);
	mkv_dialect_info d;
	pthread_mutex_lock(&m->src->lock);
	mkv_store_dialect(m->src->store, m->index, &d);
	pthread_mutex_unlock(&m->src->lock);
	if (d.from_start) /* decided at start-up */
		kvd_member_log_dialect(m, MKV_DIALECT_DECIDED, &d);
	double next_expire = kvd_now();
	bool unsettled = false; /* events arrived since the tables last settled */
	while (!atomic_load(m->src->stop)) {
		expire_idle(m, &next_expire);
		/* A blocking receive, as the benchmark's floor does, rather than
		 * zmq_poll over this socket and the monitor: a paced stream wakes
		 * this thread for nearly every message, and each wake-up through
		 * zmq_poll cost ~45 ns an event more (docs/performance.md). */
		if (!ingest_one(m, true, &rl, &rl_break)) { /* POLL_MS without a message */
			int err = zmq_errno();
			if (err != EAGAIN && err != EINTR) {
				kvd_log(KVD_LOG_ERROR, "zmq_msg_recv failed", "source", m->src->cfg->name, "err",
					zmq_strerror(err), NULL);
				break;
			}
			take_monitor_events(m, kvd_now());
			if (unsettled) {
				pthread_mutex_lock(&m->src->lock);
				unsettled = mkv_store_settle(m->src->store, SETTLE_SLOTS);
				pthread_mutex_unlock(&m->src->lock);
			}
			continue;
		}
		int i = 1;
		while (i < DRAIN_PER_WAKEUP && ingest_one(m, false, &rl, &rl_break))
			i++;
		unsettled = true;
		uint64_t streak = atomic_load_explicit(&m->backlog, memory_order_relaxed) + (uint64_t)i;
		if (i == DRAIN_PER_WAKEUP) { /* more waiting: still catching up */
			atomic_store_explicit(&m->backlog, streak, memory_order_relaxed);
			continue;
		}
		atomic_store_explicit(&m->backlog, 0, memory_order_relaxed);
		if (streak >= TRIM_AFTER_MESSAGES)
			malloc_trim(0);
	}
	close_sockets(m);
	return NULL;
}

int kvd_source_start(kvd_source *s)
{
	for (size_t i = 0; i < s->n_members; i++) {
		kvd_member *m = &s->members[i];
		/* the sockets move to the ingest thread: pthread_create is the
		 * full memory barrier ZMQ asks for when a socket changes threads */
		if (pthread_create(&m->ingest_thread, NULL, ingest_main, m) != 0)
			return MKV_ENOMEM;
		m->ingest_started = true;
		/* named so that top, perf and the benchmark can find it */
		char name[16];
		if (s->n_members > 1)
			snprintf(name, sizeof(name), "kvx-in%c:%s", (char)('0' + i % 10), s->cfg->name);
		else
			snprintf(name, sizeof(name), "kvx-in:%s", s->cfg->name);
		pthread_setname_np(m->ingest_thread, name);
		if (m->cfg->status) {
			if (pthread_create(&m->poll_thread, NULL, kvd_master_poller_main, m) != 0)
				return MKV_ENOMEM;
			m->poll_started = true;
		}
	}
	if (s->cfg->reconcile) {
		if (pthread_create(&s->recon_thread, NULL, kvd_reconciler_main, s) != 0)
			return MKV_ENOMEM;
		s->recon_started = true;
	}
	return MKV_OK;
}

void kvd_source_destroy(kvd_source *s)
{
	pthread_mutex_lock(&s->lock); /* whoever waits, for a dialect or a round, stops waiting */
	pthread_cond_broadcast(&s->decided);
	pthread_cond_broadcast(&s->wake);
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < s->n_members; i++) {
		kvd_member *m = &s->members[i];
		if (m->ingest_started)
			pthread_join(m->ingest_thread, NULL); /* it closed its sockets */
		if (m->poll_started)
			pthread_join(m->poll_thread, NULL);
	}
	if (s->recon_started)
		pthread_join(s->recon_thread, NULL);
	free_members(s);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->decided);
	pthread_mutex_destroy(&s->lock);
}

bool kvd_source_wait(kvd_source *s, atomic_bool *wake, double left)
{
	struct timespec at;
	clock_gettime(CLOCK_MONOTONIC, &at); /* the clock s->wake waits on */
	if (left > 0) {
		at.tv_sec += (time_t)left;
		at.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
		if (at.tv_nsec >= 1000000000L) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000L;
		}
	}
	bool woken = false;
	int rc = 0;
	pthread_mutex_lock(&s->lock);
	/* 0: woken (or spuriously); ETIMEDOUT: the round is due */
	while (!atomic_load(s->stop) && !(woken = wake && atomic_exchange(wake, false)) && rc == 0 && left > 0)
		rc = pthread_cond_timedwait(&s->wake, &s->lock, &at);
	pthread_mutex_unlock(&s->lock);
	return woken;
}

int kvd_source_scrape(kvd_source *s, mkv_scrape *sc, size_t i)
{
	mkv_member_live *live = calloc(s->n_members, sizeof(*live));
	if (!live)
		return MKV_ENOMEM;
	for (size_t k = 0; k < s->n_members; k++)
		live[k] = (mkv_member_live){
			.backlog = atomic_load_explicit(&s->members[k].backlog, memory_order_relaxed)};
	pthread_mutex_lock(&s->lock);
	double t0 = kvd_mono();
	int rc = mkv_scrape_store(sc, i, s->store, live);
	mkv_scrape_store_held(s->store, kvd_mono() - t0);
	pthread_mutex_unlock(&s->lock);
	free(live);
	return rc;
}

bool kvd_source_ready(kvd_source *s)
{
	pthread_mutex_lock(&s->lock);
	bool ready = mkv_store_ready(s->store);
	pthread_mutex_unlock(&s->lock);
	return ready;
}
