/* SPDX-License-Identifier: Apache-2.0 */
/* The wall clock, as the metrics and the logs want it. */
#ifndef KV_CLOCK_H
#define KV_CLOCK_H

#include <stdatomic.h>
#include <stdbool.h>

double kv_now(void);  /* unix seconds */
double kv_mono(void); /* seconds on a clock that never steps: for durations */

/* Sleeps until `until` (unix seconds) or until *stop is set, in steps of
 * 50 ms at most. */
void kv_sleep_until(const atomic_bool *stop, double until);
/* The same, returning early (true) once *wake is set, which it clears. */
bool kv_sleep_until_woken(const atomic_bool *stop, atomic_bool *wake, double until);

#endif
