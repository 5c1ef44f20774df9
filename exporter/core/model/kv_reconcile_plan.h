/* SPDX-License-Identifier: Apache-2.0 */
/* When a source reconciles, and why (docs/design.md, "Reconciliation"):
 * at start-up until it first succeeds; when the stream's view drifts from
 * the master's key count; when tenant `default` is stale (a gap, a
 * restart, a failover: anything but a reconciliation that could not ask
 * about every key); and otherwise every PERIODS_WITHOUT_CAUSE intervals.
 * After a failure it retries in 2, 4, 8 ... seconds, never later than the
 * interval.  Pure: the reconciler thread asks, sleeps and acts. */
#ifndef KV_RECONCILE_PLAN_H
#define KV_RECONCILE_PLAN_H

#include <stdbool.h>

#include "kv_reconcile_replay.h"
#include "kv_state.h"

#define KV_RECONCILE_IDLE_PERIODS 6 /* intervals between reconciliations nothing calls for */
/* The one tenant upstream's GET /get_all_keys lists (and master_key_count
 * covers alone when the stream shows no other) */
#define KV_TENANT_DEFAULT ((kv_str){"default", 7})

typedef struct kv_reconcile_plan {
	double interval; /* --master.reconcile-interval, seconds */
	bool ever_ok;
	double last_ok;
	unsigned failures; /* in a row */
} kv_reconcile_plan;

void kv_reconcile_plan_init(kv_reconcile_plan *p, double interval);

/* The backend whose tenant `default` a source reconciles: `given`
 * (backend= in --source), else the only one the state holds.  NULL, with
 * *why, when there is none yet or there are several. */
const char *kv_reconcile_backend(const kv_state *st, const char *given, const char **why);

/* Tenant `default` of backend is stale for a reason a reconciliation
 * answers (every reason but KV_STALE_RECONCILE_INCOMPLETE, which another
 * reconciliation would not cure). */
bool kv_reconcile_stale(const kv_state *st, kv_str backend);

/* What calls for a reconciliation at `now`, or NULL: "startup", "drift",
 * "stale" or "periodic". */
const char *kv_reconcile_cause(const kv_reconcile_plan *p, bool drifting, bool stale, double now);

/* An attempt started at t0 ended at t1 with res (KV_RECON__RESULTS: the
 * master stands by, nothing to count).  Returns when to look again. */
double kv_reconcile_done(kv_reconcile_plan *p, enum kv_recon_result res, double t0, double t1);

#endif
