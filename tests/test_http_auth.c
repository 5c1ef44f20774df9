/* SPDX-License-Identifier: Apache-2.0 */
/* Basic auth (exporter/daemon/http_auth.c): what is accepted, what is
 * refused and why, what a check costs (bcrypt runs, counted), the cache of
 * verified credentials and its expiry, the penalty of an address that fails
 * too often (when it begins and ends, what it still lets through, who is
 * exempt), and the checker thread.  The clock is the test's, handed to the
 * auth object at creation: every decision reads it, the checker thread's
 * too. */
#include <crypt.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kv_http_auth.h"
#include "kv_webconfig.h"

static const unsigned char addr_a[16] = {[10] = 0xff, [11] = 0xff, [12] = 127, [15] = 3};
static const unsigned char addr_b[16] = {[10] = 0xff, [11] = 0xff, [12] = 127, [15] = 2};
static const unsigned char v6_a[16] = {0xfd, 0x12, [15] = 1};             /* fd12::1 */
static const unsigned char v6_b[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1}; /* 2001:db8::1 */
static const unsigned char compat[16] = {[12] = 127, [15] = 3};           /* ::127.0.0.3, not mapped */

/* The test's clock: seconds that move only when a test moves them. */
static _Atomic double now_s;
static double test_clock(void)
{
	return now_s;
}

static void advance(double seconds)
{
	now_s = now_s + seconds; /* only the test's thread moves it */
}

static char *bcrypt(const char *password, unsigned long cost)
{
	char salt[64];
	assert_non_null(crypt_gensalt_rn("$2y$", cost, NULL, 0, salt, sizeof(salt)));
	struct crypt_data cd = {0};
	const char *h = crypt_rn(password, salt, &cd, (int)sizeof(cd));
	assert_non_null(h);
	return strdup(h);
}

/* "Basic " + base64 of raw[0..n) */
static char *basic(const char *raw, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc(6 + (n + 2) / 3 * 4 + 1);
	assert_non_null(out);
	memcpy(out, "Basic ", 6);
	char *o = out + 6;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t q = (uint32_t)(unsigned char)raw[i] << 16;
		if (i + 1 < n)
			q |= (uint32_t)(unsigned char)raw[i + 1] << 8;
		if (i + 2 < n)
			q |= (unsigned char)raw[i + 2];
		*o++ = tab[q >> 18 & 63];
		*o++ = tab[q >> 12 & 63];
		*o++ = i + 1 < n ? tab[q >> 6 & 63] : '=';
		*o++ = i + 2 < n ? tab[q & 63] : '=';
	}
	*o = '\0';
	return out;
}

typedef struct fixture {
	kvd_webconfig w;
	kvd_http_auth *a;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->w.n_users = 2;
	f->w.users = calloc(2, sizeof(*f->w.users));
	f->w.users[0] = (kvd_web_user){strdup("alice"), bcrypt("s3cret", 4)};
	f->w.users[1] = (kvd_web_user){strdup("bob"), bcrypt("other", 5)};
	now_s = 1000;
	f->a = kvd_http_auth_new(&f->w, NULL, 0, test_clock);
	assert_non_null(f->a);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	kvd_http_auth_free(f->a);
	kvd_webconfig_free(&f->w);
	free(f);
	return 0;
}

/* One check of raw[0..n) from addr; *checks: bcrypt runs it cost. */
static enum kvd_login check(fixture *f, const char *raw, size_t n, const unsigned char *addr, uint64_t *checks)
{
	mkv_http_snap before = {0}, after = {0};
	kvd_http_auth_snap(f->a, &before);
	char *h = basic(raw, n);
	enum kvd_login r = kvd_http_auth_check(f->a, h, addr, "peer");
	free(h);
	kvd_http_auth_snap(f->a, &after);
	if (checks)
		*checks = after.password_checks - before.password_checks;
	return r;
}

#define CHECK(f, lit, addr, checks) check(f, lit, sizeof(lit) - 1, addr, checks)

static void test_users_and_cache(void **state)
{
	fixture *f = *state;
	uint64_t n;
	assert_int_equal(CHECK(f, "alice:s3cret", addr_a, &n), KVD_LOGIN_GOOD);
	assert_int_equal(n, 1);
	assert_int_equal(CHECK(f, "bob:other", addr_a, &n), KVD_LOGIN_GOOD);
	assert_int_equal(n, 1);
	/* verified: not checked again for a minute */
	advance(59);
	assert_int_equal(CHECK(f, "alice:s3cret", addr_b, &n), KVD_LOGIN_GOOD);
	assert_int_equal(n, 0);
	/* then checked again */
	advance(2);
	assert_int_equal(CHECK(f, "alice:s3cret", addr_b, &n), KVD_LOGIN_GOOD);
	assert_int_equal(n, 1);
	/* a cached credential says nothing of another password or user */
	assert_int_equal(CHECK(f, "alice:other", addr_b, &n), KVD_LOGIN_WRONG_PASSWORD);
	assert_int_equal(n, 1);
	assert_int_equal(CHECK(f, "bob:s3cret", addr_b, &n), KVD_LOGIN_WRONG_PASSWORD);
	assert_int_equal(n, 1);
	/* an unknown user pays for a bcrypt too */
	assert_int_equal(CHECK(f, "mallory:s3cret", addr_a, &n), KVD_LOGIN_UNKNOWN_USER);
	assert_int_equal(n, 1);
	assert_int_equal(CHECK(f, "alic:s3cret", addr_a, &n), KVD_LOGIN_UNKNOWN_USER);
	assert_int_equal(CHECK(f, "alice:", addr_a, &n), KVD_LOGIN_WRONG_PASSWORD);
	/* the password is everything after the first colon */
	assert_int_equal(CHECK(f, "alice:s3cret:", addr_a, &n), KVD_LOGIN_WRONG_PASSWORD);

	mkv_http_snap s = {0};
	kvd_http_auth_snap(f->a, &s);
	assert_int_equal(s.login_failures.wrong_password, 4);
	assert_int_equal(s.login_failures.unknown_user, 2);
	assert_int_equal(s.password_checks, 9);
}

static void test_malformed_never_checked(void **state)
{
	fixture *f = *state;
	uint64_t n;
	/* a NUL anywhere: refused, never read as the text before it */
	assert_int_equal(CHECK(f, "alice:s3cret\0junk", addr_a, &n), KVD_LOGIN_MALFORMED);
	assert_int_equal(n, 0);
	assert_int_equal(CHECK(f, "alice\0x:s3cret", addr_a, &n), KVD_LOGIN_MALFORMED);
	assert_int_equal(CHECK(f, "alice:s3cret\xff", addr_a, &n), KVD_LOGIN_MALFORMED); /* not UTF-8 */
	assert_int_equal(CHECK(f, "alice:s\xc0\xaf", addr_a, &n), KVD_LOGIN_MALFORMED);  /* overlong */
	assert_int_equal(CHECK(f, "alices3cret", addr_a, &n), KVD_LOGIN_MALFORMED);      /* no colon */
	assert_int_equal(n, 0);
	/* a good credential spelled wrongly */
	static const char *const bad[] = {
		"Basic YWxpY2U6czNjcmV0=",    /* padding where none belongs */
		"Basic YWxpY2U6czNjcmV0\x01", /* junk */
		"Basic YWxpY2U6c*NjcmV0",     /* not base64 */
		"Basic YWxpY2U6czNjcmV",      /* cut */
		"Basic YWxp=2U6czNjcmV0",     /* padding inside */
		"Bearer YWxpY2U6czNjcmV0",    /* another scheme */
		"Basic",
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(kvd_http_auth_check(f->a, bad[i], addr_a, "peer"), KVD_LOGIN_MALFORMED);
	/* the same, spelled right, and with the scheme in any case */
	assert_int_equal(kvd_http_auth_check(f->a, "basic  YWxpY2U6czNjcmV0", addr_a, "peer"), KVD_LOGIN_GOOD);
	assert_int_equal(kvd_http_auth_check(f->a, NULL, addr_a, "peer"), KVD_LOGIN_MISSING);

	mkv_http_snap s = {0};
	kvd_http_auth_snap(f->a, &s);
	assert_int_equal(s.login_failures.malformed, 5 + sizeof(bad) / sizeof(bad[0]));
	assert_int_equal(s.login_failures.missing, 1);
	assert_int_equal(s.password_checks, 1);
}

/* Five wrong passwords from addr, one a second: its penalty begins at the
 * fifth (now_s after). */
static void penalize(fixture *f, const unsigned char *addr)
{
	uint64_t n;
	for (int i = 0; i < 5; i++) {
		advance(1);
		assert_int_equal(CHECK(f, "alice:guess", addr, &n), KVD_LOGIN_WRONG_PASSWORD);
		assert_int_equal(n, 1);
	}
}

static void test_penalty_begins(void **state)
{
	fixture *f = *state;
	uint64_t n;
	assert_int_equal(CHECK(f, "alice:s3cret", addr_a, &n), KVD_LOGIN_GOOD); /* cached from here on */
	penalize(f, addr_a);
	/* five failures: the address is refused unchecked, right or wrong */
	assert_int_equal(CHECK(f, "alice:guess", addr_a, &n), KVD_LOGIN_THROTTLED);
	assert_int_equal(n, 0);
	assert_int_equal(CHECK(f, "bob:other", addr_a, &n), KVD_LOGIN_THROTTLED);
	assert_int_equal(n, 0);
	/* but what was verified still passes, and other addresses are checked */
	assert_int_equal(CHECK(f, "alice:s3cret", addr_a, &n), KVD_LOGIN_GOOD);
	assert_int_equal(CHECK(f, "bob:other", addr_b, &n), KVD_LOGIN_GOOD);
	assert_int_equal(n, 1);
	assert_int_equal(CHECK(f, "alice:guess", addr_b, &n), KVD_LOGIN_WRONG_PASSWORD);
	assert_int_equal(n, 1);
	/* four failures, each within 10 s of the one before, are no penalty;
	 * a pause of more than 10 s starts the count afresh */
	for (int i = 0; i < 3; i++) {
		advance(9);
		assert_int_equal(CHECK(f, "alice:guess", addr_b, &n), KVD_LOGIN_WRONG_PASSWORD);
	}
	advance(10.5);
	for (int i = 0; i < 4; i++)
		assert_int_equal(CHECK(f, "alice:guess", addr_b, &n), KVD_LOGIN_WRONG_PASSWORD);
	assert_int_equal(CHECK(f, "alice:guess", addr_b, &n), KVD_LOGIN_WRONG_PASSWORD); /* the fifth */
	assert_int_equal(CHECK(f, "alice:guess", addr_b, &n), KVD_LOGIN_THROTTLED);

	mkv_http_snap s = {0};
	kvd_http_auth_snap(f->a, &s);
	assert_int_equal(s.login_failures.throttled, 3);
}

/* The penalty ends 30 s after the address's last failure, however often it
 * is refused meanwhile; while it lasts, one check in 5 s is made, and a
 * wrong password then is a failure that renews it. */
static void test_penalty_ends(void **state)
{
	fixture *f = *state;
	uint64_t n;
	penalize(f, addr_a);          /* its last failure at 1005 */
	for (int i = 0; i < 9; i++) { /* 1005.5 to 1009.5: refused, which renews nothing */
		advance(0.5);
		assert_int_equal(CHECK(f, "alice:guess", addr_a, &n), KVD_LOGIN_THROTTLED);
		assert_int_equal(n, 0);
	}
	now_s = 1010; /* 5 s after the penalty began: one check */
	assert_int_equal(CHECK(f, "alice:guess", addr_a, &n), KVD_LOGIN_WRONG_PASSWORD);
	assert_int_equal(n, 1);
	assert_int_equal(CHECK(f, "alice:guess", addr_a, &n), KVD_LOGIN_THROTTLED); /* only one */
	assert_int_equal(n, 0);
	for (int i = 0; i < 8; i++) { /* 1010.5 to 1014: refused */
		advance(0.5);
		assert_int_equal(CHECK(f, "alice:guess", addr_a, &n), KVD_LOGIN_THROTTLED);
	}
	/* 29.9 s after the last failure (1010) it still lasts: the one check of
	 * its turn, then refused */
	now_s = 1039.9;
	assert_int_equal(CHECK(f, "alice:guess2", addr_a, &n), KVD_LOGIN_WRONG_PASSWORD);
	assert_int_equal(CHECK(f, "alice:guess", addr_a, &n), KVD_LOGIN_THROTTLED);
	/* 30 s after that failure it is over: checked again as any address,
	 * four failures before the next penalty */
	now_s = 1069.9;
	for (int i = 0; i < 5; i++) {
		assert_int_equal(CHECK(f, "alice:guess", addr_a, &n), KVD_LOGIN_WRONG_PASSWORD);
		assert_int_equal(n, 1);
	}
	assert_int_equal(CHECK(f, "alice:guess", addr_a, &n), KVD_LOGIN_THROTTLED);
}

/* A client that rotated its password after five tries with the old one: its
 * new password is checked at the penalty's next turn, and passes from the
 * cache after. */
static void test_right_password_while_penalized(void **state)
{
	fixture *f = *state;
	uint64_t n;
	penalize(f, addr_a); /* 1005 */
	advance(1);
	assert_int_equal(CHECK(f, "alice:s3cret", addr_a, &n), KVD_LOGIN_THROTTLED);
	assert_int_equal(n, 0);
	now_s = 1010;
	assert_int_equal(CHECK(f, "alice:s3cret", addr_a, &n), KVD_LOGIN_GOOD);
	assert_int_equal(n, 1);
	/* one check a turn, a right one included */
	assert_int_equal(CHECK(f, "bob:other", addr_a, &n), KVD_LOGIN_THROTTLED);
	advance(1);
	assert_int_equal(CHECK(f, "alice:s3cret", addr_a, &n), KVD_LOGIN_GOOD);
	assert_int_equal(n, 0);
	now_s = 1015;
	assert_int_equal(CHECK(f, "bob:other", addr_a, &n), KVD_LOGIN_GOOD);
	assert_int_equal(n, 1);
	/* a right password is no failure: the penalty still ends 30 s after
	 * the last one (1005) */
	now_s = 1034.9;
	assert_int_equal(CHECK(f, "alice:guess", addr_a, &n), KVD_LOGIN_WRONG_PASSWORD); /* its turn */
	assert_int_equal(CHECK(f, "alice:guess", addr_a, &n), KVD_LOGIN_THROTTLED);
}

/* A guesser and an honest client behind one address: the guesser gets one
 * check in 5 s, whatever it sends; the honest client's credential, verified
 * before, is checked again when its cache entry expires, whoever holds the
 * turn. */
static void test_guesser_beside_honest(void **state)
{
	fixture *f = *state;
	uint64_t n, guesses = 0, refused = 0;
	assert_int_equal(CHECK(f, "alice:s3cret", addr_a, &n), KVD_LOGIN_GOOD); /* 1000, until 1060 */
	penalize(f, addr_a);                                                    /* 1005 */
	char guess[32];
	for (int k = 1; k <= 190; k++) { /* every 0.5 s to 1100 */
		now_s = 1005 + 0.5 * k;
		int len = snprintf(guess, sizeof(guess), "alice:guess%d", k);
		enum kvd_login r = check(f, guess, (size_t)len, addr_a, &n);
		assert_true(r == KVD_LOGIN_THROTTLED || (r == KVD_LOGIN_WRONG_PASSWORD && n == 1));
		guesses += n;
		refused += r == KVD_LOGIN_THROTTLED;
		if (k % 8 == 0) { /* the honest client, every 4 s, after the guess */
			assert_int_equal(CHECK(f, "alice:s3cret", addr_a, &n), KVD_LOGIN_GOOD);
			assert_int_equal(n, now_s == 1061); /* its entry expired at 1060 */
		}
	}
	assert_int_equal(guesses, 19); /* at 1010, 1015, ... 1100 */
	assert_int_equal(refused, 190 - 19);
}

/* Addresses listed exempt (IPv4 networks match IPv4-mapped peers, IPv6 ones
 * IPv6 peers) are never penalized; the others are, IPv6 as IPv4, each
 * address on its own. */
static void test_exempt_and_ipv6(void **state)
{
	fixture *f = *state;
	kvd_cidr exempt[2];
	assert_null(kvd_cidr_parse("127.0.0.3", &exempt[0]));
	assert_null(kvd_cidr_parse("fd00::/8", &exempt[1]));
	kvd_http_auth_free(f->a);
	f->a = kvd_http_auth_new(&f->w, exempt, 2, test_clock);
	assert_non_null(f->a);
	uint64_t n;
	for (int i = 0; i < 12; i++) {
		assert_int_equal(CHECK(f, "alice:guess", addr_a, &n), KVD_LOGIN_WRONG_PASSWORD);
		assert_int_equal(n, 1);
		assert_int_equal(CHECK(f, "alice:guess", v6_a, &n), KVD_LOGIN_WRONG_PASSWORD);
		assert_int_equal(n, 1);
	}
	assert_int_equal(CHECK(f, "alice:s3cret", addr_a, &n), KVD_LOGIN_GOOD);
	assert_int_equal(CHECK(f, "bob:other", v6_a, &n), KVD_LOGIN_GOOD);
	assert_int_equal(n, 1);
	/* not listed: penalized, each on its own */
	penalize(f, v6_b);
	assert_int_equal(CHECK(f, "alice:guess", v6_b, &n), KVD_LOGIN_THROTTLED);
	penalize(f, compat); /* ::127.0.0.3 is an IPv6 address, not 127.0.0.3 */
	assert_int_equal(CHECK(f, "alice:guess", compat, &n), KVD_LOGIN_THROTTLED);
	penalize(f, addr_b);
	assert_int_equal(CHECK(f, "alice:guess", addr_b, &n), KVD_LOGIN_THROTTLED);
	assert_int_equal(CHECK(f, "alice:guess", addr_a, &n), KVD_LOGIN_WRONG_PASSWORD);
	assert_int_equal(CHECK(f, "alice:guess", v6_a, &n), KVD_LOGIN_WRONG_PASSWORD);

	mkv_http_snap s = {0};
	kvd_http_auth_snap(f->a, &s);
	assert_int_equal(s.login_failures.wrong_password, 24 + 15 + 2);
	assert_int_equal(s.login_failures.throttled, 3);
}

/* The checker thread's answers, waited for. */
typedef struct answer {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int n;
	enum kvd_login last;
} answer;

static void answered(void *cls, enum kvd_login r)
{
	answer *an = cls;
	pthread_mutex_lock(&an->lock);
	an->n++;
	an->last = r;
	pthread_cond_signal(&an->cond);
	pthread_mutex_unlock(&an->lock);
}

/* Queues raw[0..n) to the checker thread and waits for its answer. */
static enum kvd_login checked_by_thread(fixture *f, const char *raw, size_t n, answer *an)
{
	char *h = basic(raw, n);
	kvd_auth_job *job;
	enum kvd_login r = kvd_http_auth_begin(f->a, h, addr_b, "peer", &job);
	free(h);
	if (r != KVD_LOGIN_PENDING)
		return r;
	pthread_mutex_lock(&an->lock);
	int before = an->n;
	pthread_mutex_unlock(&an->lock);
	assert_true(kvd_http_auth_queue(f->a, job, answered, an));
	pthread_mutex_lock(&an->lock);
	while (an->n == before) /* no bound here: meson's timeout is the test's */
		pthread_cond_wait(&an->cond, &an->lock);
	r = an->last;
	pthread_mutex_unlock(&an->lock);
	return r;
}

static void test_checker_thread(void **state)
{
	fixture *f = *state;
	answer an = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	assert_int_equal(checked_by_thread(f, "alice:s3cret", 12, &an), KVD_LOGIN_GOOD);
	assert_int_equal(checked_by_thread(f, "alice:wrong", 11, &an), KVD_LOGIN_WRONG_PASSWORD);
	assert_int_equal(checked_by_thread(f, "nobody:s3cret", 13, &an), KVD_LOGIN_UNKNOWN_USER);
	assert_int_equal(an.n, 3);
	/* the verified one is cached now: no check, no thread */
	kvd_auth_job *job = NULL;
	char *h = basic("alice:s3cret", 12);
	assert_int_equal(kvd_http_auth_begin(f->a, h, addr_b, "peer", &job), KVD_LOGIN_GOOD);
	assert_null(job);
	/* cached by the checker thread on the test's clock: for 60 s of it */
	advance(59);
	assert_int_equal(kvd_http_auth_begin(f->a, h, addr_b, "peer", &job), KVD_LOGIN_GOOD);
	advance(2);
	assert_int_equal(kvd_http_auth_begin(f->a, h, addr_b, "peer", &job), KVD_LOGIN_PENDING);
	kvd_auth_job_free(job);
	/* stopped: a check is refused at once, counted as throttled, and
	 * nothing is called back */
	kvd_http_auth_stop(f->a);
	free(h);
	h = basic("bob:other", 9);
	assert_int_equal(kvd_http_auth_begin(f->a, h, addr_a, "peer", &job), KVD_LOGIN_PENDING);
	assert_false(kvd_http_auth_queue(f->a, job, answered, &an));
	free(h);
	mkv_http_snap s = {0};
	kvd_http_auth_snap(f->a, &s);
	assert_int_equal(s.login_failures.throttled, 1);
	assert_int_equal(s.password_checks, 3);
	assert_int_equal(an.n, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_users_and_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_never_checked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_penalty_begins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_penalty_ends, setup, teardown),
		cmocka_unit_test_setup_teardown(test_right_password_while_penalized, setup, teardown),
		cmocka_unit_test_setup_teardown(test_guesser_beside_honest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exempt_and_ipv6, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checker_thread, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
