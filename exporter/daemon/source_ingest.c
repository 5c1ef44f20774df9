/* SPDX-License-Identifier: Apache-2.0 */
/* A member's ingest thread: it waits in a receive with a short timeout
 * (POLL_MS, so that a stop is noticed within it), hands each whole message
 * to the store under the source's lock, logs what the store reports
 * (rate-limited), and in idle moments looks at the monitor, expires idle
 * tenants and settles the object tables. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "kv_clock.h"
#include "kv_source_impl.h"

#define MONITOR_ASK_S    0.01 /* a tenth of the reconnect interval (source_sockets.c) */
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
			kvd_member_take_monitor_events(m, now);
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
		kvd_member_log(KVD_LOG_INFO, "the stream continues the peer's state: exact where it was", m);
	else if (rep.join == MKV_JOIN_BROKEN)
		kvd_member_log(KVD_LOG_WARN,
			       "the peer's state is not provably continuous with the stream: tenants stale (bootstrap)",
			       m);
	if (rc != MKV_OK)
		kvd_member_log(KVD_LOG_ERROR, "out of memory: a message or an event was lost", m);
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

void *kvd_member_ingest_main(void *arg)
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
			kvd_member_take_monitor_events(m, kvd_now());
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
	kvd_member_close_sockets(m);
	return NULL;
}
