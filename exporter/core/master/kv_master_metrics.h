/* SPDX-License-Identifier: Apache-2.0 */
/* Reading one family out of a Prometheus text exposition (the master's
 * /metrics).  Pure, bounded by the body it is given. */
#ifndef KV_MASTER_METRICS_H
#define KV_MASTER_METRICS_H

#include <stddef.h>

#include "kv_common.h"

/* Sums the samples of metric `name` (any labels).  Returns KV_POLL_OK with
 * *sum set, or KV_POLL_FIELD when there is no such sample or one of them is
 * not a number. */
enum kv_poll_error kv_master_metrics_sum(const char *body, size_t len, const char *name, double *sum);

#endif
