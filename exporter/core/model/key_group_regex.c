/* SPDX-License-Identifier: Apache-2.0 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_key_group_regex.h"
#include "kv_regex.h"

struct mkv_keygroup_re {
	pcre2_code *code;
	uint32_t n;          /* named groups */
	uint32_t number[64]; /* their group numbers, in pattern order */
};

struct kv_keygroup_matcher {
	const mkv_keygroup_re *re;
	pcre2_match_data *md;
};

static int by_number(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

mkv_keygroup_re *mkv_keygroup_compile(const char *pattern, char *err, size_t errlen)
{
	/* keys are bytes: no UTF check, so a key that is not UTF-8 still matches */
	pcre2_code *c = kv_regex_compile(pattern, 0, err, errlen);
	if (!c)
		return NULL;
	uint32_t n = 0, entry = 0;
	PCRE2_SPTR table;
	pcre2_pattern_info(c, PCRE2_INFO_NAMECOUNT, &n);
	pcre2_pattern_info(c, PCRE2_INFO_NAMEENTRYSIZE, &entry);
	pcre2_pattern_info(c, PCRE2_INFO_NAMETABLE, &table);
	mkv_keygroup_re *re = calloc(1, sizeof(*re));
	if (!n || n > 64 || !re) {
		snprintf(err, errlen, "%s",
			 !re ? "out of memory"
			 : n ? "more than 64 named groups"
			     : "needs a named group, like (?<model>[^@]+)");
		pcre2_code_free(c);
		free(re);
		return NULL;
	}
	/* the name table is sorted by name: the label follows the pattern */
	for (uint32_t i = 0; i < n; i++)
		re->number[i] = (uint32_t)table[i * entry] << 8 | table[i * entry + 1];
	qsort(re->number, n, sizeof(re->number[0]), by_number);
	pcre2_jit_compile(c, PCRE2_JIT_COMPLETE); /* without JIT, it still matches */
	re->code = c;
	re->n = n;
	return re;
}

void mkv_keygroup_free(mkv_keygroup_re *re)
{
	if (!re)
		return;
	pcre2_code_free(re->code);
	free(re);
}

size_t mkv_keygroup_names(const mkv_keygroup_re *re)
{
	return re->n;
}

kv_keygroup_matcher *kv_keygroup_matcher_new(const mkv_keygroup_re *re)
{
	kv_keygroup_matcher *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->re = re;
	if (!(m->md = pcre2_match_data_create_from_pattern(re->code, NULL))) {
		free(m);
		return NULL;
	}
	return m;
}

void kv_keygroup_matcher_free(kv_keygroup_matcher *m)
{
	if (!m)
		return;
	pcre2_match_data_free(m->md);
	free(m);
}

size_t kv_keygroup_of(kv_keygroup_matcher *m, const char *key, size_t len, char *out)
{
	const mkv_keygroup_re *re = m->re;
	if (pcre2_match(re->code, (PCRE2_SPTR)key, len, 0, 0, m->md, NULL) < 0)
		return 0;
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
	uint32_t pairs = pcre2_get_ovector_count(m->md);
	size_t n = 0;
	bool any = false;
	for (uint32_t i = 0; i < re->n; i++) {
		uint32_t g = re->number[i];
		size_t from = 0, to = 0;
		if (g < pairs && ov[2 * g] != PCRE2_UNSET) /* an unset group is an empty part */
			from = ov[2 * g], to = ov[2 * g + 1] < ov[2 * g] ? ov[2 * g] : ov[2 * g + 1];
		any |= to > from;
		if (i && n < MKV_KEYGROUP_MAX_LEN)
			out[n++] = '/';
		size_t k = to - from < MKV_KEYGROUP_MAX_LEN - n ? to - from : MKV_KEYGROUP_MAX_LEN - n;
		memcpy(out + n, key + from, k);
		n += k;
	}
	return any ? n : 0;
}
