/* SPDX-License-Identifier: Apache-2.0 */
/* --web.config.file: what is accepted, what is refused with which reason,
 * and the password check.  Files are written to a fresh temporary folder. */
#include <crypt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "kv_common.h"
#include "kv_webconfig.h"

static char dir[64];

static void put(const char *name, const char *text)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int load(const char *text, kv_webconfig *w, char *err, size_t errlen)
{
	put("web.yml", text);
	char path[128];
	snprintf(path, sizeof(path), "%s/web.yml", dir);
	err[0] = '\0';
	return kv_webconfig_load(path, w, err, errlen);
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
	kv_webconfig w;
	assert_int_equal(load(text, &w, err, sizeof(err)), KV_OK);
	assert_true(w.tls);
	assert_string_equal(w.cert_pem, "CERT\n"); /* relative to the file */
	assert_string_equal(w.key_pem, "KEY\n");   /* absolute */
	assert_string_equal(w.client_ca_pem, "CA\n");
	assert_int_equal(w.client_auth, KV_CLIENT_REQUIRE_AND_VERIFY);
	assert_int_equal(w.n_users, 2);
	assert_true(kv_webconfig_check_user(&w, "alice", "s3cret"));
	assert_true(kv_webconfig_check_user(&w, "bob", "other"));
	assert_false(kv_webconfig_check_user(&w, "alice", "other"));
	assert_false(kv_webconfig_check_user(&w, "alic", "s3cret"));
	assert_false(kv_webconfig_check_user(&w, "mallory", "s3cret"));
	assert_false(kv_webconfig_check_user(&w, "alice", ""));
	kv_webconfig_free(&w);
	free(alice);
	free(bob);

	/* no client verification: the CA is not even read */
	assert_int_equal(load("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
			      "  client_ca_file: nope.crt\n",
			      &w, err, sizeof(err)),
			 KV_OK);
	assert_int_equal(w.client_auth, KV_CLIENT_NONE);
	assert_null(w.client_ca_pem);
	assert_int_equal(w.n_users, 0);
	kv_webconfig_free(&w);

	assert_int_equal(load("", &w, err, sizeof(err)), KV_OK); /* empty: plain HTTP, no users */
	assert_false(w.tls);
	kv_webconfig_free(&w);
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
		{"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS13\n",
		 "tls_server_config.min_version is not supported"},
		{"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: "
		 "RequestClientCert\n",
		 "is not supported"},
		{"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		 "  client_auth_type: VerifyClientCertIfGiven\n",
		 "needs client_ca_file"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kv_webconfig w;
		char err[256];
		int rc = load(cases[i].text, &w, err, sizeof(err));
		if (rc != KV_EINVAL || !strstr(err, cases[i].reason))
			fail_msg("case %zu: rc %d, err \"%s\"", i, rc, err);
		assert_null(w.users); /* nothing half-loaded is left behind */
		assert_null(w.cert_pem);
	}
	kv_webconfig w;
	char err[256];
	assert_int_equal(kv_webconfig_load("/nonexistent/web.yml", &w, err, sizeof(err)), KV_EINVAL);
	assert_non_null(strstr(err, "cannot read"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls_and_users),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
