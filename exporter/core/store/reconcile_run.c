/* SPDX-License-Identifier: Apache-2.0 */
/* One reconciliation at a time of one tenant of a store
 * (mooncake_kv/reconcile.h): the listing split into batch queries, their
 * answers compared with the stream's view, the events recorded meanwhile
 * replayed, and the cut-over.  Why this is right while events flow:
 * kv_reconcile_replay.h and docs/design.md ("Reconciliation").  The shell's
 * callbacks move the bytes and hold the store's lock: never across a
 * request, and at the cut-over only for the last few events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mooncake_kv/reconcile.h>

#include "kv_master_keys.h"
#include "kv_store_impl.h"

#define CARRY_BYTES    (64 * 1024) /* listing bytes held before the transfer should pause */
#define CUTOVER_EVENTS 4096        /* replayed under the lock at the cut-over, at most */
#define BACKEND_MAX    256

struct mkv_recon_run {
	mkv_store *s;
	mkv_recon_io io;
	size_t max_replay;
	char backend_buf[BACKEND_MAX];
	mkv_str backend;
	char tenant_buf[MKV_RECON_TENANT_MAX];
	mkv_str tenant;
	bool is_default; /* the tenant is `default` (the plan's own) */
	int member;      /* the member asked */
	kv_keys_at at;   /* where its keys are read */
	bool answered;   /* the listing's answer came */
	enum kv_listed listed;
	long http;
	kv_listing listing;
	kv_key_batch batch;
	kv_recon_table fresh;
	kv_recon_log log;
	bool recording;
	bool begin_failed;
	uint64_t breaks0;             /* the store's breaks when the attempt began */
	kv_keygroup_matcher *matcher; /* with key groups: the listed keys' groups */
	mkv_buf gnames;               /* the batch's group names */
	uint32_t gname_at[KV_KEYS_BATCH_MAX], gname_len[KV_KEYS_BATCH_MAX];
	uint64_t unknown; /* keys the batch answers could not tell */
	uint64_t both;
	uint64_t corr[KV_CORR__KINDS];
	double t0, t1;
	const char *why; /* the reason of a failure, for the log */
	char why_buf[64];
};

mkv_recon_run *mkv_recon_run_new(mkv_store *s, const mkv_recon_io *io, uint64_t max_keys, size_t max_replay)
{
	mkv_recon_run *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->s = s;
	r->io = *io;
	r->max_replay = max_replay;
	kv_listing_init(&r->listing, max_keys);
	kv_key_batch_init(&r->batch);
	kv_keys_at_init(&r->at);
	mkv_buf_init(&r->gnames);
	if (s->cfg.key_groups && !(r->matcher = kv_keygroup_matcher_new(s->cfg.key_groups))) {
		mkv_recon_run_free(r);
		return NULL;
	}
	return r;
}

static void reset(mkv_recon_run *r)
{
	kv_recon_table_free(&r->fresh);
	kv_listing_reset(&r->listing);
	kv_key_batch_reset(&r->batch);
	r->unknown = r->both = 0;
	memset(r->corr, 0, sizeof(r->corr));
	r->why = NULL;
	r->recording = r->begin_failed = false;
	r->answered = false;
	r->listed = KV_LISTED_REFUSED;
	r->http = 0;
}

void mkv_recon_run_free(mkv_recon_run *r)
{
	if (!r)
		return;
	reset(r);
	kv_recon_log_free(&r->log);
	kv_listing_free(&r->listing);
	kv_key_batch_free(&r->batch);
	kv_keys_at_free(&r->at);
	mkv_buf_free(&r->gnames);
	kv_keygroup_matcher_free(r->matcher);
	free(r);
}

static void lock(mkv_recon_run *r)
{
	r->io.lock(r->io.ctx);
}

static void unlock(mkv_recon_run *r)
{
	r->io.unlock(r->io.ctx);
}

/* An attempt that ends early: the stream stops recording for it. */
static void stop_recording(mkv_recon_run *r)
{
	if (!r->recording)
		return;
	lock(r);
	kv_state_record_stop(r->s->state);
	unlock(r);
	r->recording = false;
}

/* Copies a job's string into buf (of size n) as *out; false when too long. */
static bool copy_id(char *buf, size_t n, const char *v, mkv_str *out)
{
	size_t len = strnlen(v, n);
	if (len >= n)
		return false;
	memcpy(buf, v, len + 1);
	*out = (mkv_str){buf, (uint32_t)len};
	return true;
}

enum mkv_err mkv_recon_begin(mkv_recon_run *r, const mkv_recon_job *job, const char *base_url)
{
	reset(r);
	r->t0 = r->io.now(r->io.ctx);
	r->member = job->leader;
	r->begin_failed = true; /* until it has begun */
	if (!copy_id(r->backend_buf, sizeof(r->backend_buf), job->backend, &r->backend)) {
		r->why = "the backend_id is too long to reconcile";
		return MKV_EINVAL;
	}
	if (!copy_id(r->tenant_buf, sizeof(r->tenant_buf), job->tenant, &r->tenant)) {
		r->why = "the tenant_id is too long to reconcile";
		return MKV_EINVAL;
	}
	r->is_default = kv_tenant_is_default(r->tenant);
	enum mkv_err rc = kv_keys_at_set(&r->at, base_url, r->tenant);
	if (rc != MKV_OK) {
		r->why = rc == MKV_EINVAL ? "the tenant_id cannot be named in a request" : "out of memory";
		return rc;
	}
	kv_recon_log_free(&r->log);
	kv_recon_log_init(&r->log, r->max_replay);
	lock(r);
	r->breaks0 = mkv_store_breaks(r->s);
	rc = kv_state_record_start(r->s->state, r->backend, r->tenant, &r->log);
	bool births = kv_state_residency(r->s->state);
	unlock(r);
	if (rc != MKV_OK) {
		r->why = "no room for the tenant under --limits.max-tenants";
		return rc;
	}
	r->recording = true;
	if (kv_objtable_births(&r->fresh.objects, births) != MKV_OK) {
		stop_recording(r);
		r->why = "out of memory";
		return MKV_ENOMEM;
	}
	r->begin_failed = false;
	return MKV_OK;
}

/* Asks the master about the batch's keys and puts them into the fresh
 * table; compares them with the stream's view for the corrections.
 * Returns false when the attempt has failed. */
static bool run_query(mkv_recon_run *r)
{
	kv_key_batch *q = &r->batch;
	if (!q->n)
		return true;
	unsigned media[KV_KEYS_BATCH_MAX];
	mkv_answer a = r->io.get(r->io.ctx, q->url.data);
	enum mkv_poll_error err = a.err;
	if (err == MKV_POLL_OK)
		err = kv_key_batch_parse(q, &r->at, a.body, a.len, media, &r->unknown);
	if (err != MKV_POLL_OK) {
		r->why = mkv_poll_error_name(err);
		return false;
	}
	const kv_state *state = r->s->state;
	uint64_t hash[KV_KEYS_BATCH_MAX];
	int64_t birth[KV_KEYS_BATCH_MAX];
	uint32_t group[KV_KEYS_BATCH_MAX];
	mkv_buf_reset(&r->gnames);
	for (size_t i = 0; i < q->n; i++) {
		const char *key = kv_key_batch_key(q, i);
		size_t len = strlen(key);
		if (r->matcher) { /* the group's name now, its id under the lock */
			char name[MKV_KEYGROUP_MAX_LEN];
			r->gname_at[i] = (uint32_t)r->gnames.len;
			r->gname_len[i] = (uint32_t)kv_keygroup_of(r->matcher, key, len, name);
			mkv_buf_add(&r->gnames, name, r->gname_len[i]);
		}
		hash[i] = kv_state_key_hash(state, (mkv_str){key, (uint32_t)len});
	}
	if (!mkv_buf_ok(&r->gnames)) {
		r->why = "out of memory";
		return false;
	}
	lock(r);
	const kv_tenant *t = kv_state_find_tenant(state, r->backend, r->tenant);
	for (size_t i = 0; i < q->n; i++) {
		group[i] = r->matcher ? kv_state_group_id(r->s->state, r->gnames.data + r->gname_at[i], r->gname_len[i])
				      : KV_GROUP_NONE;
		unsigned old = t ? kv_state_media_by_hash(t, hash[i]) : 0;
		/* a life the stream saw begin goes on in the fresh table */
		birth[i] = t ? kv_state_birth_by_hash(t, hash[i]) : KV_NO_BIRTH;
		if (!media[i])
			continue;
		r->both += old != 0;
		r->corr[KV_CORR_ADDED] += old == 0;
		r->corr[KV_CORR_MEDIUM] += old && old != media[i];
	}
	unlock(r);
	for (size_t i = 0; i < q->n; i++)
		if (media[i] && kv_recon_put(&r->fresh, hash[i], media[i], group[i], birth[i]) != MKV_OK) {
			r->why = "out of memory";
			return false;
		}
	kv_key_batch_reset(q);
	return true;
}

/* One listed key into the batch (asking the master when the batch is full). */
static bool add_key(const char *k, size_t n, void *arg)
{
	mkv_recon_run *r = arg;
	if (kv_key_batch_full(&r->batch, &r->at, n) && !run_query(r))
		return false;
	if (kv_key_batch_add(&r->batch, &r->at, k, n) != MKV_OK) {
		r->why = "out of memory";
		return false;
	}
	return true;
}

const char *mkv_recon_listing_url(const mkv_recon_run *r)
{
	return mkv_buf_str(&r->at.listing);
}

bool mkv_recon_listing_answer(mkv_recon_run *r, long http, const char *tenant_header)
{
	r->answered = true;
	r->http = http;
	r->listed = kv_keys_listed(&r->at, http, tenant_header);
	return r->listed == KV_LISTED_TAKE;
}

enum mkv_err mkv_recon_listing_feed(mkv_recon_run *r, const void *p, size_t n)
{
	return kv_listing_feed(&r->listing, p, n);
}

bool mkv_recon_listing_full(const mkv_recon_run *r)
{
	return r->listing.carry.len >= CARRY_BYTES;
}

bool mkv_recon_listing_drain(mkv_recon_run *r, bool at_end)
{
	if (!kv_listing_split(&r->listing, at_end, add_key, r)) {
		if (r->listing.too_long)
			r->why = "the listing is longer than --master.reconcile-max-keys";
		return false;
	}
	return !at_end || run_query(r);
}

/* Keys whose media the master did not tell: the rebuilt tenant is not
 * exact for them (KV_STALE_RECONCILE_INCOMPLETE). */
static uint64_t unsure_keys(const mkv_recon_run *r)
{
	return r->unknown + r->listing.unaskable;
}

/* Replays what was recorded (outside the lock while much is left), then
 * swaps the fresh table in under the lock. */
static enum mkv_recon_result cut_over(mkv_recon_run *r)
{
	mkv_store *s = r->s;
	kv_recon_log *log = &r->log;
	size_t taken_total = 0;
	for (;;) {
		lock(r);
		enum mkv_recon_result res = MKV_RECON_NOT_COUNTED;
		if (mkv_store_breaks(s) != r->breaks0) {
			r->why = "the stream lost events meanwhile";
			res = MKV_RECON_SUPERSEDED;
		} else if (log->overflow) {
			r->why = "more events than --master.reconcile-max-replay arrived meanwhile";
			res = MKV_RECON_ABORTED;
		} else if (log->n <= CUTOVER_EVENTS) {
			kv_objtable old = {0};
			size_t before = kv_state_recorded_objects(s->state);
			res = MKV_RECON_ABORTED;
			r->why = "no room under --limits.max-objects";
			kv_state_set_now(s->state, (int64_t)(r->io.now(r->io.ctx) * 1000));
			if (kv_recon_replay(&r->fresh, log->ev, log->n) == MKV_OK &&
			    kv_state_adopt(s->state, &r->fresh, unsure_keys(r) ? KV_STALE_RECONCILE_INCOMPLETE : 0,
					   &old) == MKV_OK) {
				res = MKV_RECON_OK;
				r->why = NULL;
				r->corr[KV_CORR_REMOVED] = before > r->both ? before - r->both : 0;
			}
			kv_state_record_stop(s->state);
			r->recording = false;
			unlock(r);
			kv_objtable_clear(&old); /* large: freed outside the lock */
			return res;
		}
		if (res != MKV_RECON_NOT_COUNTED) {
			kv_state_record_stop(s->state);
			r->recording = false;
			unlock(r);
			return res;
		}
		/* much is left: take it and replay it without the lock */
		kv_recon_log taken = *log;
		taken_total += taken.n;
		kv_recon_log_init(log, r->max_replay > taken_total ? r->max_replay - taken_total : 1);
		unlock(r);
		enum mkv_err rc = kv_recon_replay(&r->fresh, taken.ev, taken.n);
		kv_recon_log_free(&taken);
		if (rc != MKV_OK) {
			stop_recording(r);
			r->why = "out of memory";
			return MKV_RECON_ABORTED;
		}
	}
}

/* What the listing's answer, where it came, makes of the shell's view. */
static enum mkv_recon_listing judged(mkv_recon_run *r, enum mkv_recon_listing listing)
{
	if (!r->answered)
		return listing;
	switch (r->listed) {
	case KV_LISTED_TAKE:
		return listing;
	case KV_LISTED_STANDBY:
		return MKV_LISTING_STANDBY;
	case KV_LISTED_DEFAULT_ONLY:
		return MKV_LISTING_FAILED;
	default:
		snprintf(r->why_buf, sizeof(r->why_buf), "the listing was answered with HTTP %ld", r->http);
		r->why = r->why_buf;
		return MKV_LISTING_FAILED;
	}
}

/* The plan notes the result of the attempt; returns when to ask it again. */
static double plan_done(mkv_recon_run *r, enum mkv_recon_result res)
{
	mkv_store *s = r->s;
	if (r->is_default) {
		kv_reconcile_done(&s->plan, res, r->t0, r->t1);
		if (res != MKV_RECON_NOT_COUNTED)
			kv_drift_reconciled(&s->drift, res == MKV_RECON_OK);
	} else {
		for (size_t i = 0; i < kv_state_tenant_count(s->state); i++) {
			const kv_tenant *t = kv_state_tenant_at(s->state, i);
			if (t->tenant_len == r->tenant.len && t->backend_len == r->backend.len &&
			    !memcmp(t->tenant_id, r->tenant.ptr, r->tenant.len) &&
			    !memcmp(t->backend_id, r->backend.ptr, r->backend.len)) {
				kv_reconcile_tenant_done(&s->plan, kv_state_recon_times(s->state, i), res, r->t0,
							 r->t1);
				break;
			}
		}
	}
	return r->t1; /* another tenant may be due at once: the plan says */
}

enum mkv_recon_result mkv_recon_end(mkv_recon_run *r, enum mkv_recon_listing listing, const char *why, double *next)
{
	enum mkv_recon_result res;
	bool default_only = r->answered && r->listed == KV_LISTED_DEFAULT_ONLY;
	listing = judged(r, listing);
	if (default_only) {
		stop_recording(r);
		r->why = "the master lists tenant default only";
		res = MKV_RECON_NOT_COUNTED; /* no failure: a master without the per-tenant listing */
	} else if (listing == MKV_LISTING_DONE && r->recording) {
		res = cut_over(r);
	} else {
		stop_recording(r);
		if (why)
			r->why = why;
		if (r->begin_failed) /* a limit, or memory: nothing was asked */
			res = MKV_RECON_ABORTED;
		else if (listing == MKV_LISTING_STANDBY) /* nothing to count */
			res = MKV_RECON_NOT_COUNTED;
		else
			res = r->listing.too_long ? MKV_RECON_ABORTED : MKV_RECON_FAILED;
	}
	r->t1 = r->io.now(r->io.ctx);
	lock(r);
	mkv_store *s = r->s;
	if (r->answered && !r->is_default)
		kv_store_lists_note(s, r->member, r->listed, r->t1);
	*next = plan_done(r, res);
	if (res != MKV_RECON_NOT_COUNTED) {
		kv_recon_stats *st = &s->recon;
		st->results[res]++;
		st->has_duration = true;
		st->last_duration = r->t1 - r->t0;
		if (res == MKV_RECON_OK) {
			for (int k = 0; k < KV_CORR__KINDS; k++)
				st->corrections[k] += r->corr[k];
			st->has_success = true;
			st->last_success = r->t1;
			if (r->is_default)
				st->last_keys = r->listing.listed;
		}
	}
	unlock(r);
	kv_recon_log_free(&r->log);
	return res;
}

void mkv_recon_summary_of(const mkv_recon_run *r, mkv_recon_summary *out)
{
	*out = (mkv_recon_summary){
		.keys = r->listing.listed,
		.added = r->corr[KV_CORR_ADDED],
		.removed = r->corr[KV_CORR_REMOVED],
		.medium = r->corr[KV_CORR_MEDIUM],
		.incomplete = unsure_keys(r),
		.why = r->why,
		.seconds = r->t1 - r->t0,
		.tenant = r->tenant_buf,
		.default_only = r->answered && r->listed == KV_LISTED_DEFAULT_ONLY,
	};
}
