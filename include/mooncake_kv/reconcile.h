/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake_kv/reconcile.h: rebuilding a store's tenant from the master
 * itself, while the stream goes on (docs/design.md, "Reconciliation").
 *
 * The store plans (when, why, which backend and tenant:
 * kv_store_recon_next); a run carries out one attempt at a time.  Tenant
 * `default` is listed at upstream's GET /get_all_keys, any other at the
 * per-tenant endpoint of tools/upstream/tenant-listing.patch, where the
 * master serves it: the run says where (kv_recon_listing_url) and judges
 * from the answer whether the master lists tenants at all
 * (kv_recon_listing_answer).  The shell streams the listing into the run
 * (kv_recon_listing_feed, _drain), and the run asks the master about the
 * keys in batches and takes the store's lock through the shell's callbacks
 * (kv_recon_io): the core does no I/O and holds no lock of its own, and the
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
enum kv_recon_result {
	KV_RECON_OK,
	KV_RECON_FAILED,     /* the master did not answer as it should */
	KV_RECON_ABORTED,    /* a limit: the listing or the replay was too long, or no room */
	KV_RECON_SUPERSEDED, /* the stream broke meanwhile: try again */
	KV_RECON__RESULTS
};

KV_EXTERN const char *kv_recon_result_name(enum kv_recon_result r);

/* What the plan says now (under the store's lock). */
enum kv_recon_next {
	KV_RECON_NOT_NOW,   /* nothing is due: look again in a second */
	KV_RECON_NO_LEADER, /* no member serves: nothing to ask, and no failure */
	KV_RECON_WAIT,      /* due, but not possible yet: job->why says why (log it, rate-limited) */
	KV_RECON_GO,        /* ask job->leader about job->backend's tenant job->tenant */
};

#define KV_RECON_TENANT_MAX 256 /* a longer tenant_id is not reconciled */

typedef struct kv_recon_job {
	const char *backend;              /* borrowed from the store: valid while it lives */
	const char *cause;                /* why now (the log's `cause`) */
	const char *why;                  /* with KV_RECON_WAIT */
	int leader;                       /* the member to ask */
	char tenant[KV_RECON_TENANT_MAX]; /* the tenant_id, NUL-terminated ("default", or one the master can list) */
} kv_recon_job;

KV_EXTERN enum kv_recon_next kv_store_recon_next(kv_store *s, double now, kv_recon_job *job);

/* The shell's side of a run. */
typedef struct kv_recon_io {
	void *ctx;
	void (*lock)(void *ctx); /* the store's lock */
	void (*unlock)(void *ctx);
	/* GET url (a batch query): the answer's body stays valid until the
	 * next call */
	kv_answer (*get)(void *ctx, const char *url);
	double (*now)(void *ctx); /* unix seconds */
} kv_recon_io;

typedef struct kv_recon_run kv_recon_run;

/* A run for store s: listings longer than max_keys are abandoned, at most
 * max_replay events arriving meanwhile are recorded.  io is copied.  NULL
 * when out of memory. */
KV_EXTERN kv_recon_run *kv_recon_run_new(kv_store *s, const kv_recon_io *io, uint64_t max_keys, size_t max_replay);
KV_EXTERN void kv_recon_run_free(kv_recon_run *r);

/* Starts an attempt of job against the master at base_url (its admin URL,
 * borrowed for the attempt): the store records the tenant's events from now
 * on.  Takes the lock.  Returns KV_OK; otherwise (KV_EINVAL: the job cannot
 * be asked of the master; KV_ENOMEM) the attempt has failed already: end
 * it. */
KV_EXTERN enum kv_err kv_recon_begin(kv_recon_run *r, const kv_recon_job *job, const char *base_url);
/* The URL to GET the listing from (valid until the attempt ends). */
KV_EXTERN const char *kv_recon_listing_url(const kv_recon_run *r);
/* The listing's answer has come: its HTTP status, and the value of its
 * X-Mooncake-Tenant-Id header (NULL: none).  Call it once, before the first
 * byte of the body is fed (or at the end when there was none).  Returns
 * whether the body is the tenant's listing; if not, do not feed it (stop
 * the transfer): the run knows why (a standby, a master that lists tenant
 * default only, a refusal) and kv_recon_end counts it so. */
KV_EXTERN bool kv_recon_listing_answer(kv_recon_run *r, long http, const char *tenant_header);
/* The listing as it arrives (no lock): _feed keeps the bytes, _drain splits
 * the whole keys out and asks the master about them batch by batch (at_end:
 * the listing is complete).  A false _drain: the attempt has failed (why in
 * the summary); stop the transfer and end it.  While kv_recon_listing_full,
 * pause the transfer and drain. */
KV_EXTERN enum kv_err kv_recon_listing_feed(kv_recon_run *r, const void *p, size_t n);
KV_EXTERN bool kv_recon_listing_drain(kv_recon_run *r, bool at_end);
KV_EXTERN bool kv_recon_listing_full(const kv_recon_run *r);

/* How the listing ended, as the shell saw it. */
enum kv_recon_listing {
	KV_LISTING_DONE,    /* complete, and drained with at_end */
	KV_LISTING_FAILED,  /* the transfer failed (why given), or a drain did */
	KV_LISTING_STANDBY, /* the master answered 503: it stands by, nothing to count */
};

/* Ends the attempt: after a complete listing, the tenant is swapped in for
 * the stream's view (takes the lock, replaying what arrived meanwhile),
 * then the result is counted and the plan notes it; *next (unix seconds)
 * is when to ask kv_store_recon_next again.  why: the shell's reason for a
 * failed listing, or NULL.  Returns the result, KV_RECON__RESULTS when
 * nothing was counted (a standby, or a master that lists tenant default
 * only: the summary says which). */
KV_EXTERN enum kv_recon_result kv_recon_end(kv_recon_run *r, enum kv_recon_listing listing, const char *why,
					    double *next);

/* What the last attempt did, for the log. */
typedef struct kv_recon_summary {
	uint64_t keys; /* listed */
	uint64_t added, removed, medium;
	uint64_t incomplete; /* keys whose media the master did not tell */
	const char *why;     /* the reason of a failure, or NULL */
	double seconds;
	const char *tenant; /* the tenant_id asked about */
	bool default_only;  /* the master turned out to list tenant default only */
} kv_recon_summary;

KV_EXTERN void kv_recon_summary_of(const kv_recon_run *r, kv_recon_summary *out);

#ifdef __cplusplus
}
#endif

#endif
