/* SPDX-License-Identifier: Apache-2.0 */
/* The state's key groups (kv_state.h, "key groups"): each group's name by
 * id, found by its hash, within the budget of all sources. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include <mooncake_kv/buf.h>

#include "kv_array.h"
#include "kv_state_impl.h"

static kv_group_name dup_name(const char *p, size_t n)
{
	char *c = malloc(n + 1);
	if (c) {
		memcpy(c, p, n);
		c[n] = '\0';
	}
	return (kv_group_name){c, (uint32_t)n};
}

static enum mkv_err add_group_name(kv_state *s, const char *name, size_t len)
{
	if (s->n_gnames == s->cap_gnames) {
		kv_group_name *p = kv_array_grow(s->gnames, &s->cap_gnames, sizeof(*p), 16, 0);
		if (!p)
			return MKV_ENOMEM;
		s->gnames = p;
	}
	/* the index stays at most half full */
	if ((s->n_gnames + 1) * 2 > (s->gindex ? s->gindex_mask + 1 : 0)) {
		size_t cap = s->gindex ? (s->gindex_mask + 1) * 2 : 64;
		uint32_t *n = calloc(cap, sizeof(*n));
		if (!n)
			return MKV_ENOMEM;
		for (size_t i = 0; i < s->n_gnames; i++)
			kv_state_index_put(n, cap - 1, XXH3_64bits(s->gnames[i].ptr, s->gnames[i].len),
					   (uint32_t)i + 1);
		free(s->gindex);
		s->gindex = n;
		s->gindex_mask = cap - 1;
	}
	kv_group_name c = dup_name(name, len);
	if (!c.ptr)
		return MKV_ENOMEM;
	kv_state_index_put(s->gindex, s->gindex_mask, XXH3_64bits(name, len), (uint32_t)s->n_gnames + 1);
	s->gnames[s->n_gnames++] = c;
	return MKV_OK;
}

enum mkv_err kv_state_set_keygroups(kv_state *s, const mkv_keygroup_re *re)
{
	if (!(s->matcher = kv_keygroup_matcher_new(re)) || add_group_name(s, "", 0) != MKV_OK ||
	    add_group_name(s, "__overflow__", 12) != MKV_OK)
		return MKV_ENOMEM;
	return MKV_OK;
}

bool kv_state_has_keygroups(const kv_state *s)
{
	return s->matcher != NULL;
}

uint32_t kv_state_group_id(kv_state *s, const char *name, size_t len)
{
	if (!len || !s->gindex)
		return KV_GROUP_NONE;
	for (size_t j = XXH3_64bits(name, len) & s->gindex_mask; s->gindex[j]; j = (j + 1) & s->gindex_mask) {
		const kv_group_name *g = &s->gnames[s->gindex[j] - 1];
		if (g->len == len && memcmp(g->ptr, name, len) == 0)
			return s->gindex[j] - 1;
	}
	/* a new group: within the budget of all sources, or the overflow group */
	if (atomic_fetch_add(&s->budget->key_groups, 1) >= s->budget->max_key_groups ||
	    add_group_name(s, name, len) != MKV_OK) {
		atomic_fetch_sub(&s->budget->key_groups, 1);
		s->groups_overflow++;
		return KV_GROUP_OVERFLOW;
	}
	return (uint32_t)s->n_gnames - 1;
}

size_t kv_state_group_count(const kv_state *s)
{
	return s->n_gnames;
}

mkv_str kv_state_group_name(const kv_state *s, uint32_t id)
{
	return id < s->n_gnames ? (mkv_str){s->gnames[id].ptr, s->gnames[id].len} : (mkv_str){"", 0};
}

uint64_t kv_state_groups_overflow(const kv_state *s)
{
	return s->groups_overflow;
}
