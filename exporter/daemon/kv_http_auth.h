/* SPDX-License-Identifier: Apache-2.0 */
/* Basic auth as the Prometheus exporter-toolkit does it, with the costs
 * bounded:
 *
 * - the Authorization header is decoded strictly (base64 without junk, no
 *   NUL, valid UTF-8, a colon): a credential that is not exactly what the
 *   client sent is refused, never truncated;
 * - a verified credential is cached, keyed by a keyed hash (HMAC-SHA256
 *   under a key drawn at start) of user and password, bounded and expiring,
 *   so an honest scraper pays for one bcrypt a minute, not one a request;
 * - an unknown user pays the same bcrypt as a known one: it is checked
 *   against the costliest configured hash, and the answer thrown away;
 *   names and hashes are compared without an early exit;
 * - a peer address that failed too often lately is refused unchecked for a
 *   while, and at most one bcrypt runs at a time (a request waits briefly
 *   for it), so a storm of wrong passwords costs one core at most and the
 *   server's threads stay free for everyone else.
 * Every failure is counted by reason (kv_login_failure) and logged,
 * rate-limited, with its peer. */
#ifndef KV_HTTP_AUTH_H
#define KV_HTTP_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include <mooncake_kv/scrape.h>

#include "kv_webconfig.h"

typedef struct kv_http_auth kv_http_auth;

/* NULL when out of memory.  w (its users) must outlive the checker. */
kv_http_auth *kv_http_auth_new(const kv_webconfig *w);
void kv_http_auth_free(kv_http_auth *a);

/* Checks an Authorization header's value (NULL: none) from a peer (its
 * address as 16 bytes, IPv4 mapped, and its text for the logs) at now
 * (kv_mono() seconds: the cache's and the peers' clock).  Returns
 * KV_LOGIN__COUNT when the credential is good, else the failure, counted. */
enum kv_login_failure kv_http_auth_check(kv_http_auth *a, const char *authorization, const unsigned char addr[16],
					 const char *peer, double now);

/* The failures and password checks (bcrypt runs) so far. */
void kv_http_auth_snap(kv_http_auth *a, kv_http_snap *out);

#endif
