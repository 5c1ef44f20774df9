/* SPDX-License-Identifier: Apache-2.0 */
/* --web.config.file, in the format of the Prometheus exporter-toolkit:
 *
 *   tls_server_config:
 *     cert_file: server.crt          # relative paths: to the config file
 *     key_file: server.key
 *     client_auth_type: RequireAndVerifyClientCert   # or NoClientCert, VerifyClientCertIfGiven
 *     client_ca_file: ca.crt
 *   basic_auth_users:
 *     alice: $2y$10$...              # bcrypt hashes only
 *
 * Parsed strictly: an unknown key is an error, not a silent no-op. */
#ifndef KV_WEBCONFIG_H
#define KV_WEBCONFIG_H

#include <stdbool.h>
#include <stddef.h>

enum kv_client_auth { KV_CLIENT_NONE, KV_CLIENT_VERIFY_IF_GIVEN, KV_CLIENT_REQUIRE_AND_VERIFY };

typedef struct kv_web_user {
	char *name;
	char *hash;
} kv_web_user;

typedef struct kv_webconfig {
	bool tls;
	char *cert_pem; /* file contents, NUL-terminated */
	char *key_pem;
	char *client_ca_pem; /* NULL unless client_auth_type verifies */
	enum kv_client_auth client_auth;
	kv_web_user *users;
	size_t n_users;
} kv_webconfig;

/* Returns 0, or KV_EINVAL with a one-line reason in err. */
int kv_webconfig_load(const char *path, kv_webconfig *out, char *err, size_t errlen);
void kv_webconfig_free(kv_webconfig *w);

/* Checks a user and password against the bcrypt hashes in constant time
 * for a given user name length: an unknown user costs one bcrypt too, so
 * response times do not tell which names exist. */
bool kv_webconfig_check_user(const kv_webconfig *w, const char *user, const char *password);

#endif
