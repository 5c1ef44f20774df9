/* SPDX-License-Identifier: Apache-2.0 */
/* The values a flag or a --source key may take, checked and converted:
 * durations, sizes, admin URLs, ports, choices.  Shared by the flag table
 * (config.c) and the source grammar (config_source.c). */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mooncake_kv/common.h>

#include "kv_config.h"
#include "kv_config_parse.h"

int kvd_parse_err(struct parse *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err, p->errlen, fmt, ap);
	va_end(ap);
	return MKV_EINVAL;
}

int kvd_parse_duration(const char *s, double *seconds)
{
	double total = 0;
	const char *p = s;
	if (!*p)
		return MKV_EINVAL;
	while (*p) {
		char *end;
		errno = 0;
		double v = strtod(p, &end);
		if (end == p || errno || v < 0)
			return MKV_EINVAL;
		p = end;
		double unit;
		if (strncmp(p, "ms", 2) == 0)
			unit = 0.001, p += 2;
		else if (*p == 's')
			unit = 1, p++;
		else if (*p == 'm')
			unit = 60, p++;
		else if (*p == 'h')
			unit = 3600, p++;
		else
			return MKV_EINVAL;
		total += v * unit;
	}
	*seconds = total;
	return MKV_OK;
}

int kvd_parse_size(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out)
{
	char *end;
	errno = 0;
	if (*s == '-' || *s == '\0')
		return MKV_EINVAL;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return MKV_EINVAL;
	*out = v;
	return MKV_OK;
}

bool kvd_url_ok(const char *u)
{
	return strncmp(u, "http://", 7) == 0 || strncmp(u, "https://", 8) == 0;
}

const char *kvd_url_problem(const char *u, char *why, size_t n)
{
	if (!kvd_url_ok(u)) {
		snprintf(why, n, "\"%s\" must start with http:// or https://", u);
		return why;
	}
	if (strlen(u) > KVD_URL_MAX) {
		snprintf(why, n, "\"%.40s...\" is longer than %d characters", u, KVD_URL_MAX);
		return why;
	}
	const char *host = strstr(u, "://") + 3, *end = host + strcspn(host, "/?#");
	/* user info may hold a colon: the host starts after the authority's last @ */
	for (const char *c = host; c < end; c++)
		if (*c == '@')
			host = c + 1;
	const char *port = NULL;
	if (*host == '[') { /* an IPv6 literal: its colons are not the port's */
		const char *close = memchr(host, ']', (size_t)(end - host));
		if (!close) {
			snprintf(why, n, "\"%s\": IPv6 address without its closing ]", u);
			return why;
		}
		port = close + 1 < end && close[1] == ':' ? close + 2 : NULL;
	} else {
		const char *colon = memchr(host, ':', (size_t)(end - host));
		port = colon ? colon + 1 : NULL;
	}
	if (host == end || *host == ':') {
		snprintf(why, n, "\"%s\" has no host", u);
		return why;
	}
	if (port) {
		char digits[8] = "";
		size_t len = (size_t)(end - port);
		if (len < sizeof(digits))
			memcpy(digits, port, len), digits[len] = 0;
		if (len >= sizeof(digits) || kvd_port_number(digits, 1) < 0) {
			snprintf(why, n, "\"%s\": port \"%.*s\" is not a number from 1 to 65535", u,
				 (int)(len > 16 ? 16 : len), port);
			return why;
		}
	}
	return NULL;
}

int kvd_dup_into(char **dst, const char *v)
{
	char *n = strdup(v);
	if (!n)
		return MKV_ENOMEM;
	free(*dst);
	*dst = n;
	return MKV_OK;
}

int kvd_choice_index(const char *const *choices, const char *word)
{
	for (int i = 0; choices[i]; i++)
		if (!strcmp(word, choices[i]))
			return i;
	return -1;
}

void kvd_choice_list(const char *const *choices, char *out, size_t n)
{
	size_t used = 0;
	out[0] = '\0';
	for (int i = 0; choices[i] && used < n; i++)
		used += (size_t)snprintf(out + used, n - used, "%s%s", i ? ", " : "", choices[i]);
}

/* A port as digits only: its number, if from `min` to 65535, else -1. */
int kvd_port_number(const char *s, int min)
{
	long v = 0;
	if (!*s || strlen(s) > 5)
		return -1;
	for (const char *c = s; *c; c++) {
		if (*c < '0' || *c > '9')
			return -1;
		v = v * 10 + (*c - '0');
	}
	return v >= min && v <= 65535 ? (int)v : -1;
}

const char *const kvd_dialect_modes[] = {"auto", "media", "object", NULL};
