/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>

#include "kv_regex.h"

pcre2_code *kv_regex_compile(const char *pattern, uint32_t options, char *err, size_t errlen)
{
	int code;
	PCRE2_SIZE off;
	pcre2_code *c = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, options, &code, &off, NULL);
	if (!c) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(code, msg, sizeof(msg));
		snprintf(err, errlen, "%s at offset %zu", (const char *)msg, (size_t)off);
	}
	return c;
}
