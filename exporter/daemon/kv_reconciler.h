/* SPDX-License-Identifier: Apache-2.0 */
/* The reconciler thread of a source (exporter/daemon/reconciler.c): rebuilds tenant
 * default of the source's backend from the master's listing, at start-up,
 * when the state is stale or drifts from the master's key count, and
 * periodically; never more often than --master.reconcile-interval. */
#ifndef KV_RECONCILER_H
#define KV_RECONCILER_H

/* Thread body; arg is the kvd_source.  Returns when the stop flag is set. */
void *kvd_reconciler_main(void *arg);

#endif
