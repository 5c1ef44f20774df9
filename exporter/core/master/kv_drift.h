/* SPDX-License-Identifier: Apache-2.0 */
/* Drift: the stream's view of a store has gone wrong when it disagrees with
 * the master's own key count (master_key_count in the master's /metrics)
 * poll after poll.  The count covers every tenant, so it is judged while
 * every object the state holds is in tenant `default` (which the
 * reconciler's listing covers), or while every tenant is exact: then the
 * sum of all tenants must be the master's count, beyond the events in
 * flight during the poll, and a difference is an erasure the stream never
 * told (upstream's BatchRemove,
 * RemoveAll, RemoveByRegex).  Pure; the store hands each poll's count here
 * and acts on the verdict (kv_drift_blame): a reconciliation of tenant
 * `default` first where reconciliation is on, then every exact tenant it
 * cannot reconcile turns stale (KV_STALE_DRIFT). */
#ifndef KV_DRIFT_H
#define KV_DRIFT_H

#include <stdbool.h>

#include "kv_state.h"

#define KV_DRIFT_POLLS 3 /* polls in a row before a difference counts as drift */

typedef struct kv_drift {
	unsigned polls;  /* polls in a row the state and the master disagreed */
	bool on;         /* KV_DRIFT_POLLS of them: the stream's view has gone wrong */
	bool exact;      /* the streak was judged over exact tenants (not only `default`) */
	bool attempted;  /* a reconciliation ended since the drift began */
	bool reconciled; /* ... and rebuilt tenant `default` */
} kv_drift;

/* The figure two counts may differ by before they disagree: a few objects
 * in flight at any moment, or 1% of a large store. */
double kv_drift_tolerance(double keys);

/* One poll of the key count (ok: it was read, as `keys`; slack: how many
 * events may have been in flight between the master's count and the state,
 * received during the poll or still behind it, or < 0 when unknown).  Over
 * exact tenants the sum must be within the tolerance plus the slack; an
 * unknown slack says nothing.  A poll that failed, or a state with objects
 * outside tenant `default` that is not exact everywhere, ends a streak.
 * Returns d->on. */
bool kv_drift_observe(kv_drift *d, bool ok, double slack, double keys, const kv_state *state);
/* A reconciliation ended (ok: it rebuilt tenant `default`). */
void kv_drift_reconciled(kv_drift *d, bool ok);
/* Whether the exact tenants are to blame now: the drift is on over exact
 * tenants, and no reconciliation can mend it (reconciliation off, or one
 * ended since it began).  *spare: tenant `default` is not to blame (it was
 * just rebuilt from the master's own listing). */
bool kv_drift_blame(const kv_drift *d, bool reconciles, bool *spare_default);

#endif
