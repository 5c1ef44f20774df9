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
#include "kv_scrape_body.h"
#include "version.h"

#define DEFAULT_LISTEN ":19557"

/* --- the flags --- */

struct flag;
typedef int (*flag_setter)(struct parse *p, const struct flag *f, const char *val);

struct flag {
	const char *name; /* NULL: a heading line of --help */
	flag_setter set;
	size_t off, size; /* where in kvd_config, for the generic setters */
	unsigned long long min, max;
	const char *const *choices; /* set_choice: value i stores i */
	const char *help;           /* "VALUE  text" */
	/* The default as a user would write it (NULL: none): set through the
	 * flag's own setter before the command line is read, and shown by
	 * --help, so that it is written here alone. */
	const char *def;
};

static int set_num(struct parse *p, const struct flag *f, const char *val)
{
	unsigned long long n;
	if (kvd_parse_size(val, f->min, f->max, &n) != MKV_OK)
		return kvd_parse_err(p, "%s \"%s\" must be a whole number from %llu to %llu", f->name, val, f->min,
				     f->max);
	char *field = (char *)p->c + f->off;
	if (f->size == sizeof(uint32_t)) { /* int or unsigned: the bounds keep it in range */
		uint32_t v = (uint32_t)n;
		memcpy(field, &v, sizeof(v));
	} else {
		uint64_t v = n;
		memcpy(field, &v, sizeof(v));
	}
	return MKV_OK;
}

/* A duration: 10ms to 1h, or to the flag's max seconds when it has one (a
 * flag with a max also takes 0, "never"). */
static int set_duration(struct parse *p, const struct flag *f, const char *val)
{
	double d;
	double most = f->max ? (double)f->max : f->off == offsetof(kvd_config, reconcile_interval) ? 86400 : 3600;
	if (f->max && !strcmp(val, "0")) {
		d = 0;
	} else if (kvd_parse_duration(val, &d) != MKV_OK || d < 0.01 || d > most) {
		return kvd_parse_err(p, "%s \"%s\" is not a duration between 10ms and %.0fh (like 5s, 500ms)%s",
				     f->name, val, most / 3600, f->max ? ", or 0" : "");
	}
	memcpy((char *)p->c + f->off, &d, sizeof(d));
	if (f->off == offsetof(kvd_config, poll_timeout))
		p->timeout_given = true;
	return MKV_OK;
}

/* A switch: --flag alone means true; --flag=true|false */
static int set_switch(struct parse *p, const struct flag *f, const char *val)
{
	if (strcmp(val, "true") && strcmp(val, "false"))
		return kvd_parse_err(p, "%s=%s must be true or false", f->name, val);
	bool v = !strcmp(val, "true");
	memcpy((char *)p->c + f->off, &v, sizeof(v));
	return MKV_OK;
}

static int set_string(struct parse *p, const struct flag *f, const char *val)
{
	if (!*val)
		return kvd_parse_err(p, "%s needs a non-empty value", f->name);
	return kvd_dup_into((char **)((char *)p->c + f->off), val) ? kvd_parse_err(p, "out of memory") : MKV_OK;
}

static int set_choice(struct parse *p, const struct flag *f, const char *val)
{
	int i = kvd_choice_index(f->choices, val);
	if (i < 0) {
		char allowed[128];
		kvd_choice_list(f->choices, allowed, sizeof(allowed));
		return kvd_parse_err(p, "%s \"%s\" is not one of %s", f->name, val, allowed);
	}
	memcpy((char *)p->c + f->off, &i, sizeof(i));
	return MKV_OK;
}

/* [HOST]:PORT, PORT 0 to 65535 (0: the system picks one), checked here so
 * that a port out of range is one line at start-up, not a failed listen. */
static int set_listen(struct parse *p, const struct flag *f, const char *val)
{
	const char *colon = strrchr(val, ':');
	if (!colon)
		return kvd_parse_err(p, "%s \"%s\" must be [HOST]:PORT", f->name, val);
	if (kvd_port_number(colon + 1, 0) < 0)
		return kvd_parse_err(p, "%s \"%s\": port \"%s\" is not a number from 0 to 65535 ([HOST]:PORT)", f->name,
				     val, colon + 1);
	return set_string(p, f, val);
}

static int set_path(struct parse *p, const struct flag *f, const char *val)
{
	if (val[0] != '/' || strlen(val) < 2 || !strcmp(val, "/-/healthy") || !strcmp(val, "/-/ready"))
		return kvd_parse_err(p, "%s \"%s\" must start with / and not be / or /-/...", f->name, val);
	return set_string(p, f, val);
}

static int set_zmq_endpoint(struct parse *p, const struct flag *f, const char *val)
{
	char why[300];
	if (*val && kvd_endpoint_problem(val, why, sizeof(why)))
		return kvd_parse_err(p, "%s %s", f->name, why);
	return kvd_dup_into(&p->zmq_endpoint, val) ? kvd_parse_err(p, "out of memory") : MKV_OK;
}

static int set_master_url(struct parse *p, const struct flag *f, const char *val)
{
	char why[300];
	if (kvd_url_problem(val, why, sizeof(why)))
		return kvd_parse_err(p, "%s %s", f->name, why);
	return kvd_dup_into(&p->master_url, val) ? kvd_parse_err(p, "out of memory") : MKV_OK;
}

static int set_state_peer(struct parse *p, const struct flag *f, const char *val)
{
	kvd_config *c = p->c;
	char why[300];
	if (kvd_url_problem(val, why, sizeof(why)))
		return kvd_parse_err(p, "%s %s", f->name, why);
	char **n = realloc(c->state_peers, (c->n_state_peers + 1) * sizeof(*n));
	if (!n)
		return kvd_parse_err(p, "out of memory");
	c->state_peers = n;
	c->state_peers[c->n_state_peers] = NULL;
	if (kvd_dup_into(&c->state_peers[c->n_state_peers], val))
		return kvd_parse_err(p, "out of memory");
	c->n_state_peers++;
	return MKV_OK;
}

static int set_exempt(struct parse *p, const struct flag *f, const char *val)
{
	kvd_config *c = p->c;
	kvd_cidr net;
	const char *why = kvd_cidr_parse(val, &net);
	if (why)
		return kvd_parse_err(p, "%s \"%s\" %s", f->name, val, why);
	kvd_cidr *n = realloc(c->web_penalty_exempt, (c->n_web_penalty_exempt + 1) * sizeof(*n));
	if (!n)
		return kvd_parse_err(p, "out of memory");
	c->web_penalty_exempt = n;
	n[c->n_web_penalty_exempt++] = net;
	return MKV_OK;
}

static int set_source(struct parse *p, const struct flag *f, const char *val)
{
	(void)f;
	return kvd_parse_source(p, val);
}

static const char *const log_levels[] = {"debug", "info", "warn", "error", NULL};
static const char *const log_formats[] = {"logfmt", "json", NULL};

#define CFG(field) offsetof(kvd_config, field), sizeof(((kvd_config *)0)->field)
#define HEADING(text)                                    \
	{                                                \
		NULL, NULL, 0, 0, 0, 0, NULL, text, NULL \
	}
#define STR_(x) #x
#define STR(x)  STR_(x)

static const struct flag flags[] = {
	HEADING("Sources (one exporter can watch several masters):"),
	{"--source", set_source, 0, 0, 0, 0, NULL,
	 "name=NAME,zmq=ENDPOINT[,status=URL]  repeatable; NAME is [A-Za-z0-9_.-]+; for highly available masters "
	 "name=NAME,master=ENDPOINT@URL,... (one master= per member)",
	 NULL},
	{"--zmq.endpoint", set_zmq_endpoint, 0, 0, 0, 0, NULL,
	 "ENDPOINT  one source named \"default\" (with --master.url)", NULL},
	{"--master.url", set_master_url, 0, 0, 0, 0, NULL, "URL  its master admin base URL (GET URL/kv_events/status)",
	 NULL},
	{"--stream.dialect", set_choice, CFG(stream_dialect), 0, 0, kvd_dialect_modes,
	 "auto|media|object  what a removed event means: media (the subscriber guide's, Mooncake main since "
	 "#3818: that medium only) or object (release v0.3.12's: the whole object); auto asks the master's status "
	 "fields (in --source: dialect=)",
	 "auto"},
	HEADING("Master status polling:"),
	{"--master.poll-interval", set_duration, CFG(poll_interval), 0, 0, NULL,
	 "DUR  how often each master's admin API is asked", "5s"},
	{"--master.timeout", set_duration, CFG(poll_timeout), 0, 0, NULL,
	 "DUR  the most one request to a master may take (a shorter --master.poll-interval bounds the default)", "2s"},
	{"--master.max-body-bytes", set_num, CFG(max_status_bytes), 1024, 1ull << 30, NULL,
	 "N  a larger status, /ha_status or /leader answer is refused and counted (/metrics and the quotas are read "
	 "as they arrive, at any size)",
	 "1048576"},
	HEADING("Reconciliation with the master (opt-in: it costs the master a full key listing):"),
	{"--master.reconcile", set_switch, CFG(reconcile), 0, 0, NULL,
	 "[true|false]  rebuild tenant default of the --zmq.endpoint source from the master (in --source: "
	 "reconcile=true, backend=ID)",
	 "false"},
	{"--master.reconcile-interval", set_duration, CFG(reconcile_interval), 0, 0, NULL,
	 "DUR  each tenant reconciled at most this often, and without a cause every 6 intervals", "10m"},
	{"--master.reconcile-max-keys", set_num, CFG(reconcile_max_keys), 1, 1ull << 34, NULL,
	 "N  a longer listing is abandoned and counted (default: --limits.max-objects)", NULL},
	{"--master.reconcile-max-replay", set_num, CFG(reconcile_max_replay), 1000, 1ull << 30, NULL,
	 "N  events recorded while one reconciliation runs", "1000000"},
	HEADING("Web:"),
	{"--web.listen-address", set_listen, CFG(listen_address), 0, 0, NULL,
	 "[HOST]:PORT  where to serve (port 0 picks a free one)", DEFAULT_LISTEN},
	{"--web.telemetry-path", set_path, CFG(telemetry_path), 0, 0, NULL, "PATH  where the metrics are served",
	 "/metrics"},
	{"--web.max-connections", set_num, CFG(web_max_connections), 1, 10000, NULL,
	 "N  open connections, all clients together (one more is refused and counted)", "512"},
	{"--web.max-connections-per-address", set_num, CFG(web_max_per_address), 0, 10000, NULL,
	 "N  open connections from one client address (0: only --web.max-connections)", "16"},
	{"--web.read-header-timeout", set_duration, CFG(web_read_header_timeout), 0, 0, NULL,
	 "DUR  a request's headers must arrive within this of the connection (or, kept alive, of its first line), "
	 "however it trickles; later, it is cut off and counted",
	 "5s"},
	{"--web.read-timeout", set_duration, CFG(web_read_timeout), 0, 0, NULL, "DUR  the same for the whole request",
	 "10s"},
	{"--web.idle-timeout", set_duration, CFG(web_idle_timeout), 0, 0, NULL,
	 "DUR  a kept-alive connection's wait for its next request, and a client that stops reading an answer", "30s"},
	{"--web.config.file", set_string, CFG(web_config_file), 0, 0, NULL,
	 "PATH  TLS and basic auth, exporter-toolkit format (docs/guide.md, \"Securing the endpoint\")", NULL},
	{"--web.login-penalty-exempt", set_exempt, 0, 0, 0, 0, NULL,
	 "CIDR  repeatable: an address or network (10.0.0.0/8, fd00::/8, 192.0.2.7) whose failed logins are "
	 "counted and logged but never penalized (docs/guide.md, \"Securing the endpoint\")",
	 NULL},
	{"--run-as-user", set_string, CFG(run_as_user), 0, 0, NULL,
	 "USER  started as root: switch to USER once the port is bound", NULL},
	HEADING("Handing the state over at restarts and upgrades (docs/operating.md):"),
	{"--state.serve", set_switch, CFG(state_serve), 0, 0, NULL,
	 "[true|false]  serve this exporter's state at /state for the next one to take (behind --web.config.file)",
	 "false"},
	{"--state.peer", set_state_peer, 0, 0, 0, 0, NULL,
	 "URL  at start-up, take the state from the exporter at URL (its base URL: URL/state), where the "
	 "stream proves it continuous; repeat to try several in order",
	 NULL},
	{"--state.peer-timeout", set_duration, CFG(state_peer_timeout), 0, 0, NULL,
	 "DUR  the most one peer may take, connection to last byte", "30s"},
	{"--state.peer-max-bytes", set_num, CFG(state_peer_max_bytes), 1024, 1ull << 40, NULL,
	 "N  the largest state taken from a peer", "4294967296"},
	HEADING("Limits (memory is bounded by these; overflow is counted, never silent):"),
	{"--limits.max-tenants", set_num, CFG(max_tenants), 1, 10000000, NULL, "N  tenants, all sources together",
	 "10000"},
	{"--limits.max-objects", set_num, CFG(max_objects), 1, 1ull << 34, NULL,
	 "N  objects tracked, all sources together (about 18 bytes each with residency, 12 without)", "10000000"},
	{"--limits.tenant-idle-timeout", set_duration, CFG(tenant_idle_timeout), 0, 30 * 86400, NULL,
	 "DUR  a tenant with no object and no event for this long is forgotten, with its series (0: never)", "1h"},
	/* docs/performance.md, "Memory after a burst": the upstream publisher
	 * queues 10,000 messages itself; 2,000 more here cost ~50 MB at a full
	 * queue of 25 KB messages.  A message holds 64 events: 1 MiB is 16 KiB an
	 * event, far above any key upstream integrations make. */
	{"--zmq.rcvhwm", set_num, CFG(zmq_rcvhwm), 0, 100000000, NULL,
	 "N  receive high-water mark in messages (0: no limit)", "2000"},
	{"--zmq.max-message-size", set_num, CFG(zmq_max_message_size), 1024, 1ull << 31, NULL,
	 "N  bytes; a larger message disconnects its sender (the default is 64 events of 16 KiB)", "1048576"},
	HEADING("Key groups: object counts per model, release... from keys (docs/key-groups.md):"),
	{"--key.group-regex", set_string, CFG(key_group_regex), 0, 0, NULL,
	 "REGEX  PCRE2; its named groups, joined by '/', are the key_group label, like ^(?<model>[^@]+)@ "
	 "(in --source: group_regex=REGEX, last)",
	 NULL},
	{"--limits.max-key-groups", set_num, CFG(max_key_groups), 1, 65000, NULL,
	 "N  key groups, all sources together; more count under key_group=\"__overflow__\"",
	 STR(MKV_MAX_KEY_GROUPS_DEFAULT)},
	HEADING("Residency (how long objects stay; see docs/guide.md, \"Residency\"):"),
	{"--residency.enabled", set_switch, CFG(residency), 0, 0, NULL,
	 "[true|false]  object lifetimes per tenant and key group; false saves 4 of the ~18 bytes each tracked object "
	 "costs",
	 "true"},
	HEADING("Series (fewer for many tenants; see docs/sizing.md):"),
	{"--metrics.exclude", set_string, CFG(metrics_exclude), 0, 0, NULL,
	 "REGEX  PCRE2; families whose whole name (as in # TYPE) matches are not served, e.g. "
	 "mooncake_kv_object_age_.*",
	 NULL},
	{"--metrics.tenant-summary", set_switch, CFG(tenant_summary), 0, 0, NULL,
	 "[true|false]  per tenant serve only objects, the medium mix and staleness (4 series, not 6 to 9)", "false"},
	{"--metrics.all-series", set_switch, CFG(all_series), 0, 0, NULL,
	 "[true|false]  also the series without news, as served before: rare-event counters at 0, "
	 "mooncake_kv_objects_by_placement, mooncake_kv_tenant_clears_total (docs/guide.md, \"Metrics\")",
	 "false"},
	HEADING("Logging:"),
	{"--log.level", set_choice, CFG(log_level), 0, 0, log_levels,
	 "debug|info|warn|error  the least severe line written", "info"},
	{"--log.format", set_choice, CFG(log_format), 0, 0, log_formats, "logfmt|json  how each line is written",
	 "logfmt"},
};
#define N_FLAGS (sizeof(flags) / sizeof(flags[0]))

static const struct flag *find_flag(const char *name)
{
	for (size_t i = 0; i < N_FLAGS; i++)
		if (flags[i].name && !strcmp(name, flags[i].name))
			return &flags[i];
	return NULL;
}

#define HELP_WIDTH  80
#define HELP_INDENT 39 /* where a flag's description starts: "  " and a 36-column head and " " */

/* Writes text from column `col` on, wrapped at HELP_WIDTH onto lines
 * indented HELP_INDENT; a word longer than a line gets one of its own.  A
 * 0x01 byte is a space that does not break ("(default 5s)" stays whole). */
static void print_wrapped(FILE *out, int col, const char *text)
{
	for (const char *p = text; *p;) {
		while (*p == ' ')
			p++;
		int n = (int)strcspn(p, " ");
		if (!n)
			break;
		if (col > HELP_INDENT && col + 1 + n > HELP_WIDTH) {
			fprintf(out, "\n%*s", HELP_INDENT, "");
			col = HELP_INDENT;
		} else if (col > HELP_INDENT || (col == HELP_INDENT && p != text)) {
			fputc(' ', out);
			col++;
		}
		for (int i = 0; i < n; i++)
			fputc(p[i] == 1 ? ' ' : p[i], out);
		col += n;
		p += n;
	}
	fputc('\n', out);
}

/* Edits (insertions, deletions, substitutions) from a to b, counted up to
 * a bound: names are short. */
static size_t edits(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64];
	if (la >= 64 || lb >= 64)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* The flag a mistyped name most likely meant: the nearest by edits, at
 * most 3 away; NULL for none. */
static const struct flag *nearest_flag(const char *name)
{
	const struct flag *best = NULL;
	size_t best_d = 4;
	for (size_t i = 0; i < N_FLAGS; i++) {
		if (!flags[i].name)
			continue;
		size_t d = edits(name, flags[i].name);
		if (d < best_d)
			best = &flags[i], best_d = d;
	}
	return best;
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
		char head[96], text[1024];
		snprintf(head, sizeof(head), "%s=%.*s", f->name, vlen, f->help);
		snprintf(text, sizeof(text), "%s%s%s%s%s", gap ? gap + 2 : "", gap && f->def ? " " : "",
			 f->def ? "(default\x01" : "", f->def ? f->def : "", f->def ? ")" : "");
		int col = fprintf(out, "  %s", head);
		if (col < HELP_INDENT)
			col += fprintf(out, "%*s", HELP_INDENT - col, "");
		else {
			fprintf(out, "\n%*s", HELP_INDENT, "");
			col = HELP_INDENT;
		}
		print_wrapped(out, col, text);
	}
	fputs("\n  --help                               these flags (-h too)\n"
	      "  --version                            the version and revision\n",
	      out);
}

/* Every flag's default, through the flag's own setter: the table is the
 * one place a default is written. */
static int set_defaults(struct parse *p)
{
	memset(p->c, 0, sizeof(*p->c));
	for (size_t i = 0; i < N_FLAGS; i++)
		if (flags[i].def && flags[i].set(p, &flags[i], flags[i].def) != MKV_OK)
			return MKV_EINVAL;
	p->timeout_given = false; /* a default is no choice of the user's */
	return MKV_OK;
}

/* Checks what no single flag can: how the flags go together. */
static int finish(struct parse *p)
{
	kvd_config *c = p->c;
	if (p->master_url && !p->zmq_endpoint)
		return kvd_parse_err(p, "--master.url needs --zmq.endpoint");
	if (c->reconcile && !p->zmq_endpoint)
		return kvd_parse_err(
			p, "--master.reconcile is for the --zmq.endpoint source; use reconcile=true in --source");
	if (p->zmq_endpoint && kvd_add_source(p, "default", p->zmq_endpoint, p->master_url, NULL, 0, c->reconcile, NULL,
					      NULL, NULL) != MKV_OK)
		return MKV_EINVAL;
	if (c->n_sources == 0)
		return kvd_parse_err(p, "no source: give --zmq.endpoint or --source (see --help)");
	if (!c->reconcile_max_keys)
		c->reconcile_max_keys = c->max_objects;
	char why[200];
	if (c->key_group_regex && !(c->key_groups = mkv_keygroup_compile(c->key_group_regex, why, sizeof(why))))
		return kvd_parse_err(p, "--key.group-regex: %s", why);
	if ((c->metrics_exclude || c->tenant_summary) &&
	    !(c->families = mkv_family_filter_new(c->metrics_exclude, c->tenant_summary, why, sizeof(why))))
		return kvd_parse_err(p, "--metrics.exclude: %s", why);
	if (c->web_read_timeout < c->web_read_header_timeout)
		return kvd_parse_err(p, "--web.read-timeout (the whole request) must not be shorter than "
					"--web.read-header-timeout (its headers)");
	if (c->poll_timeout > c->poll_interval) {
		if (p->timeout_given)
			return kvd_parse_err(p, "--master.timeout must not exceed --master.poll-interval");
		c->poll_timeout = c->poll_interval; /* the default yields to a short interval */
	}
	return MKV_OK;
}

int kvd_config_parse(kvd_config *c, int argc, char **argv, FILE *out, char *err, size_t errlen)
{
	struct parse p = {.c = c, .err = err, .errlen = errlen};
	int rc = MKV_EINVAL;
	if (set_defaults(&p) != MKV_OK)
		goto done;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			print_usage(out);
			rc = KVD_CONFIG_EXIT;
			goto done;
		}
		if (!strcmp(arg, "--version")) {
			fprintf(out, "mooncake-kv-exporter %s (revision %s)\n", KVD_VERSION, KVD_REVISION);
			fprintf(out, "gzip: %s\n", kvd_deflater_built(KVD_DEFLATE_ISAL) ? "ISA-L" : "zlib");
			rc = KVD_CONFIG_EXIT;
			goto done;
		}
		if (strncmp(arg, "--", 2) != 0) {
			kvd_parse_err(&p, "unexpected argument \"%s\" (see --help)", arg);
			goto done;
		}
		char name[64];
		const char *eq = strchr(arg, '=');
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		const struct flag *f = find_flag(name);
		if (!f) {
			const struct flag *near = nearest_flag(name);
			if (near)
				kvd_parse_err(&p, "unknown flag %s: did you mean %s? (see --help)", name, near->name);
			else
				kvd_parse_err(&p, "unknown flag %s (see --help)", name);
			goto done;
		}
		const char *val = eq ? eq + 1 : NULL;
		if (!val && f->set == set_switch) /* --flag, or --flag true|false */
			val = i + 1 < argc && (!strcmp(argv[i + 1], "true") || !strcmp(argv[i + 1], "false"))
				      ? argv[++i]
				      : "true";
		if (!val && i + 1 >= argc) {
			kvd_parse_err(&p, "flag %s needs a value", name);
			goto done;
		}
		if (f->set(&p, f, val ? val : argv[++i]) != MKV_OK)
			goto done;
	}
	if (finish(&p) == MKV_OK)
		rc = KVD_CONFIG_RUN;
done:
	free(p.zmq_endpoint);
	free(p.master_url);
	return rc;
}

enum mkv_dialect kvd_config_dialect(const kvd_config *c, const kvd_source_cfg *s)
{
	int mode = s->dialect != KVD_DIALECT_MODE_INHERIT ? (int)s->dialect : c->stream_dialect;
	return mode == KVD_DIALECT_MODE_MEDIA    ? MKV_DIALECT_MEDIA
	       : mode == KVD_DIALECT_MODE_OBJECT ? MKV_DIALECT_OBJECT
						 : MKV_DIALECT_AUTO;
}

const mkv_keygroup_re *kvd_config_keygroups(const kvd_config *c, const kvd_source_cfg *s)
{
	return s->key_groups ? s->key_groups : c->key_groups;
}

void kvd_config_free(kvd_config *c)
{
	for (size_t i = 0; i < c->n_sources; i++)
		kvd_source_cfg_free(&c->sources[i]);
	free(c->sources);
	free(c->listen_address);
	free(c->telemetry_path);
	free(c->web_config_file);
	free(c->run_as_user);
	free(c->web_penalty_exempt);
	free(c->key_group_regex);
	mkv_keygroup_free(c->key_groups);
	free(c->metrics_exclude);
	mkv_family_filter_free(c->families);
	for (size_t i = 0; i < c->n_state_peers; i++)
		free(c->state_peers[i]);
	free(c->state_peers);
	memset(c, 0, sizeof(*c));
}
