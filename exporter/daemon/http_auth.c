/* SPDX-License-Identifier: Apache-2.0 */
#include <crypt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <mooncake_kv/common.h>

#include "kv_http_auth.h"
#include "kv_log.h"

#define CACHE_SLOTS  64   /* verified credentials kept */
#define CACHE_TTL_S  60.0 /* each, at most this long after its bcrypt */
#define PEER_SLOTS   256  /* addresses whose failures are remembered */
#define PEER_FAILS   5    /* failures, each within PEER_WINDOW of the one before: a penalty */
#define PEER_WINDOW  10.0 /* seconds */
#define PENALTY_S    30.0 /* a penalty ends this long after the address's last failure */
#define PENALTY_GAP  5.0  /* seconds: while it lasts, one password check an address at most */
#define QUEUE_MAX    4    /* password checks waiting for the checker thread: more are refused */
#define MAX_CRED     1024 /* decoded bytes: longer is malformed */
#define DIGEST_BYTES 32

typedef struct cached {
	unsigned char digest[DIGEST_BYTES];
	double until; /* 0: empty */
} cached;

struct kvd_auth_job {
	kvd_auth_job *next;
	unsigned char digest[DIGEST_BYTES];
	char cred[MAX_CRED + 1]; /* user:password, NUL-terminated at the colon */
	size_t len, ulen;
	unsigned char addr[16];
	bool ticket; /* admitted whatever the address's penalty: no second look at run */
	char peer[64];
	kvd_auth_done done;
	void *cls;
};

/* An address that failed lately.  Its penalty (fails at PEER_FAILS) ends
 * PENALTY_S after its last failure, whatever it tries meanwhile: a try
 * refused unchecked is no failure.  While it lasts, one check in PENALTY_GAP
 * is made (a right password gets in; a wrong one renews the penalty), and a
 * credential verified before is checked again when its cache entry expired. */
typedef struct peer_fails {
	unsigned char addr[16];
	unsigned fails;    /* at most PEER_FAILS */
	double last;       /* its last failure; 0: empty */
	double next_check; /* penalized: no check before this */
} peer_fails;

struct kvd_http_auth {
	const kvd_webconfig *w;
	const kvd_cidr *exempt; /* never penalized */
	size_t n_exempt;
	kvd_auth_clock clock;  /* every decision's */
	const char *costliest; /* the hash an unknown user is checked against */
	unsigned char key[DIGEST_BYTES];
	pthread_mutex_t lock; /* the cache, the peers, the queue, the log's rate limit */
	pthread_cond_t work;  /* a check was queued, or stop */
	kvd_auth_job *head, *tail;
	unsigned queued;
	bool stop;
	pthread_t checker;
	bool checker_started;
	cached cache[CACHE_SLOTS];
	peer_fails peers[PEER_SLOTS];
	kvd_ratelimit logs[KVD_LOGIN__COUNT]; /* one a reason: a flood of one hides no other */
	atomic_ullong failures[KVD_LOGIN__COUNT];
	atomic_ullong checks; /* bcrypt runs */
};

static unsigned cost_of(const char *hash)
{
	/* $2y$NN$...: is_bcrypt (webconfig.c) checked the shape */
	return (unsigned)(hash[4] - '0') * 10u + (unsigned)(hash[5] - '0');
}

static void *check(void *arg);

kvd_http_auth *kvd_http_auth_new(const kvd_webconfig *w, const kvd_cidr *exempt, size_t n_exempt, kvd_auth_clock clock)
{
	kvd_http_auth *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->w = w;
	a->exempt = exempt;
	a->n_exempt = n_exempt;
	a->clock = clock;
	for (size_t i = 0; i < w->n_users; i++)
		if (!a->costliest || cost_of(w->users[i].hash) > cost_of(a->costliest))
			a->costliest = w->users[i].hash;
	if (gnutls_rnd(GNUTLS_RND_KEY, a->key, sizeof(a->key)) != 0) {
		free(a);
		return NULL;
	}
	for (unsigned f = 0; f < KVD_LOGIN__COUNT; f++)
		a->logs[f] = (kvd_ratelimit)KVD_RATELIMIT(10.0, 10);
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->work, NULL);
	if (pthread_create(&a->checker, NULL, check, a) != 0) {
		kvd_http_auth_free(a);
		return NULL;
	}
	a->checker_started = true;
	pthread_setname_np(a->checker, "kv-http-auth");
	return a;
}

void kvd_http_auth_free(kvd_http_auth *a)
{
	if (!a)
		return;
	kvd_http_auth_stop(a);
	pthread_cond_destroy(&a->work);
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
	if (n < 0 || !mkv_label_value_clean(cred, (size_t)n)) /* no NUL, valid UTF-8 */
		return false;
	cred[n] = '\0';
	*len = (size_t)n;
	*colon = memchr(cred, ':', (size_t)n);
	return *colon != NULL;
}

/* Under the lock.  The slot an address's failures are kept in, a free or
 * the stalest one when it has none (create) or NULL. */
static peer_fails *peer_slot(kvd_http_auth *a, const unsigned char addr[16], bool create, double now)
{
	peer_fails *stalest = &a->peers[0];
	for (size_t i = 0; i < PEER_SLOTS; i++) {
		peer_fails *p = &a->peers[i];
		if (p->last != 0 && (p->fails < PEER_FAILS ? now - p->last > PEER_WINDOW : now - p->last >= PENALTY_S))
			p->last = 0; /* quiet long enough, or its penalty over: forgotten */
		if (p->last != 0 && !memcmp(p->addr, addr, 16))
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

/* Whether d is cached now; *was: verified before, its entry expired since
 * (and not yet replaced). */
static bool cache_has(kvd_http_auth *a, const unsigned char d[DIGEST_BYTES], double now, bool *was)
{
	bool hit = false, old = false;
	for (size_t i = 0; i < CACHE_SLOTS; i++) { /* every slot, hit or not */
		bool match = a->cache[i].until != 0 && same(a->cache[i].digest, d, DIGEST_BYTES);
		hit |= match && a->cache[i].until > now;
		old |= match && a->cache[i].until <= now;
	}
	*was = old && !hit;
	return hit;
}

/* Under the lock.  Whether a credential from addr may be checked now; while
 * the address's penalty lasts, this takes its one check in PENALTY_GAP.  A
 * credential verified before (was) and an exempt address are always.
 * *ticket: admitted whatever the address does meanwhile (not penalized: a
 * penalty that begins before the check is made refuses it). */
static bool admits(kvd_http_auth *a, const unsigned char addr[16], bool was, double now, bool *ticket)
{
	*ticket = true;
	if (was || kvd_cidr_match(a->exempt, a->n_exempt, addr))
		return true;
	peer_fails *p = peer_slot(a, addr, false, now);
	if (!p || p->fails < PEER_FAILS) {
		*ticket = false;
		return true;
	}
	if (now < p->next_check)
		return false;
	p->next_check = now + PENALTY_GAP;
	return true;
}

static void cache_put(kvd_http_auth *a, const unsigned char d[DIGEST_BYTES], double now)
{
	cached *oldest = &a->cache[0];
	for (size_t i = 0; i < CACHE_SLOTS; i++)
		if (a->cache[i].until < oldest->until)
			oldest = &a->cache[i];
	for (size_t i = 0; i < CACHE_SLOTS; i++) /* its own expired entry, when it has one */
		if (a->cache[i].until != 0 && same(a->cache[i].digest, d, DIGEST_BYTES))
			oldest = &a->cache[i];
	memcpy(oldest->digest, d, DIGEST_BYTES);
	oldest->until = now + CACHE_TTL_S;
}

/* The user's hash, or the costliest when there is no such user (*known
 * false); every name is compared, whatever matched before. */
static const char *hash_for(const kvd_webconfig *w, const char *user, size_t ulen, bool *known, const char *costliest)
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

static enum kvd_login fail(kvd_http_auth *a, enum kvd_login f, const char *peer, const char *user)
{
	atomic_fetch_add(&a->failures[f], 1);
	unsigned held = 0;
	pthread_mutex_lock(&a->lock);
	bool say = f != KVD_LOGIN_MISSING && kvd_ratelimit_allow(&a->logs[f], a->clock(), &held);
	pthread_mutex_unlock(&a->lock);
	if (!say)
		return f;
	char n[24];
	snprintf(n, sizeof(n), "%u", held);
	const char *held_key = held ? "suppressed" : NULL;
	if (user)
		kvd_log(KVD_LOG_WARN, "login failed", "reason", kvd_login_name(f), "peer", peer, "user", user, held_key,
			n, NULL);
	else
		kvd_log(KVD_LOG_WARN, "login failed", "reason", kvd_login_name(f), "peer", peer, held_key, n, NULL);
	return f;
}

enum kvd_login kvd_http_auth_begin(kvd_http_auth *a, const char *authorization, const unsigned char addr[16],
				   const char *peer, kvd_auth_job **job)
{
	*job = NULL;
	if (!authorization)
		return fail(a, KVD_LOGIN_MISSING, peer, NULL);
	kvd_auth_job *j = calloc(1, sizeof(*j));
	if (!j)
		return fail(a, KVD_LOGIN_THROTTLED, peer, NULL);
	char *colon;
	if (!parse(authorization, j->cred, &j->len, &colon)) {
		free(j);
		return fail(a, KVD_LOGIN_MALFORMED, peer, NULL);
	}
	if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, a->key, sizeof(a->key), j->cred, j->len, j->digest) != 0) {
		kvd_auth_job_free(j);
		return fail(a, KVD_LOGIN_THROTTLED, peer, NULL);
	}
	*colon = '\0';
	j->ulen = (size_t)(colon - j->cred);
	memcpy(j->addr, addr, 16);
	snprintf(j->peer, sizeof(j->peer), "%s", peer);
	pthread_mutex_lock(&a->lock);
	double now = a->clock();
	bool was, hit = cache_has(a, j->digest, now, &was);
	bool waits = !hit && !admits(a, addr, was, now, &j->ticket); /* refused here: it extends nothing */
	pthread_mutex_unlock(&a->lock);
	if (hit || waits) {
		kvd_auth_job_free(j);
		return hit ? KVD_LOGIN_GOOD : fail(a, KVD_LOGIN_THROTTLED, peer, NULL);
	}
	*job = j;
	return KVD_LOGIN_PENDING;
}

enum kvd_login kvd_http_auth_run(kvd_http_auth *a, kvd_auth_job *j)
{
	const char *user = j->cred, *password = j->cred + j->ulen + 1;
	pthread_mutex_lock(&a->lock);
	bool ticket, waits = !j->ticket && !admits(a, j->addr, false, a->clock(), &ticket); /* penalized meanwhile */
	pthread_mutex_unlock(&a->lock);
	if (waits)
		return fail(a, KVD_LOGIN_THROTTLED, j->peer, NULL);

	atomic_fetch_add(&a->checks, 1);
	bool known;
	const char *hash = hash_for(a->w, user, j->ulen, &known, a->costliest);
	bool ok = bcrypt_matches(password, hash) && known;

	pthread_mutex_lock(&a->lock);
	double now = a->clock(); /* after the bcrypt */
	peer_fails *p;
	if (ok) {
		cache_put(a, j->digest, now);
	} else if (!kvd_cidr_match(a->exempt, a->n_exempt, j->addr) && (p = peer_slot(a, j->addr, true, now))) {
		if (p->fails < PEER_FAILS && ++p->fails == PEER_FAILS)
			p->next_check = now + PENALTY_GAP; /* the penalty begins */
		p->last = now;                             /* a failure: the penalty, begun or not, runs from here */
	}
	pthread_mutex_unlock(&a->lock);
	return ok ? KVD_LOGIN_GOOD : fail(a, known ? KVD_LOGIN_WRONG_PASSWORD : KVD_LOGIN_UNKNOWN_USER, j->peer, user);
}

void kvd_auth_job_free(kvd_auth_job *j)
{
	if (j) {
		gnutls_memset(j->cred, 0, sizeof(j->cred));
		free(j);
	}
}

bool kvd_http_auth_queue(kvd_http_auth *a, kvd_auth_job *j, kvd_auth_done done, void *cls)
{
	j->done = done;
	j->cls = cls;
	pthread_mutex_lock(&a->lock);
	bool room = !a->stop && a->queued < QUEUE_MAX;
	if (room) {
		j->next = NULL;
		if (a->tail)
			a->tail->next = j;
		else
			a->head = j;
		a->tail = j;
		a->queued++;
		pthread_cond_signal(&a->work);
	}
	pthread_mutex_unlock(&a->lock);
	if (!room) {
		fail(a, KVD_LOGIN_THROTTLED, j->peer, NULL);
		kvd_auth_job_free(j);
	}
	return room;
}

enum kvd_login kvd_http_auth_check(kvd_http_auth *a, const char *authorization, const unsigned char addr[16],
				   const char *peer)
{
	kvd_auth_job *j;
	enum kvd_login r = kvd_http_auth_begin(a, authorization, addr, peer, &j);
	if (r == KVD_LOGIN_PENDING) {
		r = kvd_http_auth_run(a, j);
		kvd_auth_job_free(j);
	}
	return r;
}

/* The checker thread: one password check at a time, in the order queued;
 * at stop, what is still queued is answered throttled. */
static void *check(void *arg)
{
	kvd_http_auth *a = arg;
	pthread_mutex_lock(&a->lock);
	for (;;) {
		while (!a->head && !a->stop)
			pthread_cond_wait(&a->work, &a->lock);
		kvd_auth_job *j = a->head;
		if (!j)
			break;
		a->head = j->next;
		if (!a->head)
			a->tail = NULL;
		a->queued--;
		bool stopping = a->stop;
		pthread_mutex_unlock(&a->lock);
		enum kvd_login r = stopping ? fail(a, KVD_LOGIN_THROTTLED, j->peer, NULL) : kvd_http_auth_run(a, j);
		kvd_auth_done done = j->done;
		void *cls = j->cls;
		kvd_auth_job_free(j);
		done(cls, r);
		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

void kvd_http_auth_stop(kvd_http_auth *a)
{
	if (!a || !a->checker_started)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->checker, NULL);
	a->checker_started = false;
}

void kvd_http_auth_snap(kvd_http_auth *a, mkv_http_snap *out)
{
	out->login_failures = (mkv_login_failures){
		.missing = atomic_load(&a->failures[KVD_LOGIN_MISSING]),
		.malformed = atomic_load(&a->failures[KVD_LOGIN_MALFORMED]),
		.unknown_user = atomic_load(&a->failures[KVD_LOGIN_UNKNOWN_USER]),
		.wrong_password = atomic_load(&a->failures[KVD_LOGIN_WRONG_PASSWORD]),
		.throttled = atomic_load(&a->failures[KVD_LOGIN_THROTTLED]),
	};
	out->password_checks = atomic_load(&a->checks);
}

const char *kvd_login_name(enum kvd_login l)
{
	static const char *const names[KVD_LOGIN__COUNT] = {
		[KVD_LOGIN_GOOD] = "good",
		[KVD_LOGIN_PENDING] = "pending",
		[KVD_LOGIN_MISSING] = "missing",
		[KVD_LOGIN_MALFORMED] = "malformed",
		[KVD_LOGIN_UNKNOWN_USER] = "unknown_user",
		[KVD_LOGIN_WRONG_PASSWORD] = "wrong_password",
		[KVD_LOGIN_THROTTLED] = "throttled",
	};
	return (unsigned)l < KVD_LOGIN__COUNT ? names[l] : "invalid";
}
