/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "kv_clock.h"
#include "kv_http_guard.h"
#include "kv_log.h"

/* How often the watchdog looks: a late request is cut, and a client that
 * closed is released, within this of its moment. */
#define TICK_S 0.1

/* Log lines of one reason: at most LOG_BURST each LOG_WINDOW_S. */
#define LOG_WINDOW_S 10.0
#define LOG_BURST    10

enum phase {
	WAIT_FIRST, /* accepted: the first request (TLS handshake included) is due within header_timeout */
	WAIT_NEXT,  /* kept alive after an answer: the next request is due within idle_timeout */
	HEADERS,    /* its first line is in */
	BODY,       /* its headers are in */
	ANSWERING,  /* all of it is in */
};

typedef struct conn {
	struct conn *prev, *next;
	kvd_http_guard *g;
	int fd;
	enum phase phase;
	double since;                /* when the current deadline started */
	bool cut;                    /* shut down by the watchdog: counted once */
	unsigned char addr[16];      /* the peer, IPv4 as ::ffff:a.b.c.d */
	char peer[INET6_ADDRSTRLEN]; /* its text, for the logs */
} conn;

struct kvd_http_guard {
	kvd_guard_limits l;
	pthread_mutex_t lock; /* the list, n, each conn's phase, the log's rate limit */
	pthread_cond_t wake;
	bool stop;
	pthread_t watchdog;
	conn *head;
	unsigned n;
	atomic_ullong rejected[KVD_REJECT__COUNT];
	kvd_ratelimit logs[KVD_REJECT__COUNT]; /* one a reason: a flood of one hides no other */
	struct pollfd *polls;                  /* the watchdog's, one per connection */
	size_t polls_cap;
	void (*tick)(void);
};

/* Any address as 16 bytes, IPv4 mapped into IPv6, so that a dual-stack
 * socket's ::ffff:127.0.0.1 and a plain 127.0.0.1 are one client. */
static bool address_of(const struct sockaddr *sa, unsigned char out[16], char *text, size_t text_len)
{
	memset(out, 0, 16);
	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *a4 = (const struct sockaddr_in *)sa;
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &a4->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else {
		if (text)
			snprintf(text, text_len, "unknown");
		return false;
	}
	if (text) {
		static const unsigned char v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (!memcmp(out, v4_prefix, 12))
			inet_ntop(AF_INET, out + 12, text, (socklen_t)text_len);
		else
			inet_ntop(AF_INET6, out, text, (socklen_t)text_len);
	}
	return true;
}

static unsigned count_from(const kvd_http_guard *g, const unsigned char addr[16])
{
	unsigned n = 0;
	for (const conn *c = g->head; c; c = c->next)
		n += !memcmp(c->addr, addr, 16);
	return n;
}

/* Whether c still holds its place: not cut, and its client has not closed.
 * libmicrohttpd removes a connection its client left only when its thread
 * gets to it, later while that thread writes a large scrape: a client that
 * asks again and again on new connections must not be kept out by its own
 * past ones. */
static bool holds(const conn *c)
{
	struct pollfd p = {.fd = c->fd, .events = POLLRDHUP};
	return !c->cut && !(poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)));
}

/* The connections that hold their place, of addr (NULL: all). */
static unsigned holding(const kvd_http_guard *g, const unsigned char *addr)
{
	unsigned n = 0;
	for (const conn *c = g->head; c; c = c->next)
		n += (!addr || !memcmp(c->addr, addr, 16)) && holds(c);
	return n;
}

/* The limit a client over it breaks, KVD_REJECT_NONE for none
 * (under the lock); `extra` counts a connection not yet in the table.  The
 * table's counts first, and where they are over, those that still hold. */
static enum kvd_http_reject over_limit(const kvd_http_guard *g, const unsigned char addr[16], unsigned extra)
{
	unsigned most = g->l.max_connections, per = g->l.max_per_address;
	if (g->n + extra > most && holding(g, NULL) + extra > most)
		return KVD_REJECT_LIMIT;
	if (per && count_from(g, addr) + extra > per && holding(g, addr) + extra > per)
		return KVD_REJECT_ADDRESS_LIMIT;
	return KVD_REJECT_NONE;
}

/* Counts r; true when its log line may be written (under the lock). */
static bool count(kvd_http_guard *g, enum kvd_http_reject r, unsigned *suppressed)
{
	atomic_fetch_add(&g->rejected[r], 1);
	return kvd_ratelimit_allow(&g->logs[r], kvd_mono(), suppressed);
}

static void log_reject(enum kvd_http_reject r, const char *peer, const char *detail, unsigned suppressed)
{
	char held[24];
	snprintf(held, sizeof(held), "%u", suppressed);
	kvd_log(KVD_LOG_WARN, "http connection refused", "reason", kvd_http_reject_name(r), "peer", peer, "detail",
		detail, suppressed ? "suppressed" : NULL, held, NULL);
}

static const char *limit_detail(enum kvd_http_reject r)
{
	return r == KVD_REJECT_LIMIT ? "over --web.max-connections" : "over --web.max-connections-per-address";
}

enum MHD_Result kvd_http_guard_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
	kvd_http_guard *g = cls;
	(void)len;
	unsigned char a[16];
	char peer[INET6_ADDRSTRLEN];
	address_of(addr, a, peer, sizeof(peer));
	pthread_mutex_lock(&g->lock);
	enum kvd_http_reject r = over_limit(g, a, 1);
	unsigned held = 0;
	bool say = r != KVD_REJECT_NONE && count(g, r, &held);
	pthread_mutex_unlock(&g->lock);
	if (say)
		log_reject(r, peer, limit_detail(r), held);
	return r == KVD_REJECT_NONE ? MHD_YES : MHD_NO;
}

static void cut(conn *c)
{
	if (!c->cut)
		shutdown(c->fd, SHUT_RDWR);
	c->cut = true;
}

static void started(kvd_http_guard *g, struct MHD_Connection *mc, void **ctx)
{
	const union MHD_ConnectionInfo *fdi = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	const union MHD_ConnectionInfo *ai = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	conn *c = calloc(1, sizeof(*c));
	if (!c) { /* untracked, so unbounded: refuse it */
		if (fdi)
			shutdown(fdi->connect_fd, SHUT_RDWR);
		*ctx = NULL;
		return;
	}
	c->g = g;
	c->fd = fdi ? fdi->connect_fd : -1;
	c->phase = WAIT_FIRST;
	c->since = kvd_mono();
	address_of(ai ? ai->client_addr : NULL, c->addr, c->peer, sizeof(c->peer));
	pthread_mutex_lock(&g->lock);
	/* the accept policy checked without this one; several threads accept
	 * at once, so the count is checked again where it is exact */
	enum kvd_http_reject r = over_limit(g, c->addr, 1);
	c->next = g->head;
	if (g->head)
		g->head->prev = c;
	g->head = c;
	g->n++;
	unsigned held = 0;
	bool say = false;
	if (r != KVD_REJECT_NONE || c->fd < 0) {
		cut(c);
		say = r != KVD_REJECT_NONE && count(g, r, &held);
	}
	pthread_mutex_unlock(&g->lock);
	*ctx = c;
	if (say)
		log_reject(r, c->peer, limit_detail(r), held);
}

static void closed(kvd_http_guard *g, conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		g->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	g->n--;
	pthread_mutex_unlock(&g->lock);
	free(c);
}

void kvd_http_guard_notify(void *cls, struct MHD_Connection *mc, void **ctx, enum MHD_ConnectionNotificationCode code)
{
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		started(cls, mc, ctx);
	else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
		closed(cls, *ctx);
}

static conn *conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return i ? i->socket_context : NULL;
}

/* Moves c to phase p; restart: its deadline starts now. */
static void move(struct MHD_Connection *mc, enum phase p, bool restart)
{
	conn *c = conn_of(mc);
	if (!c)
		return;
	pthread_mutex_lock(&c->g->lock);
	c->phase = p;
	if (restart)
		c->since = kvd_mono();
	pthread_mutex_unlock(&c->g->lock);
}

void kvd_http_guard_line_in(struct MHD_Connection *mc)
{
	conn *c = conn_of(mc);
	/* a first request keeps the deadline its connection started with; the
	 * next one on a kept-alive connection starts its own */
	if (c)
		move(mc, HEADERS, c->phase == WAIT_NEXT);
}

void kvd_http_guard_headers_in(struct MHD_Connection *mc)
{
	move(mc, BODY, false);
}

void kvd_http_guard_request_in(struct MHD_Connection *mc)
{
	move(mc, ANSWERING, false);
}

void kvd_http_guard_answered(struct MHD_Connection *mc)
{
	move(mc, WAIT_NEXT, true);
}

const char *kvd_http_guard_peer(struct MHD_Connection *mc, unsigned char addr[16])
{
	conn *c = conn_of(mc);
	if (addr) {
		if (c)
			memcpy(addr, c->addr, 16);
		else
			memset(addr, 0, 16);
	}
	return c ? c->peer : "unknown";
}

void kvd_http_guard_malformed(kvd_http_guard *g, struct MHD_Connection *mc, const char *why)
{
	pthread_mutex_lock(&g->lock);
	unsigned held = 0;
	bool say = count(g, KVD_REJECT_MALFORMED, &held);
	pthread_mutex_unlock(&g->lock);
	if (say)
		log_reject(KVD_REJECT_MALFORMED, mc ? kvd_http_guard_peer(mc, NULL) : "unknown", why, held);
}

/* The reason a connection is late for, KVD_REJECT_NONE when it is
 * not; *quiet: a kept-alive connection that never began its next request
 * is closed without a count (that is how keep-alive ends). */
static enum kvd_http_reject late(const kvd_http_guard *g, const conn *c, double now, bool *quiet)
{
	*quiet = false;
	double age = now - c->since;
	switch (c->phase) {
	case WAIT_FIRST:
	case HEADERS:
		return age > g->l.header_timeout ? KVD_REJECT_HEADER_TIMEOUT : KVD_REJECT_NONE;
	case BODY:
		return age > g->l.request_timeout ? KVD_REJECT_REQUEST_TIMEOUT : KVD_REJECT_NONE;
	case WAIT_NEXT:
		*quiet = age > g->l.idle_timeout;
		return KVD_REJECT_NONE;
	case ANSWERING:
		break;
	}
	return KVD_REJECT_NONE;
}

/* A connection whose client closed or reset it, while a request is due and
 * nothing it sent is left unread: MHD, which reads with edge-triggered
 * epoll, may not look at it again until its idle timeout. */
static bool gone(const struct pollfd *p)
{
	int unread = 0;
	return (p->revents & (POLLRDHUP | POLLHUP | POLLERR)) && ioctl(p->fd, FIONREAD, &unread) == 0 && unread == 0;
}

/* Under the lock: cuts what is late or gone; fills why[] for the log. */
typedef struct cut_note {
	enum kvd_http_reject r;
	unsigned held; /* lines of its reason held back before it */
	char peer[INET6_ADDRSTRLEN];
} cut_note;

#define NOTES (2 * LOG_BURST) /* the two deadlines, each its rate limit's burst */

static size_t sweep(kvd_http_guard *g, cut_note notes[NOTES])
{
	size_t np = 0, nn = 0;
	if (g->polls_cap < g->n) {
		struct pollfd *p = realloc(g->polls, g->n * sizeof(*p));
		if (p) {
			g->polls = p;
			g->polls_cap = g->n;
		}
	}
	double now = kvd_mono();
	for (conn *c = g->head; c; c = c->next) {
		if (c->cut)
			continue;
		bool quiet;
		enum kvd_http_reject r = late(g, c, now, &quiet);
		if (r != KVD_REJECT_NONE) {
			cut(c);
			unsigned held = 0;
			if (count(g, r, &held) && nn < NOTES) {
				notes[nn].r = r;
				notes[nn].held = held;
				memcpy(notes[nn++].peer, c->peer, sizeof(c->peer));
			}
		} else if (quiet) {
			cut(c);
		} else if (c->phase != ANSWERING && np < g->polls_cap) {
			g->polls[np++] = (struct pollfd){.fd = c->fd, .events = POLLRDHUP};
		}
	}
	if (np && poll(g->polls, np, 0) > 0)
		for (size_t i = 0; i < np; i++)
			if (gone(&g->polls[i]))
				for (conn *c = g->head; c; c = c->next)
					if (c->fd == g->polls[i].fd && !c->cut) {
						cut(c);
						break;
					}
	return nn;
}

static void *watch(void *arg)
{
	kvd_http_guard *g = arg;
	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += (long)(TICK_S * 1e9);
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (!g->stop && pthread_cond_timedwait(&g->wake, &g->lock, &until) != ETIMEDOUT)
			;
		if (g->stop)
			break;
		cut_note notes[NOTES];
		size_t n = sweep(g, notes);
		pthread_mutex_unlock(&g->lock);
		for (size_t i = 0; i < n; i++)
			log_reject(notes[i].r, notes[i].peer,
				   notes[i].r == KVD_REJECT_HEADER_TIMEOUT
					   ? "headers not in within --web.read-header-timeout"
					   : "request not in within --web.read-timeout",
				   notes[i].held);
		if (g->tick)
			g->tick();
		pthread_mutex_lock(&g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

kvd_http_guard *kvd_http_guard_new(const kvd_guard_limits *l, void (*tick)(void))
{
	kvd_http_guard *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->l = *l;
	g->tick = tick;
	for (unsigned r = 0; r < KVD_REJECT__COUNT; r++)
		g->logs[r] = (kvd_ratelimit)KVD_RATELIMIT(LOG_WINDOW_S, LOG_BURST);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&g->watchdog, NULL, watch, g) != 0) {
		pthread_cond_destroy(&g->wake);
		pthread_mutex_destroy(&g->lock);
		free(g);
		return NULL;
	}
	pthread_setname_np(g->watchdog, "kv-http-guard");
	return g;
}

void kvd_http_guard_free(kvd_http_guard *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = true;
	pthread_cond_signal(&g->wake);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->watchdog, NULL);
	while (g->head) { /* MHD stopped: what it did not report closed */
		conn *c = g->head;
		g->head = c->next;
		free(c);
	}
	free(g->polls);
	pthread_cond_destroy(&g->wake);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

void kvd_http_guard_snap(kvd_http_guard *g, mkv_http_snap *out)
{
	pthread_mutex_lock(&g->lock);
	out->connections = g->n;
	pthread_mutex_unlock(&g->lock);
	out->rejected = (mkv_http_rejects){
		.limit = atomic_load(&g->rejected[KVD_REJECT_LIMIT]),
		.address_limit = atomic_load(&g->rejected[KVD_REJECT_ADDRESS_LIMIT]),
		.header_timeout = atomic_load(&g->rejected[KVD_REJECT_HEADER_TIMEOUT]),
		.request_timeout = atomic_load(&g->rejected[KVD_REJECT_REQUEST_TIMEOUT]),
		.malformed = atomic_load(&g->rejected[KVD_REJECT_MALFORMED]),
	};
	out->ok = true;
}

const char *kvd_http_reject_name(enum kvd_http_reject r)
{
	static const char *const names[KVD_REJECT__COUNT] = {
		[KVD_REJECT_LIMIT] = "limit",
		[KVD_REJECT_ADDRESS_LIMIT] = "address_limit",
		[KVD_REJECT_HEADER_TIMEOUT] = "header_timeout",
		[KVD_REJECT_REQUEST_TIMEOUT] = "request_timeout",
		[KVD_REJECT_MALFORMED] = "malformed",
	};
	return r >= 0 && r < KVD_REJECT__COUNT ? names[r] : "none";
}
