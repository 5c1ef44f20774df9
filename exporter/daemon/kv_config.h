/* SPDX-License-Identifier: Apache-2.0 */
/* Command-line configuration, parsed once and frozen before threads start. */
#ifndef KV_CONFIG_H
#define KV_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <mooncake_kv/scrape.h>
#include <mooncake_kv/keygroups.h>

#include "kv_cidr.h"
#include "kv_log.h"

/* The longest admin URL taken (refused at flag time beyond): the poller
 * adds its endpoints' paths, none longer than KVD_URL_PATH_MAX, to it. */
#define KVD_URL_MAX      1024
#define KVD_URL_PATH_MAX 64

/* One master of a source: its publisher and its admin API. */
typedef struct kvd_member_cfg {
	char *zmq;    /* ZMQ endpoint of the master's PUB socket */
	char *status; /* master admin base URL (no trailing slash), or NULL */
	char *label;  /* the `member` label: the admin URL's host:port, or NULL without one */
} kvd_member_cfg;

/* --stream.dialect and dialect=: the order of their words in --help; a
 * source's dialect= not given inherits --stream.dialect. */
enum kvd_dialect_mode {
	KVD_DIALECT_MODE_INHERIT = -1,
	KVD_DIALECT_MODE_AUTO,
	KVD_DIALECT_MODE_MEDIA,
	KVD_DIALECT_MODE_OBJECT
};

typedef struct kvd_source_cfg {
	bool reconcile; /* rebuild tenant default from the master's listing */
	char *backend;  /* backend_id to reconcile, or NULL: the one the stream carries */
	char *name;
	/* zmq=/status= give one member; master= (repeatable) several, and
	 * per-member families then carry a `member` label */
	kvd_member_cfg *members;
	size_t n_members;
	bool ha;                       /* given with master= */
	bool polled;                   /* every member has an admin URL */
	mkv_keygroup_re *key_groups;   /* group_regex= compiled, or NULL: --key.group-regex */
	enum kvd_dialect_mode dialect; /* dialect=, or KVD_DIALECT_MODE_INHERIT: --stream.dialect */
} kvd_source_cfg;

typedef struct kvd_config {
	kvd_source_cfg *sources;
	size_t n_sources;
	char *listen_address; /* "[host]:port" */
	char *telemetry_path;
	char *web_config_file; /* NULL: plain HTTP, no auth */
	char *run_as_user;     /* NULL: keep the starting user */
	double poll_interval;  /* seconds */
	double poll_timeout;
	bool reconcile;              /* --master.reconcile, for the --zmq.endpoint source */
	double reconcile_interval;   /* seconds between reconciliations at the most */
	size_t reconcile_max_keys;   /* 0: --limits.max-objects */
	size_t reconcile_max_replay; /* events recorded during one reconciliation */
	char *metrics_exclude;       /* --metrics.exclude, or NULL */
	bool tenant_summary;         /* --metrics.tenant-summary */
	bool all_series;             /* --metrics.all-series: the zeros of rare events, and the determined families */
	bool residency;              /* --residency.enabled: object lifetimes (a birth per object) */
	mkv_family_filter *families; /* built from those two at parse time, or NULL: every family */
	int stream_dialect;          /* --stream.dialect, a KVD_DIALECT_MODE_* */
	char *key_group_regex;       /* --key.group-regex, or NULL */
	mkv_keygroup_re *key_groups; /* compiled from it at parse time, or NULL */
	size_t max_key_groups;
	size_t max_status_bytes;
	size_t max_tenants;
	size_t max_objects;
	double tenant_idle_timeout; /* seconds; 0: never */
	int zmq_rcvhwm;
	long long zmq_max_message_size;
	unsigned web_max_connections;
	unsigned web_max_per_address;   /* 0: no limit of its own */
	double web_read_header_timeout; /* seconds: accept (or a kept-alive connection's next line) to headers */
	double web_read_timeout;        /* seconds: the whole request */
	double web_idle_timeout;        /* seconds: a kept-alive wait, or an answer's stalled reader */
	kvd_cidr *web_penalty_exempt;   /* --web.login-penalty-exempt: never penalized for failed logins */
	size_t n_web_penalty_exempt;
	bool state_serve;   /* --state.serve: GET /state hands this exporter's state to the next one */
	char **state_peers; /* --state.peer, in order: take the state from the first that gives it */
	size_t n_state_peers;
	double state_peer_timeout; /* seconds for one peer, connection to last byte */
	size_t state_peer_max_bytes;
	enum kvd_log_level log_level;
	enum kvd_log_format log_format;
} kvd_config;

enum kvd_config_result { KVD_CONFIG_RUN = 0, KVD_CONFIG_EXIT = 1 };

/* Parses argv into c.  Returns KVD_CONFIG_RUN, KVD_CONFIG_EXIT after printing
 * --help or --version to out, or MKV_EINVAL with a one-line reason in
 * err[0..errlen). */
int kvd_config_parse(kvd_config *c, int argc, char **argv, FILE *out, char *err, size_t errlen);
void kvd_config_free(kvd_config *c);
/* The key-group regex of a source: its own group_regex=, else
 * --key.group-regex, else NULL. */
const mkv_keygroup_re *kvd_config_keygroups(const kvd_config *c, const kvd_source_cfg *s);

/* The dialect of a source's publishers: its own dialect=, else
 * --stream.dialect. */
enum mkv_dialect kvd_config_dialect(const kvd_config *c, const kvd_source_cfg *s);

/* Go-style durations: "5s", "250ms", "1m30s", "1.5s". Returns 0 or MKV_EINVAL. */
int kvd_parse_duration(const char *s, double *seconds);

#endif
