/* The wall clock, as the metrics and the logs want it. */
#ifndef KV_CLOCK_H
#define KV_CLOCK_H

#include <stdatomic.h>

double kv_now(void); /* unix seconds */

/* Sleeps until `until` (unix seconds) or until *stop is set, in steps of
 * 50 ms at most. */
void kv_sleep_until(const atomic_bool *stop, double until);

#endif
