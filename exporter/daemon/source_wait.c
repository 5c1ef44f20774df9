/* SPDX-License-Identifier: Apache-2.0 */
/* Waiting on a source for the next round: the condition its threads wait
 * on, timed on the monotonic clock, and kvd_source_wait, which the pollers
 * and the reconciler use. */
#include <pthread.h>
#include <time.h>

#include "kv_source_impl.h"

/* A condition the threads wait on (a dialect, a round), timed on the
 * monotonic clock: a wall clock stepped back must not stretch the wait. */
int kvd_cond_init_mono(pthread_cond_t *c)
{
	pthread_condattr_t a;
	if (pthread_condattr_init(&a) != 0)
		return -1;
	int rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	if (rc == 0)
		rc = pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
	return rc;
}

bool kvd_source_wait(kvd_source *s, atomic_bool *wake, double left)
{
	struct timespec at;
	clock_gettime(CLOCK_MONOTONIC, &at); /* the clock s->wake waits on */
	if (left > 0) {
		at.tv_sec += (time_t)left;
		at.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
		if (at.tv_nsec >= 1000000000L) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000L;
		}
	}
	bool woken = false;
	int rc = 0;
	pthread_mutex_lock(&s->lock);
	/* 0: woken (or spuriously); ETIMEDOUT: the round is due */
	while (!atomic_load(s->stop) && !(woken = wake && atomic_exchange(wake, false)) && rc == 0 && left > 0)
		rc = pthread_cond_timedwait(&s->wake, &s->lock, &at);
	pthread_mutex_unlock(&s->lock);
	return woken;
}
