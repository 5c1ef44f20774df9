/* The reconciler thread of a source (exporter/reconcile.c): rebuilds tenant
 * default of the source's backend from the master's listing, at start-up,
 * when the state is stale or drifts from the master's key count, and
 * periodically; never more often than --master.reconcile-interval. */
#ifndef KV_RECONCILE_H
#define KV_RECONCILE_H

/* Thread body; arg is the kv_source.  Returns when the stop flag is set. */
void *kv_reconcile_main(void *arg);

#endif
