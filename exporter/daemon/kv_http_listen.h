/* SPDX-License-Identifier: Apache-2.0 */
/* Where the HTTP server listens: --web.listen-address resolved, and checked
 * before anything is logged, since libmicrohttpd does not say why it could
 * not listen. */
#ifndef KV_HTTP_LISTEN_H
#define KV_HTTP_LISTEN_H

#include <stdbool.h>
#include <sys/socket.h>

/* "[host]:port", ":port", "host:port", "[v6]:port" -> a socket address;
 * *any: no host (IPv6's any address, dual stack).  Returns 0 or MKV_EINVAL. */
int kvd_http_resolve(const char *addr, struct sockaddr_storage *ss, bool *any);
/* ss (IPv6's any address and a port) made IPv4's any address, same port:
 * where a host has no IPv6. */
void kvd_http_ipv4_any(struct sockaddr_storage *ss);

/* Whether --web.listen-address can be listened on as kvd_http_start will
 * (bound, listened on, closed; IPv6's any address falling back to IPv4's):
 * 0, the OS's errno (EADDRINUSE, EACCES, ...), or -1 when its host does not
 * resolve.  libmicrohttpd does not say why it could not. */
int kvd_http_listen_check(const char *address);

#endif
