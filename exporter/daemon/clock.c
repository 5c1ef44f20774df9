/* SPDX-License-Identifier: Apache-2.0 */
#include <time.h>

#include "kv_clock.h"

static double seconds(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double kvd_now(void)
{
	return seconds(CLOCK_REALTIME);
}

double kvd_mono(void)
{
	return seconds(CLOCK_MONOTONIC);
}
