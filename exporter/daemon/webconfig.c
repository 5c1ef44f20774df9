/* SPDX-License-Identifier: Apache-2.0 */
#include <crypt.h>
#include <errno.h>
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
	return KV_EINVAL;
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

static int parse_tls(yaml_document_t *d, yaml_node_t *map, const char *dir, kv_webconfig *w, char *err, size_t errlen)
{
	const char *cert = NULL, *key = NULL, *ca = NULL, *auth = "NoClientCert";
	if (map->type != YAML_MAPPING_NODE)
		return fail(err, errlen, "web config: tls_server_config must be a mapping");
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(d, p->key));
		const char *v = scalar(yaml_document_get_node(d, p->value));
		if (!k || !v)
			return fail(err, errlen, "web config: tls_server_config holds a non-scalar");
		if (!strcmp(k, "cert_file"))
			cert = v;
		else if (!strcmp(k, "key_file"))
			key = v;
		else if (!strcmp(k, "client_ca_file"))
			ca = v;
		else if (!strcmp(k, "client_auth_type"))
			auth = v;
		else
			return fail(err, errlen, "web config: tls_server_config.%s is not supported", k);
	}
	if (!cert || !key)
		return fail(err, errlen, "web config: tls_server_config needs cert_file and key_file");
	if (!strcmp(auth, "NoClientCert"))
		w->client_auth = KV_CLIENT_NONE;
	else if (!strcmp(auth, "VerifyClientCertIfGiven"))
		w->client_auth = KV_CLIENT_VERIFY_IF_GIVEN;
	else if (!strcmp(auth, "RequireAndVerifyClientCert"))
		w->client_auth = KV_CLIENT_REQUIRE_AND_VERIFY;
	else
		return fail(err, errlen,
			    "web config: client_auth_type %s is not supported "
			    "(NoClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert)",
			    auth);
	if (w->client_auth != KV_CLIENT_NONE && !ca)
		return fail(err, errlen, "web config: client_auth_type %s needs client_ca_file", auth);
	w->tls = true;
	if (!(w->cert_pem = read_file(dir, cert, err, errlen)) || !(w->key_pem = read_file(dir, key, err, errlen)))
		return KV_EINVAL;
	if (w->client_auth != KV_CLIENT_NONE && !(w->client_ca_pem = read_file(dir, ca, err, errlen)))
		return KV_EINVAL;
	return KV_OK;
}

static int parse_users(yaml_document_t *d, yaml_node_t *map, kv_webconfig *w, char *err, size_t errlen)
{
	if (map->type != YAML_MAPPING_NODE)
		return fail(err, errlen, "web config: basic_auth_users must be a mapping of user: bcrypt hash");
	size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
	w->users = calloc(n ? n : 1, sizeof(*w->users));
	if (!w->users)
		return KV_ENOMEM;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *u = scalar(yaml_document_get_node(d, p->key));
		const char *h = scalar(yaml_document_get_node(d, p->value));
		if (!u || !h || !*u)
			return fail(err, errlen, "web config: basic_auth_users holds a non-scalar or empty user");
		if (!is_bcrypt(h))
			return fail(err, errlen,
				    "web config: the password of %s is not a bcrypt hash ($2a$, $2b$, $2y$)", u);
		kv_web_user *wu = &w->users[w->n_users++];
		if (!(wu->name = strdup(u)) || !(wu->hash = strdup(h)))
			return fail(err, errlen, "web config: out of memory");
	}
	return KV_OK;
}

int kv_webconfig_load(const char *path, kv_webconfig *w, char *err, size_t errlen)
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
	int rc = KV_EINVAL;
	if (!yaml_parser_load(&parser, &doc)) {
		fail(err, errlen, "web config %s: %s at line %zu", path, parser.problem ? parser.problem : "bad YAML",
		     parser.problem_mark.line + 1);
		goto out_parser;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root) {
		rc = KV_OK; /* an empty file: no TLS, no users */
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
		if (rc != KV_OK)
			goto out_doc;
	}
	rc = KV_OK;
out_doc:
	yaml_document_delete(&doc);
out_parser:
	yaml_parser_delete(&parser);
	fclose(f);
	free(copy);
	if (rc != KV_OK)
		kv_webconfig_free(w);
	return rc;
}

void kv_webconfig_free(kv_webconfig *w)
{
	free(w->cert_pem);
	free(w->key_pem);
	free(w->client_ca_pem);
	for (size_t i = 0; i < w->n_users; i++) {
		free(w->users[i].name);
		free(w->users[i].hash);
	}
	free(w->users);
	memset(w, 0, sizeof(*w));
}

/* Equal lengths compared without an early exit. */
static bool same(const char *a, const char *b, size_t n)
{
	unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

bool kv_webconfig_check_user(const kv_webconfig *w, const char *user, const char *password)
{
	/* a valid hash that matches nothing: an unknown user pays for a bcrypt too */
	static const char dummy[] = "$2y$10$abcdefghijklmnopqrstuuuD0Q7QHy2Ez3GA/UkeX3ALO2hkmnlq2";
	const char *hash = dummy;
	size_t ulen = strlen(user);
	bool known = false;
	for (size_t i = 0; i < w->n_users; i++) {
		bool match = strlen(w->users[i].name) == ulen && same(w->users[i].name, user, ulen);
		if (match && !known) {
			hash = w->users[i].hash;
			known = true;
		}
	}
	struct crypt_data *cd = calloc(1, sizeof(*cd));
	if (!cd)
		return false;
	/* crypt_rn (libxcrypt) rather than crypt_r: it returns NULL on failure
	 * instead of a "*" string, and sanitizers do not intercept it */
	const char *out = crypt_rn(password, hash, cd, (int)sizeof(*cd));
	bool ok = out && strlen(out) == strlen(hash) && same(out, hash, strlen(hash));
	free(cd);
	return ok && known;
}
