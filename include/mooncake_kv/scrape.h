/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake_kv/scrape.h: what a scrape serves.
 *
 * A scrape copies each store's figures (mkv_scrape_store, under that
 * store's lock, nothing else), then renders them after every lock is
 * released, as the scraper asked (mkv_scrape_render_as: the text format
 * 0.0.4 or OpenMetrics 1.0, without the families an operator turned off,
 * each decided per family as it is written).  All pure. */
#ifndef MOONCAKE_KV_SCRAPE_H
#define MOONCAKE_KV_SCRAPE_H

#include <stdbool.h>
#include <stddef.h>

#include <mooncake_kv/buf.h>
#include <mooncake_kv/store.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MKV_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The process_* families of the official client libraries (the shell reads
 * /proc). */
typedef struct mkv_process_snap {
	bool ok; /* false where /proc could not be read */
	double cpu_seconds;
	double start_time;
	double resident_bytes;
	double virtual_bytes;
	double open_fds;
	double max_fds;
} mkv_process_snap;

/* An HTTP server's front door, as the embedding program counts it: the
 * connections it refused or cut off, and the logins it refused, each by
 * reason; a field's name is its `reason` label value. */
typedef struct mkv_http_rejects {
	uint64_t limit;           /* over the limit of connections open at once */
	uint64_t address_limit;   /* over that limit for one client address */
	uint64_t header_timeout;  /* the headers did not arrive in time */
	uint64_t request_timeout; /* the whole request did not arrive in time */
	uint64_t malformed;       /* refused with 400 or 501 */
} mkv_http_rejects;

typedef struct mkv_login_failures {
	uint64_t missing;        /* no credentials */
	uint64_t malformed;      /* not basic auth, bad base64, a NUL, invalid UTF-8, no colon */
	uint64_t unknown_user;   /* no such user */
	uint64_t wrong_password; /* a user's wrong password */
	uint64_t throttled;      /* refused unchecked: the client failed too often, or too many checks run */
} mkv_login_failures;

typedef struct mkv_http_snap {
	bool ok; /* false: no server (a benchmark's snapshot) */
	uint64_t connections;
	mkv_http_rejects rejected;
	mkv_login_failures login_failures;
	uint64_t password_checks; /* bcrypt runs: what the credential cache did not spare */
} mkv_http_snap;

/* The exporter's own figures for one scrape. */
typedef struct mkv_exporter_info {
	const char *version;
	const char *revision;
	const mkv_budget *budget;   /* the limits, and what they hold now */
	uint64_t scrapes;           /* before this one */
	double last_scrape_seconds; /* snapshot + render + compress of the previous scrape */
	uint64_t last_scrape_bytes;
	int64_t now_ms; /* the scrape's wall clock (unix ms; 0: the publishers' newest times are now) */
	mkv_process_snap process;
	mkv_http_snap http;
} mkv_exporter_info;

/* The live facts of a member that only the shell knows (whether it is
 * connected is the store's: mkv_store_is_connected). */
typedef struct mkv_member_live {
	uint64_t backlog; /* messages drained since the socket was last found empty */
} mkv_member_live;

typedef struct mkv_scrape mkv_scrape;

/* Room for n_sources stores.  NULL when out of memory. */
MKV_EXTERN mkv_scrape *mkv_scrape_new(size_t n_sources);
MKV_EXTERN void mkv_scrape_free(mkv_scrape *sc);
/* Copies store s into slot i (call under the store's lock; live: one per
 * member, or NULL: no backlog).  Returns MKV_OK or MKV_ENOMEM. */
MKV_EXTERN enum mkv_err mkv_scrape_store(mkv_scrape *sc, size_t i, const mkv_store *s, const mkv_member_live *live);
/* How long the shell held the store's lock for mkv_scrape_store, in seconds
 * (call under that lock): ingestion waited that long.  The next scrape
 * shows it (mooncake_kv_scrape_lock_hold_seconds). */
MKV_EXTERN void mkv_scrape_store_held(mkv_store *s, double seconds);
/* Appends the exposition of every slot to out: the text format, every
 * family (mkv_scrape_render_as, below, as a scraper asks).  Returns MKV_OK or
 * MKV_ENOMEM. */
MKV_EXTERN enum mkv_err mkv_scrape_render(const mkv_scrape *sc, const mkv_exporter_info *x, mkv_buf *out);

/* The status page (GET /status): the same copies as a scrape's, as one
 * HTML5 page for a person: each source and member (connection, dialect,
 * leader, sequence, loss by cause, reconciliation, handover), then the
 * tenants, stale first and then by objects, with the metrics' words and
 * numbers (each number cell names its family and labels in data-
 * attributes).  Self-contained: inline CSS, no script, no external asset;
 * every text from the wire escaped.  Bounded: one pass over the tenants
 * keeps the `limit` first of those the filter matches (a heap, not a sort
 * of all), and the page says how many it left out. */
#define MKV_CONTENT_TYPE_HTML    "text/html; charset=utf-8"
#define MKV_STATUS_LIMIT_DEFAULT 100
#define MKV_STATUS_LIMIT_MAX     2000
#define MKV_STATUS_FILTER_MAX    256 /* bytes of the filter used; the rest is ignored */

typedef struct mkv_status_opts {
	/* NULL or "": every tenant; else those whose source, backend_id or
	 * tenant_id holds it (ASCII letters in either case) */
	const char *filter;
	size_t limit;             /* tenants shown at most: mkv_status_limit_parse() */
	const char *metrics_path; /* where the page links /metrics; NULL: "/metrics" */
} mkv_status_opts;

/* The limit a query's `limit=` asks for, read strictly: NULL (not asked):
 * MKV_STATUS_LIMIT_DEFAULT; a whole number from 0 (the sources alone) to
 * MKV_STATUS_LIMIT_MAX: that.  Returns MKV_OK, or MKV_EINVAL for anything else
 * (empty, a sign, a letter, over the most) with *why the one line that says
 * why (static text, no newline) for the refusal; *limit is then the
 * default. */
MKV_EXTERN enum mkv_err mkv_status_limit_parse(const char *text, size_t *limit, const char **why);
/* The same, read leniently (what /status did before it refused a bad
 * limit): NULL, empty or not a decimal number: MKV_STATUS_LIMIT_DEFAULT;
 * above MKV_STATUS_LIMIT_MAX: that. */
MKV_EXTERN size_t mkv_status_limit(const char *text);

/* Appends the page to out.  x->now_ms dates it (0: no ages shown).
 * Returns MKV_OK or MKV_ENOMEM. */
MKV_EXTERN enum mkv_err mkv_scrape_status_html(const mkv_scrape *sc, const mkv_exporter_info *x,
					       const mkv_status_opts *o, mkv_buf *out);

#define MKV_CONTENT_TYPE_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"
/* The protobuf exposition: length-delimited io.prometheus.client.MetricFamily
 * messages, histograms with native buckets and the classic ones alongside. */
#define MKV_CONTENT_TYPE_PROTOBUF \
	"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

/* Which families a scrape leaves out: those whose whole name (as the text
 * format gives it) a PCRE2 regex matches (`exclude`), and with
 * `tenant_summary` the detail of tenants and key groups (per tenant only
 * objects, the medium mix and staleness; per key group only objects).
 * Each family's fate is decided when it is built; immutable then: scrapes
 * share it. */
typedef struct mkv_family_filter mkv_family_filter;

/* NULL with a reason in err when the regex does not compile or memory
 * runs out. */
MKV_EXTERN mkv_family_filter *mkv_family_filter_new(const char *exclude, bool tenant_summary, char *err, size_t errlen);
MKV_EXTERN void mkv_family_filter_free(mkv_family_filter *f);
/* Whether f leaves out the family of that name (as the text format gives
 * it); f NULL leaves out none. */
MKV_EXTERN bool mkv_family_filter_drops(const char *name, size_t len, const mkv_family_filter *f);

/* How a scrape is served. */
typedef struct mkv_expo_opts {
	bool openmetrics;
	/* unix seconds the exporter started: the _created of every counter that
	 * started with it (not a tenant's, which starts when the tenant is
	 * first seen); 0 for none */
	double created;
	const mkv_family_filter *families; /* NULL: every family */
	/* --metrics.all-series: every series as before it served only news (a
	 * tenant's counters of rare events at 0, and the families others
	 * determine); false: each such series from its first event */
	bool all_series;
	/* the protobuf exposition (MKV_CONTENT_TYPE_PROTOBUF), whatever
	 * openmetrics says */
	bool protobuf;
} mkv_expo_opts;

/* mkv_scrape_render as o asks (NULL: as mkv_scrape_render).  Returns MKV_OK or
 * MKV_ENOMEM. */
MKV_EXTERN enum mkv_err mkv_scrape_render_as(const mkv_scrape *sc, const mkv_exporter_info *x, const mkv_expo_opts *o,
					     mkv_buf *out);

/* Accept asks for OpenMetrics (any version, a q above 0): Prometheus 2.x
 * and 3.x do by default.  NULL: no. */
MKV_EXTERN bool mkv_expo_wants_openmetrics(const char *accept);
/* Accept prefers the protobuf exposition (its media type with
 * proto=io.prometheus.client.MetricFamily and encoding=delimited): its q
 * above 0 and above every other media type's there that a scrape serves
 * (the text formats, text/x, x/x), the first listed of equal ones.
 * Prometheus asks so when its native histograms are on.  NULL: no. */
MKV_EXTERN bool mkv_expo_wants_protobuf(const char *accept);

#ifdef __cplusplus
}
#endif

#endif
