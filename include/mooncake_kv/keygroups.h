/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake_kv/keygroups.h: key groups, a label value derived from each
 * object key by the named capture groups of one regex (mkv_keygroup_re),
 * their captures joined by '/' in the order the groups open in the pattern;
 * a key the regex does not match is in group "".  docs/key-groups.md has the
 * rule and examples.  A compiled regex is read-only and may be shared by
 * every store (mkv_store_cfg.key_groups); it must outlive them. */
#ifndef MOONCAKE_KV_KEYGROUPS_H
#define MOONCAKE_KV_KEYGROUPS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include <mooncake_kv/common.h>

#define MKV_KEYGROUP_MAX_LEN 256 /* a longer group is cut here */

typedef struct mkv_keygroup_re mkv_keygroup_re;

/* Compiles pattern (PCRE2, JIT when available).  NULL with a one-line
 * reason in err: PCRE2's message and the offset, or no named group. */
MKV_EXTERN mkv_keygroup_re *mkv_keygroup_compile(const char *pattern, char *err, size_t errlen);
MKV_EXTERN void mkv_keygroup_free(mkv_keygroup_re *re);
/* The named groups, in pattern order. */
MKV_EXTERN size_t mkv_keygroup_names(const mkv_keygroup_re *re);

#ifdef __cplusplus
}
#endif

#endif
