/* The reconciler: one thread per source with reconciliation on.  It
 * rebuilds tenant `default` of the source's backend from the master's
 * GET /get_all_keys (streamed, never held whole) and GET /batch_query_keys
 * (in chunks of a bounded URL length) while the stream goes on.  kv_recon.h
 * says why replaying the events recorded meanwhile is right;
 * docs/design.md ("Reconciliation") the rest.  No lock is held across HTTP;
 * the cut-over holds the source's lock only for the last few events. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <jansson.h>

#include "kv_clock.h"
#include "kv_fetch.h"
#include "kv_log.h"
#include "kv_reconciler.h"
#include "kv_source.h"
#include "kv_utf8.h"

#define QUERY_KEY_BYTES       8192 /* encoded keys in one batch query's URL */
#define MAX_BATCH_KEYS        QUERY_KEY_BYTES
#define MAX_KEY_BYTES         16384       /* a longer line is no key we can ask about */
#define CARRY_BYTES           (64 * 1024) /* listing bytes held before the transfer pauses */
#define QUERY_BODY_BYTES      (64u << 20)
#define CUTOVER_EVENTS        4096                     /* replayed under the lock at the cut-over, at most */
#define PERIODS_WITHOUT_CAUSE 6                        /* intervals between reconciliations nothing calls for */
#define DEFAULT_TENANT        ((kv_str){"default", 7}) /* the one upstream's listing covers */

struct attempt {
	kv_source *s;
	kv_str backend;
	const kv_config *c;
	const char *base; /* the serving master's admin URL */
	kv_fetch query;   /* batch queries */
	CURL *list;       /* the listing, driven by multi so that it can pause */
	CURLM *multi;
	kv_buf carry;  /* listing bytes not yet split into keys */
	bool skipping; /* inside an overlong line */
	kv_buf keys;   /* the batch: raw keys, each NUL-terminated */
	kv_buf url;    /* the batch's query URL */
	size_t n_keys;
	uint32_t key_at[MAX_BATCH_KEYS];
	kv_recon_table fresh;
	kv_keygroup_matcher *matcher; /* with key groups: the listed keys' groups */
	kv_buf gnames;                /* the batch's group names */
	uint32_t gname_at[MAX_BATCH_KEYS], gname_len[MAX_BATCH_KEYS];
	uint64_t listed, incomplete, both;
	uint64_t corr[KV_CORR__KINDS];
	bool standby;    /* the master answered 503: a standby, nothing to count */
	const char *why; /* the reason of a failure, for the log */
	char why_buf[128];
};

static size_t on_listing(char *p, size_t size, size_t n, void *arg)
{
	struct attempt *a = arg;
	if (a->carry.len >= CARRY_BYTES)
		return CURL_WRITEFUNC_PAUSE; /* libcurl keeps these bytes and hands them again */
	kv_buf_add(&a->carry, p, size * n);
	return kv_buf_ok(&a->carry) ? size * n : 0;
}

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
	       c == '_' || c == '~';
}

/* The media of one answer: memory replicas are cpu; disk, local disk and
 * NVMe-oF replicas are disk (upstream MasterService::MediumForReplicaType). */
static unsigned media_of(const json_t *entry)
{
	static const char *const disk[] = {"disk_values", "local_disk_values", "nof_values"};
	unsigned m = 0;
	if (json_array_size(json_object_get(entry, "values")))
		m |= KV_MEDIUM_CPU;
	for (size_t i = 0; i < 3; i++)
		if (json_array_size(json_object_get(entry, disk[i])))
			m |= KV_MEDIUM_DISK;
	return m;
}

/* Asks the master about the batch's keys and puts them into the fresh
 * table; compares them with the stream's view for the corrections.
 * Returns false when the attempt has failed. */
static bool run_query(struct attempt *a)
{
	if (!a->n_keys)
		return true;
	long http;
	enum kv_poll_error err = kv_fetch_get(&a->query, a->url.data, &http);
	json_t *root = NULL;
	const json_t *data = NULL;
	if (err == KV_POLL_OK) {
		root = json_loadb(a->query.body.data ? a->query.body.data : "", a->query.body.len, 0, NULL);
		data = json_object_get(root, "data");
		if (!json_is_true(json_object_get(root, "success")) || !json_is_object(data))
			err = KV_POLL_PARSE;
	}
	if (err != KV_POLL_OK) {
		a->why = kv_poll_error_name(err);
		json_decref(root);
		return false;
	}
	const kv_state *state = a->s->state;
	unsigned media[MAX_BATCH_KEYS];
	uint64_t hash[MAX_BATCH_KEYS];
	uint32_t group[MAX_BATCH_KEYS];
	kv_buf_reset(&a->gnames);
	for (size_t i = 0; i < a->n_keys; i++) {
		const char *key = a->keys.data + a->key_at[i];
		size_t len = strlen(key);
		if (a->matcher) { /* the group's name now, its id under the lock */
			char name[KV_KEYGROUP_MAX_LEN];
			a->gname_at[i] = (uint32_t)a->gnames.len;
			a->gname_len[i] = (uint32_t)kv_keygroup_of(a->matcher, key, len, name);
			kv_buf_add(&a->gnames, name, a->gname_len[i]);
		}
		const json_t *e = json_object_get(data, key);
		hash[i] = kv_state_key_hash(state, (kv_str){key, (uint32_t)len});
		media[i] = 0;
		/* not answered, or a failed lookup: unknown; OBJECT_NOT_FOUND: removed
		 * since the listing, as the replay will say */
		if (json_is_true(json_object_get(e, "ok")))
			media[i] = media_of(e);
		else if (!json_is_string(json_object_get(e, "error")) ||
			 strcmp(json_string_value(json_object_get(e, "error")), "OBJECT_NOT_FOUND"))
			a->incomplete++;
	}
	json_decref(root);

	if (!kv_buf_ok(&a->gnames)) {
		a->why = "out of memory";
		return false;
	}
	pthread_mutex_lock(&a->s->lock);
	const kv_tenant *t = kv_state_find_tenant(state, a->backend, DEFAULT_TENANT);
	for (size_t i = 0; i < a->n_keys; i++) {
		group[i] = a->matcher ? kv_state_group_id(a->s->state, a->gnames.data + a->gname_at[i], a->gname_len[i])
				      : KV_GROUP_NONE;
		unsigned old = t ? kv_state_media_by_hash(t, hash[i]) : 0;
		if (!media[i])
			continue;
		a->both += old != 0;
		a->corr[KV_CORR_ADDED] += old == 0;
		a->corr[KV_CORR_MEDIUM] += old && old != media[i];
	}
	pthread_mutex_unlock(&a->s->lock);
	for (size_t i = 0; i < a->n_keys; i++)
		if (media[i] && kv_recon_put(&a->fresh, hash[i], media[i], group[i]) != KV_OK) {
			a->why = "out of memory";
			return false;
		}
	a->n_keys = 0;
	kv_buf_reset(&a->keys);
	kv_buf_reset(&a->url);
	return true;
}

/* One listed key into the batch (querying when the batch is full). */
static bool add_key(struct attempt *a, const char *k, size_t n)
{
	if (!n)
		return true;
	if (++a->listed > a->c->reconcile_max_keys) {
		a->why = "the listing is longer than --master.reconcile-max-keys";
		return false;
	}
	/* the master splits the query on commas, and its JSON answer can hold
	 * only valid UTF-8 keys: such a key cannot be asked about */
	if (memchr(k, ',', n) || n > MAX_KEY_BYTES || !kv_label_value_clean(k, n)) {
		a->incomplete++;
		return true;
	}
	if (a->n_keys && (a->url.len + 3 * n > QUERY_KEY_BYTES + strlen(a->base) + 32 || a->n_keys == MAX_BATCH_KEYS) &&
	    !run_query(a))
		return false;
	if (!a->n_keys)
		kv_buf_printf(&a->url, "%s/batch_query_keys?keys=", a->base);
	else
		kv_buf_addc(&a->url, ',');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)k[i];
		if (unreserved(c))
			kv_buf_addc(&a->url, (char)c);
		else
			kv_buf_printf(&a->url, "%%%02X", c);
	}
	a->key_at[a->n_keys++] = (uint32_t)a->keys.len;
	kv_buf_add(&a->keys, k, n);
	kv_buf_addc(&a->keys, '\0');
	if (!kv_buf_ok(&a->url) || !kv_buf_ok(&a->keys)) {
		a->why = "out of memory";
		return false;
	}
	return true;
}

/* Splits the complete lines of the carried listing into keys; at the end
 * of the listing, the last line too. */
static bool drain(struct attempt *a, bool at_end)
{
	char *p = a->carry.data, *end = p + a->carry.len;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl && !at_end) {
			if ((size_t)(end - p) > MAX_KEY_BYTES) { /* an overlong line: skip to its end */
				if (!a->skipping)
					a->incomplete++;
				a->skipping = true;
				p = end;
			}
			break;
		}
		char *e = nl ? nl : end;
		if (a->skipping)
			a->skipping = false;
		else if (!add_key(a, p, (size_t)(e - p)))
			return false;
		p = nl ? nl + 1 : end;
	}
	size_t left = (size_t)(end - p);
	if (left && p != a->carry.data)
		memmove(a->carry.data, p, left);
	a->carry.len = left;
	return true;
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
		if (a->carry.len < CARRY_BYTES)
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

/* The backend whose tenant `default` this source reconciles: the one given
 * in --source, else the only one its stream carries.  NULL (with *why)
 * when there is none yet, or several. */
static const char *backend_of(kv_source *s, const char **why)
{
	if (s->cfg->backend)
		return s->cfg->backend;
	const kv_state *st = s->state;
	const kv_tenant *first = NULL;
	for (size_t i = 0; i < kv_state_tenant_count(st); i++) {
		const kv_tenant *t = kv_state_tenant_at(st, i);
		if (!first)
			first = t;
		else if (t->backend_len != first->backend_len ||
			 memcmp(t->backend_id, first->backend_id, t->backend_len)) {
			*why = "the stream carries several backend_ids: give backend= in --source";
			return NULL;
		}
	}
	*why = first ? NULL : "no event has arrived yet to tell the backend_id (or give backend= in --source)";
	return first ? first->backend_id : NULL;
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
			    kv_state_adopt(s->state, &a->fresh, a->incomplete ? KV_STALE_RECONCILE_INCOMPLETE : 0,
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
	int rc = kv_state_record_start(s->state, a->backend, DEFAULT_TENANT, &log);
	pthread_mutex_unlock(&s->lock);
	if (rc != KV_OK) {
		a->why = "no room for tenant default under --limits.max-tenants";
		return KV_RECON_ABORTED;
	}
	enum kv_recon_result res;
	if (!list_keys(a)) {
		stop_recording(s);
		res = a->standby                             ? KV_RECON__RESULTS /* not counted */
		      : a->listed > a->c->reconcile_max_keys ? KV_RECON_ABORTED
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
	kv_buf_reset(&a->carry);
	kv_buf_reset(&a->keys);
	kv_buf_reset(&a->url);
	a->n_keys = 0;
	a->skipping = false;
	a->listed = a->incomplete = a->both = 0;
	a->standby = false;
	memset(a->corr, 0, sizeof(a->corr));
	a->why = NULL;
}

/* What calls for a reconciliation now, or NULL. */
static const char *cause(kv_source *s, const char *backend, bool ever_ok, double now, double last_ok)
{
	if (!ever_ok)
		return "startup";
	if (atomic_load(&s->drifting))
		return "drift";
	pthread_mutex_lock(&s->lock);
	const kv_tenant *t = kv_state_find_tenant(s->state, (kv_str){backend, (uint32_t)strlen(backend)},
						  DEFAULT_TENANT);
	bool stale = t && (t->stale & ~(unsigned)KV_STALE_RECONCILE_INCOMPLETE);
	pthread_mutex_unlock(&s->lock);
	if (stale)
		return "stale";
	if (now >= last_ok + PERIODS_WITHOUT_CAUSE * s->config->reconcile_interval)
		return "periodic";
	return NULL;
}

static void log_result(const kv_source *s, const struct attempt *a, enum kv_recon_result res, const char *why,
		       double secs)
{
	char keys[24], added[24], removed[24], medium[24], incomplete[24], dur[24];
	snprintf(keys, sizeof(keys), "%llu", (unsigned long long)a->listed);
	snprintf(added, sizeof(added), "%llu", (unsigned long long)a->corr[KV_CORR_ADDED]);
	snprintf(removed, sizeof(removed), "%llu", (unsigned long long)a->corr[KV_CORR_REMOVED]);
	snprintf(medium, sizeof(medium), "%llu", (unsigned long long)a->corr[KV_CORR_MEDIUM]);
	snprintf(incomplete, sizeof(incomplete), "%llu", (unsigned long long)a->incomplete);
	snprintf(dur, sizeof(dur), "%.3f", secs);
	if (res == KV_RECON_OK)
		kv_log(KV_LOG_INFO, "reconciled tenant default with the master", "source", s->cfg->name, "cause", why,
		       "keys", keys, "added", added, "removed", removed, "medium", medium, "incomplete", incomplete,
		       "seconds", dur, NULL);
	else
		kv_log(KV_LOG_WARN, "reconciliation did not complete", "source", s->cfg->name, "cause", why, "result",
		       kv_recon_result_name(res), "reason", a->why ? a->why : "", "keys", keys, NULL);
}

void *kv_reconcile_main(void *arg)
{
	kv_source *s = arg;
	const kv_config *c = s->config;
	struct attempt a = {.s = s, .c = c};
	kv_buf_init(&a.carry);
	kv_buf_init(&a.gnames);
	const kv_keygroup_re *re = kv_config_keygroups(c, s->cfg);
	if (re && !(a.matcher = kv_keygroup_matcher_new(re))) {
		kv_log(KV_LOG_ERROR, "reconciler: out of memory", "source", s->cfg->name, NULL);
		goto out;
	}
	kv_buf_init(&a.keys);
	kv_buf_init(&a.url);
	a.list = curl_easy_init();
	a.multi = curl_multi_init();
	if (kv_fetch_init(&a.query, http_timeout(c), QUERY_BODY_BYTES) != KV_OK || !a.list || !a.multi) {
		kv_log(KV_LOG_ERROR, "reconciler: cannot set up libcurl", "source", s->cfg->name, NULL);
		goto out;
	}
	double next = kv_now(), last_ok = 0;
	bool ever_ok = false;
	unsigned failures = 0;
	kv_ratelimit rl = KV_RATELIMIT(600.0, 1);
	while (!atomic_load(s->stop)) {
		kv_sleep_until(s->stop, next);
		if (atomic_load(s->stop))
			break;
		const char *why = NULL, *backend;
		unsigned held;
		pthread_mutex_lock(&s->lock);
		backend = backend_of(s, &why);
		/* the serving master's: after a failover, the new leader's */
		const char *base = kv_source_leader_url(s);
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
		const char *because = cause(s, backend, ever_ok, t0, last_ok);
		if (!because) {
			next = t0 + 1; /* look again in a second */
			continue;
		}
		reset_attempt(&a);
		a.base = base;
		enum kv_recon_result res = attempt(&a, backend);
		double t1 = kv_now();
		if (res == KV_RECON__RESULTS) { /* a standby: ask again later, count nothing */
			next = t1 + c->reconcile_interval;
			continue;
		}
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
			r->last_keys = a.listed;
		}
		pthread_mutex_unlock(&s->lock);
		log_result(s, &a, res, because, t1 - t0);
		if (res == KV_RECON_OK) {
			ever_ok = true;
			last_ok = t1;
			failures = 0;
			next = t0 + c->reconcile_interval;
		} else {
			/* 2, 4, 8 ... seconds, never more than the interval */
			failures += failures < 30;
			next = t1 + fmin(c->reconcile_interval, ldexp(1, (int)failures));
		}
	}
out:
	reset_attempt(&a);
	kv_buf_free(&a.carry);
	kv_buf_free(&a.keys);
	kv_buf_free(&a.url);
	kv_buf_free(&a.gnames);
	kv_keygroup_matcher_free(a.matcher);
	kv_fetch_free(&a.query);
	if (a.list)
		curl_easy_cleanup(a.list);
	if (a.multi)
		curl_multi_cleanup(a.multi);
	return NULL;
}
