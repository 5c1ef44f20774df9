/* SPDX-License-Identifier: Apache-2.0 */
/* --web.config.file: what is accepted, what is refused with which reason,
 * the users read, and the TLS priority string, down to what a GnuTLS
 * server session given it accepts.  Files are written to a fresh temporary
 * folder. */
#include <crypt.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "kv_common.h"
#include "kv_webconfig.h"

static char dir[64];
static const char *self; /* this program, run again with --load */

#define TLS_HEAD "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
#define DEFAULT  "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

static void put(const char *name, const char *text)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int load(const char *text, kvd_webconfig *w, char *err, size_t errlen)
{
	put("web.yml", text);
	char path[128];
	snprintf(path, sizeof(path), "%s/web.yml", dir);
	err[0] = '\0';
	return kvd_webconfig_load(path, w, err, errlen);
}

static char *bcrypt(const char *password)
{
	char salt[64];
	assert_non_null(crypt_gensalt_rn("$2y$", 4, NULL, 0, salt, sizeof(salt)));
	struct crypt_data cd = {0};
	const char *h = crypt_rn(password, salt, &cd, (int)sizeof(cd));
	assert_non_null(h);
	return strdup(h);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/kvx-webcfg-XXXXXX");
	assert_non_null(mkdtemp(dir));
	put("server.crt", "CERT\n");
	put("server.key", "KEY\n");
	put("ca.crt", "CA\n");
	put("empty.pem", "");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void test_tls_and_users(void **state)
{
	(void)state;
	char *alice = bcrypt("s3cret"), *bob = bcrypt("other");
	char text[512], err[256];
	snprintf(text, sizeof(text),
		 "tls_server_config:\n  cert_file: server.crt\n  key_file: %s/server.key\n"
		 "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
		 "basic_auth_users:\n  alice: %s\n  bob: '%s'\n",
		 dir, alice, bob);
	kvd_webconfig w;
	assert_int_equal(load(text, &w, err, sizeof(err)), MKV_OK);
	assert_true(w.tls);
	assert_string_equal(w.cert_pem, "CERT\n"); /* relative to the file */
	assert_string_equal(w.key_pem, "KEY\n");   /* absolute */
	assert_string_equal(w.client_ca_pem, "CA\n");
	assert_int_equal(w.client_auth, KVD_CLIENT_REQUIRE_AND_VERIFY);
	assert_int_equal(w.n_users, 2);
	assert_string_equal(w.users[0].name, "alice"); /* checked in test_http_auth */
	assert_string_equal(w.users[0].hash, alice);
	assert_string_equal(w.users[1].name, "bob");
	kvd_webconfig_free(&w);
	free(alice);
	free(bob);

	/* no client verification: the CA is not even read */
	assert_int_equal(load("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
			      "  client_ca_file: nope.crt\n",
			      &w, err, sizeof(err)),
			 MKV_OK);
	assert_int_equal(w.client_auth, KVD_CLIENT_NONE);
	assert_null(w.client_ca_pem);
	assert_int_equal(w.n_users, 0);
	kvd_webconfig_free(&w);

	assert_int_equal(load("", &w, err, sizeof(err)), MKV_OK); /* empty: plain HTTP, no users */
	assert_false(w.tls);
	kvd_webconfig_free(&w);
}

static void test_refused(void **state)
{
	(void)state;
	static const struct {
		const char *text, *reason;
	} cases[] = {
		{"http_server_config:\n  http2: true\n", "http_server_config is not supported"},
		{"- a\n- b\n", "must be a mapping"},
		{"basic_auth_users: [\n", "at line"},
		{"basic_auth_users:\n  alice: s3cret\n", "not a bcrypt hash"},
		{"basic_auth_users:\n  - alice\n", "must be a mapping"},
		{"basic_auth_users:\n  '': $2y$04$abcdefghijklmnopqrstuuuD0Q7QHy2Ez3GA/UkeX3ALO2hkmnlq2\n",
		 "empty user"},
		{"tls_server_config:\n  cert_file: server.crt\n", "needs cert_file and key_file"},
		{"tls_server_config:\n  cert_file: server.crt\n  key_file: nope.key\n", "cannot read"},
		{"tls_server_config:\n  cert_file: empty.pem\n  key_file: server.key\n", "is empty"},
		{TLS_HEAD "  prefer_server_cipher_suites: true\n",
		 "tls_server_config.prefer_server_cipher_suites is not supported (cert_file, key_file, "
		 "client_auth_type, "
		 "client_ca_file, min_version, max_version, cipher_suites, curve_preferences)"},
		{TLS_HEAD "  ? [a]\n  : b\n", "holds a key that is not a name"},
		{TLS_HEAD "  min_version: TLS14\n", "min_version TLS14 is not supported (TLS10, TLS11, TLS12, TLS13)"},
		{TLS_HEAD "  max_version: SSL30\n", "max_version SSL30 is not supported"},
		{TLS_HEAD "  min_version: [TLS12]\n", "min_version must be one value, not a list or mapping"},
		{TLS_HEAD "  min_version: TLS13\n  max_version: TLS12\n",
		 "min_version TLS13 is above max_version TLS12"},
		{TLS_HEAD "  max_version: TLS11\n", "min_version TLS12 is above max_version TLS11"}, /* the default */
		{TLS_HEAD "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_RSA_WITH_AES_128_GCM_SHA256]\n",
		 "cipher_suites: TLS_RSA_WITH_AES_128_GCM_SHA256 is not supported (Go's names: "
		 "TLS_ECDHE_{ECDSA,RSA}_WITH_{AES_128_CBC_SHA,AES_256_CBC_SHA,AES_128_GCM_SHA256,AES_256_GCM_SHA384,"
		 "CHACHA20_POLY1305_SHA256})"},
		{TLS_HEAD "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
		 "TLS_AES_128_GCM_SHA256 is a TLS 1.3 suite, which is not configurable"},
		{TLS_HEAD "  cipher_suites: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n", "cipher_suites must be a list"},
		{TLS_HEAD "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA]\n",
		 "names no GCM or CHACHA20_POLY1305 suite, and GnuTLS takes its TLS 1.3 ciphers from the same list"},
		{TLS_HEAD "  min_version: TLS10\n  max_version: TLS11\n"
			  "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n",
		 "names only TLS 1.2 suites (GCM, CHACHA20_POLY1305) but max_version is TLS11"},
		{TLS_HEAD "  curve_preferences: [X25519, CurveP224]\n",
		 "curve_preferences: CurveP224 is not supported (CurveP256, CurveP384, CurveP521, X25519)"},
		{TLS_HEAD "  curve_preferences: {X25519: 1}\n", "curve_preferences must be a list"},
		{TLS_HEAD "  curve_preferences: [[X25519]]\n", "curve_preferences holds a list or mapping, not a name"},
		{"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: "
		 "RequestClientCert\n",
		 "is not supported"},
		{"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		 "  client_auth_type: VerifyClientCertIfGiven\n",
		 "needs client_ca_file"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kvd_webconfig w;
		char err[512]; /* the exporter's */
		int rc = load(cases[i].text, &w, err, sizeof(err));
		if (rc != MKV_EINVAL || !strstr(err, cases[i].reason) || strchr(err, '\n'))
			fail_msg("case %zu: rc %d, err \"%s\"", i, rc, err);
		assert_null(w.users); /* nothing half-loaded is left behind */
		assert_null(w.cert_pem);
		assert_null(w.tls_priorities);
	}
	kvd_webconfig w;
	char err[256];
	assert_int_equal(kvd_webconfig_load("/nonexistent/web.yml", &w, err, sizeof(err)), MKV_EINVAL);
	assert_non_null(strstr(err, "cannot read"));
}

/* Loads TLS_HEAD and more, and checks that GnuTLS takes the priority string. */
static const char *priorities(const char *more, kvd_webconfig *w)
{
	char text[1024], err[512];
	snprintf(text, sizeof(text), TLS_HEAD "%s", more);
	int rc = load(text, w, err, sizeof(err));
	if (rc != MKV_OK)
		fail_msg("%s: rc %d, err \"%s\"", more, rc, err);
	assert_true(w->tls);
	gnutls_priority_t p;
	assert_int_equal(gnutls_priority_init(&p, w->tls_priorities, NULL), GNUTLS_E_SUCCESS);
	gnutls_priority_deinit(p);
	return w->tls_priorities;
}

static void test_tls_defaults(void **state)
{
	(void)state;
	kvd_webconfig w;
	char err[512];
	assert_int_equal(load("basic_auth_users: {}\n", &w, err, sizeof(err)), MKV_OK);
	assert_null(w.tls_priorities); /* no TLS, nothing for the server to set */
	kvd_webconfig_free(&w);

	/* TLS 1.2 and 1.3 only, GnuTLS's NORMAL otherwise */
	assert_string_equal(priorities("", &w), DEFAULT);
	gnutls_priority_t p;
	assert_int_equal(gnutls_priority_init(&p, w.tls_priorities, NULL), GNUTLS_E_SUCCESS);
	const unsigned int *versions;
	assert_int_equal(gnutls_priority_protocol_list(p, &versions), 2);
	assert_int_equal(versions[0], GNUTLS_TLS1_3);
	assert_int_equal(versions[1], GNUTLS_TLS1_2);
	gnutls_priority_deinit(p);
	kvd_webconfig_free(&w);

	/* empty lists and YAML's null are exporter-toolkit's defaults too */
	assert_string_equal(priorities("  cipher_suites: []\n  curve_preferences:\n", &w), DEFAULT);
	kvd_webconfig_free(&w);
}

static void test_tls_keys(void **state)
{
	(void)state;
	static const struct {
		const char *more, *priorities;
	} cases[] = {
		{"  min_version: TLS10\n", DEFAULT ":+VERS-TLS1.1:+VERS-TLS1.0"},
		{"  min_version: TLS13\n", "NORMAL:-VERS-ALL:+VERS-TLS1.3"},
		{"  max_version: TLS12\n", "NORMAL:-VERS-ALL:+VERS-TLS1.2"},
		{"  min_version: TLS11\n  max_version: TLS11\n", "NORMAL:-VERS-ALL:+VERS-TLS1.1"},
		{"  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n",
		 DEFAULT ":-KX-ALL:-CIPHER-ALL:-MAC-ALL:+ECDHE-RSA:+AES-128-GCM:+AEAD"},
		{"  min_version: TLS10\n  max_version: TLS11\n  cipher_suites: "
		 "[TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA]\n",
		 "NORMAL:-VERS-ALL:+VERS-TLS1.1:+VERS-TLS1.0:-KX-ALL:-CIPHER-ALL:-MAC-ALL:+ECDHE-ECDSA:+AES-256-CBC:+"
		 "SHA1"},
		{"  curve_preferences: [X25519, CurveP521, X25519]\n",
		 DEFAULT ":-GROUP-ALL:+GROUP-X25519:+GROUP-SECP521R1"},
		/* all four, the lists' order kept */
		{"  min_version: TLS12\n  max_version: TLS13\n  cipher_suites:\n"
		 "    - TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256\n    - TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384\n"
		 "    - TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256\n    - TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA\n"
		 "  curve_preferences: [X25519, CurveP256, CurveP384]\n",
		 DEFAULT ":-KX-ALL:-CIPHER-ALL:-MAC-ALL:+ECDHE-ECDSA:+ECDHE-RSA:+AES-128-GCM:+AES-256-GCM:"
			 "+CHACHA20-POLY1305:+AES-128-CBC:+AEAD:+SHA1:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:"
			 "+GROUP-SECP384R1"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kvd_webconfig w;
		const char *got = priorities(cases[i].more, &w);
		if (strcmp(got, cases[i].priorities))
			fail_msg("case %zu: %s", i, got);
		kvd_webconfig_free(&w);
	}

	/* each of Go's ten TLS 1.2 suites, as its key exchange, cipher and MAC */
	static const char *const kx[] = {"ECDSA", "RSA"};
	static const char *const ciphers[][3] = {{"AES_128_CBC_SHA", "AES-128-CBC", "SHA1"},
						 {"AES_256_CBC_SHA", "AES-256-CBC", "SHA1"},
						 {"AES_128_GCM_SHA256", "AES-128-GCM", "AEAD"},
						 {"AES_256_GCM_SHA384", "AES-256-GCM", "AEAD"},
						 {"CHACHA20_POLY1305_SHA256", "CHACHA20-POLY1305", "AEAD"}};
	for (size_t k = 0; k < 2; k++)
		for (size_t c = 0; c < 5; c++) {
			char more[128], want[256];
			snprintf(more, sizeof(more), "  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_%s_WITH_%s]\n",
				 kx[k], ciphers[c][0]);
			snprintf(want, sizeof(want),
				 "NORMAL:-VERS-ALL:+VERS-TLS1.2:-KX-ALL:-CIPHER-ALL:-MAC-ALL:+ECDHE-%s:+%s:+%s", kx[k],
				 ciphers[c][1], ciphers[c][2]);
			kvd_webconfig w;
			assert_string_equal(priorities(more, &w), want);
			kvd_webconfig_free(&w);
		}

	/* one suite named: GnuTLS offers it and, in TLS 1.3, the suite of its cipher, nothing else */
	kvd_webconfig w;
	gnutls_priority_t p;
	assert_int_equal(
		gnutls_priority_init(&p, priorities("  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n", &w),
				     NULL),
		GNUTLS_E_SUCCESS);
	char names[256] = "";
	unsigned idx;
	for (unsigned i = 0;
	     gnutls_priority_get_cipher_suite_index(p, i, &idx) != GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE; i++) {
		const char *name = gnutls_cipher_suite_info(idx, NULL, NULL, NULL, NULL, NULL);
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s ", name ? name : "?");
	}
	assert_string_equal(names, "TLS_AES_128_GCM_SHA256 TLS_ECDHE_RSA_AES_128_GCM_SHA256 ");
	gnutls_priority_deinit(p);
	kvd_webconfig_free(&w);
}

/* What a handshake between a server session given the loaded certificate,
 * key and priority string and a client session with client_priorities came
 * to: each side's result, and what the server negotiated. */
typedef struct {
	int server, client;
	gnutls_alert_description_t alert; /* the client's, when it got one */
	gnutls_protocol_t version;
	gnutls_cipher_algorithm_t cipher;
	gnutls_kx_algorithm_t kx;
	gnutls_group_t group;
} hs_result;

static bool pending(int rc)
{
	return rc < 0 && !gnutls_error_is_fatal(rc);
}

/* Both sessions over a socketpair in this one thread, non-blocking: each goes
 * as far as it can in turn until both have finished or failed; a side that
 * fails sends its alert, which ends the other's wait. */
static hs_result handshake(const kvd_webconfig *w, const char *client_priorities)
{
	gnutls_certificate_credentials_t cred[2];
	gnutls_datum_t cert = {(unsigned char *)w->cert_pem, (unsigned)strlen(w->cert_pem)};
	gnutls_datum_t key = {(unsigned char *)w->key_pem, (unsigned)strlen(w->key_pem)};
	int fd[2];
	gnutls_session_t s[2]; /* the server, the client */
	int rc[2] = {GNUTLS_E_AGAIN, GNUTLS_E_AGAIN};
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(gnutls_certificate_allocate_credentials(&cred[i]), GNUTLS_E_SUCCESS);
		assert_int_equal(gnutls_init(&s[i], (i ? GNUTLS_CLIENT : GNUTLS_SERVER) | GNUTLS_NONBLOCK), 0);
		assert_int_equal(gnutls_priority_set_direct(s[i], i ? client_priorities : w->tls_priorities, NULL), 0);
		assert_int_equal(gnutls_credentials_set(s[i], GNUTLS_CRD_CERTIFICATE, cred[i]), 0);
		gnutls_transport_set_int(s[i], fd[i]);
	}
	assert_int_equal(gnutls_certificate_set_x509_key_mem(cred[0], &cert, &key, GNUTLS_X509_FMT_PEM), 0);
	for (int round = 0; pending(rc[0]) || pending(rc[1]); round++) {
		if (round == 100)
			fail_msg("the handshake is stuck: server %d, client %d", rc[0], rc[1]);
		for (int i = 1; i >= 0; i--) /* the client speaks first */
			if (pending(rc[i]) && (rc[i] = gnutls_handshake(s[i])) < 0 && !pending(rc[i]))
				gnutls_alert_send_appropriate(s[i], rc[i]);
	}
	hs_result r = {rc[0], rc[1], 0, 0, 0, 0, 0};
	if (rc[1] == GNUTLS_E_FATAL_ALERT_RECEIVED)
		r.alert = gnutls_alert_get(s[1]);
	if (rc[0] == 0 && rc[1] == 0) {
		r.version = gnutls_protocol_get_version(s[0]);
		r.cipher = gnutls_cipher_get(s[0]);
		r.kx = gnutls_kx_get(s[0]);
		r.group = gnutls_group_get(s[0]);
	}
	for (int i = 0; i < 2; i++) {
		gnutls_deinit(s[i]);
		gnutls_certificate_free_credentials(cred[i]);
		close(fd[i]);
	}
	return r;
}

static void put_datum(const char *name, gnutls_datum_t *d)
{
	char text[4096];
	snprintf(text, sizeof(text), "%.*s", (int)d->size, (const char *)d->data);
	put(name, text);
	gnutls_free(d->data);
}

/* A self-signed ECDSA P-256 certificate and its key, tls.crt and tls.key: made
 * here, as tests/fixtures holds none and one written there would expire. */
static void make_certificate(void)
{
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	gnutls_datum_t pem;
	unsigned char serial = 1;
	time_t now = time(NULL);
	assert_int_equal(gnutls_x509_privkey_init(&key), 0);
	assert_int_equal(
		gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
		0);
	assert_int_equal(gnutls_x509_crt_init(&crt), 0);
	assert_int_equal(gnutls_x509_crt_set_version(crt, 3), 0);
	assert_int_equal(gnutls_x509_crt_set_serial(crt, &serial, 1), 0);
	assert_int_equal(gnutls_x509_crt_set_activation_time(crt, now - 3600), 0);
	assert_int_equal(gnutls_x509_crt_set_expiration_time(crt, now + 86400), 0);
	assert_int_equal(gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "localhost", 9), 0);
	assert_int_equal(gnutls_x509_crt_set_key(crt, key), 0);
	assert_int_equal(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0), 0);
	assert_int_equal(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &pem), 0);
	put_datum("tls.crt", &pem);
	assert_int_equal(gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &pem), 0);
	put_datum("tls.key", &pem);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
}

static void load_tls(const char *more, kvd_webconfig *w)
{
	char text[512], err[512];
	snprintf(text, sizeof(text), "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n%s", more);
	if (load(text, w, err, sizeof(err)) != MKV_OK)
		fail_msg("%s", err);
}

static void test_tls_handshake(void **state)
{
	(void)state;
	make_certificate();
	kvd_webconfig w;
	load_tls("", &w); /* the defaults */
	static const char *const old[] = {"NORMAL:-VERS-ALL:+VERS-TLS1.1", "NORMAL:-VERS-ALL:+VERS-TLS1.0"};
	for (size_t i = 0; i < 2; i++) {
		hs_result r = handshake(&w, old[i]);
		assert_int_equal(r.server, GNUTLS_E_UNSUPPORTED_VERSION_PACKET);
		assert_int_equal(r.client, GNUTLS_E_FATAL_ALERT_RECEIVED);
		assert_int_equal(r.alert, GNUTLS_A_PROTOCOL_VERSION);
	}
	hs_result r = handshake(&w, "NORMAL:-VERS-ALL:+VERS-TLS1.2");
	assert_int_equal(r.server, 0);
	assert_int_equal(r.client, 0);
	assert_int_equal(r.version, GNUTLS_TLS1_2);
	r = handshake(&w, "NORMAL");
	assert_int_equal(r.client, 0);
	assert_int_equal(r.version, GNUTLS_TLS1_3);
	kvd_webconfig_free(&w);

	/* the same client gets TLS 1.1 where min_version allows it: the refusal above is the priority string's */
	load_tls("  min_version: TLS11\n", &w);
	r = handshake(&w, old[0]);
	assert_int_equal(r.client, 0);
	assert_int_equal(r.version, GNUTLS_TLS1_1);
	kvd_webconfig_free(&w);

	/* one suite and one curve: what a client offering everything gets, and one without them does not */
	load_tls("  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n"
		 "  curve_preferences: [CurveP384]\n",
		 &w);
	r = handshake(&w, "NORMAL");
	assert_int_equal(r.client, 0);
	assert_int_equal(r.version, GNUTLS_TLS1_2);
	assert_int_equal(r.kx, GNUTLS_KX_ECDHE_ECDSA);
	assert_int_equal(r.cipher, GNUTLS_CIPHER_AES_256_GCM);
	assert_int_equal(r.group, GNUTLS_GROUP_SECP384R1);
	assert_true(handshake(&w, "NORMAL:-CIPHER-ALL:+AES-128-GCM:+CHACHA20-POLY1305").server < 0);
	assert_true(handshake(&w, "NORMAL:-GROUP-ALL:+GROUP-SECP256R1:+GROUP-X25519").server < 0);
	kvd_webconfig_free(&w);
}

/* A combination GnuTLS refuses fails at load: here because its system-wide
 * policy, which it reads when it starts, disables the one cipher named; so
 * this program runs again with that policy (see main). */
static void test_gnutls_refuses(void **state)
{
	(void)state;
	char policy[128], yml[128], out[1024];
	snprintf(policy, sizeof(policy), "%s/gnutls.config", dir);
	snprintf(yml, sizeof(yml), "%s/web.yml", dir);
	put("gnutls.config", "[overrides]\ntls-disabled-cipher = AES-128-GCM\n");
	kvd_webconfig w;
	const char *p = priorities("  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n",
				   &w);
	char want[512];
	snprintf(want, sizeof(want),
		 "refused: web config: GnuTLS refuses the TLS priority string %s: No or insufficient priorities were "
		 "set.\n",
		 p); /* accepted without the policy */
	kvd_webconfig_free(&w);
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd[1], STDOUT_FILENO);
		setenv("GNUTLS_SYSTEM_PRIORITY_FILE", policy, 1);
		execl(self, self, "--load", yml, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	size_t n = 0;
	ssize_t got;
	while ((got = read(fd[0], out + n, sizeof(out) - 1 - n)) > 0)
		n += (size_t)got;
	out[n] = '\0';
	close(fd[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_string_equal(out, want);
}

int main(int argc, char **argv)
{
	self = argv[0];
	if (argc == 3 && !strcmp(argv[1], "--load")) { /* test_gnutls_refuses */
		kvd_webconfig w;
		char err[512];
		if (kvd_webconfig_load(argv[2], &w, err, sizeof(err)) != MKV_OK)
			return printf("refused: %s\n", err) < 0;
		printf("loaded: %s\n", w.tls_priorities);
		kvd_webconfig_free(&w);
		return 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls_and_users), cmocka_unit_test(test_refused),
		cmocka_unit_test(test_tls_defaults),  cmocka_unit_test(test_tls_keys),
		cmocka_unit_test(test_tls_handshake), cmocka_unit_test(test_gnutls_refuses),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
