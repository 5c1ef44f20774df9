/* SPDX-License-Identifier: Apache-2.0 */
/* Drift: the stream's view of a store has gone wrong when it disagrees with
 * the master's own key count (master_key_count in the master's /metrics)
 * poll after poll.  The count covers every tenant, the reconciler's listing
 * only tenant `default`: drift is judged only while every object the state
 * holds is in tenant `default`.  Pure; the poller hands each poll's count
 * here, under the source's lock, and the reconciler answers drift with a
 * reconciliation. */
#ifndef KV_DRIFT_H
#define KV_DRIFT_H

#include <stdbool.h>

#include "kv_state.h"

#define KV_DRIFT_POLLS 3 /* polls in a row before a difference counts as drift */

typedef struct kv_drift {
	unsigned polls; /* polls in a row the state and the master disagreed */
	bool on;        /* KV_DRIFT_POLLS of them: the stream's view has gone wrong */
} kv_drift;

/* The figure two counts may differ by before they disagree: a few objects
 * in flight at any moment, or 1% of a large store. */
double kv_drift_tolerance(double keys);

/* One poll of the key count (ok: it was read, as `keys`).  A poll that
 * failed, or a state with objects outside tenant `default`, says nothing
 * and ends a streak.  Returns d->on. */
bool kv_drift_observe(kv_drift *d, bool ok, double keys, const kv_state *state);

#endif
