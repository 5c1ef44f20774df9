/* SPDX-License-Identifier: Apache-2.0 */
/* A tenant's figures per key group (exporter/core/model/key_group_counts.c),
 * through the state: the same set semantics as the tenant's, and the
 * process's bound on the groups' names (state_groups.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kv_key_group_regex.h"
#include "kv_state.h"

#include <cmocka.h>

static mkv_str S(const char *s)
{
	return (mkv_str){s, (uint32_t)strlen(s)};
}

static void apply(kv_state *s, const char *tenant, const char *type, const char *key, unsigned medium)
{
	kv_event e = {.type = !strcmp(type, "stored")    ? MKV_EV_STORED
			      : !strcmp(type, "removed") ? MKV_EV_REMOVED
							 : MKV_EV_CLEARED,
		      .medium = (uint8_t)medium,
		      .has_key = key != NULL,
		      .backend_id = S("b"),
		      .tenant_id = S(tenant),
		      .object_key = S(key ? key : "")};
	assert_int_equal(kv_state_apply(s, &e, MKV_DIALECT_MEDIA), MKV_OK);
}

/* The figures of group `name` in tenant t, or NULL. */
static const kv_group_counts *in_group(const kv_state *s, const char *tenant, const char *name)
{
	const kv_tenant *t = kv_state_find_tenant(s, S("b"), S(tenant));
	for (uint32_t i = 0; t && i < t->groups.n; i++) {
		mkv_str g = kv_state_group_name(s, t->groups.v[i].id);
		if (g.len == strlen(name) && !memcmp(g.ptr, name, g.len))
			return &t->groups.v[i];
	}
	return NULL;
}

/* Per group, the same set semantics as the tenant: stored/removed per
 * medium, idempotent, upsert, cleared; the group recomputed from each key. */
static void test_set_semantics_per_group(void **state)
{
	(void)state;
	char err[256];
	mkv_keygroup_re *re = mkv_keygroup_compile("^(?<model>[^/]+)/", err, sizeof(err));
	mkv_budget budget;
	mkv_budget_init(&budget, 10, 100);
	kv_state *s = kv_state_new(&budget, 9);
	assert_int_equal(kv_state_set_keygroups(s, re), MKV_OK);
	apply(s, "t", "stored", "llama/1", MKV_MEDIUM_CPU);
	apply(s, "t", "stored", "llama/1", MKV_MEDIUM_CPU); /* again: idempotent */
	apply(s, "t", "stored", "llama/1", MKV_MEDIUM_DISK);
	apply(s, "t", "stored", "llama/2", MKV_MEDIUM_DISK);
	apply(s, "t", "stored", "qwen/1", MKV_MEDIUM_CPU);
	apply(s, "t", "stored", "no-slash", MKV_MEDIUM_CPU);
	apply(s, "t", "removed", "llama/2", MKV_MEDIUM_CPU); /* not on cpu: nothing moves */
	apply(s, "t", "removed", "qwen/1", MKV_MEDIUM_CPU);  /* gone */
	apply(s, "t", "removed", "llama/1", MKV_MEDIUM_DISK);
	apply(s, "t", "stored", "llama/1", MKV_MEDIUM_DISK); /* upsert: removed, then stored */

	const kv_group_counts *llama = in_group(s, "t", "llama"), *qwen = in_group(s, "t", "qwen"),
			      *none = in_group(s, "t", "");
	assert_non_null(llama);
	assert_int_equal(kv_group_objects(llama), 2);
	assert_int_equal(llama->placement[MKV_PLACE_CPU_AND_DISK], 1);
	assert_int_equal(llama->placement[MKV_PLACE_DISK_ONLY], 1);
	assert_int_equal(llama->events[0], 5);
	assert_int_equal(llama->events[1], 2);
	assert_int_equal(kv_group_objects(qwen), 0);
	assert_int_equal(qwen->events[1], 1);
	assert_int_equal(kv_group_objects(none), 1); /* the key that does not match */
	/* the groups add up to the tenant */
	const kv_tenant *t = kv_state_find_tenant(s, S("b"), S("t"));
	assert_int_equal(kv_tenant_objects(t),
			 kv_group_objects(llama) + kv_group_objects(qwen) + kv_group_objects(none));

	apply(s, "t", "cleared", NULL, 0);
	assert_int_equal(kv_group_objects(in_group(s, "t", "llama")), 0);
	assert_int_equal(in_group(s, "t", "llama")->events[0], 5); /* events stay */
	kv_state_free(s);
	mkv_keygroup_free(re);
	assert_int_equal(atomic_load(&budget.key_groups), 0);
}

/* Groups are bounded for all states together; beyond, __overflow__. */
static void test_overflow(void **state)
{
	(void)state;
	char err[256];
	mkv_keygroup_re *re = mkv_keygroup_compile("^(?<model>[^/]+)/", err, sizeof(err));
	mkv_budget budget;
	mkv_budget_init(&budget, 10, 100);
	budget.max_key_groups = 2;
	kv_state *s1 = kv_state_new(&budget, 1), *s2 = kv_state_new(&budget, 2);
	kv_state_set_keygroups(s1, re);
	kv_state_set_keygroups(s2, re);
	apply(s1, "t", "stored", "a/1", MKV_MEDIUM_CPU);
	apply(s2, "t", "stored", "b/1", MKV_MEDIUM_CPU);
	apply(s2, "t", "stored", "c/1", MKV_MEDIUM_CPU); /* the third group of the process */
	apply(s2, "t", "stored", "c/2", MKV_MEDIUM_CPU);
	apply(s2, "t", "stored", "a/3", MKV_MEDIUM_CPU); /* s2's own "a": a new group for it, no room */
	assert_int_equal(kv_group_objects(in_group(s2, "t", "__overflow__")), 3);
	assert_int_equal(kv_state_groups_overflow(s2), 3);
	assert_null(in_group(s2, "t", "c"));
	assert_int_equal(kv_group_objects(in_group(s1, "t", "a")), 1);
	assert_int_equal(atomic_load(&budget.key_groups), 2);
	kv_state_free(s2);
	assert_int_equal(atomic_load(&budget.key_groups), 1);
	kv_state_free(s1);
	mkv_keygroup_free(re);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_semantics_per_group),
		cmocka_unit_test(test_overflow),
	};
	return cmocka_run_group_tests_name("key_group_counts", tests, NULL, NULL);
}
