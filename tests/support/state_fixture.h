/* SPDX-License-Identifier: Apache-2.0 */
/* A state alone, with no stream in front, for the tests of the poller's
 * policies that judge it (test_leadership.c, test_drift.c): a small budget,
 * and a tenant's objects put straight in.  Each test keeps its own fixture
 * (leadership's holds the members' roles beside the state).  Include after
 * <cmocka.h>. */
#ifndef STATE_FIXTURE_H
#define STATE_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "kv_state.h"

/* An empty state in a small budget. */
static inline kv_state *state_open(mkv_budget *budget)
{
	mkv_budget_init(budget, 100, 100000);
	kv_state *st = kv_state_new(budget, 1);
	assert_non_null(st);
	return st;
}

/* n objects of a tenant on cpu, keys <tenant>-0 to <tenant>-<n-1>. */
static inline void state_put(kv_state *st, const char *tenant, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		char key[32];
		snprintf(key, sizeof(key), "%s-%u", tenant, i);
		kv_event ev = {.type = MKV_EV_STORED,
			       .medium = MKV_MEDIUM_CPU,
			       .has_key = true,
			       .tenant_id = {tenant, (uint32_t)strlen(tenant)},
			       .backend_id = {"b", 1},
			       .object_key = {key, (uint32_t)strlen(key)}};
		assert_int_equal(kv_state_apply(st, &ev, MKV_DIALECT_MEDIA), MKV_OK);
	}
}

#endif
