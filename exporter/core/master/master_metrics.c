/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kv_common.h"
#include "kv_master_metrics.h"

/* End of the label set that starts at p ('{'), or NULL: quoted values may
 * hold '}' and escaped quotes. */
static const char *labels_end(const char *p, const char *end)
{
	bool quoted = false;
	for (p++; p < end; p++) {
		if (quoted && *p == '\\')
			p++;
		else if (*p == '"')
			quoted = !quoted;
		else if (!quoted && *p == '}')
			return p + 1;
	}
	return NULL;
}

static int sample_value(const char *p, const char *end, double *v)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	char num[64];
	size_t n = 0;
	while (p < end && *p != ' ' && *p != '\t' && n < sizeof(num) - 1)
		num[n++] = *p++;
	num[n] = '\0';
	char *e;
	double d = strtod(num, &e);
	if (!n || *e || isnan(d))
		return KV_EINVAL;
	*v = d;
	return KV_OK;
}

enum kv_poll_error kv_master_metrics_sum(const char *body, size_t len, const char *name, double *sum)
{
	size_t nl = strlen(name);
	const char *p = body, *end = body + len;
	double total = 0;
	bool found = false;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		if ((size_t)(eol - p) > nl && memcmp(p, name, nl) == 0 &&
		    (p[nl] == '{' || p[nl] == ' ' || p[nl] == '\t')) {
			const char *v = p + nl;
			if (*v == '{' && !(v = labels_end(v, eol)))
				return KV_POLL_FIELD;
			double d;
			if (sample_value(v, eol, &d) != KV_OK)
				return KV_POLL_FIELD;
			total += d;
			found = true;
		}
		p = eol + 1;
	}
	if (!found)
		return KV_POLL_FIELD;
	*sum = total;
	return KV_POLL_OK;
}
