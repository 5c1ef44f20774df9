/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mooncake_kv/buf.h>

#include "kv_log.h"

/* Configuration frozen at start-up: the only globals of the program. */
static enum kvd_log_level min_level = KVD_LOG_INFO;
static enum kvd_log_format format = KVD_LOG_LOGFMT;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void kvd_log_setup(enum kvd_log_level level, enum kvd_log_format fmt)
{
	min_level = level;
	format = fmt;
}

bool kvd_log_enabled(enum kvd_log_level level)
{
	return level >= min_level;
}

static void add_value(mkv_buf *b, const char *v)
{
	bool json = format == KVD_LOG_JSON;
	bool quote = json || v[0] == '\0' || strpbrk(v, " =\"\\\t\n") != NULL;
	if (quote)
		mkv_buf_addc(b, '"');
	for (const char *p = v; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '"' || c == '\\')
			mkv_buf_addc(b, '\\'), mkv_buf_addc(b, (char)c);
		else if (c == '\n')
			mkv_buf_adds(b, "\\n");
		else if (c < 0x20)
			mkv_buf_printf(b, "\\u%04x", c);
		else
			mkv_buf_addc(b, (char)c);
	}
	if (quote)
		mkv_buf_addc(b, '"');
}

static void add_pair(mkv_buf *b, bool first, const char *k, const char *v)
{
	if (format == KVD_LOG_JSON) {
		mkv_buf_adds(b, first ? "{\"" : ",\"");
		mkv_buf_adds(b, k);
		mkv_buf_adds(b, "\":");
	} else {
		if (!first)
			mkv_buf_addc(b, ' ');
		mkv_buf_adds(b, k);
		mkv_buf_addc(b, '=');
	}
	add_value(b, v);
}

void kvd_log(enum kvd_log_level level, const char *msg, ...)
{
	if (level < min_level)
		return;
	char ts[40];
	struct timespec now;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	size_t n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof(ts) - n, ".%03ldZ", now.tv_nsec / 1000000);

	mkv_buf b;
	mkv_buf_init(&b);
	add_pair(&b, true, "ts", ts);
	add_pair(&b, false, "level", level_names[level]);
	add_pair(&b, false, "msg", msg);
	va_list ap;
	va_start(ap, msg);
	for (const char *k; (k = va_arg(ap, const char *));) {
		const char *v = va_arg(ap, const char *);
		add_pair(&b, false, k, v ? v : "");
	}
	va_end(ap);
	mkv_buf_adds(&b, format == KVD_LOG_JSON ? "}\n" : "\n");
	if (mkv_buf_ok(&b) && write(STDERR_FILENO, b.data, b.len) < 0) {
		/* nowhere left to report it */
	}
	mkv_buf_free(&b);
}

bool kvd_ratelimit_allow(kvd_ratelimit *r, double now, unsigned *suppressed)
{
	*suppressed = 0;
	if (now - r->window_start >= r->window) {
		r->window_start = now;
		r->used = 0;
	}
	if (r->used >= r->burst) {
		r->suppressed++;
		return false;
	}
	r->used++;
	*suppressed = r->suppressed;
	r->suppressed = 0;
	return true;
}
