/* SPDX-License-Identifier: Apache-2.0 */
/* Per key group figures of one tenant: a short vector of the groups the
 * tenant holds objects of, kept by the same transitions as the tenant's own
 * figures (kv_state.h), and rebuilt by reconciliation.  Pure. */
#ifndef KV_KEY_GROUP_COUNTS_H
#define KV_KEY_GROUP_COUNTS_H

#include <stdint.h>

#include "kv_common.h"
#include "kv_lifetime.h"

#define KV_GROUP_NONE     0 /* the key did not match: key_group="" */
#define KV_GROUP_OVERFLOW 1 /* a new group beyond --limits.max-key-groups */

typedef struct kv_group_counts {
	uint32_t id;                          /* the group's index in its state's names */
	uint64_t placement[MKV_PLACE__COUNT]; /* live objects by placement */
	uint64_t events[2];                   /* applied stored, removed */
	kv_life_hist life;                    /* lifetimes of its objects (residency) */
} kv_group_counts;

typedef struct kv_group_vec {
	kv_group_counts *v;
	uint32_t n, cap;
} kv_group_vec;

/* The figures of group id, added (zeroed) if absent.  NULL when out of
 * memory.  Groups per tenant are few: a linear search. */
kv_group_counts *kv_group_vec_at(kv_group_vec *g, uint32_t id);
/* An object of the group went from media `before` to `after`. */
void kv_group_move(kv_group_counts *c, unsigned before, unsigned after);
/* Every object gone (cleared): the events stay. */
void kv_group_vec_empty(kv_group_vec *g);
void kv_group_vec_free(kv_group_vec *g);

static inline uint64_t kv_group_objects(const kv_group_counts *c)
{
	return c->placement[0] + c->placement[1] + c->placement[2];
}

#endif
