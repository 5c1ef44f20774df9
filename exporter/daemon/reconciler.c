/* SPDX-License-Identifier: Apache-2.0 */
/* The reconciler: one thread per source with reconciliation on.  It
 * rebuilds tenant `default` of the source's backend from the master's
 * GET /get_all_keys (streamed, never held whole) and GET /batch_query_keys
 * while the stream goes on.  The decisions are the core's: when and why
 * (kv_reconcile_plan.h), splitting the listing and reading the answers
 * (kv_master_keys.h), and why replaying the events recorded meanwhile is
 * right (kv_reconcile_replay.h); docs/design.md ("Reconciliation") the
 * rest.  This file moves the bytes with libcurl and holds the locks: none
 * across HTTP, and at the cut-over only for the last few events. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>

#include "kv_clock.h"
#include "kv_fetch.h"
#include "kv_log.h"
#include "kv_master_keys.h"
#include "kv_reconcile_plan.h"
#include "kv_reconciler.h"
#include "kv_source.h"

#define CARRY_BYTES      (64 * 1024) /* listing bytes held before the transfer pauses */
#define QUERY_BODY_BYTES (64u << 20)
#define CUTOVER_EVENTS   4096 /* replayed under the lock at the cut-over, at most */

struct attempt {
	kv_source *s;
	kv_str backend;
	const kv_config *c;
	const char *base; /* the serving master's admin URL */
	kv_fetch query;   /* batch queries */
	CURL *list;       /* the listing, driven by multi so that it can pause */
	CURLM *multi;
	kv_listing listing;
	kv_key_batch batch;
	kv_recon_table fresh;
	kv_keygroup_matcher *matcher; /* with key groups: the listed keys' groups */
	kv_buf gnames;                /* the batch's group names */
	uint32_t gname_at[KV_KEYS_BATCH_MAX], gname_len[KV_KEYS_BATCH_MAX];
	uint64_t unknown; /* keys the batch answers could not tell */
	uint64_t both;
	uint64_t corr[KV_CORR__KINDS];
	bool standby;    /* the master answered 503: a standby, nothing to count */
	const char *why; /* the reason of a failure, for the log */
	char why_buf[128];
};

static size_t on_listing(char *p, size_t size, size_t n, void *arg)
{
	struct attempt *a = arg;
	if (a->listing.carry.len >= CARRY_BYTES)
		return CURL_WRITEFUNC_PAUSE; /* libcurl keeps these bytes and hands them again */
	return kv_listing_feed(&a->listing, p, size * n) == KV_OK ? size * n : 0;
}

/* Asks the master about the batch's keys and puts them into the fresh
 * table; compares them with the stream's view for the corrections.
 * Returns false when the attempt has failed. */
static bool run_query(struct attempt *a)
{
	kv_key_batch *q = &a->batch;
	if (!q->n)
		return true;
	long http;
	unsigned media[KV_KEYS_BATCH_MAX];
	enum kv_poll_error err = kv_fetch_get(&a->query, q->url.data, &http);
	if (err == KV_POLL_OK)
		err = kv_key_batch_parse(q, kv_buf_str(&a->query.body), a->query.body.len, media, &a->unknown);
	if (err != KV_POLL_OK) {
		a->why = kv_poll_error_name(err);
		return false;
	}
	const kv_state *state = a->s->state;
	uint64_t hash[KV_KEYS_BATCH_MAX];
	int64_t birth[KV_KEYS_BATCH_MAX];
	uint32_t group[KV_KEYS_BATCH_MAX];
	kv_buf_reset(&a->gnames);
	for (size_t i = 0; i < q->n; i++) {
		const char *key = kv_key_batch_key(q, i);
		size_t len = strlen(key);
		if (a->matcher) { /* the group's name now, its id under the lock */
			char name[KV_KEYGROUP_MAX_LEN];
			a->gname_at[i] = (uint32_t)a->gnames.len;
			a->gname_len[i] = (uint32_t)kv_keygroup_of(a->matcher, key, len, name);
			kv_buf_add(&a->gnames, name, a->gname_len[i]);
		}
		hash[i] = kv_state_key_hash(state, (kv_str){key, (uint32_t)len});
	}

	if (!kv_buf_ok(&a->gnames)) {
		a->why = "out of memory";
		return false;
	}
	pthread_mutex_lock(&a->s->lock);
	const kv_tenant *t = kv_state_find_tenant(state, a->backend, KV_TENANT_DEFAULT);
	for (size_t i = 0; i < q->n; i++) {
		group[i] = a->matcher ? kv_state_group_id(a->s->state, a->gnames.data + a->gname_at[i], a->gname_len[i])
				      : KV_GROUP_NONE;
		unsigned old = t ? kv_state_media_by_hash(t, hash[i]) : 0;
		/* a life the stream saw begin goes on in the fresh table */
		birth[i] = t ? kv_state_birth_by_hash(t, hash[i]) : KV_NO_BIRTH;
		if (!media[i])
			continue;
		a->both += old != 0;
		a->corr[KV_CORR_ADDED] += old == 0;
		a->corr[KV_CORR_MEDIUM] += old && old != media[i];
	}
	pthread_mutex_unlock(&a->s->lock);
	for (size_t i = 0; i < q->n; i++)
		if (media[i] && kv_recon_put(&a->fresh, hash[i], media[i], group[i], birth[i]) != KV_OK) {
			a->why = "out of memory";
			return false;
		}
	kv_key_batch_reset(q);
	return true;
}

/* One listed key into the batch (asking the master when the batch is full). */
static bool add_key(const char *k, size_t n, void *arg)
{
	struct attempt *a = arg;
	if (kv_key_batch_full(&a->batch, a->base, n) && !run_query(a))
		return false;
	if (kv_key_batch_add(&a->batch, a->base, k, n) != KV_OK) {
		a->why = "out of memory";
		return false;
	}
	return true;
}

/* Splits what the listing has sent into the batch queries. */
static bool drain(struct attempt *a, bool at_end)
{
	if (kv_listing_split(&a->listing, at_end, add_key, a))
		return true;
	if (a->listing.too_long)
		a->why = "the listing is longer than --master.reconcile-max-keys";
	return false;
}

/* The status poll's timeout is for a small answer: a listing and its
 * queries get at least 10 s to connect (and the listing 30 s of stall). */
static double http_timeout(const kv_config *c)
{
	return fmax(c->poll_timeout, 10);
}

/* Streams the listing through the batch queries into a->fresh. */
static bool list_keys(struct attempt *a)
{
	char url[2048];
	snprintf(url, sizeof(url), "%s/get_all_keys", a->base);
	kv_fetch_setopts(a->list, http_timeout(a->c));
	curl_easy_setopt(a->list, CURLOPT_URL, url);
	curl_easy_setopt(a->list, CURLOPT_WRITEFUNCTION, on_listing);
	curl_easy_setopt(a->list, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(a->list, CURLOPT_FAILONERROR, 1L); /* a 503 or 500 body is no listing */
	/* a large listing takes long: give up only when it stalls */
	curl_easy_setopt(a->list, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(a->list, CURLOPT_LOW_SPEED_TIME, (long)fmax(ceil(a->c->poll_timeout * 5), 30));
	curl_multi_add_handle(a->multi, a->list);
	int running = 1;
	bool ok = true;
	while (ok && running && !atomic_load(a->s->stop)) {
		curl_multi_perform(a->multi, &running);
		ok = drain(a, false);
		if (a->listing.carry.len < CARRY_BYTES)
			curl_easy_pause(a->list, CURLPAUSE_CONT);
		if (running)
			curl_multi_poll(a->multi, NULL, 0, 100, NULL);
	}
	CURLcode rc = CURLE_OK;
	int left;
	for (CURLMsg *m; (m = curl_multi_info_read(a->multi, &left));)
		if (m->msg == CURLMSG_DONE)
			rc = m->data.result;
	long http = 0;
	curl_easy_getinfo(a->list, CURLINFO_RESPONSE_CODE, &http);
	curl_multi_remove_handle(a->multi, a->list);
	if (!ok)
		return false;
	if (atomic_load(a->s->stop)) {
		a->why = "stopping";
		return false;
	}
	if (rc == CURLE_HTTP_RETURNED_ERROR && http == 503) {
		a->standby = true;
		return false;
	}
	if (rc != CURLE_OK) {
		snprintf(a->why_buf, sizeof(a->why_buf), "listing: %s (HTTP %ld)", curl_easy_strerror(rc), http);
		a->why = a->why_buf;
		return false;
	}
	return drain(a, true) && run_query(a);
}

/* Keys whose media the master did not tell: the rebuilt tenant is not
 * exact for them (KV_STALE_RECONCILE_INCOMPLETE). */
static uint64_t unsure_keys(const struct attempt *a)
{
	return a->unknown + a->listing.unaskable;
}

/* An attempt that ends early: the stream stops recording for it. */
static void stop_recording(kv_source *s)
{
	pthread_mutex_lock(&s->lock);
	kv_state_record_stop(s->state);
	pthread_mutex_unlock(&s->lock);
}

/* Replays what was recorded (outside the lock while much is left), then
 * swaps the fresh table in under the lock. */
static enum kv_recon_result cut_over(struct attempt *a, kv_recon_log *log, uint64_t breaks0, size_t max)
{
	kv_source *s = a->s;
	size_t taken_total = 0;
	for (;;) {
		pthread_mutex_lock(&s->lock);
		enum kv_recon_result res = KV_RECON__RESULTS;
		if (kv_source_breaks(s) != breaks0) {
			a->why = "the stream lost events meanwhile";
			res = KV_RECON_SUPERSEDED;
		} else if (log->overflow) {
			a->why = "more events than --master.reconcile-max-replay arrived meanwhile";
			res = KV_RECON_ABORTED;
		} else if (log->n <= CUTOVER_EVENTS) {
			kv_objtable old = {0};
			size_t before = kv_state_recorded_objects(s->state);
			res = KV_RECON_ABORTED;
			a->why = "no room under --limits.max-objects";
			kv_state_set_now(s->state, (int64_t)(kv_now() * 1000));
			if (kv_recon_replay(&a->fresh, log->ev, log->n) == KV_OK &&
			    kv_state_adopt(s->state, &a->fresh, unsure_keys(a) ? KV_STALE_RECONCILE_INCOMPLETE : 0,
					   &old) == KV_OK) {
				res = KV_RECON_OK;
				a->corr[KV_CORR_REMOVED] = before > a->both ? before - a->both : 0;
			}
			kv_state_record_stop(s->state);
			pthread_mutex_unlock(&s->lock);
			kv_objtable_clear(&old); /* large: freed outside the lock */
			return res;
		}
		if (res != KV_RECON__RESULTS) {
			kv_state_record_stop(s->state);
			pthread_mutex_unlock(&s->lock);
			return res;
		}
		/* much is left: take it and replay it without the lock */
		kv_recon_log taken = *log;
		taken_total += taken.n;
		kv_recon_log_init(log, max > taken_total ? max - taken_total : 1);
		pthread_mutex_unlock(&s->lock);
		int rc = kv_recon_replay(&a->fresh, taken.ev, taken.n);
		kv_recon_log_free(&taken);
		if (rc != KV_OK) {
			stop_recording(s);
			a->why = "out of memory";
			return KV_RECON_ABORTED;
		}
	}
}

static enum kv_recon_result attempt(struct attempt *a, const char *backend)
{
	kv_source *s = a->s;
	a->backend = (kv_str){backend, (uint32_t)strlen(backend)};
	kv_recon_log log;
	kv_recon_log_init(&log, a->c->reconcile_max_replay);
	pthread_mutex_lock(&s->lock);
	uint64_t breaks = kv_source_breaks(s);
	int rc = kv_state_record_start(s->state, a->backend, KV_TENANT_DEFAULT, &log);
	bool births = kv_state_residency(s->state);
	pthread_mutex_unlock(&s->lock);
	if (rc == KV_OK && kv_objtable_births(&a->fresh.objects, births) != KV_OK) {
		stop_recording(s);
		a->why = "out of memory";
		return KV_RECON_ABORTED;
	}
	if (rc != KV_OK) {
		a->why = "no room for tenant default under --limits.max-tenants";
		return KV_RECON_ABORTED;
	}
	enum kv_recon_result res;
	if (!list_keys(a)) {
		stop_recording(s);
		res = a->standby            ? KV_RECON__RESULTS /* not counted */
		      : a->listing.too_long ? KV_RECON_ABORTED
					    : KV_RECON_FAILED;
	} else {
		res = cut_over(a, &log, breaks, a->c->reconcile_max_replay);
	}
	kv_recon_log_free(&log);
	return res;
}

static void reset_attempt(struct attempt *a)
{
	kv_recon_table_free(&a->fresh);
	kv_listing_reset(&a->listing);
	kv_key_batch_reset(&a->batch);
	a->unknown = a->both = 0;
	a->standby = false;
	memset(a->corr, 0, sizeof(a->corr));
	a->why = NULL;
}

static void log_result(const kv_source *s, const struct attempt *a, enum kv_recon_result res, const char *why,
		       double secs)
{
	char keys[24], added[24], removed[24], medium[24], incomplete[24], dur[24];
	snprintf(keys, sizeof(keys), "%llu", (unsigned long long)a->listing.listed);
	snprintf(added, sizeof(added), "%llu", (unsigned long long)a->corr[KV_CORR_ADDED]);
	snprintf(removed, sizeof(removed), "%llu", (unsigned long long)a->corr[KV_CORR_REMOVED]);
	snprintf(medium, sizeof(medium), "%llu", (unsigned long long)a->corr[KV_CORR_MEDIUM]);
	snprintf(incomplete, sizeof(incomplete), "%llu", (unsigned long long)unsure_keys(a));
	snprintf(dur, sizeof(dur), "%.3f", secs);
	if (res == KV_RECON_OK)
		kv_log(KV_LOG_INFO, "reconciled tenant default with the master", "source", s->cfg->name, "cause", why,
		       "keys", keys, "added", added, "removed", removed, "medium", medium, "incomplete", incomplete,
		       "seconds", dur, NULL);
	else
		kv_log(KV_LOG_WARN, "reconciliation did not complete", "source", s->cfg->name, "cause", why, "result",
		       kv_recon_result_name(res), "reason", a->why ? a->why : "", "keys", keys, NULL);
}

void *kv_reconciler_main(void *arg)
{
	kv_source *s = arg;
	const kv_config *c = s->config;
	struct attempt a = {.s = s, .c = c};
	kv_listing_init(&a.listing, c->reconcile_max_keys);
	kv_key_batch_init(&a.batch);
	kv_buf_init(&a.gnames);
	const kv_keygroup_re *re = kv_config_keygroups(c, s->cfg);
	if (re && !(a.matcher = kv_keygroup_matcher_new(re))) {
		kv_log(KV_LOG_ERROR, "reconciler: out of memory", "source", s->cfg->name, NULL);
		goto out;
	}
	a.list = curl_easy_init();
	a.multi = curl_multi_init();
	if (kv_fetch_init(&a.query, http_timeout(c), QUERY_BODY_BYTES) != KV_OK || !a.list || !a.multi) {
		kv_log(KV_LOG_ERROR, "reconciler: cannot set up libcurl", "source", s->cfg->name, NULL);
		goto out;
	}
	double next = kv_now();
	kv_reconcile_plan plan;
	kv_reconcile_plan_init(&plan, c->reconcile_interval);
	kv_ratelimit rl = KV_RATELIMIT(600.0, 1);
	while (!atomic_load(s->stop)) {
		kv_sleep_until(s->stop, next);
		if (atomic_load(s->stop))
			break;
		const char *why, *backend;
		unsigned held;
		pthread_mutex_lock(&s->lock);
		backend = kv_reconcile_backend(s->state, s->cfg->backend, &why);
		/* the serving master's: after a failover, the new leader's */
		const char *base = kv_source_leader_url(s);
		bool stale = backend && kv_reconcile_stale(s->state, (kv_str){backend, (uint32_t)strlen(backend)});
		pthread_mutex_unlock(&s->lock);
		if (!base) { /* nothing to ask a standby, and no failure either */
			next = kv_now() + 1;
			continue;
		}
		if (!backend) {
			if (kv_ratelimit_allow(&rl, kv_now(), &held))
				kv_log(KV_LOG_INFO, "reconciler waits", "source", s->cfg->name, "reason", why, NULL);
			next = kv_now() + 1;
			continue;
		}
		double t0 = kv_now();
		const char *because = kv_reconcile_cause(&plan, atomic_load(&s->drifting), stale, t0);
		if (!because) {
			next = t0 + 1; /* look again in a second */
			continue;
		}
		reset_attempt(&a);
		a.base = base;
		enum kv_recon_result res = attempt(&a, backend);
		double t1 = kv_now();
		next = kv_reconcile_done(&plan, res, t0, t1);
		if (res == KV_RECON__RESULTS) /* a standby: count nothing */
			continue;
		pthread_mutex_lock(&s->lock);
		kv_recon_stats *r = &s->recon;
		r->results[res]++;
		r->has_duration = true;
		r->last_duration = t1 - t0;
		if (res == KV_RECON_OK) {
			for (int k = 0; k < KV_CORR__KINDS; k++)
				r->corrections[k] += a.corr[k];
			r->has_success = true;
			r->last_success = t1;
			r->last_keys = a.listing.listed;
		}
		pthread_mutex_unlock(&s->lock);
		log_result(s, &a, res, because, t1 - t0);
	}
out:
	reset_attempt(&a);
	kv_listing_free(&a.listing);
	kv_key_batch_free(&a.batch);
	kv_buf_free(&a.gnames);
	kv_keygroup_matcher_free(a.matcher);
	kv_fetch_free(&a.query);
	if (a.list)
		curl_easy_cleanup(a.list);
	if (a.multi)
		curl_multi_cleanup(a.multi);
	return NULL;
}
