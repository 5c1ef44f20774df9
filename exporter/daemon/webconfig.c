/* SPDX-License-Identifier: Apache-2.0 */
#include <crypt.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include <mooncake_kv/common.h>

#include "kv_webconfig.h"

#define MAX_FILE (1 << 20)

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return MKV_EINVAL;
}

static char *read_file(const char *dir, const char *name, char *err, size_t errlen)
{
	char path[4096];
	if (name[0] == '/')
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	if (!f) {
		fail(err, errlen, "web config: cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	char *buf = malloc(MAX_FILE + 1);
	size_t n = buf ? fread(buf, 1, MAX_FILE + 1, f) : 0;
	fclose(f);
	if (!buf || n == 0 || n > MAX_FILE) {
		free(buf);
		fail(err, errlen, "web config: %s is empty or larger than 1 MiB", path);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static bool is_bcrypt(const char *h)
{
	return strlen(h) == 60 && h[0] == '$' && h[1] == '2' && (h[2] == 'a' || h[2] == 'b' || h[2] == 'y') &&
	       h[3] == '$';
}

/* exporter-toolkit's names (Go's crypto/tls) and GnuTLS's priority-string tokens */
static const struct {
	const char *name, *token;
} versions[] = {
	{"TLS10", "+VERS-TLS1.0"},
	{"TLS11", "+VERS-TLS1.1"},
	{"TLS12", "+VERS-TLS1.2"},
	{"TLS13", "+VERS-TLS1.3"},
};
enum { TLS10, TLS11, TLS12, TLS13, N_VERSIONS };

/* Go's CipherSuites() for TLS 1.2 and below: each of two ECDHE key exchanges
 * with each of five ciphers, which is how the error lists them */
#define N_KX      2
#define N_CIPHERS 5
static const char *const suite_kx[N_KX][2] = {{"TLS_ECDHE_ECDSA_WITH_", "+ECDHE-ECDSA"},
					      {"TLS_ECDHE_RSA_WITH_", "+ECDHE-RSA"}};
static const struct {
	const char *name, *cipher;
	bool aead; /* GCM or ChaCha20-Poly1305, TLS 1.2 (and 1.3's ciphers); else CBC with HMAC-SHA1, TLS 1.0 up */
} suite_ciphers[N_CIPHERS] = {
	{"AES_128_CBC_SHA", "+AES-128-CBC", false},
	{"AES_256_CBC_SHA", "+AES-256-CBC", false},
	{"AES_128_GCM_SHA256", "+AES-128-GCM", true},
	{"AES_256_GCM_SHA384", "+AES-256-GCM", true},
	{"CHACHA20_POLY1305_SHA256", "+CHACHA20-POLY1305", true},
};
#define SUITES_ACCEPTED                                                                                      \
	"TLS_ECDHE_{ECDSA,RSA}_WITH_{AES_128_CBC_SHA,AES_256_CBC_SHA,AES_128_GCM_SHA256,AES_256_GCM_SHA384," \
	"CHACHA20_POLY1305_SHA256}"

#define N_CURVES 4
static const struct {
	const char *name, *token;
} curves[N_CURVES] = {
	{"CurveP256", "+GROUP-SECP256R1"},
	{"CurveP384", "+GROUP-SECP384R1"},
	{"CurveP521", "+GROUP-SECP521R1"},
	{"X25519", "+GROUP-X25519"},
};

/* the keys of tls_server_config: the last two take lists */
static const char *const tls_keys[] = {"cert_file",   "key_file",    "client_auth_type", "client_ca_file",
				       "min_version", "max_version", "cipher_suites",    "curve_preferences"};
enum { K_CERT, K_KEY, K_AUTH, K_CA, K_MIN, K_MAX, K_SUITES, K_CURVES, N_TLS_KEYS };
#define TLS_KEYS                                                                                           \
	"cert_file, key_file, client_auth_type, client_ca_file, min_version, max_version, cipher_suites, " \
	"curve_preferences"

static int version_of(const char *key, const char *v, int *out, char *err, size_t errlen)
{
	for (int i = 0; i < N_VERSIONS; i++)
		if (!strcmp(v, versions[i].name))
			return *out = i, MKV_OK;
	return fail(err, errlen, "web config: tls_server_config.%s %.60s is not supported (TLS10, TLS11, TLS12, TLS13)",
		    key, v);
}

/* A list: NULL for YAML's null or an empty list (exporter-toolkit's default),
 * else the sequence, whose items are all scalars. */
static int list_of(yaml_document_t *d, const char *key, yaml_node_t *v, yaml_node_t **out, char *err, size_t errlen)
{
	*out = NULL;
	if (v->type == YAML_SCALAR_NODE && v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
		const char *s = (const char *)v->data.scalar.value;
		if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
			return MKV_OK;
	}
	if (v->type != YAML_SEQUENCE_NODE)
		return fail(err, errlen, "web config: tls_server_config.%s must be a list of names", key);
	for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++)
		if (!scalar(yaml_document_get_node(d, *i)))
			return fail(err, errlen, "web config: tls_server_config.%s holds a list or mapping, not a name",
				    key);
	if (v->data.sequence.items.top > v->data.sequence.items.start)
		*out = v;
	return MKV_OK;
}

static void add(char *buf, size_t size, size_t *len, const char *token)
{
	int n = snprintf(buf + *len, size - *len, ":%s", token);
	*len = n < 0 || (size_t)n >= size - *len ? size : *len + (size_t)n;
}

/* Adds i to a list of unique indices, kept in the order first met. */
static void note(int *order, int *n, int i)
{
	for (int j = 0; j < *n; j++)
		if (order[j] == i)
			return;
	order[(*n)++] = i;
}

/* cipher_suites as GnuTLS's key exchanges, ciphers and MACs, each in the order
 * first named: GnuTLS allows every combination of them that is a suite. */
static int add_suites(yaml_document_t *d, yaml_node_t *suites, int vmax, char *buf, size_t size, size_t *len, char *err,
		      size_t errlen)
{
	int kx[N_KX], nkx = 0, ci[N_CIPHERS], nci = 0, mac[2], nmac = 0;
	bool aead = false, cbc = false;
	for (yaml_node_item_t *i = suites->data.sequence.items.start; i < suites->data.sequence.items.top; i++) {
		const char *s = scalar(yaml_document_get_node(d, *i));
		int k = 0, c = 0;
		while (k < N_KX && strncmp(s, suite_kx[k][0], strlen(suite_kx[k][0])))
			k++;
		while (k < N_KX && c < N_CIPHERS && strcmp(s + strlen(suite_kx[k][0]), suite_ciphers[c].name))
			c++;
		if (k < N_KX && c < N_CIPHERS) {
			note(kx, &nkx, k);
			note(ci, &nci, c);
			note(mac, &nmac, suite_ciphers[c].aead);
			aead |= suite_ciphers[c].aead;
			cbc |= !suite_ciphers[c].aead;
		} else if (!strcmp(s, "TLS_AES_128_GCM_SHA256") || !strcmp(s, "TLS_AES_256_GCM_SHA384") ||
			   !strcmp(s, "TLS_CHACHA20_POLY1305_SHA256")) {
			return fail(err, errlen,
				    "web config: tls_server_config.cipher_suites: %s is a TLS 1.3 suite, which is not "
				    "configurable (cipher_suites are for TLS 1.2 and below)",
				    s);
		} else {
			return fail(err, errlen,
				    "web config: tls_server_config.cipher_suites: %.60s is not supported (Go's "
				    "names: " SUITES_ACCEPTED ")",
				    s);
		}
	}
	if (vmax >= TLS13 && !aead)
		return fail(err, errlen,
			    "web config: tls_server_config.cipher_suites names no GCM or CHACHA20_POLY1305 suite, and "
			    "GnuTLS takes its TLS 1.3 ciphers from the same list: name one, or set max_version: TLS12");
	if (vmax < TLS12 && !cbc)
		return fail(err, errlen,
			    "web config: tls_server_config.cipher_suites names only TLS 1.2 suites (GCM, "
			    "CHACHA20_POLY1305) but max_version is %s: name a CBC_SHA one, or raise max_version",
			    versions[vmax].name);
	add(buf, size, len, "-KX-ALL:-CIPHER-ALL:-MAC-ALL");
	for (int i = 0; i < nkx; i++)
		add(buf, size, len, suite_kx[kx[i]][1]);
	for (int i = 0; i < nci; i++)
		add(buf, size, len, suite_ciphers[ci[i]].cipher);
	for (int i = 0; i < nmac; i++)
		add(buf, size, len, mac[i] ? "+AEAD" : "+SHA1");
	return MKV_OK;
}

/* min_version to max_version, cipher_suites and curve_preferences as one
 * GnuTLS priority string on NORMAL's defaults, which GnuTLS then checks. */
static int tls_priorities(yaml_document_t *d, int vmin, int vmax, yaml_node_t *suites, yaml_node_t *groups, char **out,
			  char *err, size_t errlen)
{
	if (vmin > vmax)
		return fail(err, errlen, "web config: tls_server_config.min_version %s is above max_version %s",
			    versions[vmin].name, versions[vmax].name);
	char buf[512];
	size_t len = (size_t)snprintf(buf, sizeof(buf), "NORMAL:-VERS-ALL");
	for (int v = vmax; v >= vmin; v--)
		add(buf, sizeof(buf), &len, versions[v].token);
	if (suites && add_suites(d, suites, vmax, buf, sizeof(buf), &len, err, errlen) != MKV_OK)
		return MKV_EINVAL;
	if (groups) {
		int order[N_CURVES], n = 0;
		for (yaml_node_item_t *i = groups->data.sequence.items.start; i < groups->data.sequence.items.top;
		     i++) {
			const char *s = scalar(yaml_document_get_node(d, *i));
			int c = 0;
			while (c < N_CURVES && strcmp(s, curves[c].name))
				c++;
			if (c == N_CURVES)
				return fail(err, errlen,
					    "web config: tls_server_config.curve_preferences: %.60s is not supported "
					    "(CurveP256, CurveP384, CurveP521, X25519)",
					    s);
			note(order, &n, c);
		}
		add(buf, sizeof(buf), &len, "-GROUP-ALL");
		for (int i = 0; i < n; i++)
			add(buf, sizeof(buf), &len, curves[order[i]].token);
	}
	if (len >= sizeof(buf)) /* cannot be: every token at most once */
		return fail(err, errlen, "web config: the TLS priority string is over %zu bytes", sizeof(buf) - 1);
	gnutls_priority_t check;
	const char *at = NULL;
	int rc = gnutls_priority_init(&check, buf, &at);
	if (rc == GNUTLS_E_INVALID_REQUEST && at && at > buf && at <= buf + len) /* a token it does not know */
		return fail(err, errlen,
			    "web config: GnuTLS refuses the TLS priority string %s at character %d (%.*s): %s", buf,
			    (int)(at - buf), (int)strcspn(at, ":"), at, gnutls_strerror(rc));
	if (rc < 0) /* e.g. its system-wide policy leaves nothing of what was asked */
		return fail(err, errlen, "web config: GnuTLS refuses the TLS priority string %s: %s", buf,
			    gnutls_strerror(rc));
	gnutls_priority_deinit(check);
	return (*out = strdup(buf)) ? MKV_OK : fail(err, errlen, "web config: out of memory");
}

static int parse_tls(yaml_document_t *d, yaml_node_t *map, const char *dir, kvd_webconfig *w, char *err, size_t errlen)
{
	const char *cert = NULL, *key = NULL, *ca = NULL, *auth = "NoClientCert";
	int vmin = TLS12, vmax = TLS13; /* exporter-toolkit's defaults; TLS 1.3 is the newest GnuTLS 3.7 has */
	yaml_node_t *suites = NULL, *groups = NULL;
	if (map->type != YAML_MAPPING_NODE)
		return fail(err, errlen, "web config: tls_server_config must be a mapping");
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(d, p->key));
		yaml_node_t *value = yaml_document_get_node(d, p->value);
		const char *v = scalar(value);
		if (!k)
			return fail(err, errlen, "web config: tls_server_config holds a key that is not a name");
		int key_no = 0;
		while (key_no < N_TLS_KEYS && strcmp(k, tls_keys[key_no]))
			key_no++;
		if (key_no == N_TLS_KEYS)
			return fail(err, errlen, "web config: tls_server_config.%.60s is not supported (" TLS_KEYS ")",
				    k);
		if (key_no < K_SUITES && !v)
			return fail(err, errlen,
				    "web config: tls_server_config.%s must be one value, not a list or mapping", k);
		int rc = MKV_OK;
		switch (key_no) {
		case K_CERT:
			cert = v;
			break;
		case K_KEY:
			key = v;
			break;
		case K_AUTH:
			auth = v;
			break;
		case K_CA:
			ca = v;
			break;
		case K_MIN:
			rc = version_of(k, v, &vmin, err, errlen);
			break;
		case K_MAX:
			rc = version_of(k, v, &vmax, err, errlen);
			break;
		default:
			rc = list_of(d, k, value, key_no == K_SUITES ? &suites : &groups, err, errlen);
		}
		if (rc != MKV_OK)
			return rc;
	}
	if (!cert || !key)
		return fail(err, errlen, "web config: tls_server_config needs cert_file and key_file");
	if (!strcmp(auth, "NoClientCert"))
		w->client_auth = KVD_CLIENT_NONE;
	else if (!strcmp(auth, "VerifyClientCertIfGiven"))
		w->client_auth = KVD_CLIENT_VERIFY_IF_GIVEN;
	else if (!strcmp(auth, "RequireAndVerifyClientCert"))
		w->client_auth = KVD_CLIENT_REQUIRE_AND_VERIFY;
	else
		return fail(err, errlen,
			    "web config: client_auth_type %s is not supported "
			    "(NoClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert)",
			    auth);
	if (w->client_auth != KVD_CLIENT_NONE && !ca)
		return fail(err, errlen, "web config: client_auth_type %s needs client_ca_file", auth);
	if (tls_priorities(d, vmin, vmax, suites, groups, &w->tls_priorities, err, errlen) != MKV_OK)
		return MKV_EINVAL;
	w->tls = true;
	if (!(w->cert_pem = read_file(dir, cert, err, errlen)) || !(w->key_pem = read_file(dir, key, err, errlen)))
		return MKV_EINVAL;
	if (w->client_auth != KVD_CLIENT_NONE && !(w->client_ca_pem = read_file(dir, ca, err, errlen)))
		return MKV_EINVAL;
	return MKV_OK;
}

static int parse_users(yaml_document_t *d, yaml_node_t *map, kvd_webconfig *w, char *err, size_t errlen)
{
	if (map->type != YAML_MAPPING_NODE)
		return fail(err, errlen, "web config: basic_auth_users must be a mapping of user: bcrypt hash");
	size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
	w->users = calloc(n ? n : 1, sizeof(*w->users));
	if (!w->users)
		return MKV_ENOMEM;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *u = scalar(yaml_document_get_node(d, p->key));
		const char *h = scalar(yaml_document_get_node(d, p->value));
		if (!u || !h || !*u)
			return fail(err, errlen, "web config: basic_auth_users holds a non-scalar or empty user");
		if (!is_bcrypt(h))
			return fail(err, errlen,
				    "web config: the password of %s is not a bcrypt hash ($2a$, $2b$, $2y$)", u);
		kvd_web_user *wu = &w->users[w->n_users++];
		if (!(wu->name = strdup(u)) || !(wu->hash = strdup(h)))
			return fail(err, errlen, "web config: out of memory");
	}
	return MKV_OK;
}

int kvd_webconfig_load(const char *path, kvd_webconfig *w, char *err, size_t errlen)
{
	memset(w, 0, sizeof(*w));
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(err, errlen, "web config: cannot read %s: %s", path, strerror(errno));
	char *copy = strdup(path);
	if (!copy) {
		fclose(f);
		return fail(err, errlen, "web config: out of memory");
	}
	const char *dir = dirname(copy);
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, f);
	int rc = MKV_EINVAL;
	if (!yaml_parser_load(&parser, &doc)) {
		fail(err, errlen, "web config %s: %s at line %zu", path, parser.problem ? parser.problem : "bad YAML",
		     parser.problem_mark.line + 1);
		goto out_parser;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root) {
		rc = MKV_OK; /* an empty file: no TLS, no users */
		goto out_doc;
	}
	if (root->type != YAML_MAPPING_NODE) {
		fail(err, errlen, "web config %s: the top level must be a mapping", path);
		goto out_doc;
	}
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(&doc, p->key));
		yaml_node_t *v = yaml_document_get_node(&doc, p->value);
		if (k && !strcmp(k, "tls_server_config"))
			rc = parse_tls(&doc, v, dir, w, err, errlen);
		else if (k && !strcmp(k, "basic_auth_users"))
			rc = parse_users(&doc, v, w, err, errlen);
		else
			rc = fail(err, errlen,
				  "web config %s: %s is not supported (tls_server_config, basic_auth_users)", path,
				  k ? k : "a non-scalar key");
		if (rc != MKV_OK)
			goto out_doc;
	}
	rc = MKV_OK;
out_doc:
	yaml_document_delete(&doc);
out_parser:
	yaml_parser_delete(&parser);
	fclose(f);
	free(copy);
	if (rc != MKV_OK)
		kvd_webconfig_free(w);
	return rc;
}

void kvd_webconfig_free(kvd_webconfig *w)
{
	free(w->cert_pem);
	free(w->key_pem);
	free(w->client_ca_pem);
	free(w->tls_priorities);
	for (size_t i = 0; i < w->n_users; i++) {
		free(w->users[i].name);
		free(w->users[i].hash);
	}
	free(w->users);
	memset(w, 0, sizeof(*w));
}
