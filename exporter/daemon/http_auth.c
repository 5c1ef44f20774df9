/* SPDX-License-Identifier: Apache-2.0 */
#include <crypt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <mooncake_kv/common.h>

#include "kv_clock.h"
#include "kv_http_auth.h"
#include "kv_log.h"

#define CACHE_SLOTS  64   /* verified credentials kept */
#define CACHE_TTL_S  60.0 /* each, at most this long after its bcrypt */
#define PEER_SLOTS   256  /* addresses whose failures are remembered */
#define PEER_FAILS   5    /* failures within PEER_WINDOW_S before an address waits */
#define PEER_WINDOW  10.0 /* seconds: and it waits until it has been quiet this long */
#define BCRYPT_WAIT  0.25 /* seconds a check waits for the bcrypt in progress */
#define MAX_CRED     1024 /* decoded bytes: longer is malformed */
#define DIGEST_BYTES 32

typedef struct cached {
	unsigned char digest[DIGEST_BYTES];
	double until; /* 0: empty */
} cached;

typedef struct peer_fails {
	unsigned char addr[16];
	unsigned fails;
	double last; /* 0: empty */
} peer_fails;

struct kv_http_auth {
	const kv_webconfig *w;
	const char *costliest; /* the hash an unknown user is checked against */
	unsigned char key[DIGEST_BYTES];
	pthread_mutex_t lock; /* the cache, the peers, the log's rate limit */
	pthread_cond_t freed; /* the bcrypt in progress ended */
	bool hashing;
	cached cache[CACHE_SLOTS];
	peer_fails peers[PEER_SLOTS];
	kv_ratelimit logs;
	atomic_ullong failures[KV_LOGIN__COUNT];
	atomic_ullong checks; /* bcrypt runs */
};

static unsigned cost_of(const char *hash)
{
	/* $2y$NN$...: is_bcrypt (webconfig.c) checked the shape */
	return (unsigned)(hash[4] - '0') * 10u + (unsigned)(hash[5] - '0');
}

kv_http_auth *kv_http_auth_new(const kv_webconfig *w)
{
	kv_http_auth *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->w = w;
	for (size_t i = 0; i < w->n_users; i++)
		if (!a->costliest || cost_of(w->users[i].hash) > cost_of(a->costliest))
			a->costliest = w->users[i].hash;
	if (gnutls_rnd(GNUTLS_RND_KEY, a->key, sizeof(a->key)) != 0) {
		free(a);
		return NULL;
	}
	a->logs = (kv_ratelimit)KV_RATELIMIT(10.0, 10);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->freed, &ca);
	pthread_condattr_destroy(&ca);
	return a;
}

void kv_http_auth_free(kv_http_auth *a)
{
	if (!a)
		return;
	pthread_cond_destroy(&a->freed);
	pthread_mutex_destroy(&a->lock);
	gnutls_memset(a->key, 0, sizeof(a->key));
	free(a);
}

/* Equal-length buffers compared without an early exit. */
static bool same(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(x[i] ^ y[i]);
	return d == 0;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 with its padding, nothing else (RFC 7617 over RFC 4648).
 * Returns the decoded length, or -1. */
static long b64_decode(const char *in, size_t len, unsigned char *out, size_t cap)
{
	if (len == 0 || len % 4 || len / 4 * 3 > cap)
		return -1;
	size_t n = 0;
	for (size_t i = 0; i < len; i += 4) {
		int v[4];
		unsigned pad = 0;
		for (int k = 0; k < 4; k++) {
			unsigned char c = (unsigned char)in[i + (size_t)k];
			bool last_quad = i + 4 == len;
			if (c == '=' && last_quad && k >= 2 && (k == 3 || in[i + 3] == '=')) {
				v[k] = 0;
				pad++;
			} else if (pad || (v[k] = b64_value(c)) < 0) {
				return -1;
			}
		}
		uint32_t q = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
		out[n++] = (unsigned char)(q >> 16);
		if (pad < 2)
			out[n++] = (unsigned char)(q >> 8);
		if (pad < 1)
			out[n++] = (unsigned char)q;
	}
	return (long)n;
}

/* "Basic <base64 of user:password>" -> cred (NUL-terminated), *colon its
 * first colon.  False: malformed. */
static bool parse(const char *header, char cred[MAX_CRED + 1], size_t *len, char **colon)
{
	if (strncasecmp(header, "Basic ", 6))
		return false;
	const char *b = header + 6;
	while (*b == ' ')
		b++;
	size_t bl = strlen(b);
	while (bl && b[bl - 1] == ' ')
		bl--;
	long n = b64_decode(b, bl, (unsigned char *)cred, MAX_CRED);
	if (n < 0 || !kv_label_value_clean(cred, (size_t)n)) /* no NUL, valid UTF-8 */
		return false;
	cred[n] = '\0';
	*len = (size_t)n;
	*colon = memchr(cred, ':', (size_t)n);
	return *colon != NULL;
}

/* Under the lock.  The slot an address's failures are kept in, a free or
 * the stalest one when it has none (create) or NULL. */
static peer_fails *peer_slot(kv_http_auth *a, const unsigned char addr[16], bool create, double now)
{
	peer_fails *stalest = &a->peers[0];
	for (size_t i = 0; i < PEER_SLOTS; i++) {
		peer_fails *p = &a->peers[i];
		if (p->last && now - p->last > PEER_WINDOW)
			p->last = 0; /* quiet long enough: forgotten */
		if (p->last && !memcmp(p->addr, addr, 16))
			return p;
		if (p->last < stalest->last)
			stalest = p;
	}
	if (!create)
		return NULL;
	memset(stalest, 0, sizeof(*stalest));
	memcpy(stalest->addr, addr, 16);
	return stalest;
}

static bool cache_has(kv_http_auth *a, const unsigned char d[DIGEST_BYTES], double now)
{
	bool hit = false;
	for (size_t i = 0; i < CACHE_SLOTS; i++) /* every slot, hit or not */
		hit |= a->cache[i].until > now && same(a->cache[i].digest, d, DIGEST_BYTES);
	return hit;
}

static void cache_put(kv_http_auth *a, const unsigned char d[DIGEST_BYTES], double now)
{
	cached *oldest = &a->cache[0];
	for (size_t i = 0; i < CACHE_SLOTS; i++)
		if (a->cache[i].until < oldest->until)
			oldest = &a->cache[i];
	memcpy(oldest->digest, d, DIGEST_BYTES);
	oldest->until = now + CACHE_TTL_S;
}

/* The user's hash, or the costliest when there is no such user (*known
 * false); every name is compared, whatever matched before. */
static const char *hash_for(const kv_webconfig *w, const char *user, size_t ulen, bool *known, const char *costliest)
{
	const char *hash = costliest;
	*known = false;
	for (size_t i = 0; i < w->n_users; i++) {
		const char *name = w->users[i].name;
		size_t nlen = strlen(name);
		bool match = nlen == ulen && same(name, user, ulen);
		if (match && !*known) {
			hash = w->users[i].hash;
			*known = true;
		}
	}
	return hash;
}

/* One bcrypt at a time: waits up to BCRYPT_WAIT for the one in progress
 * (under the lock).  False: still busy. */
static bool take_bcrypt(kv_http_auth *a)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += (long)(BCRYPT_WAIT * 1e9);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (a->hashing)
		if (pthread_cond_timedwait(&a->freed, &a->lock, &until) != 0)
			return !a->hashing && (a->hashing = true);
	a->hashing = true;
	return true;
}

static bool bcrypt_matches(const char *password, const char *hash)
{
	struct crypt_data *cd = calloc(1, sizeof(*cd));
	if (!cd)
		return false;
	/* crypt_rn (libxcrypt) rather than crypt_r: it returns NULL on failure
	 * instead of a "*" string, and sanitizers do not intercept it */
	const char *out = crypt_rn(password, hash, cd, (int)sizeof(*cd));
	size_t hl = strlen(hash);
	bool ok = out && strlen(out) == hl && same(out, hash, hl);
	gnutls_memset(cd, 0, sizeof(*cd));
	free(cd);
	return ok;
}

static enum kv_login_failure fail(kv_http_auth *a, enum kv_login_failure f, const char *peer, const char *user)
{
	atomic_fetch_add(&a->failures[f], 1);
	unsigned held = 0;
	pthread_mutex_lock(&a->lock);
	bool say = f != KV_LOGIN_MISSING && kv_ratelimit_allow(&a->logs, kv_mono(), &held);
	pthread_mutex_unlock(&a->lock);
	if (!say)
		return f;
	char n[24];
	snprintf(n, sizeof(n), "%u", held);
	const char *held_key = held ? "suppressed" : NULL;
	if (user)
		kv_log(KV_LOG_WARN, "login failed", "reason", kv_login_failure_name(f), "peer", peer, "user", user,
		       held_key, n, NULL);
	else
		kv_log(KV_LOG_WARN, "login failed", "reason", kv_login_failure_name(f), "peer", peer, held_key, n,
		       NULL);
	return f;
}

enum kv_login_failure kv_http_auth_check(kv_http_auth *a, const char *authorization, const unsigned char addr[16],
					 const char *peer, double now)
{
	if (!authorization)
		return fail(a, KV_LOGIN_MISSING, peer, NULL);
	char cred[MAX_CRED + 1];
	size_t len;
	char *colon;
	if (!parse(authorization, cred, &len, &colon))
		return fail(a, KV_LOGIN_MALFORMED, peer, NULL);
	unsigned char d[DIGEST_BYTES];
	if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, a->key, sizeof(a->key), cred, len, d) != 0)
		return fail(a, KV_LOGIN_THROTTLED, peer, NULL);
	*colon = '\0';
	const char *user = cred, *password = colon + 1;
	pthread_mutex_lock(&a->lock);
	if (cache_has(a, d, now)) {
		pthread_mutex_unlock(&a->lock);
		gnutls_memset(cred, 0, sizeof(cred));
		return KV_LOGIN__COUNT;
	}
	peer_fails *p = peer_slot(a, addr, false, now);
	bool waits = p && p->fails >= PEER_FAILS;
	if (waits)
		p->last = now; /* it keeps waiting while it keeps trying */
	bool run = !waits && take_bcrypt(a);
	double started = kv_mono();
	pthread_mutex_unlock(&a->lock);
	if (!run) {
		gnutls_memset(cred, 0, sizeof(cred));
		return fail(a, KV_LOGIN_THROTTLED, peer, NULL);
	}

	atomic_fetch_add(&a->checks, 1);
	bool known;
	const char *hash = hash_for(a->w, user, (size_t)(colon - cred), &known, a->costliest);
	bool ok = bcrypt_matches(password, hash) && known;
	gnutls_memset(cred + (colon - cred) + 1, 0, len - (size_t)(colon - cred));

	pthread_mutex_lock(&a->lock);
	a->hashing = false;
	pthread_cond_signal(&a->freed);
	now += kv_mono() - started; /* the bcrypt's time, on the caller's clock */
	if (ok) {
		cache_put(a, d, now);
	} else if ((p = peer_slot(a, addr, true, now))) {
		p->fails++;
		p->last = now;
	}
	pthread_mutex_unlock(&a->lock);
	return ok ? KV_LOGIN__COUNT : fail(a, known ? KV_LOGIN_WRONG_PASSWORD : KV_LOGIN_UNKNOWN_USER, peer, user);
}

void kv_http_auth_snap(kv_http_auth *a, kv_http_snap *out)
{
	for (unsigned f = 0; f < KV_LOGIN__COUNT; f++)
		out->login_failures[f] = atomic_load(&a->failures[f]);
	out->password_checks = atomic_load(&a->checks);
}
