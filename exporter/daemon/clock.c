/* SPDX-License-Identifier: Apache-2.0 */
#include <time.h>

#include "kv_clock.h"

static double seconds(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double kv_now(void)
{
	return seconds(CLOCK_REALTIME);
}

double kv_mono(void)
{
	return seconds(CLOCK_MONOTONIC);
}

bool kv_sleep_until_woken(const atomic_bool *stop, atomic_bool *wake, double until)
{
	while (!atomic_load(stop)) {
		if (wake && atomic_exchange(wake, false))
			return true;
		double left = until - kv_now();
		if (left <= 0)
			return false;
		if (left > 0.05)
			left = 0.05;
		struct timespec ts = {0, (long)(left * 1e9)};
		nanosleep(&ts, NULL);
	}
	return false;
}

void kv_sleep_until(const atomic_bool *stop, double until)
{
	kv_sleep_until_woken(stop, NULL, until);
}
