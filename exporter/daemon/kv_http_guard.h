/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP server's door keeper: how many connections, from whom, and how
 * long a request may take to arrive.
 *
 * libmicrohttpd alone lets a client hold a connection for as long as it
 * sends a byte before its idle timeout, counts connections against one
 * limit for all (shared out between its threads), and misses a client that
 * closed after half a request.  So the keeper holds a table of the open
 * connections (MHD's connection notifications), refuses a connection over
 * the total or its address's share at accept (MHD's accept policy), and a
 * watchdog thread cuts (shutdown(2): MHD then reads the end and closes) a
 * connection whose request is late, measured from when the request became
 * due, not from its last byte, and one whose client is gone.  The table's
 * lock is held while a descriptor is cut, and MHD notifies the close before
 * it closes the descriptor, so a cut never reaches a reused descriptor.
 *
 * Every refusal and cut is counted by reason (kvd_http_reject) and logged,
 * rate-limited, with the peer's address. */
#ifndef KV_HTTP_GUARD_H
#define KV_HTTP_GUARD_H

#include <stdbool.h>
#include <sys/socket.h>

#include <microhttpd.h>
#include <mooncake_kv/scrape.h>

typedef struct kvd_http_guard kvd_http_guard;

/* Why a connection was refused or cut off (the `reason` label of
 * mooncake_kv_http_connections_rejected_total: kvd_http_reject_name). */
enum kvd_http_reject {
	KVD_REJECT_NONE = -1,       /* not refused */
	KVD_REJECT_LIMIT,           /* over --web.max-connections */
	KVD_REJECT_ADDRESS_LIMIT,   /* over --web.max-connections-per-address */
	KVD_REJECT_HEADER_TIMEOUT,  /* headers not in within --web.read-header-timeout */
	KVD_REJECT_REQUEST_TIMEOUT, /* the whole request not in within --web.read-timeout */
	KVD_REJECT_MALFORMED,       /* refused with 400 or 501 */
	KVD_REJECT__COUNT
};

const char *kvd_http_reject_name(enum kvd_http_reject r);

typedef struct kvd_guard_limits {
	unsigned max_connections; /* all clients together */
	unsigned max_per_address; /* one client address; 0: no limit of its own */
	double header_timeout;    /* seconds from accept (or the next request's first line) to its headers */
	double request_timeout;   /* seconds from then to the whole request */
	double idle_timeout;      /* a kept-alive connection's wait for its next request */
} kvd_guard_limits;

/* Starts the watchdog, which also calls tick (if not NULL) on each round,
 * outside its lock.  NULL when out of memory or no thread. */
kvd_http_guard *kvd_http_guard_new(const kvd_guard_limits *l, void (*tick)(void));
/* Stops the watchdog; call after MHD_stop_daemon. */
void kvd_http_guard_free(kvd_http_guard *g);

/* For MHD: the accept policy (MHD_start_daemon's apc) and
 * MHD_OPTION_NOTIFY_CONNECTION, both with the guard as cls. */
enum MHD_Result kvd_http_guard_accept(void *cls, const struct sockaddr *addr, socklen_t len);
void kvd_http_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
			   enum MHD_ConnectionNotificationCode code);

/* A request's progress on its connection, which moves its deadline:
 * its first line is in (MHD's URI log callback), its headers are in (the
 * handler's first call), all of it is in (the answer is being made: no
 * deadline of the keeper's; MHD's own idle timeout covers a client that
 * stops reading), the answer went out (the connection waits for the next). */
void kvd_http_guard_line_in(struct MHD_Connection *c);
void kvd_http_guard_headers_in(struct MHD_Connection *c);
void kvd_http_guard_request_in(struct MHD_Connection *c);
void kvd_http_guard_answered(struct MHD_Connection *c);

/* Counts a request refused as malformed and logs why, with its peer (c
 * NULL: a refusal libmicrohttpd made before naming the connection). */
void kvd_http_guard_malformed(kvd_http_guard *g, struct MHD_Connection *c, const char *why);

/* The connection's peer as text ("unknown" if none), and in addr (if not
 * NULL) as 16 bytes, IPv4 mapped into IPv6 (zeros if none). */
const char *kvd_http_guard_peer(struct MHD_Connection *c, unsigned char addr[16]);

/* Connections open and the refusals so far. */
void kvd_http_guard_snap(kvd_http_guard *g, mkv_http_snap *out);

#endif
