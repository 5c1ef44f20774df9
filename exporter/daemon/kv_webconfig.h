/* SPDX-License-Identifier: Apache-2.0 */
/* --web.config.file, in the format of the Prometheus exporter-toolkit:
 *
 *   tls_server_config:
 *     cert_file: server.crt          # relative paths: to the config file
 *     key_file: server.key
 *     client_auth_type: RequireAndVerifyClientCert   # or NoClientCert, VerifyClientCertIfGiven
 *     client_ca_file: ca.crt
 *     min_version: TLS12             # TLS10, TLS11, TLS12 (default), TLS13
 *     max_version: TLS13             # default: the newest GnuTLS has (TLS 1.3)
 *     cipher_suites:                 # Go's names, for TLS 1.2 and below; default: GnuTLS's NORMAL
 *       - TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
 *     curve_preferences: [X25519, CurveP256]   # or CurveP384, CurveP521; order kept
 *   basic_auth_users:
 *     alice: $2y$10$...              # bcrypt hashes only
 *
 * Parsed strictly: an unknown key is an error, not a silent no-op.
 *
 * The four TLS choices become one GnuTLS priority string, tls_priorities (for
 * MHD_OPTION_HTTPS_PRIORITIES), which GnuTLS has accepted at load time:
 *   NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2      the defaults
 * then, for cipher_suites, -KX-ALL:-CIPHER-ALL:-MAC-ALL and the suites' key
 * exchanges, ciphers and MACs, and for curve_preferences -GROUP-ALL and the
 * groups. Where GnuTLS differs from Go:
 *   - it allows every combination of the named key exchanges, ciphers and MACs
 *     that is a suite (still within Go's list; and a server certificate is RSA
 *     or ECDSA, which fixes the key exchange);
 *   - its TLS 1.3 suites are those of the named GCM and ChaCha20 ciphers, so a
 *     list with none of those is refused unless max_version is TLS12 or lower
 *     (and one with only those when max_version is below TLS12, as Go's would
 *     fail every handshake); Go's TLS 1.3 suite names are refused, as Go ignores
 *     them. */
#ifndef KV_WEBCONFIG_H
#define KV_WEBCONFIG_H

#include <stdbool.h>
#include <stddef.h>

enum kvd_client_auth { KVD_CLIENT_NONE, KVD_CLIENT_VERIFY_IF_GIVEN, KVD_CLIENT_REQUIRE_AND_VERIFY };

typedef struct kvd_web_user {
	char *name;
	char *hash;
} kvd_web_user;

typedef struct kvd_webconfig {
	bool tls;
	char *cert_pem; /* file contents, NUL-terminated */
	char *key_pem;
	char *client_ca_pem; /* NULL unless client_auth_type verifies */
	enum kvd_client_auth client_auth;
	char *tls_priorities; /* the GnuTLS priority string; NULL without tls_server_config */
	kvd_web_user *users;
	size_t n_users;
} kvd_webconfig;

/* Returns 0, or MKV_EINVAL with a one-line reason in err. */
int kvd_webconfig_load(const char *path, kvd_webconfig *out, char *err, size_t errlen);
void kvd_webconfig_free(kvd_webconfig *w);

#endif
