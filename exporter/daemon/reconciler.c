/* SPDX-License-Identifier: Apache-2.0 */
/* The reconciler: one thread per source with reconciliation on.  The core
 * plans and carries out each attempt (mooncake_kv/reconcile.h: when and
 * why, which tenant and where its keys are listed, what the answer says of
 * the master, splitting the listing, the batch queries' answers, the replay
 * and the cut-over); docs/design.md ("Reconciliation") the rest.  This file
 * moves the bytes with libcurl (the listing streamed, never held whole,
 * with its status and X-Mooncake-Tenant-Id handed over first; the batch
 * queries the run asks for) and holds the source's lock when the run asks
 * for it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <curl/curl.h>

#include <mooncake_kv/reconcile.h>

#include "kv_clock.h"
#include "kv_fetch.h"
#include "kv_log.h"
#include "kv_reconciler.h"
#include "kv_source.h"

#define QUERY_BODY_BYTES (64u << 20)

struct shell {
	kvd_source *s;
	const kvd_config *c;
	kvd_fetch query; /* batch queries */
	CURL *list;      /* the listing, driven by multi so that it can pause */
	CURLM *multi;
	mkv_recon_run *run;
	char why_buf[128];
	/* the listing's answer: the tenant its header names, and whether the run has judged it */
	char tenant_hdr[MKV_RECON_TENANT_MAX + 1];
	bool has_tenant_hdr;
	bool answered, taken;
};

static void io_lock(void *ctx)
{
	pthread_mutex_lock(&((struct shell *)ctx)->s->lock);
}

static void io_unlock(void *ctx)
{
	pthread_mutex_unlock(&((struct shell *)ctx)->s->lock);
}

static mkv_answer io_get(void *ctx, const char *url)
{
	struct shell *sh = ctx;
	mkv_answer a = {0};
	a.err = kvd_fetch_get(&sh->query, url, &a.http);
	a.body = mkv_buf_str(&sh->query.body);
	a.len = sh->query.body.len;
	return a;
}

static double io_now(void *ctx)
{
	(void)ctx;
	return kvd_now();
}

#define TENANT_HEADER "x-mooncake-tenant-id:"

/* Header lines as they arrive: keeps the tenant the answer names (a new
 * status line, after a 1xx, starts over). */
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct shell *sh = arg;
	size_t len = size * n, h = sizeof(TENANT_HEADER) - 1;
	if (len >= 5 && !strncmp(p, "HTTP/", 5))
		sh->has_tenant_hdr = false;
	if (len < h || strncasecmp(p, TENANT_HEADER, h))
		return len;
	const char *v = p + h, *end = p + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	size_t vl = (size_t)(end - v);
	sh->has_tenant_hdr = vl < sizeof(sh->tenant_hdr) && !memchr(v, '\0', vl);
	if (sh->has_tenant_hdr) {
		memcpy(sh->tenant_hdr, v, vl);
		sh->tenant_hdr[vl] = '\0';
	}
	return len;
}

/* The run judges the answer once: its status and the tenant it names. */
static bool answer(struct shell *sh)
{
	if (!sh->answered) {
		long http = 0;
		curl_easy_getinfo(sh->list, CURLINFO_RESPONSE_CODE, &http);
		sh->answered = true;
		sh->taken = mkv_recon_listing_answer(sh->run, http, sh->has_tenant_hdr ? sh->tenant_hdr : NULL);
	}
	return sh->taken;
}

static size_t on_listing(char *p, size_t size, size_t n, void *arg)
{
	struct shell *sh = arg;
	if (!answer(sh))
		return 0; /* not the tenant's listing: stop the transfer */
	if (mkv_recon_listing_full(sh->run))
		return CURL_WRITEFUNC_PAUSE; /* libcurl keeps these bytes and hands them again */
	return mkv_recon_listing_feed(sh->run, p, size * n) == MKV_OK ? size * n : 0;
}

/* The status poll's timeout is for a small answer: a listing and its
 * queries get at least 10 s to connect (and the listing 30 s of stall). */
static double http_timeout(const kvd_config *c)
{
	return fmax(c->poll_timeout, 10);
}

/* Streams the listing of base through the run.  Returns how it ended, with
 * the shell's reason for a failed transfer in *why. */
static enum mkv_recon_listing list_keys(struct shell *sh, const char **why)
{
	sh->answered = sh->taken = sh->has_tenant_hdr = false;
	kvd_fetch_setopts(sh->list, http_timeout(sh->c));
	curl_easy_setopt(sh->list, CURLOPT_URL, mkv_recon_listing_url(sh->run));
	curl_easy_setopt(sh->list, CURLOPT_WRITEFUNCTION, on_listing);
	curl_easy_setopt(sh->list, CURLOPT_WRITEDATA, sh);
	curl_easy_setopt(sh->list, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(sh->list, CURLOPT_HEADERDATA, sh);
	/* a large listing takes long: give up only when it stalls */
	curl_easy_setopt(sh->list, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(sh->list, CURLOPT_LOW_SPEED_TIME, (long)fmax(ceil(sh->c->poll_timeout * 5), 30));
	curl_multi_add_handle(sh->multi, sh->list);
	int running = 1;
	bool ok = true;
	while (ok && running && !atomic_load(sh->s->stop)) {
		curl_multi_perform(sh->multi, &running);
		ok = mkv_recon_listing_drain(sh->run, false);
		if (!mkv_recon_listing_full(sh->run))
			curl_easy_pause(sh->list, CURLPAUSE_CONT);
		if (running)
			curl_multi_poll(sh->multi, NULL, 0, 100, NULL);
	}
	CURLcode rc = CURLE_OK;
	int left;
	for (CURLMsg *m; (m = curl_multi_info_read(sh->multi, &left));)
		if (m->msg == CURLMSG_DONE)
			rc = m->data.result;
	long http = 0;
	curl_easy_getinfo(sh->list, CURLINFO_RESPONSE_CODE, &http);
	curl_multi_remove_handle(sh->multi, sh->list);
	*why = NULL;
	if (!ok)
		return MKV_LISTING_FAILED;
	if (atomic_load(sh->s->stop)) {
		*why = "stopping";
		return MKV_LISTING_FAILED;
	}
	if (http && !answer(sh)) /* an answer with no body, or one the run refused: it knows why */
		return MKV_LISTING_FAILED;
	if (rc != CURLE_OK) {
		snprintf(sh->why_buf, sizeof(sh->why_buf), "listing: %s (HTTP %ld)", curl_easy_strerror(rc), http);
		*why = sh->why_buf;
		return MKV_LISTING_FAILED;
	}
	return mkv_recon_listing_drain(sh->run, true) ? MKV_LISTING_DONE : MKV_LISTING_FAILED;
}

static void log_result(const kvd_source *s, enum mkv_recon_result res, const char *cause, const mkv_recon_summary *r)
{
	if (r->default_only) {
		kvd_log(KVD_LOG_INFO,
			"the master lists tenant default only: other tenants are not reconciled (asked again after "
			"its restart, or in an hour)",
			"source", s->cfg->name, "tenant", r->tenant, NULL);
		return;
	}
	char keys[24], added[24], removed[24], medium[24], incomplete[24], dur[24];
	snprintf(keys, sizeof(keys), "%llu", (unsigned long long)r->keys);
	snprintf(added, sizeof(added), "%llu", (unsigned long long)r->added);
	snprintf(removed, sizeof(removed), "%llu", (unsigned long long)r->removed);
	snprintf(medium, sizeof(medium), "%llu", (unsigned long long)r->medium);
	snprintf(incomplete, sizeof(incomplete), "%llu", (unsigned long long)r->incomplete);
	snprintf(dur, sizeof(dur), "%.3f", r->seconds);
	if (res == MKV_RECON_OK)
		kvd_log(KVD_LOG_INFO, "reconciled a tenant with the master", "source", s->cfg->name, "tenant",
			r->tenant, "cause", cause, "keys", keys, "added", added, "removed", removed, "medium", medium,
			"incomplete", incomplete, "seconds", dur, NULL);
	else
		kvd_log(KVD_LOG_WARN, "reconciliation did not complete", "source", s->cfg->name, "tenant", r->tenant,
			"cause", cause, "result", mkv_recon_result_name(res), "reason", r->why ? r->why : "", "keys",
			keys, NULL);
}

void *kvd_reconciler_main(void *arg)
{
	kvd_source *s = arg;
	const kvd_config *c = s->config;
	struct shell sh = {.s = s, .c = c};
	mkv_recon_io io = {.ctx = &sh, .lock = io_lock, .unlock = io_unlock, .get = io_get, .now = io_now};
	uint64_t max_keys = c->reconcile_max_keys;
	if (!(sh.run = mkv_recon_run_new(s->store, &io, max_keys, c->reconcile_max_replay))) {
		kvd_log(KVD_LOG_ERROR, "reconciler: out of memory", "source", s->cfg->name, NULL);
		goto out;
	}
	sh.list = curl_easy_init();
	sh.multi = curl_multi_init();
	if (kvd_fetch_init(&sh.query, http_timeout(c), QUERY_BODY_BYTES) != MKV_OK || !sh.list || !sh.multi) {
		kvd_log(KVD_LOG_ERROR, "reconciler: cannot set up libcurl", "source", s->cfg->name, NULL);
		goto out;
	}
	double next = kvd_now();
	kvd_ratelimit rl = KVD_RATELIMIT(600.0, 1);
	while (!atomic_load(s->stop)) {
		kvd_source_wait(s, NULL, next - kvd_now()); /* the core plans on the wall clock (its times are shown) */
		if (atomic_load(s->stop))
			break;
		mkv_recon_job job;
		unsigned held;
		pthread_mutex_lock(&s->lock);
		enum mkv_recon_next what = mkv_store_recon_next(s->store, kvd_now(), &job);
		const char *base = job.leader >= 0 ? s->members[job.leader].cfg->status : NULL;
		pthread_mutex_unlock(&s->lock);
		if (what == MKV_RECON_WAIT && kvd_ratelimit_allow(&rl, kvd_now(), &held))
			kvd_log(KVD_LOG_INFO, "reconciler waits", "source", s->cfg->name, "reason", job.why, NULL);
		if (what != MKV_RECON_GO || !base) { /* nothing to ask a standby, and no failure either */
			next = kvd_now() + 1;        /* look again in a second */
			continue;
		}
		enum mkv_recon_listing listing = MKV_LISTING_FAILED;
		const char *why = NULL;
		if (mkv_recon_begin(sh.run, &job, base) == MKV_OK)
			listing = list_keys(&sh, &why);
		enum mkv_recon_result res = mkv_recon_end(sh.run, listing, why, &next);
		mkv_recon_summary sum;
		mkv_recon_summary_of(sh.run, &sum);
		if (res != MKV_RECON_NOT_COUNTED || sum.default_only) /* a standby: nothing to tell */
			log_result(s, res, job.cause, &sum);
	}
out:
	mkv_recon_run_free(sh.run);
	kvd_fetch_free(&sh.query);
	if (sh.list)
		curl_easy_cleanup(sh.list);
	if (sh.multi)
		curl_multi_cleanup(sh.multi);
	return NULL;
}
