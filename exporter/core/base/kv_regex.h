/* SPDX-License-Identifier: Apache-2.0 */
/* PCRE2 patterns given in flags (--key.group-regex, --metrics.exclude):
 * compiled once at start-up, with the reason in one line when a pattern
 * does not compile. */
#ifndef KV_REGEX_H
#define KV_REGEX_H

#include <stddef.h>
#include <stdint.h>
#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

/* NULL with "REASON at offset N" in err when the pattern does not compile. */
pcre2_code *kv_regex_compile(const char *pattern, uint32_t options, char *err, size_t errlen);

#endif
