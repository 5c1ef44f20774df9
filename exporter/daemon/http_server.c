/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include <mooncake_kv/scrape.h>

#include "kv_clock.h"
#include "kv_config.h"
#include "kv_scrape_body.h"
#include "kv_http_auth.h"
#include "kv_http_guard.h"
#include "kv_http_listen.h"
#include "kv_http_server.h"
#include "kv_http_strict.h"
#include "runbook_html.h"
#include "kv_log.h"
#include "kv_process.h"
#include "kv_source.h"
#include "kv_state_serve.h"
#include "kv_webconfig.h"
#include "version.h"

#define THREADS 4

struct kvd_http {
	const kvd_exporter *x;
	struct MHD_Daemon *daemon;
	kvd_http_guard *guard;
	kvd_http_auth *auth; /* NULL without users */
	unsigned port;
	atomic_ullong scrapes;
	_Atomic double last_seconds;
	atomic_ullong last_bytes;
};

static const char landing[] = "<!DOCTYPE html><html><head><title>Mooncake KV exporter</title></head><body>"
			      "<h1>Mooncake KV exporter</h1><p>Version " KVD_VERSION " (" KVD_REVISION ")</p>"
			      "<ul><li><a href=\"/status\">status</a>: sources, masters and tenants at a glance</li>"
			      "<li><a href=\"%s\">%s</a></li><li><a href=\"/-/healthy\">/-/healthy</a></li>"
			      "<li><a href=\"/-/ready\">/-/ready</a></li><li><a href=\"/runbook\">runbook</a></li></ul>"
			      "</body></html>\n";

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, char *body, size_t len,
			     bool gzip)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (gzip)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding");
	enum MHD_Result rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	char *body = strdup(text);
	return body ? reply(c, status, "text/plain; charset=utf-8", body, strlen(text), false) : MHD_NO;
}

/* Accept-Encoding lists gzip with a non-zero q. */
static bool accepts_gzip(struct MHD_Connection *c)
{
	const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	for (const char *p = ae; p && (p = strstr(p, "gzip")); p += 4) {
		bool start = p == ae || p[-1] == ' ' || p[-1] == ',';
		const char *q = p + 4;
		while (*q == ' ')
			q++;
		if (!start || (*q != '\0' && *q != ',' && *q != ';'))
			continue;
		const char *qv = strstr(q, "q=");
		const char *next = strchr(q, ',');
		return !(qv && (!next || qv < next) && strtod(qv + 2, NULL) == 0.0);
	}
	return false;
}

/* Every source copied under its own lock in turn, and the exporter's
 * figures of the moment: what /metrics and /status render.  Returns 0 or
 * MKV_ENOMEM (*sc may then be NULL; mkv_scrape_free it all the same). */
static int snapshot(kvd_http *h, mkv_scrape **sc, mkv_exporter_info *info)
{
	const kvd_exporter *x = h->x;
	*sc = mkv_scrape_new(x->n_sources);
	*info = (mkv_exporter_info){
		.version = KVD_VERSION,
		.revision = KVD_REVISION,
		.budget = x->budget,
		.scrapes = atomic_load(&h->scrapes),
		.last_scrape_seconds = atomic_load(&h->last_seconds),
		.last_scrape_bytes = atomic_load(&h->last_bytes),
		.now_ms = (int64_t)(kvd_now() * 1000),
	};
	int rc = *sc ? MKV_OK : MKV_ENOMEM;
	for (size_t i = 0; rc == MKV_OK && i < x->n_sources; i++)
		rc = kvd_source_scrape(&x->sources[i], *sc, i);
	return rc;
}

static enum MHD_Result scrape(kvd_http *h, struct MHD_Connection *c)
{
	const kvd_exporter *x = h->x;
	double t0 = kvd_mono();
	mkv_buf out;
	mkv_buf_init(&out);
	/* about the size of the last one, in one allocation: a scrape of 10,000
	 * tenants is 41 MB, and growing to it by doubling copies it over again */
	unsigned long long last = atomic_load(&h->last_bytes);
	kvd_scrape_room(&out, (size_t)(last + last / 8));
	/* the families asked for, in the format asked for: the renderer writes
	 * them so */
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	mkv_expo_opts eo = {.openmetrics = mkv_expo_wants_openmetrics(accept),
			    .created = x->start_time,
			    .families = x->config->families,
			    .all_series = x->config->all_series,
			    .protobuf = mkv_expo_wants_protobuf(accept)};
	mkv_scrape *sc;
	mkv_exporter_info info;
	int rc = snapshot(h, &sc, &info);
	kvd_process_collect(&info.process, x->start_time);
	kvd_http_guard_snap(h->guard, &info.http);
	if (h->auth)
		kvd_http_auth_snap(h->auth, &info.http);
	if (rc == MKV_OK)
		rc = mkv_scrape_render_as(sc, &info, &eo, &out);
	mkv_scrape_free(sc);
	if (rc != MKV_OK) {
		mkv_buf_free(&out);
		kvd_log(KVD_LOG_ERROR, "out of memory rendering metrics", NULL);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}

	size_t len = 0, plain_len = out.len;
	char *body = NULL;
	if (accepts_gzip(c)) {
		body = kvd_gzip_text(mkv_buf_str(&out), out.len, &len);
		if (body) /* else served plain */
			mkv_buf_free(&out);
	}
	bool gz = body != NULL;
	if (!gz)
		body = mkv_buf_steal(&out, &len);
	atomic_fetch_add(&h->scrapes, 1);
	atomic_store(&h->last_seconds, kvd_mono() - t0);
	atomic_store(&h->last_bytes, plain_len);
	const char *type = eo.protobuf      ? MKV_CONTENT_TYPE_PROTOBUF
			   : eo.openmetrics ? MKV_CONTENT_TYPE_OPENMETRICS
					    : MKV_CONTENT_TYPE;
	return reply(c, MHD_HTTP_OK, type, body, len, gz);
}

static enum MHD_Result refuse(kvd_http *h, struct MHD_Connection *c, unsigned status, const char *why);

/* GET /status: the page of the same snapshot as a scrape's, rendered by
 * the core (mkv_scrape_status_html); ?tenant= filters, ?limit= bounds (a
 * limit that is no whole number in range: 400, counted and logged as
 * every malformed request). */
static enum MHD_Result status_page(kvd_http *h, struct MHD_Connection *c)
{
	mkv_status_opts o = {
		.filter = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "tenant"),
		.metrics_path = h->x->config->telemetry_path,
	};
	const char *why;
	if (mkv_status_limit_parse(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit"), &o.limit, &why) !=
	    MKV_OK)
		return refuse(h, c, MHD_HTTP_BAD_REQUEST, why);
	mkv_scrape *sc;
	mkv_exporter_info info;
	mkv_buf out;
	mkv_buf_init(&out);
	int rc = snapshot(h, &sc, &info);
	if (rc == MKV_OK)
		rc = mkv_scrape_status_html(sc, &info, &o, &out);
	mkv_scrape_free(sc);
	size_t len;
	char *body = rc == MKV_OK ? mkv_buf_steal(&out, &len) : NULL;
	mkv_buf_free(&out);
	if (!body) {
		kvd_log(KVD_LOG_ERROR, "out of memory rendering the status page", NULL);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	return reply(c, MHD_HTTP_OK, MKV_CONTENT_TYPE_HTML, body, len, false);
}

/* TLS client certificate, as client_auth_type asks.  NULL: allowed. */
/* GET /state: the state for the next exporter, streamed from the child
 * that writes it (kv_state_serve.h). */
static enum MHD_Result serve_state(kvd_http *h, struct MHD_Connection *c)
{
	int fd;
	double pause;
	int rc = kvd_state_serve_open(h->x->sources, h->x->n_sources, &fd, &pause);
	if (rc == MKV_ELIMIT)
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "Busy: other copies of the state are being sent\n");
	if (rc != MKV_OK) {
		kvd_log(KVD_LOG_ERROR, "cannot start a copy of the state", NULL);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "Cannot copy the state\n");
	}
	char ms[32];
	snprintf(ms, sizeof(ms), "%.3f", pause * 1000);
	kvd_log(KVD_LOG_INFO, "serving the state to a peer", "ingest_pause_ms", ms, NULL);
	struct MHD_Response *r = MHD_create_response_from_pipe(fd);
	if (!r) {
		close(fd);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/vnd.mooncake-kv.state");
	enum MHD_Result q = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return q;
}

static const char *client_cert_problem(const kvd_webconfig *w, struct MHD_Connection *c)
{
	if (!w->tls || w->client_auth == KVD_CLIENT_NONE)
		return NULL;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_session_t session = ci ? (gnutls_session_t)ci->tls_session : NULL;
	unsigned n = 0;
	if (!session || !gnutls_certificate_get_peers(session, &n) || n == 0)
		return w->client_auth == KVD_CLIENT_REQUIRE_AND_VERIFY ? "a client certificate is required\n" : NULL;
	unsigned status = 0;
	if (gnutls_certificate_verify_peers2(session, &status) != GNUTLS_E_SUCCESS || status != 0)
		return "the client certificate does not verify\n";
	return NULL;
}

/* 401 with the challenge, or 429 for a peer told to wait. */
static enum MHD_Result deny(struct MHD_Connection *c, enum kvd_login why)
{
	/* not const: libmicrohttpd 0.9.75 takes a persistent buffer as void *
	 * (it never writes it) */
	static char unauthorized[] = "Unauthorized\n", wait[] = "Too many failed logins: try again later\n";
	bool throttled = why == KVD_LOGIN_THROTTLED;
	char *body = throttled ? wait : unauthorized;
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	enum MHD_Result rc;
	if (throttled) {
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "10");
		rc = MHD_queue_response(c, MHD_HTTP_TOO_MANY_REQUESTS, r);
	} else {
		rc = MHD_queue_basic_auth_fail_response(c, "mooncake-kv-exporter", r);
	}
	MHD_destroy_response(r);
	return rc;
}

/* A request's progress, in *ctx: one of the three shared ones (set first by
 * the URI callback, so that there is nothing to lose when MHD ends a
 * request early), or, while and after its password is checked on the
 * checker thread, its own (freed when the request ends). */
enum req_kind { REQ_NEW, REQ_BAD_PATH, REQ_GOING, REQ_CHECKING, REQ_CHECKED };

typedef struct req {
	enum req_kind kind;
	enum kvd_login login; /* REQ_CHECKED: the check's answer */
	struct MHD_Connection *c;
} req;

static req req_new = {.kind = REQ_NEW}, req_bad_path = {.kind = REQ_BAD_PATH}, req_going = {.kind = REQ_GOING};

static void *uri_seen(void *cls, const char *uri, struct MHD_Connection *c)
{
	(void)cls;
	kvd_http_guard_line_in(c);
	return kvd_http_path_bad(uri) ? &req_bad_path : &req_new;
}

/* The checker thread's answer: the request, suspended meanwhile, goes on. */
static void checked(void *cls, enum kvd_login result)
{
	req *r = cls;
	r->login = result;
	r->kind = REQ_CHECKED;
	MHD_resume_connection(r->c);
}

/* KVD_LOGIN_GOOD: the credential is good; a failure; or KVD_LOGIN_PENDING:
 * the request is suspended until the checker thread has checked it. */
static enum kvd_login authenticate(kvd_http *h, struct MHD_Connection *c, void **ctx)
{
	req *r = *ctx;
	if (r->kind == REQ_CHECKED)
		return r->login;
	unsigned char addr[16];
	const char *peer = kvd_http_guard_peer(c, addr);
	const char *creds = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	kvd_auth_job *job;
	enum kvd_login why = kvd_http_auth_begin(h->auth, creds, addr, peer, &job);
	if (why != KVD_LOGIN_PENDING)
		return why;
	if (!(r = malloc(sizeof(*r)))) {
		kvd_auth_job_free(job);
		return KVD_LOGIN_THROTTLED;
	}
	*r = (req){.kind = REQ_CHECKING, .c = c};
	*ctx = r;
	/* suspended before it is queued: the checker may answer at once */
	MHD_suspend_connection(c);
	if (!kvd_http_auth_queue(h->auth, job, checked, r)) {
		r->kind = REQ_CHECKED;
		r->login = KVD_LOGIN_THROTTLED;
		MHD_resume_connection(c);
	}
	return KVD_LOGIN_PENDING;
}

static void request_done(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)toe;
	req *r = *ctx;
	if (r && r->kind >= REQ_CHECKING)
		free(r);
	*ctx = NULL;
	kvd_http_guard_answered(c);
}

/* An error answer that closes the connection (its body may not have been
 * read). */
static enum MHD_Result refuse(kvd_http *h, struct MHD_Connection *c, unsigned status, const char *why)
{
	kvd_http_guard_malformed(h->guard, c, why);
	char text[160];
	int n = snprintf(text, sizeof(text), "%s\n", why);
	char *body = strdup(text);
	struct MHD_Response *r = body ? MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_MUST_FREE) : NULL;
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_size, void **ctx)
{
	kvd_http *h = cls;
	(void)upload;
	if (((req *)*ctx)->kind < REQ_GOING) { /* first call: headers only; answer on the next */
		unsigned status;
		const char *why = kvd_http_request_problem(c, version, *ctx == &req_bad_path, &status);
		*ctx = &req_going; /* the handler answers it, whatever it answers */
		if (why)
			return refuse(h, c, status, why);
		kvd_http_guard_headers_in(c);
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0; /* no body is wanted: discard it */
		return MHD_YES;
	}
	kvd_http_guard_request_in(c);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
		if (!r)
			return MHD_NO; /* out of memory: the connection is closed unanswered */
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
		enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, r);
		MHD_destroy_response(r);
		return rc;
	}
	const kvd_webconfig *web = h->x->web;
	if (web) {
		const char *problem = client_cert_problem(web, c);
		if (problem)
			return reply_text(c, MHD_HTTP_FORBIDDEN, problem);
		enum kvd_login why = h->auth ? authenticate(h, c, ctx) : KVD_LOGIN_GOOD;
		if (why == KVD_LOGIN_PENDING)
			return MHD_YES; /* answered when resumed */
		if (why != KVD_LOGIN_GOOD)
			return deny(c, why);
	}
	const kvd_config *cfg = h->x->config;
	if (!strcmp(url, cfg->telemetry_path))
		return scrape(h, c);
	if (!strcmp(url, "/status"))
		return status_page(h, c);
	if (!strcmp(url, "/-/healthy"))
		return reply_text(c, MHD_HTTP_OK, "Healthy\n");
	if (!strcmp(url, "/state") && cfg->state_serve)
		return serve_state(h, c);
	if (!strcmp(url, "/-/ready")) {
		for (size_t i = 0; i < h->x->n_sources; i++)
			if (!kvd_source_ready(&h->x->sources[i]))
				return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "Not ready\n");
		return reply_text(c, MHD_HTTP_OK, "Ready\n");
	}
	if (!strcmp(url, "/runbook")) { /* where the alerts' runbook_url point */
		char *page = strdup(runbook_html);
		return page ? reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", page, sizeof(runbook_html) - 1, false)
			    : MHD_NO;
	}
	if (!strcmp(url, "/")) {
		mkv_buf b;
		mkv_buf_init(&b);
		mkv_buf_printf(&b, landing, cfg->telemetry_path, cfg->telemetry_path);
		size_t len;
		char *body = mkv_buf_steal(&b, &len);
		return body ? reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", body, len, false) : MHD_NO;
	}
	return reply_text(c, MHD_HTTP_NOT_FOUND, "Not found\n");
}

/* libmicrohttpd's own words.  One kind is a refusal: a request it answered
 * with an error itself, before any callback that names the connection (a
 * version it does not speak, a head over its memory, a Content-Length that
 * is no number); its log line is the only place that says so, once each. */
#define MHD_REFUSAL "Error processing request (HTTP response code is "

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	kvd_http *h = cls;
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	if (!strncmp(msg, MHD_REFUSAL, strlen(MHD_REFUSAL))) {
		char why[48]; /* "505": the status, without the page it sent */
		snprintf(why, sizeof(why), "answered %.3s by libmicrohttpd", msg + strlen(MHD_REFUSAL));
		kvd_http_guard_malformed(h->guard, NULL, why);
	}
	kvd_log(KVD_LOG_DEBUG, "http", "detail", msg, NULL);
}

static struct MHD_Daemon *start(kvd_http *h, unsigned flags, struct sockaddr_storage *ss, const kvd_config *cfg,
				struct MHD_OptionItem *tls)
{
	/* The guard holds the limits.  MHD shares its own limit out between
	 * its threads, so it is set where no thread's share can bind first. */
	unsigned mhd_limit = (cfg->web_max_connections + 1) * THREADS;
	unsigned idle = (unsigned)(cfg->web_idle_timeout + 0.999);
	return MHD_start_daemon(flags, 0, kvd_http_guard_accept, h->guard, handle, h, MHD_OPTION_EXTERNAL_LOGGER,
				mhd_log, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)ss, MHD_OPTION_THREAD_POOL_SIZE,
				(unsigned)THREADS, MHD_OPTION_CONNECTION_LIMIT, mhd_limit,
				MHD_OPTION_CONNECTION_TIMEOUT, idle ? idle : 1, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				(size_t)(64 * 1024), MHD_OPTION_NOTIFY_CONNECTION, kvd_http_guard_notify, h->guard,
				MHD_OPTION_URI_LOG_CALLBACK, uri_seen, h, MHD_OPTION_NOTIFY_COMPLETED, request_done, h,
				MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
}

/* Children of finished /state copies, collected within a watchdog round. */
static void reap_copies(void)
{
	kvd_state_serve_reap(0);
}

kvd_http *kvd_http_start(const kvd_exporter *x)
{
	const kvd_config *cfg = x->config;
	struct sockaddr_storage ss;
	bool any;
	if (kvd_http_resolve(cfg->listen_address, &ss, &any) != MKV_OK) {
		kvd_log(KVD_LOG_ERROR, "cannot resolve --web.listen-address", "address", cfg->listen_address, NULL);
		return NULL;
	}
	kvd_http *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->x = x;
	kvd_guard_limits limits = {.max_connections = cfg->web_max_connections,
				   .max_per_address = cfg->web_max_per_address,
				   .header_timeout = cfg->web_read_header_timeout,
				   .request_timeout = cfg->web_read_timeout,
				   .idle_timeout = cfg->web_idle_timeout};
	h->guard = kvd_http_guard_new(&limits, cfg->state_serve ? reap_copies : NULL);
	if (x->web && x->web->n_users)
		h->auth = kvd_http_auth_new(x->web, cfg->web_penalty_exempt, cfg->n_web_penalty_exempt, kvd_mono);
	if (!h->guard || (x->web && x->web->n_users && !h->auth)) {
		kvd_log(KVD_LOG_ERROR, "cannot start the HTTP server: out of memory", NULL);
		kvd_http_auth_free(h->auth);
		kvd_http_guard_free(h->guard);
		free(h);
		return NULL;
	}
	unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
	if (ss.ss_family == AF_INET6)
		flags |= any ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
	const kvd_webconfig *web = x->web;
	struct MHD_OptionItem tls[5] = {{MHD_OPTION_END, 0, NULL}};
	size_t nt = 0;
	if (web && web->tls) {
		flags |= MHD_USE_TLS;
		if (web->tls_priorities) /* the versions, suites and curves (webconfig.c) */
			tls[nt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, web->tls_priorities};
		tls[nt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, web->key_pem};
		tls[nt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, web->cert_pem};
		if (web->client_ca_pem) /* MHD then asks clients for a certificate */
			tls[nt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, web->client_ca_pem};
		tls[nt] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	}
	h->daemon = start(h, flags, &ss, cfg, tls);
	if (!h->daemon && any) {
		/* no IPv6 on this host: all IPv4 addresses, then */
		kvd_http_ipv4_any(&ss);
		h->daemon = start(h, flags & ~(unsigned)MHD_USE_DUAL_STACK, &ss, cfg, tls);
		if (h->daemon)
			kvd_log(KVD_LOG_INFO, "no IPv6: listening on IPv4 only", "address", cfg->listen_address, NULL);
	}
	if (!h->daemon) {
		/* MHD keeps the OS's reason to itself (in its debug log): ask the OS */
		int e = kvd_http_listen_check(cfg->listen_address);
		char why[160];
		snprintf(why, sizeof(why), "%s",
			 e > 0 ? strerror(e) : "libmicrohttpd gives no reason (--log.level=debug shows its own)");
		why[0] = (char)tolower((unsigned char)why[0]);
		kvd_log(KVD_LOG_ERROR, "cannot listen", "address", cfg->listen_address, "reason", why, NULL);
		kvd_http_auth_free(h->auth);
		kvd_http_guard_free(h->guard);
		free(h);
		return NULL;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : 0;
	return h;
}

unsigned kvd_http_port(const kvd_http *h)
{
	return h->port;
}

void kvd_http_stop(kvd_http *h)
{
	if (!h)
		return;
	kvd_http_auth_stop(h->auth); /* every suspended request resumed, answered 429 */
	MHD_stop_daemon(h->daemon);  /* closes the pipes: a child still writing stops */
	kvd_http_guard_free(h->guard);
	kvd_http_auth_free(h->auth);
	kvd_state_serve_reap(1);
	free(h);
}
