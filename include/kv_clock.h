/* The wall clock, as the metrics and the logs want it. */
#ifndef KV_CLOCK_H
#define KV_CLOCK_H

double kv_now(void); /* unix seconds */

#endif
