/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include <mooncake_kv/buf.h>

#include "kv_array.h"
#include "kv_key_group_counts.h"

kv_group_counts *kv_group_vec_at(kv_group_vec *g, uint32_t id)
{
	for (uint32_t i = 0; i < g->n; i++)
		if (g->v[i].id == id)
			return &g->v[i];
	if (g->n == g->cap) {
		size_t cap = g->cap;
		kv_group_counts *p = kv_array_grow(g->v, &cap, sizeof(*p), 4, UINT32_MAX);
		if (!p)
			return NULL;
		g->v = p;
		g->cap = (uint32_t)cap;
	}
	kv_group_counts *c = &g->v[g->n++];
	memset(c, 0, sizeof(*c));
	c->id = id;
	return c;
}

void kv_group_move(kv_group_counts *c, unsigned before, unsigned after)
{
	if (before == after)
		return;
	if (before)
		c->placement[mkv_placement_of(before)]--;
	if (after)
		c->placement[mkv_placement_of(after)]++;
}

void kv_group_vec_empty(kv_group_vec *g)
{
	for (uint32_t i = 0; i < g->n; i++)
		memset(g->v[i].placement, 0, sizeof(g->v[i].placement));
}

void kv_group_vec_free(kv_group_vec *g)
{
	free(g->v);
	memset(g, 0, sizeof(*g));
}
