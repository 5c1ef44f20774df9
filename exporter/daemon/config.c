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
#include "kv_config_parse.h"
#include "version.h"

#define DEFAULT_LISTEN ":19557"

int kv_parse_err(struct parse *p, const char *fmt, ...)
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

bool kv_url_ok(const char *u)
{
	return strncmp(u, "http://", 7) == 0 || strncmp(u, "https://", 8) == 0;
}

const char *kv_url_problem(const char *u, char *why, size_t n)
{
	if (!kv_url_ok(u)) {
		snprintf(why, n, "\"%s\" must start with http:// or https://", u);
		return why;
	}
	const char *host = strstr(u, "://") + 3, *end = host + strcspn(host, "/?#");
	/* user info may hold a colon: the host starts after the authority's last @ */
	for (const char *c = host; c < end; c++)
		if (*c == '@')
			host = c + 1;
	const char *port = NULL;
	if (*host == '[') { /* an IPv6 literal: its colons are not the port's */
		const char *close = memchr(host, ']', (size_t)(end - host));
		if (!close) {
			snprintf(why, n, "\"%s\": IPv6 address without its closing ]", u);
			return why;
		}
		port = close + 1 < end && close[1] == ':' ? close + 2 : NULL;
	} else {
		const char *colon = memchr(host, ':', (size_t)(end - host));
		port = colon ? colon + 1 : NULL;
	}
	if (host == end || *host == ':') {
		snprintf(why, n, "\"%s\" has no host", u);
		return why;
	}
	if (port) {
		char digits[8] = "";
		size_t len = (size_t)(end - port);
		if (len < sizeof(digits))
			memcpy(digits, port, len), digits[len] = 0;
		if (len >= sizeof(digits) || kv_port_number(digits, 1) < 0) {
			snprintf(why, n, "\"%s\": port \"%.*s\" is not a number from 1 to 65535", u,
				 (int)(len > 16 ? 16 : len), port);
			return why;
		}
	}
	return NULL;
}

int kv_dup_into(char **dst, const char *v)
{
	char *n = strdup(v);
	if (!n)
		return KV_ENOMEM;
	free(*dst);
	*dst = n;
	return KV_OK;
}

int kv_choice_index(const char *const *choices, const char *word)
{
	for (int i = 0; choices[i]; i++)
		if (!strcmp(word, choices[i]))
			return i;
	return -1;
}

void kv_choice_list(const char *const *choices, char *out, size_t n)
{
	size_t used = 0;
	out[0] = '\0';
	for (int i = 0; choices[i] && used < n; i++)
		used += (size_t)snprintf(out + used, n - used, "%s%s", i ? ", " : "", choices[i]);
}

/* A port as digits only: its number, if from `min` to 65535, else -1. */
int kv_port_number(const char *s, int min)
{
	long v = 0;
	if (!*s || strlen(s) > 5)
		return -1;
	for (const char *c = s; *c; c++) {
		if (*c < '0' || *c > '9')
			return -1;
		v = v * 10 + (*c - '0');
	}
	return v >= min && v <= 65535 ? (int)v : -1;
}

const char *const kv_dialect_modes[] = {"auto", "media", "object", NULL};

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
		return kv_parse_err(p, "%s \"%s\" must be a whole number from %llu to %llu", f->name, val, f->min,
				    f->max);
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
		return kv_parse_err(p, "%s \"%s\" is not a duration between 10ms and %.0fh (like 5s, 500ms)%s", f->name,
				    val, most / 3600, f->max ? ", or 0" : "");
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
		return kv_parse_err(p, "%s=%s must be true or false", f->name, val);
	bool v = !strcmp(val, "true");
	memcpy((char *)p->c + f->off, &v, sizeof(v));
	return KV_OK;
}

static int set_string(struct parse *p, const struct flag *f, const char *val)
{
	if (!*val)
		return kv_parse_err(p, "%s needs a non-empty value", f->name);
	return kv_dup_into((char **)((char *)p->c + f->off), val) ? kv_parse_err(p, "out of memory") : KV_OK;
}

static int set_choice(struct parse *p, const struct flag *f, const char *val)
{
	int i = kv_choice_index(f->choices, val);
	if (i < 0) {
		char allowed[128];
		kv_choice_list(f->choices, allowed, sizeof(allowed));
		return kv_parse_err(p, "%s \"%s\" is not one of %s", f->name, val, allowed);
	}
	memcpy((char *)p->c + f->off, &i, sizeof(i));
	return KV_OK;
}

/* [HOST]:PORT, PORT 0 to 65535 (0: the system picks one), checked here so
 * that a port out of range is one line at start-up, not a failed listen. */
static int set_listen(struct parse *p, const struct flag *f, const char *val)
{
	const char *colon = strrchr(val, ':');
	if (!colon)
		return kv_parse_err(p, "%s \"%s\" must be [HOST]:PORT", f->name, val);
	if (kv_port_number(colon + 1, 0) < 0)
		return kv_parse_err(p, "%s \"%s\": port \"%s\" is not a number from 0 to 65535 ([HOST]:PORT)", f->name,
				    val, colon + 1);
	return set_string(p, f, val);
}

static int set_path(struct parse *p, const struct flag *f, const char *val)
{
	if (val[0] != '/' || strlen(val) < 2 || !strcmp(val, "/-/healthy") || !strcmp(val, "/-/ready"))
		return kv_parse_err(p, "%s \"%s\" must start with / and not be / or /-/...", f->name, val);
	return set_string(p, f, val);
}

static int set_zmq_endpoint(struct parse *p, const struct flag *f, const char *val)
{
	char why[300];
	if (*val && kv_endpoint_problem(val, why, sizeof(why)))
		return kv_parse_err(p, "%s %s", f->name, why);
	return kv_dup_into(&p->zmq_endpoint, val) ? kv_parse_err(p, "out of memory") : KV_OK;
}

static int set_master_url(struct parse *p, const struct flag *f, const char *val)
{
	char why[300];
	if (kv_url_problem(val, why, sizeof(why)))
		return kv_parse_err(p, "%s %s", f->name, why);
	return kv_dup_into(&p->master_url, val) ? kv_parse_err(p, "out of memory") : KV_OK;
}

static int set_state_peer(struct parse *p, const struct flag *f, const char *val)
{
	kv_config *c = p->c;
	char why[300];
	if (kv_url_problem(val, why, sizeof(why)))
		return kv_parse_err(p, "%s %s", f->name, why);
	char **n = realloc(c->state_peers, (c->n_state_peers + 1) * sizeof(*n));
	if (!n)
		return kv_parse_err(p, "out of memory");
	c->state_peers = n;
	c->state_peers[c->n_state_peers] = NULL;
	if (kv_dup_into(&c->state_peers[c->n_state_peers], val))
		return kv_parse_err(p, "out of memory");
	c->n_state_peers++;
	return KV_OK;
}

static int set_source(struct parse *p, const struct flag *f, const char *val)
{
	(void)f;
	return kv_parse_source(p, val);
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
	{"--stream.dialect", set_choice, CFG(stream_dialect), 0, 0, kv_dialect_modes,
	 "auto|media|object  what a removed event means: media (the subscriber guide's, Mooncake main since "
	 "#3818: that medium only) or object (release v0.3.12's: the whole object); auto, the default, asks the "
	 "master's status fields (in "
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
	 "DUR  each tenant reconciled at most this often, and without a cause every 6 intervals; default 10m"},
	{"--master.reconcile-max-keys", set_num, CFG(reconcile_max_keys), 1, 1ull << 34, NULL,
	 "N  a longer listing is abandoned and counted; default --limits.max-objects"},
	{"--master.reconcile-max-replay", set_num, CFG(reconcile_max_replay), 1000, 1ull << 30, NULL,
	 "N  events recorded while one reconciliation runs, default 1000000"},
	HEADING("Web:"),
	{"--web.listen-address", set_listen, CFG(listen_address), 0, 0, NULL,
	 "[HOST]:PORT  default " DEFAULT_LISTEN " (port 0 picks a free one)"},
	{"--web.telemetry-path", set_path, CFG(telemetry_path), 0, 0, NULL, "PATH  default /metrics"},
	{"--web.max-connections", set_num, CFG(web_max_connections), 1, 10000, NULL,
	 "N  default 512: open connections, all clients together (one more is refused and counted)"},
	{"--web.max-connections-per-address", set_num, CFG(web_max_per_address), 0, 10000, NULL,
	 "N  default 16: open connections from one client address (0: only --web.max-connections)"},
	{"--web.read-header-timeout", set_duration, CFG(web_read_header_timeout), 0, 0, NULL,
	 "DUR  default 5s: a request's headers must arrive within this of the connection (or, kept alive, of "
	 "its first line), however it trickles; later, it is cut off and counted"},
	{"--web.read-timeout", set_duration, CFG(web_read_timeout), 0, 0, NULL,
	 "DUR  default 10s: the same for the whole request"},
	{"--web.idle-timeout", set_duration, CFG(web_idle_timeout), 0, 0, NULL,
	 "DUR  default 30s: a kept-alive connection's wait for its next request, and a client that stops "
	 "reading an answer"},
	{"--web.config.file", set_string, CFG(web_config_file), 0, 0, NULL,
	 "PATH  TLS and basic auth, exporter-toolkit format (docs/guide.md, \"Securing the endpoint\")"},
	{"--run-as-user", set_string, CFG(run_as_user), 0, 0, NULL,
	 "USER  started as root: switch to USER once the port is bound"},
	HEADING("Handing the state over (restarts, upgrades; docs/operating.md \"Restarts and upgrades\"):"),
	{"--state.serve", set_switch, CFG(state_serve), 0, 0, NULL,
	 "BOOL  serve this exporter's state at /state for the next one to take (behind --web.config.file), "
	 "default false"},
	{"--state.peer", set_state_peer, 0, 0, 0, 0, NULL,
	 "URL  at start-up, take the state from the exporter at URL (its base URL: URL/state), where the "
	 "stream proves it continuous; repeat to try several in order"},
	{"--state.peer-timeout", set_duration, CFG(state_peer_timeout), 0, 0, NULL,
	 "DUR  default 30s: the most one peer may take, connection to last byte"},
	{"--state.peer-max-bytes", set_num, CFG(state_peer_max_bytes), 1024, 1ull << 40, NULL,
	 "N  default 4294967296: the largest state taken from a peer"},
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
	HEADING("Residency (how long objects stay; see docs/guide.md, \"Residency\"):"),
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
	fputs("\n  --help                               these flags (-h too)\n"
	      "  --version                            the version and revision\n",
	      out);
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
	c->web_max_connections = 512;
	c->web_max_per_address = 16;
	c->web_read_header_timeout = 5;
	c->web_read_timeout = 10;
	c->web_idle_timeout = 30;
	c->state_peer_timeout = 30;
	c->state_peer_max_bytes = 4ull << 30;
	c->log_level = KV_LOG_INFO;
	c->log_format = KV_LOG_LOGFMT;
	if (kv_dup_into(&c->listen_address, DEFAULT_LISTEN) || kv_dup_into(&c->telemetry_path, "/metrics"))
		return KV_ENOMEM;
	return KV_OK;
}

/* Checks what no single flag can: how the flags go together. */
static int finish(struct parse *p)
{
	kv_config *c = p->c;
	if (p->master_url && !p->zmq_endpoint)
		return kv_parse_err(p, "--master.url needs --zmq.endpoint");
	if (c->reconcile && !p->zmq_endpoint)
		return kv_parse_err(
			p, "--master.reconcile is for the --zmq.endpoint source; use reconcile=true in --source");
	if (p->zmq_endpoint && kv_add_source(p, "default", p->zmq_endpoint, p->master_url, NULL, 0, c->reconcile, NULL,
					     NULL, NULL) != KV_OK)
		return KV_EINVAL;
	if (c->n_sources == 0)
		return kv_parse_err(p, "no source: give --zmq.endpoint or --source (see --help)");
	if (!c->reconcile_max_keys)
		c->reconcile_max_keys = c->max_objects;
	char why[200];
	if (c->key_group_regex && !(c->key_groups = kv_keygroup_compile(c->key_group_regex, why, sizeof(why))))
		return kv_parse_err(p, "--key.group-regex: %s", why);
	if ((c->metrics_exclude || c->tenant_summary) &&
	    !(c->families = kv_family_filter_new(c->metrics_exclude, c->tenant_summary, why, sizeof(why))))
		return kv_parse_err(p, "--metrics.exclude: %s", why);
	if (c->web_read_timeout < c->web_read_header_timeout)
		return kv_parse_err(p, "--web.read-timeout (the whole request) must not be shorter than "
				       "--web.read-header-timeout (its headers)");
	if (c->poll_timeout > c->poll_interval) {
		if (p->timeout_given)
			return kv_parse_err(p, "--master.timeout must not exceed --master.poll-interval");
		c->poll_timeout = c->poll_interval; /* the default yields to a short interval */
	}
	return KV_OK;
}

int kv_config_parse(kv_config *c, int argc, char **argv, FILE *out, char *err, size_t errlen)
{
	struct parse p = {.c = c, .err = err, .errlen = errlen};
	int rc = KV_EINVAL;
	if (set_defaults(c) != KV_OK) {
		kv_parse_err(&p, "out of memory");
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
			kv_parse_err(&p, "unexpected argument \"%s\" (see --help)", arg);
			goto done;
		}
		char name[64];
		const char *eq = strchr(arg, '=');
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		const struct flag *f = find_flag(name);
		if (!f) {
			kv_parse_err(&p, "unknown flag %s (see --help)", name);
			goto done;
		}
		const char *val = eq ? eq + 1 : NULL;
		if (!val && f->set == set_switch) /* --flag, or --flag true|false */
			val = i + 1 < argc && (!strcmp(argv[i + 1], "true") || !strcmp(argv[i + 1], "false"))
				      ? argv[++i]
				      : "true";
		if (!val && i + 1 >= argc) {
			kv_parse_err(&p, "flag %s needs a value", name);
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
		kv_source_cfg_free(&c->sources[i]);
	free(c->sources);
	free(c->listen_address);
	free(c->telemetry_path);
	free(c->web_config_file);
	free(c->run_as_user);
	free(c->key_group_regex);
	kv_keygroup_free(c->key_groups);
	free(c->metrics_exclude);
	kv_family_filter_free(c->families);
	for (size_t i = 0; i < c->n_state_peers; i++)
		free(c->state_peers[i]);
	free(c->state_peers);
	memset(c, 0, sizeof(*c));
}
