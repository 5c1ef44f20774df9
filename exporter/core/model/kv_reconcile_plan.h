/* SPDX-License-Identifier: Apache-2.0 */
/* When a source reconciles, and why (docs/design.md, "Reconciliation").
 * Tenant `default`, which every master can list: at start-up until it first
 * succeeds; when the stream's view drifts from the master's key count; when
 * it is stale (a gap, a restart, a failover: anything but a reconciliation
 * that could not ask about every key); and otherwise every
 * KV_RECONCILE_IDLE_PERIODS intervals.  Every other tenant, where the
 * master lists tenants: when it is stale, and otherwise every
 * KV_RECONCILE_IDLE_PERIODS intervals.  Each tenant at most once an
 * interval (from the start of its last success); after a failure it
 * retries in 2, 4, 8 ... seconds, never later than the interval, and after
 * a failure of another tenant's no such tenant is asked before the same
 * backoff (so that a master that fails is not asked once per tenant).
 * Pure: the reconciler thread asks, sleeps and acts. */
#ifndef KV_RECONCILE_PLAN_H
#define KV_RECONCILE_PLAN_H

#include <stdbool.h>
#include <string.h>

#include "kv_reconcile_replay.h"
#include "kv_state.h"

#define KV_RECONCILE_IDLE_PERIODS 6 /* intervals between reconciliations nothing calls for */
/* The one tenant upstream's GET /get_all_keys lists (and master_key_count
 * covers alone when the stream shows no other) */
#define KV_TENANT_DEFAULT ((mkv_str){"default", 7})

static inline bool kv_tenant_is_default(mkv_str t)
{
	return t.len == KV_TENANT_DEFAULT.len && !memcmp(t.ptr, KV_TENANT_DEFAULT.ptr, t.len);
}

typedef struct kv_reconcile_plan {
	double interval;     /* --master.reconcile-interval, seconds */
	kv_recon_times dflt; /* tenant default's */
	double others_next;  /* after a failure of another tenant's, none of them before this */
	unsigned others_failures;
} kv_reconcile_plan;

void kv_reconcile_plan_init(kv_reconcile_plan *p, double interval);

/* The backend whose tenant `default` a source reconciles: `given`
 * (backend= in --source), else the only one the state holds.  NULL, with
 * *why, when there is none yet or there are several. */
const char *kv_reconcile_backend(const kv_state *st, const char *given, const char **why);

/* Tenant `default` of backend is stale for a reason a reconciliation
 * answers (every reason but KV_STALE_RECONCILE_INCOMPLETE, which another
 * reconciliation would not cure). */
bool kv_reconcile_stale(const kv_state *st, mkv_str backend);

/* Whether a tenant is stale for a reason a reconciliation answers. */
bool kv_reconcile_curable(const kv_tenant *t);

/* What calls for a reconciliation of tenant default at `now`, or NULL:
 * "startup", "drift", "stale" or "periodic". */
const char *kv_reconcile_cause(const kv_reconcile_plan *p, bool drifting, bool stale, double now);
/* The same for another tenant (t its times), or NULL: "stale" or
 * "periodic" (a tenant never reconciled: KV_RECONCILE_IDLE_PERIODS
 * intervals after the plan first looked at it, which it notes in t). */
const char *kv_reconcile_tenant_cause(const kv_reconcile_plan *p, kv_recon_times *t, bool stale, double now);

/* An attempt of tenant default started at t0 ended at t1 with res
 * (MKV_RECON_NOT_COUNTED: the master stands by, nothing to count).  Returns
 * when it may be reconciled again. */
double kv_reconcile_done(kv_reconcile_plan *p, enum mkv_recon_result res, double t0, double t1);
/* The same for another tenant's attempt. */
double kv_reconcile_tenant_done(kv_reconcile_plan *p, kv_recon_times *t, enum mkv_recon_result res, double t0,
				double t1);

#endif
