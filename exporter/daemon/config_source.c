/* SPDX-License-Identifier: Apache-2.0 */
/* A source as the flags give it: --source's key=value grammar (or
 * --zmq.endpoint and --master.url), its members and their `member` labels,
 * checked as they are added. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mooncake_kv/buf.h>
#include <mooncake_kv/common.h>

#include "kv_config.h"
#include "kv_config_parse.h"

static bool name_ok(const char *n)
{
	if (!*n || strlen(n) > 64)
		return false;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		      *p == '.' || *p == '-'))
			return false;
	return true;
}

void kvd_source_cfg_free(kvd_source_cfg *s)
{
	free(s->backend);
	free(s->name);
	for (size_t i = 0; i < s->n_members; i++) {
		free(s->members[i].zmq);
		free(s->members[i].status);
		free(s->members[i].label);
	}
	free(s->members);
	mkv_keygroup_free(s->key_groups);
}

/* The host:port of an http(s) URL, without user info: the `member` label. */
static char *url_host(const char *url)
{
	const char *h = strstr(url, "://") + 3, *end = h + strcspn(h, "/?#");
	for (const char *at = h; at < end; at++)
		if (*at == '@')
			h = at + 1;
	return strndup(h, (size_t)(end - h));
}

const char *kvd_endpoint_problem(const char *ep, char *why, size_t n)
{
	if (!strcmp(ep, "ipc://")) {
		snprintf(why, n, "%s has no path: ipc://PATH", ep);
		return why;
	}
	if (strncmp(ep, "tcp://", 6) != 0)
		return NULL; /* the other transports: ZMQ judges them */
	/* ZMQ's own reading: an optional "SOURCE;" first, then HOST:PORT split
	 * at the last colon, HOST maybe in brackets (IPv6) */
	const char *dest = strrchr(ep + 6, ';'), *colon;
	dest = dest ? dest + 1 : ep + 6;
	const char *close = dest[0] == '[' ? strchr(dest, ']') : NULL;
	if (dest[0] == '[')
		colon = close && close[1] == ':' ? close + 1 : NULL;
	else
		colon = strrchr(dest, ':');
	if (dest[0] == '[' && !close)
		snprintf(why, n, "%s has no closing ]: tcp://[IPV6]:PORT", ep);
	else if (!colon || !colon[1])
		snprintf(why, n, "%s has no port: tcp://HOST:PORT", ep);
	else if (colon == dest || (colon == dest + 1 && dest[0] == '*'))
		snprintf(why, n, "%s has no host%s: tcp://HOST:PORT", ep,
			 colon > dest ? " (* binds, the exporter connects)" : "");
	else if (kvd_port_number(colon + 1, 1) < 0)
		snprintf(why, n, "%s: port \"%s\" is not a number from 1 to 65535", ep, colon + 1);
	else
		return NULL;
	return why;
}

/* Adds member zmq[@status] to s.  Returns 0 or MKV_EINVAL with the reason set. */
static int add_member(struct parse *p, kvd_source_cfg *s, const char *name, const char *zmq, const char *status)
{
	if (!zmq || !*zmq)
		return kvd_parse_err(p, "source \"%s\" needs zmq=ENDPOINT (or master=ENDPOINT@URL)", name);
	if (!strstr(zmq, "://"))
		return kvd_parse_err(p, "source \"%s\": zmq endpoint \"%s\" is not transport://address", name, zmq);
	char why[300];
	if (kvd_endpoint_problem(zmq, why, sizeof(why)))
		return kvd_parse_err(p, "source \"%s\": zmq endpoint %s", name, why);
	if (status && kvd_url_problem(status, why, sizeof(why)))
		return kvd_parse_err(p, "source \"%s\": status URL %s", name, why);
	kvd_member_cfg *n = realloc(s->members, (s->n_members + 1) * sizeof(*n));
	if (!n)
		return kvd_parse_err(p, "out of memory");
	s->members = n;
	kvd_member_cfg *m = &s->members[s->n_members++];
	*m = (kvd_member_cfg){0};
	if (kvd_dup_into(&m->zmq, zmq) ||
	    (status && (kvd_dup_into(&m->status, status) || !(m->label = url_host(status)))))
		return kvd_parse_err(p, "out of memory");
	/* a trailing slash on the base URL would double up before the path */
	size_t sl = m->status ? strlen(m->status) : 0;
	if (sl && m->status[sl - 1] == '/')
		m->status[sl - 1] = '\0';
	for (size_t i = 0; m->label && i + 1 < s->n_members; i++)
		if (s->members[i].label && !strcmp(s->members[i].label, m->label))
			return kvd_parse_err(p, "source \"%s\": two masters at %s", name, m->label);
	return MKV_OK;
}

/* The index of word in a NULL-terminated list, or -1. */

/* zmq/status: the one-master forms; masters: "ZMQ@URL" strings, NUL-separated. */
int kvd_add_source(struct parse *p, const char *name, const char *zmq, const char *status, const char *masters,
		   size_t n_masters, bool reconcile, const char *backend, const char *dialect, const char *group_regex)
{
	kvd_config *c = p->c;
	if (!name_ok(name))
		return kvd_parse_err(p, "source name \"%s\" must be 1-64 of [A-Za-z0-9_.-]", name);
	for (size_t i = 0; i < c->n_sources; i++)
		if (strcmp(c->sources[i].name, name) == 0)
			return kvd_parse_err(p, "source name \"%s\" given twice", name);
	if (n_masters && (zmq || status))
		return kvd_parse_err(p, "source \"%s\": give master= or zmq=/status=, not both", name);
	if (backend && !*backend)
		return kvd_parse_err(p, "source \"%s\": backend= needs a backend_id", name);
	int mode = dialect ? kvd_choice_index(kvd_dialect_modes, dialect) : KVD_DIALECT_MODE_INHERIT;
	if (dialect && mode < 0)
		return kvd_parse_err(p, "source \"%s\": dialect=%s must be auto, media or object", name, dialect);
	kvd_source_cfg s = {.reconcile = reconcile, .ha = n_masters > 0, .dialect = (enum kvd_dialect_mode)mode};
	int rc = MKV_OK;
	if (!n_masters)
		rc = add_member(p, &s, name, zmq, status);
	for (size_t i = 0; i < n_masters && rc == MKV_OK; i++, masters += strlen(masters) + 1) {
		/* the admin URL starts at the first "@http://" or "@https://": a
		 * ZMQ endpoint has none, the URL's user info may hold an @ */
		const char *at = strstr(masters, "@http");
		while (at && !kvd_url_ok(at + 1))
			at = strstr(at + 1, "@http");
		if (!at) {
			rc = kvd_parse_err(p, "source \"%s\": master=%s is not ZMQ_ENDPOINT@ADMIN_URL", name, masters);
			break;
		}
		char *z = strndup(masters, (size_t)(at - masters));
		rc = z ? add_member(p, &s, name, z, at + 1) : kvd_parse_err(p, "out of memory");
		free(z);
	}
	if (rc == MKV_OK && !(s.name = strdup(name)))
		rc = kvd_parse_err(p, "out of memory");
	if (rc == MKV_OK && backend && kvd_dup_into(&s.backend, backend))
		rc = kvd_parse_err(p, "out of memory");
	s.polled = true;
	for (size_t i = 0; i < s.n_members; i++)
		s.polled &= s.members[i].status != NULL;
	if (rc == MKV_OK && reconcile && !s.polled)
		rc = kvd_parse_err(p, "source \"%s\": reconciliation needs the master's admin URL (status=URL)", name);
	if (rc == MKV_OK && group_regex) {
		char why[200];
		if (!(s.key_groups = mkv_keygroup_compile(group_regex, why, sizeof(why))))
			rc = kvd_parse_err(p, "source \"%s\": group_regex: %s", name, why);
	}
	kvd_source_cfg *n = rc == MKV_OK ? realloc(c->sources, (c->n_sources + 1) * sizeof(*n)) : NULL;
	if (rc == MKV_OK && !n)
		rc = kvd_parse_err(p, "out of memory");
	if (rc != MKV_OK) {
		kvd_source_cfg_free(&s);
		return rc;
	}
	c->sources = n;
	c->sources[c->n_sources++] = s;
	return MKV_OK;
}

/* name=m0,zmq=tcp://host:5557,status=http://host:9003[,group_regex=RE], or
 * name=m,master=tcp://a:5557@http://a:9003,master=... for a group of
 * masters.  group_regex= comes last and takes the rest: a regex may hold
 * commas. */
int kvd_parse_source(struct parse *p, const char *val)
{
	char *copy = strdup(val), *save = NULL;
	const char *name = NULL, *zmq = NULL, *status = NULL, *reconcile = NULL, *backend = NULL, *dialect = NULL,
		   *group_regex = NULL;
	mkv_buf masters; /* the master= values, NUL-separated */
	size_t n_masters = 0;
	mkv_buf_init(&masters);
	if (!copy)
		return kvd_parse_err(p, "out of memory");
	static const char gr[] = "group_regex=";
	char *g = !strncmp(copy, gr, sizeof(gr) - 1) ? copy : strstr(copy, ",group_regex=");
	if (g) {
		if (*g == ',')
			*g++ = '\0';
		else
			copy[0] = '\0';
		group_regex = g + sizeof(gr) - 1;
	}
	int rc = MKV_OK;
	for (char *kv = strtok_r(copy, ",", &save); kv && rc == MKV_OK; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq) {
			rc = kvd_parse_err(p, "--source: \"%s\" is not key=value", kv);
			break;
		}
		*eq = '\0';
		if (!strcmp(kv, "master")) {
			mkv_buf_add(&masters, eq + 1, strlen(eq + 1) + 1);
			n_masters++;
			continue;
		}
		const char **slot = !strcmp(kv, "name")        ? &name
				    : !strcmp(kv, "zmq")       ? &zmq
				    : !strcmp(kv, "status")    ? &status
				    : !strcmp(kv, "reconcile") ? &reconcile
				    : !strcmp(kv, "backend")   ? &backend
				    : !strcmp(kv, "dialect")   ? &dialect
							       : NULL;
		if (!slot)
			rc = kvd_parse_err(
				p,
				"--source: unknown key \"%s\" (name, zmq, status, master, reconcile, backend, "
				"dialect, group_regex)",
				kv);
		else
			*slot = eq + 1;
	}
	if (rc == MKV_OK && !mkv_buf_ok(&masters))
		rc = kvd_parse_err(p, "out of memory");
	if (rc == MKV_OK && reconcile && strcmp(reconcile, "true") && strcmp(reconcile, "false"))
		rc = kvd_parse_err(p, "--source: reconcile=%s must be true or false", reconcile);
	if (rc == MKV_OK)
		rc = name ? kvd_add_source(p, name, zmq, status, masters.data, n_masters,
					   reconcile && !strcmp(reconcile, "true"), backend, dialect, group_regex)
			  : kvd_parse_err(p, "--source needs name=NAME");
	mkv_buf_free(&masters);
	free(copy);
	return rc;
}
