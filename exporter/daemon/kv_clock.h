/* SPDX-License-Identifier: Apache-2.0 */
/* The wall clock, as the metrics and the logs want it. */
#ifndef KV_CLOCK_H
#define KV_CLOCK_H

double kvd_now(void);  /* unix seconds */
double kvd_mono(void); /* seconds on a clock that never steps: for durations */

#endif
