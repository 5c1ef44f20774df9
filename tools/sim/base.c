/* SPDX-License-Identifier: Apache-2.0 */
/* What every part of the simulator uses: dying with a message, the random
 * numbers (one seeded generator: a run is repeatable), the clock, and the
 * stop flag the signal handler sets. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

#include "sim.h"

volatile sig_atomic_t sim_stopping;

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("mooncake-kv-sim: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

uint64_t rnd(struct sim *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void sleep_s(double s)
{
	if (s <= 0)
		return;
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !sim_stopping)
		;
}
