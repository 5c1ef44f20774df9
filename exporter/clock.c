#include <time.h>

#include "kv_clock.h"

double kv_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void kv_sleep_until(const atomic_bool *stop, double until)
{
	while (!atomic_load(stop)) {
		double left = until - kv_now();
		if (left <= 0)
			return;
		if (left > 0.05)
			left = 0.05;
		struct timespec ts = {0, (long)(left * 1e9)};
		nanosleep(&ts, NULL);
	}
}
