/* SPDX-License-Identifier: Apache-2.0 */
/* Key groups: a label value derived from each object key by the named
 * capture groups of one regex (--key.group-regex), their captures joined by
 * '/' in the order the groups open in the pattern.  A key the regex does not
 * match is in group "".  docs/key-groups.md has the rule and examples.
 *
 * The compiled regex (mooncake_kv/keygroups.h) is shared and read-only;
 * each thread matches with a matcher of its own.  Pure: no I/O. */
#ifndef KV_KEY_GROUP_REGEX_H
#define KV_KEY_GROUP_REGEX_H

#include <stddef.h>
#include <stdint.h>

#include <mooncake_kv/keygroups.h>

typedef struct kv_keygroup_matcher kv_keygroup_matcher;

/* NULL when out of memory. */
kv_keygroup_matcher *kv_keygroup_matcher_new(const mkv_keygroup_re *re);
void kv_keygroup_matcher_free(kv_keygroup_matcher *m);

/* Writes the group of key[0..len) into out[0..MKV_KEYGROUP_MAX_LEN) and
 * returns its length (0: no match, or every capture empty). */
size_t kv_keygroup_of(kv_keygroup_matcher *m, const char *key, size_t len, char *out);

#endif
