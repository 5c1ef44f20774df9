/* Reading one family out of a Prometheus text exposition (the master's
 * /metrics).  Pure, bounded by the body it is given. */
#ifndef KV_PROMTEXT_H
#define KV_PROMTEXT_H

#include <stddef.h>

/* Sums the samples of metric `name` (any labels).  Returns 0 with *sum set,
 * or KV_EINVAL when there is no such sample or one of them is not a
 * number. */
int kv_promtext_sum(const char *body, size_t len, const char *name, double *sum);

#endif
