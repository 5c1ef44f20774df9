/* SPDX-License-Identifier: Apache-2.0 */
/* Structured logs on stderr, logfmt or JSON, one write per line so lines
 * from different threads never interleave.  Level and format are set once
 * at start-up, before any thread starts. */
#ifndef KV_LOG_H
#define KV_LOG_H

#include <stdbool.h>

enum kv_log_level { KV_LOG_DEBUG, KV_LOG_INFO, KV_LOG_WARN, KV_LOG_ERROR };
enum kv_log_format { KV_LOG_LOGFMT, KV_LOG_JSON };

void kv_log_setup(enum kv_log_level level, enum kv_log_format format);
bool kv_log_enabled(enum kv_log_level level);

/* kv_log(level, msg, key1, value1, key2, value2, ..., NULL): string pairs. */
void kv_log(enum kv_log_level level, const char *msg, ...) __attribute__((sentinel));

/* At most `burst` messages per `window` seconds; the first message allowed
 * after a quiet spell reports how many were held back.  Owned by one thread. */
typedef struct kv_ratelimit {
	double window;
	unsigned burst;
	double window_start;
	unsigned used;
	unsigned suppressed;
} kv_ratelimit;

/* The first window opens at the first message, whatever the clock's origin
 * (a monotonic clock reads a few seconds on a machine just booted). */
#define KV_RATELIMIT(window_s, burst_n)             \
	{                                           \
		(window_s), (burst_n), -1e300, 0, 0 \
	}

/* True when a message may be logged now; *suppressed is set to how many were
 * dropped since the last one allowed (0 usually). */
bool kv_ratelimit_allow(kv_ratelimit *r, double now, unsigned *suppressed);

#endif
