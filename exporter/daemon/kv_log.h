/* SPDX-License-Identifier: Apache-2.0 */
/* Structured logs on stderr, logfmt or JSON, one write per line so lines
 * from different threads never interleave.  Level and format are set once
 * at start-up, before any thread starts. */
#ifndef KV_LOG_H
#define KV_LOG_H

#include <stdbool.h>

enum kvd_log_level { KVD_LOG_DEBUG, KVD_LOG_INFO, KVD_LOG_WARN, KVD_LOG_ERROR };
enum kvd_log_format { KVD_LOG_LOGFMT, KVD_LOG_JSON };

void kvd_log_setup(enum kvd_log_level level, enum kvd_log_format format);
bool kvd_log_enabled(enum kvd_log_level level);

/* kvd_log(level, msg, key1, value1, key2, value2, ..., NULL): string pairs. */
void kvd_log(enum kvd_log_level level, const char *msg, ...) __attribute__((sentinel));

/* At most `burst` messages per `window` seconds; the first message allowed
 * after a quiet spell reports how many were held back.  Owned by one thread. */
typedef struct kvd_ratelimit {
	double window;
	unsigned burst;
	double window_start;
	unsigned used;
	unsigned suppressed;
} kvd_ratelimit;

/* The first window opens at the first message, whatever the clock's origin
 * (a monotonic clock reads a few seconds on a machine just booted). */
#define KVD_RATELIMIT(window_s, burst_n)            \
	{                                           \
		(window_s), (burst_n), -1e300, 0, 0 \
	}

/* True when a message may be logged now; *suppressed is set to how many were
 * dropped since the last one allowed (0 usually). */
bool kvd_ratelimit_allow(kvd_ratelimit *r, double now, unsigned *suppressed);

#endif
