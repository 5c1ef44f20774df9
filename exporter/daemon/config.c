/* SPDX-License-Identifier: Apache-2.0 */
/* Command-line flags: one table names each flag once, with its value kind,
 * its bounds, where it is stored and its line of --help. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mooncake_kv/buf.h>
#include <mooncake_kv/common.h>

#include "kv_config.h"
#include "version.h"

#define DEFAULT_LISTEN ":19557"

/* What one parse carries between flags besides the configuration. */
struct parse {
	kv_config *c;
	char *zmq_endpoint, *master_url;
	bool timeout_given;
	char *err;
	size_t errlen;
};

static int set_err(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int set_err(struct parse *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err, p->errlen, fmt, ap);
	va_end(ap);
	return KV_EINVAL;
}

int kv_parse_duration(const char *s, double *seconds)
{
	double total = 0;
	const char *p = s;
	if (!*p)
		return KV_EINVAL;
	while (*p) {
		char *end;
		errno = 0;
		double v = strtod(p, &end);
		if (end == p || errno || v < 0)
			return KV_EINVAL;
		p = end;
		double unit;
		if (strncmp(p, "ms", 2) == 0)
			unit = 0.001, p += 2;
		else if (*p == 's')
			unit = 1, p++;
		else if (*p == 'm')
			unit = 60, p++;
		else if (*p == 'h')
			unit = 3600, p++;
		else
			return KV_EINVAL;
		total += v * unit;
	}
	*seconds = total;
	return KV_OK;
}

static int parse_size(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out)
{
	char *end;
	errno = 0;
	if (*s == '-' || *s == '\0')
		return KV_EINVAL;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return KV_EINVAL;
	*out = v;
	return KV_OK;
}

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

static bool url_ok(const char *u)
{
	return strncmp(u, "http://", 7) == 0 || strncmp(u, "https://", 8) == 0;
}

/* Replaces *dst with a copy of v.  Returns 0 or KV_ENOMEM (*dst unchanged). */
static int dup_into(char **dst, const char *v)
{
	char *n = strdup(v);
	if (!n)
		return KV_ENOMEM;
	free(*dst);
	*dst = n;
	return KV_OK;
}

static void source_cfg_free(kv_source_cfg *s)
{
	free(s->backend);
	free(s->name);
	for (size_t i = 0; i < s->n_members; i++) {
		free(s->members[i].zmq);
		free(s->members[i].status);
		free(s->members[i].label);
	}
	free(s->members);
	kv_keygroup_free(s->key_groups);
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

/* Adds member zmq[@status] to s.  Returns 0 or KV_EINVAL with the reason set. */
static int add_member(struct parse *p, kv_source_cfg *s, const char *name, const char *zmq, const char *status)
{
	if (!zmq || !*zmq)
		return set_err(p, "source \"%s\" needs zmq=ENDPOINT (or master=ENDPOINT@URL)", name);
	if (!strstr(zmq, "://"))
		return set_err(p, "source \"%s\": zmq endpoint \"%s\" is not transport://address", name, zmq);
	if (status && !url_ok(status))
		return set_err(p, "source \"%s\": status URL \"%s\" must start with http:// or https://", name, status);
	kv_member_cfg *n = realloc(s->members, (s->n_members + 1) * sizeof(*n));
	if (!n)
		return set_err(p, "out of memory");
	s->members = n;
	kv_member_cfg *m = &s->members[s->n_members++];
	*m = (kv_member_cfg){0};
	if (dup_into(&m->zmq, zmq) || (status && (dup_into(&m->status, status) || !(m->label = url_host(status)))))
		return set_err(p, "out of memory");
	/* a trailing slash on the base URL would double up before the path */
	size_t sl = m->status ? strlen(m->status) : 0;
	if (sl && m->status[sl - 1] == '/')
		m->status[sl - 1] = '\0';
	for (size_t i = 0; m->label && i + 1 < s->n_members; i++)
		if (s->members[i].label && !strcmp(s->members[i].label, m->label))
			return set_err(p, "source \"%s\": two masters at %s", name, m->label);
	return KV_OK;
}

/* The index of word in a NULL-terminated list, or -1. */
static int choice_index(const char *const *choices, const char *word)
{
	for (int i = 0; choices[i]; i++)
		if (!strcmp(word, choices[i]))
			return i;
	return -1;
}

static const char *const dialect_modes[] = {"auto", "media", "object", NULL};

/* zmq/status: the one-master forms; masters: "ZMQ@URL" strings, NUL-separated. */
static int add_source(struct parse *p, const char *name, const char *zmq, const char *status, const char *masters,
		      size_t n_masters, bool reconcile, const char *backend, const char *dialect,
		      const char *group_regex)
{
	kv_config *c = p->c;
	if (!name_ok(name))
		return set_err(p, "source name \"%s\" must be 1-64 of [A-Za-z0-9_.-]", name);
	for (size_t i = 0; i < c->n_sources; i++)
		if (strcmp(c->sources[i].name, name) == 0)
			return set_err(p, "source name \"%s\" given twice", name);
	if (n_masters && (zmq || status))
		return set_err(p, "source \"%s\": give master= or zmq=/status=, not both", name);
	if (backend && !*backend)
		return set_err(p, "source \"%s\": backend= needs a backend_id", name);
	kv_source_cfg s = {.reconcile = reconcile, .ha = n_masters > 0, .dialect = -1};
	if (dialect && (s.dialect = choice_index(dialect_modes, dialect)) < 0)
		return set_err(p, "source \"%s\": dialect=%s must be auto, media or object", name, dialect);
	int rc = KV_OK;
	if (!n_masters)
		rc = add_member(p, &s, name, zmq, status);
	for (size_t i = 0; i < n_masters && rc == KV_OK; i++, masters += strlen(masters) + 1) {
		/* the admin URL starts at the first "@http://" or "@https://": a
		 * ZMQ endpoint has none, the URL's user info may hold an @ */
		const char *at = strstr(masters, "@http");
		while (at && !url_ok(at + 1))
			at = strstr(at + 1, "@http");
		if (!at) {
			rc = set_err(p, "source \"%s\": master=%s is not ZMQ_ENDPOINT@ADMIN_URL", name, masters);
			break;
		}
		char *z = strndup(masters, (size_t)(at - masters));
		rc = z ? add_member(p, &s, name, z, at + 1) : set_err(p, "out of memory");
		free(z);
	}
	if (rc == KV_OK && !(s.name = strdup(name)))
		rc = set_err(p, "out of memory");
	if (rc == KV_OK && backend && dup_into(&s.backend, backend))
		rc = set_err(p, "out of memory");
	s.polled = true;
	for (size_t i = 0; i < s.n_members; i++)
		s.polled &= s.members[i].status != NULL;
	if (rc == KV_OK && reconcile && !s.polled)
		rc = set_err(p, "source \"%s\": reconciliation needs the master's admin URL (status=URL)", name);
	if (rc == KV_OK && group_regex) {
		char why[200];
		if (!(s.key_groups = kv_keygroup_compile(group_regex, why, sizeof(why))))
			rc = set_err(p, "source \"%s\": group_regex: %s", name, why);
	}
	kv_source_cfg *n = rc == KV_OK ? realloc(c->sources, (c->n_sources + 1) * sizeof(*n)) : NULL;
	if (rc == KV_OK && !n)
		rc = set_err(p, "out of memory");
	if (rc != KV_OK) {
		source_cfg_free(&s);
		return rc;
	}
	c->sources = n;
	c->sources[c->n_sources++] = s;
	return KV_OK;
}

/* --- the flags --- */

struct flag;
typedef int (*flag_setter)(struct parse *p, const struct flag *f, const char *val);

struct flag {
	const char *name; /* NULL: a heading line of --help */
	flag_setter set;
	size_t off, size; /* where in kv_config, for the generic setters */
	unsigned long long min, max;
	const char *const *choices; /* set_choice: value i stores i */
	const char *help;           /* "VALUE  text" */
};

static int set_num(struct parse *p, const struct flag *f, const char *val)
{
	unsigned long long n;
	if (parse_size(val, f->min, f->max, &n) != KV_OK)
		return set_err(p, "%s \"%s\" must be a whole number from %llu to %llu", f->name, val, f->min, f->max);
	char *field = (char *)p->c + f->off;
	if (f->size == sizeof(uint32_t)) { /* int or unsigned: the bounds keep it in range */
		uint32_t v = (uint32_t)n;
		memcpy(field, &v, sizeof(v));
	} else {
		uint64_t v = n;
		memcpy(field, &v, sizeof(v));
	}
	return KV_OK;
}

/* A duration: 10ms to 1h, or to the flag's max seconds when it has one (a
 * flag with a max also takes 0, "never"). */
static int set_duration(struct parse *p, const struct flag *f, const char *val)
{
	double d;
	double most = f->max ? (double)f->max : f->off == offsetof(kv_config, reconcile_interval) ? 86400 : 3600;
	if (f->max && !strcmp(val, "0")) {
		d = 0;
	} else if (kv_parse_duration(val, &d) != KV_OK || d < 0.01 || d > most) {
		return set_err(p, "%s \"%s\" is not a duration between 10ms and %.0fh (like 5s, 500ms)%s", f->name, val,
			       most / 3600, f->max ? ", or 0" : "");
	}
	memcpy((char *)p->c + f->off, &d, sizeof(d));
	if (f->off == offsetof(kv_config, poll_timeout))
		p->timeout_given = true;
	return KV_OK;
}

/* A switch: --flag alone means true; --flag=true|false */
static int set_switch(struct parse *p, const struct flag *f, const char *val)
{
	if (strcmp(val, "true") && strcmp(val, "false"))
		return set_err(p, "%s=%s must be true or false", f->name, val);
	bool v = !strcmp(val, "true");
	memcpy((char *)p->c + f->off, &v, sizeof(v));
	return KV_OK;
}

static int set_string(struct parse *p, const struct flag *f, const char *val)
{
	if (!*val)
		return set_err(p, "%s needs a non-empty value", f->name);
	return dup_into((char **)((char *)p->c + f->off), val) ? set_err(p, "out of memory") : KV_OK;
}

static int set_choice(struct parse *p, const struct flag *f, const char *val)
{
	int i = choice_index(f->choices, val);
	if (i < 0)
		return set_err(p, "%s \"%s\" is not one of those in --help", f->name, val);
	memcpy((char *)p->c + f->off, &i, sizeof(i));
	return KV_OK;
}

static int set_listen(struct parse *p, const struct flag *f, const char *val)
{
	if (!strrchr(val, ':'))
		return set_err(p, "%s \"%s\" must be [HOST]:PORT", f->name, val);
	return set_string(p, f, val);
}

static int set_path(struct parse *p, const struct flag *f, const char *val)
{
	if (val[0] != '/' || strlen(val) < 2 || !strcmp(val, "/-/healthy") || !strcmp(val, "/-/ready"))
		return set_err(p, "%s \"%s\" must start with / and not be / or /-/...", f->name, val);
	return set_string(p, f, val);
}

static int set_zmq_endpoint(struct parse *p, const struct flag *f, const char *val)
{
	(void)f;
	return dup_into(&p->zmq_endpoint, val) ? set_err(p, "out of memory") : KV_OK;
}

static int set_master_url(struct parse *p, const struct flag *f, const char *val)
{
	if (!url_ok(val))
		return set_err(p, "%s \"%s\" must start with http:// or https://", f->name, val);
	return dup_into(&p->master_url, val) ? set_err(p, "out of memory") : KV_OK;
}

/* name=m0,zmq=tcp://host:5557,status=http://host:9003[,group_regex=RE], or
 * name=m,master=tcp://a:5557@http://a:9003,master=... for a group of
 * masters.  group_regex= comes last and takes the rest: a regex may hold
 * commas. */
static int set_source(struct parse *p, const struct flag *f, const char *val)
{
	(void)f;
	char *copy = strdup(val), *save = NULL;
	const char *name = NULL, *zmq = NULL, *status = NULL, *reconcile = NULL, *backend = NULL, *dialect = NULL,
		   *group_regex = NULL;
	kv_buf masters; /* the master= values, NUL-separated */
	size_t n_masters = 0;
	kv_buf_init(&masters);
	if (!copy)
		return set_err(p, "out of memory");
	static const char gr[] = "group_regex=";
	char *g = !strncmp(copy, gr, sizeof(gr) - 1) ? copy : strstr(copy, ",group_regex=");
	if (g) {
		if (*g == ',')
			*g++ = '\0';
		else
			copy[0] = '\0';
		group_regex = g + sizeof(gr) - 1;
	}
	int rc = KV_OK;
	for (char *kv = strtok_r(copy, ",", &save); kv && rc == KV_OK; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq) {
			rc = set_err(p, "--source: \"%s\" is not key=value", kv);
			break;
		}
		*eq = '\0';
		if (!strcmp(kv, "master")) {
			kv_buf_add(&masters, eq + 1, strlen(eq + 1) + 1);
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
			rc = set_err(p,
				     "--source: unknown key \"%s\" (name, zmq, status, master, reconcile, backend, "
				     "dialect, group_regex)",
				     kv);
		else
			*slot = eq + 1;
	}
	if (rc == KV_OK && !kv_buf_ok(&masters))
		rc = set_err(p, "out of memory");
	if (rc == KV_OK && reconcile && strcmp(reconcile, "true") && strcmp(reconcile, "false"))
		rc = set_err(p, "--source: reconcile=%s must be true or false", reconcile);
	if (rc == KV_OK)
		rc = name ? add_source(p, name, zmq, status, masters.data, n_masters,
				       reconcile && !strcmp(reconcile, "true"), backend, dialect, group_regex)
			  : set_err(p, "--source needs name=NAME");
	kv_buf_free(&masters);
	free(copy);
	return rc;
}

static const char *const log_levels[] = {"debug", "info", "warn", "error", NULL};
static const char *const log_formats[] = {"logfmt", "json", NULL};

#define CFG(field) offsetof(kv_config, field), sizeof(((kv_config *)0)->field)
#define HEADING(text)                              \
	{                                          \
		NULL, NULL, 0, 0, 0, 0, NULL, text \
	}

static const struct flag flags[] = {
	HEADING("Sources (one exporter can watch several masters):"),
	{"--source", set_source, 0, 0, 0, 0, NULL,
	 "name=NAME,zmq=ENDPOINT[,status=URL]  repeatable; NAME is [A-Za-z0-9_.-]+; for highly available masters "
	 "name=NAME,master=ENDPOINT@URL,master=ENDPOINT@URL... (one master= per member)"},
	{"--zmq.endpoint", set_zmq_endpoint, 0, 0, 0, 0, NULL,
	 "ENDPOINT  one source named \"default\" (with --master.url)"},
	{"--master.url", set_master_url, 0, 0, 0, 0, NULL, "URL  its master admin base URL (GET URL/kv_events/status)"},
	{"--stream.dialect", set_choice, CFG(stream_dialect), 0, 0, dialect_modes,
	 "auto|media|object  what a removed event means: media (the subscriber guide's: that medium only) or "
	 "object (Mooncake main's: the whole object); auto, the default, asks the master's status fields (in "
	 "--source: dialect=)"},
	HEADING("Master status polling:"),
	{"--master.poll-interval", set_duration, CFG(poll_interval), 0, 0, NULL, "DUR  default 5s"},
	{"--master.timeout", set_duration, CFG(poll_timeout), 0, 0, NULL, "DUR  default 2s"},
	{"--master.max-body-bytes", set_num, CFG(max_status_bytes), 1024, 1ull << 30, NULL,
	 "N  default 1048576; a larger status, /ha_status or /leader answer is refused and counted (/metrics and the "
	 "quotas are read as they arrive, at any size)"},
	HEADING("Reconciliation with the master (opt-in: it costs the master a full key listing):"),
	{"--master.reconcile", set_switch, CFG(reconcile), 0, 0, NULL,
	 "[true|false]  rebuild tenant default of the --zmq.endpoint source from the master (in --source: "
	 "reconcile=true, backend=ID)"},
	{"--master.reconcile-interval", set_duration, CFG(reconcile_interval), 0, 0, NULL,
	 "DUR  at most one reconciliation per source this often, default 10m"},
	{"--master.reconcile-max-keys", set_num, CFG(reconcile_max_keys), 1, 1ull << 34, NULL,
	 "N  a longer listing is abandoned and counted; default --limits.max-objects"},
	{"--master.reconcile-max-replay", set_num, CFG(reconcile_max_replay), 1000, 1ull << 30, NULL,
	 "N  events recorded while one reconciliation runs, default 1000000"},
	HEADING("Web:"),
	{"--web.listen-address", set_listen, CFG(listen_address), 0, 0, NULL,
	 "[HOST]:PORT  default " DEFAULT_LISTEN " (port 0 picks a free one)"},
	{"--web.telemetry-path", set_path, CFG(telemetry_path), 0, 0, NULL, "PATH  default /metrics"},
	{"--web.max-connections", set_num, CFG(web_max_connections), 1, 10000, NULL, "N  default 64"},
	{"--web.config.file", set_string, CFG(web_config_file), 0, 0, NULL,
	 "PATH  TLS and basic auth, exporter-toolkit format (see README)"},
	{"--run-as-user", set_string, CFG(run_as_user), 0, 0, NULL,
	 "USER  started as root: switch to USER once the port is bound"},
	HEADING("Limits (memory is bounded by these; overflow is counted, never silent):"),
	{"--limits.max-tenants", set_num, CFG(max_tenants), 1, 10000000, NULL,
	 "N  default 10000 (all sources together)"},
	{"--limits.max-objects", set_num, CFG(max_objects), 1, 1ull << 34, NULL,
	 "N  default 10000000 (about 18 bytes each with residency, 12 without)"},
	{"--limits.tenant-idle-timeout", set_duration, CFG(tenant_idle_timeout), 0, 30 * 86400, NULL,
	 "DUR  default 1h; a tenant with no object and no event for this long is forgotten, with its series "
	 "(0: never)"},
	{"--zmq.rcvhwm", set_num, CFG(zmq_rcvhwm), 0, 100000000, NULL,
	 "N  receive high-water mark in messages, default 2000 (0: no limit)"},
	{"--zmq.max-message-size", set_num, CFG(zmq_max_message_size), 1024, 1ull << 31, NULL,
	 "N  bytes; a larger message disconnects its sender, default 1048576 (64 events of 16 KiB)"},
	HEADING("Key groups (object counts per model, release, ... derived from the keys; see docs/key-groups.md):"),
	{"--key.group-regex", set_string, CFG(key_group_regex), 0, 0, NULL,
	 "REGEX  PCRE2; its named groups, joined by '/', are the key_group label, like ^(?<model>[^@]+)@ "
	 "(in --source: group_regex=REGEX, last)"},
	{"--limits.max-key-groups", set_num, CFG(max_key_groups), 1, 65000, NULL,
	 "N  default 200 (all sources together); more count under key_group=\"__overflow__\""},
	HEADING("Residency (how long objects stay; see README, \"Residency\"):"),
	{"--residency.enabled", set_switch, CFG(residency), 0, 0, NULL,
	 "[true|false]  object lifetimes per tenant and key group, default true; false saves 4 of the ~18 bytes "
	 "each tracked object costs"},
	HEADING("Series (fewer for many tenants; see docs/sizing.md):"),
	{"--metrics.exclude", set_string, CFG(metrics_exclude), 0, 0, NULL,
	 "REGEX  PCRE2; families whose whole name (as in # TYPE) matches are not served, e.g. "
	 "mooncake_kv_(objects_by_placement|stored_duplicates_total)"},
	{"--metrics.tenant-summary", set_switch, CFG(tenant_summary), 0, 0, NULL,
	 "[true|false]  per tenant serve only objects, the medium mix and staleness (4 series, not 14)"},
	HEADING("Logging:"),
	{"--log.level", set_choice, CFG(log_level), 0, 0, log_levels, "debug|info|warn|error  default info"},
	{"--log.format", set_choice, CFG(log_format), 0, 0, log_formats, "logfmt|json  default logfmt"},
};
#define N_FLAGS (sizeof(flags) / sizeof(flags[0]))

static const struct flag *find_flag(const char *name)
{
	for (size_t i = 0; i < N_FLAGS; i++)
		if (flags[i].name && !strcmp(name, flags[i].name))
			return &flags[i];
	return NULL;
}

static void print_usage(FILE *out)
{
	fputs("usage: mooncake-kv-exporter [flags]\n\n"
	      "Prometheus exporter for the Mooncake Store KV event stream.\n",
	      out);
	for (size_t i = 0; i < N_FLAGS; i++) {
		const struct flag *f = &flags[i];
		if (!f->name) {
			fprintf(out, "\n%s\n", f->help);
			continue;
		}
		const char *gap = strstr(f->help, "  ");
		int vlen = gap ? (int)(gap - f->help) : (int)strlen(f->help);
		char head[96];
		snprintf(head, sizeof(head), "%s=%.*s", f->name, vlen, f->help);
		fprintf(out, "  %-36s %s\n", head, gap ? gap + 2 : "");
	}
	fputs("\n  --help, --version\n", out);
}

static int set_defaults(kv_config *c)
{
	memset(c, 0, sizeof(*c));
	c->poll_interval = 5;
	c->poll_timeout = 2;
	c->reconcile_interval = 600;
	c->reconcile_max_replay = 1000000;
	c->max_key_groups = 200;
	c->max_status_bytes = 1 << 20;
	c->max_tenants = 10000;
	c->max_objects = 10000000;
	c->tenant_idle_timeout = 3600;
	c->residency = true;
	/* docs/performance.md, "Memory after a burst": the upstream publisher
	 * queues 10,000 messages itself; 2,000 more here cost ~50 MB at a full
	 * queue of 25 KB messages.  A message holds 64 events: 1 MiB is 16 KiB an
	 * event, far above any key upstream integrations make. */
	c->zmq_rcvhwm = 2000;
	c->zmq_max_message_size = 1 << 20;
	c->web_max_connections = 64;
	c->log_level = KV_LOG_INFO;
	c->log_format = KV_LOG_LOGFMT;
	if (dup_into(&c->listen_address, DEFAULT_LISTEN) || dup_into(&c->telemetry_path, "/metrics"))
		return KV_ENOMEM;
	return KV_OK;
}

/* Checks what no single flag can: how the flags go together. */
static int finish(struct parse *p)
{
	kv_config *c = p->c;
	if (p->master_url && !p->zmq_endpoint)
		return set_err(p, "--master.url needs --zmq.endpoint");
	if (c->reconcile && !p->zmq_endpoint)
		return set_err(p,
			       "--master.reconcile is for the --zmq.endpoint source; use reconcile=true in --source");
	if (p->zmq_endpoint &&
	    add_source(p, "default", p->zmq_endpoint, p->master_url, NULL, 0, c->reconcile, NULL, NULL, NULL) != KV_OK)
		return KV_EINVAL;
	if (c->n_sources == 0)
		return set_err(p, "no source: give --zmq.endpoint or --source (see --help)");
	if (!c->reconcile_max_keys)
		c->reconcile_max_keys = c->max_objects;
	char why[200];
	if (c->key_group_regex && !(c->key_groups = kv_keygroup_compile(c->key_group_regex, why, sizeof(why))))
		return set_err(p, "--key.group-regex: %s", why);
	if ((c->metrics_exclude || c->tenant_summary) &&
	    !(c->families = kv_family_filter_new(c->metrics_exclude, c->tenant_summary, why, sizeof(why))))
		return set_err(p, "--metrics.exclude: %s", why);
	if (c->poll_timeout > c->poll_interval) {
		if (p->timeout_given)
			return set_err(p, "--master.timeout must not exceed --master.poll-interval");
		c->poll_timeout = c->poll_interval; /* the default yields to a short interval */
	}
	return KV_OK;
}

int kv_config_parse(kv_config *c, int argc, char **argv, FILE *out, char *err, size_t errlen)
{
	struct parse p = {.c = c, .err = err, .errlen = errlen};
	int rc = KV_EINVAL;
	if (set_defaults(c) != KV_OK) {
		set_err(&p, "out of memory");
		goto done;
	}
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			print_usage(out);
			rc = KV_CONFIG_EXIT;
			goto done;
		}
		if (!strcmp(arg, "--version")) {
			fprintf(out, "mooncake-kv-exporter %s (revision %s)\n", KV_VERSION, KV_REVISION);
			rc = KV_CONFIG_EXIT;
			goto done;
		}
		if (strncmp(arg, "--", 2) != 0) {
			set_err(&p, "unexpected argument \"%s\" (see --help)", arg);
			goto done;
		}
		char name[64];
		const char *eq = strchr(arg, '=');
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		const struct flag *f = find_flag(name);
		if (!f) {
			set_err(&p, "unknown flag %s (see --help)", name);
			goto done;
		}
		const char *val = eq ? eq + 1 : NULL;
		if (!val && f->set == set_switch) /* --flag, or --flag true|false */
			val = i + 1 < argc && (!strcmp(argv[i + 1], "true") || !strcmp(argv[i + 1], "false"))
				      ? argv[++i]
				      : "true";
		if (!val && i + 1 >= argc) {
			set_err(&p, "flag %s needs a value", name);
			goto done;
		}
		if (f->set(&p, f, val ? val : argv[++i]) != KV_OK)
			goto done;
	}
	if (finish(&p) == KV_OK)
		rc = KV_CONFIG_RUN;
done:
	free(p.zmq_endpoint);
	free(p.master_url);
	return rc;
}

int kv_config_dialect(const kv_config *c, const kv_source_cfg *s)
{
	int mode = s->dialect >= 0 ? s->dialect : c->stream_dialect;
	return mode == KV_DIALECT_MODE_MEDIA    ? KV_DIALECT_MEDIA
	       : mode == KV_DIALECT_MODE_OBJECT ? KV_DIALECT_OBJECT
						: -1;
}

const kv_keygroup_re *kv_config_keygroups(const kv_config *c, const kv_source_cfg *s)
{
	return s->key_groups ? s->key_groups : c->key_groups;
}

void kv_config_free(kv_config *c)
{
	for (size_t i = 0; i < c->n_sources; i++)
		source_cfg_free(&c->sources[i]);
	free(c->sources);
	free(c->listen_address);
	free(c->telemetry_path);
	free(c->web_config_file);
	free(c->run_as_user);
	free(c->key_group_regex);
	kv_keygroup_free(c->key_groups);
	free(c->metrics_exclude);
	kv_family_filter_free(c->families);
	memset(c, 0, sizeof(*c));
}
