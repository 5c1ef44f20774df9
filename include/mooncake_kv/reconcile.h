/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake_kv/reconcile.h: rebuilding a store's tenant from the master
 * itself, while the stream goes on (docs/design.md, "Reconciliation").
 *
 * The store plans (when, why, which backend and tenant:
 * mkv_store_recon_next); a run carries out one attempt at a time.  Tenant
 * `default` is listed at upstream's GET /get_all_keys, any other at the
 * per-tenant endpoint of tools/upstream/tenant-listing.patch, where the
 * master serves it: the run says where (mkv_recon_listing_url) and judges
 * from the answer whether the master lists tenants at all
 * (mkv_recon_listing_answer).  The shell streams the listing into the run
 * (mkv_recon_listing_feed, _drain), and the run asks the master about the
 * keys in batches and takes the store's lock through the shell's callbacks
 * (mkv_recon_io): the core does no I/O and holds no lock of its own, and the
 * lock is never held across a request. */
#ifndef MOONCAKE_KV_RECONCILE_H
#define MOONCAKE_KV_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mooncake_kv/common.h>
#include <mooncake_kv/store.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Label values of mooncake_kv_reconciliations_total{result}. */
enum mkv_recon_result {
	MKV_RECON_NOT_COUNTED = -1, /* mkv_recon_end only: nothing was counted (no label value) */
	MKV_RECON_OK,
	MKV_RECON_FAILED,     /* the master did not answer as it should */
	MKV_RECON_ABORTED,    /* a limit: the listing or the replay was too long, or no room */
	MKV_RECON_SUPERSEDED, /* the stream broke meanwhile: try again */
	MKV_RECON__RESULTS
};

MKV_EXTERN const char *mkv_recon_result_name(enum mkv_recon_result r);

/* What the plan says now (under the store's lock). */
enum mkv_recon_next {
	MKV_RECON_NOT_NOW,   /* nothing is due: look again in a second */
	MKV_RECON_NO_LEADER, /* no member serves: nothing to ask, and no failure */
	MKV_RECON_WAIT,      /* due, but not possible yet: job->why says why (log it, rate-limited) */
	MKV_RECON_GO,        /* ask job->leader about job->backend's tenant job->tenant */
};

#define MKV_RECON_TENANT_MAX 256 /* a longer tenant_id is not reconciled */

typedef struct mkv_recon_job {
	const char *backend;               /* borrowed from the store: valid while it lives */
	const char *cause;                 /* why now (the log's `cause`) */
	const char *why;                   /* with MKV_RECON_WAIT */
	int leader;                        /* the member to ask */
	char tenant[MKV_RECON_TENANT_MAX]; /* the tenant_id, NUL-terminated ("default", or one the master can list) */
} mkv_recon_job;

MKV_EXTERN enum mkv_recon_next mkv_store_recon_next(mkv_store *s, double now, mkv_recon_job *job);

/* The shell's side of a run. */
typedef struct mkv_recon_io {
	void *ctx;
	void (*lock)(void *ctx); /* the store's lock */
	void (*unlock)(void *ctx);
	/* GET url (a batch query): the answer's body stays valid until the
	 * next call */
	mkv_answer (*get)(void *ctx, const char *url);
	double (*now)(void *ctx); /* unix seconds */
} mkv_recon_io;

typedef struct mkv_recon_run mkv_recon_run;

/* A run for store s: listings longer than max_keys are abandoned, at most
 * max_replay events arriving meanwhile are recorded.  io is copied.  NULL
 * when out of memory. */
MKV_EXTERN mkv_recon_run *mkv_recon_run_new(mkv_store *s, const mkv_recon_io *io, uint64_t max_keys, size_t max_replay);
MKV_EXTERN void mkv_recon_run_free(mkv_recon_run *r);

/* Starts an attempt of job against the master at base_url (its admin URL,
 * borrowed for the attempt): the store records the tenant's events from now
 * on.  Takes the lock.  Returns MKV_OK; otherwise (MKV_EINVAL: the job cannot
 * be asked of the master; MKV_ENOMEM) the attempt has failed already: end
 * it. */
MKV_EXTERN enum mkv_err mkv_recon_begin(mkv_recon_run *r, const mkv_recon_job *job, const char *base_url);
/* The URL to GET the listing from (valid until the attempt ends). */
MKV_EXTERN const char *mkv_recon_listing_url(const mkv_recon_run *r);
/* The listing's answer has come: its HTTP status, and the value of its
 * X-Mooncake-Tenant-Id header (NULL: none).  Call it once, before the first
 * byte of the body is fed (or at the end when there was none).  Returns
 * whether the body is the tenant's listing; if not, do not feed it (stop
 * the transfer): the run knows why (a standby, a master that lists tenant
 * default only, a refusal) and mkv_recon_end counts it so. */
MKV_EXTERN bool mkv_recon_listing_answer(mkv_recon_run *r, long http, const char *tenant_header);
/* The listing as it arrives (no lock): _feed keeps the bytes, _drain splits
 * the whole keys out and asks the master about them batch by batch (at_end:
 * the listing is complete).  A false _drain: the attempt has failed (why in
 * the summary); stop the transfer and end it.  While mkv_recon_listing_full,
 * pause the transfer and drain. */
MKV_EXTERN enum mkv_err mkv_recon_listing_feed(mkv_recon_run *r, const void *p, size_t n);
MKV_EXTERN bool mkv_recon_listing_drain(mkv_recon_run *r, bool at_end);
MKV_EXTERN bool mkv_recon_listing_full(const mkv_recon_run *r);

/* How the listing ended, as the shell saw it. */
enum mkv_recon_listing {
	MKV_LISTING_DONE,    /* complete, and drained with at_end */
	MKV_LISTING_FAILED,  /* the transfer failed (why given), or a drain did */
	MKV_LISTING_STANDBY, /* the master answered 503: it stands by, nothing to count */
};

/* Ends the attempt: after a complete listing, the tenant is swapped in for
 * the stream's view (takes the lock, replaying what arrived meanwhile),
 * then the result is counted and the plan notes it; *next (unix seconds)
 * is when to ask mkv_store_recon_next again.  why: the shell's reason for a
 * failed listing, or NULL.  Returns the result, MKV_RECON_NOT_COUNTED when
 * nothing was counted (a standby, or a master that lists tenant default
 * only: the summary says which). */
MKV_EXTERN enum mkv_recon_result mkv_recon_end(mkv_recon_run *r, enum mkv_recon_listing listing, const char *why,
					       double *next);

/* What the last attempt did, for the log. */
typedef struct mkv_recon_summary {
	uint64_t keys; /* listed */
	uint64_t added, removed, medium;
	uint64_t incomplete; /* keys whose media the master did not tell */
	const char *why;     /* the reason of a failure, or NULL */
	double seconds;
	const char *tenant; /* the tenant_id asked about */
	bool default_only;  /* the master turned out to list tenant default only */
} mkv_recon_summary;

MKV_EXTERN void mkv_recon_summary_of(const mkv_recon_run *r, mkv_recon_summary *out);

#ifdef __cplusplus
}
#endif

#endif
