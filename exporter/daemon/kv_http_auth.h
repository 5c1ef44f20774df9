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
 * - a peer address that failed too often lately is penalized: its tries
 *   are refused unchecked, but for one password check every few seconds
 *   and the credentials verified before, until a bounded time after its
 *   last failure (whatever it tries meanwhile); addresses listed exempt
 *   never are;
 * - password checks run on one thread of their own, one at a time, from a
 *   short queue (a request beyond it is refused), so that a storm of wrong
 *   passwords costs one core at most and never holds the server's threads,
 *   which answer everyone else meanwhile.
 * Every decision reads the one clock given at creation.
 * Every failure is counted by reason (enum kvd_login) and logged,
 * rate-limited, with its peer. */
#ifndef KV_HTTP_AUTH_H
#define KV_HTTP_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include <mooncake_kv/scrape.h>

#include "kv_cidr.h"
#include "kv_webconfig.h"

typedef struct kvd_http_auth kvd_http_auth;

/* A login's outcome: good, waiting for its password check, or refused by
 * reason (the failures: the `reason` label of
 * mooncake_kv_http_login_failures_total, kvd_login_name). */
enum kvd_login {
	KVD_LOGIN_GOOD,           /* the credential is good */
	KVD_LOGIN_PENDING,        /* a password check is needed (kvd_http_auth_begin's *job) */
	KVD_LOGIN_MISSING,        /* no credentials */
	KVD_LOGIN_MALFORMED,      /* not basic auth, bad base64, a NUL, invalid UTF-8, no colon */
	KVD_LOGIN_UNKNOWN_USER,   /* no such user */
	KVD_LOGIN_WRONG_PASSWORD, /* a user's wrong password */
	KVD_LOGIN_THROTTLED,      /* refused unchecked: the peer failed too often, or too many checks run */
	KVD_LOGIN__COUNT
};

const char *kvd_login_name(enum kvd_login l);

/* Seconds on a clock that never steps: the daemon's kvd_mono, a test's own. */
typedef double (*kvd_auth_clock)(void);

/* Starts the checker thread.  NULL when out of memory or no thread.  w (its
 * users) and exempt[0..n_exempt) (addresses never penalized) must outlive
 * the checker; clock is read by every decision, the checker's and the
 * callers'. */
kvd_http_auth *kvd_http_auth_new(const kvd_webconfig *w, const kvd_cidr *exempt, size_t n_exempt, kvd_auth_clock clock);
void kvd_http_auth_free(kvd_http_auth *a);

typedef struct kvd_auth_job kvd_auth_job;
typedef void (*kvd_auth_done)(void *cls, enum kvd_login result);

/* Starts checking an Authorization header's value (NULL: none) from a peer
 * (its address as 16 bytes, IPv4 mapped, and its text for the logs).  Returns
 * KVD_LOGIN_GOOD when the credential is good (a verified one, cached), a
 * failure decided without a password check (counted), or KVD_LOGIN_PENDING
 * with *job: give it to kvd_http_auth_queue, or to kvd_http_auth_run. */
enum kvd_login kvd_http_auth_begin(kvd_http_auth *a, const char *authorization, const unsigned char addr[16],
				   const char *peer, kvd_auth_job **job);
/* Queues the check for the checker thread, which calls done(cls, result)
 * when it is made (KVD_LOGIN_GOOD, or the failure, counted) and
 * frees the job.  False when the queue is full or stopping: the job is
 * freed, counted as throttled, and done is not called. */
bool kvd_http_auth_queue(kvd_http_auth *a, kvd_auth_job *j, kvd_auth_done done, void *cls);
/* Makes the check here instead (the job stays the caller's to free). */
enum kvd_login kvd_http_auth_run(kvd_http_auth *a, kvd_auth_job *j);
void kvd_auth_job_free(kvd_auth_job *j);
/* begin, then run here: the whole check in the caller's thread. */
enum kvd_login kvd_http_auth_check(kvd_http_auth *a, const char *authorization, const unsigned char addr[16],
				   const char *peer);
/* Stops the checker thread; what is still queued is answered throttled
 * (its done called).  Before the server stops, so that no request stays
 * suspended. */
void kvd_http_auth_stop(kvd_http_auth *a);

/* The failures and password checks (bcrypt runs) so far. */
void kvd_http_auth_snap(kvd_http_auth *a, mkv_http_snap *out);

#endif
