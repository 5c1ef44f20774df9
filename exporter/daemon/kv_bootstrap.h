/* SPDX-License-Identifier: Apache-2.0 */
/* --state.peer: at start-up, before any thread reads a socket, take every
 * source's state from the first peer exporter that gives a whole one
 * (mooncake_kv/handover.h).  Every member is connected first, so that what
 * the peer's copy lacks queues in ZMQ meanwhile; each peer gets at most
 * --state.peer-timeout.  Whatever happens is counted per source
 * (mooncake_kv_bootstrap_total) and logged; a source nothing was taken for
 * starts as it would without a peer. */
#ifndef KV_BOOTSTRAP_H
#define KV_BOOTSTRAP_H

#include <stddef.h>

typedef struct kvd_config kvd_config;
typedef struct kvd_source kvd_source;

void kvd_bootstrap_run(kvd_source *sources, size_t n, const kvd_config *cfg);

#endif
