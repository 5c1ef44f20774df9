/* SPDX-License-Identifier: Apache-2.0 */
/* A stream fed one event per message, for the tests of the state's rules as
 * the exporter applies them (test_state.c, test_cleared.c): the fixture,
 * its events, a tenant's placement, and a budget that must be whole again
 * at the end.  Each test makes its own stream.  Include after <cmocka.h>. */
#ifndef STREAM_FIXTURE_H
#define STREAM_FIXTURE_H

#include <stdlib.h>

#include "feed.h"

typedef struct stream_fx {
	mkv_budget budget;
	kv_stream *st;
	uint64_t seq;
	uint64_t eid;
} stream_fx;

/* A fixture with its budget, and no stream yet. */
static inline stream_fx *stream_fx_new(void)
{
	stream_fx *f = calloc(1, sizeof(*f));
	mkv_budget_init(&f->budget, 1000, 1000000);
	return f;
}

/* Once the test freed what it made: every object and tenant is given back. */
static inline int stream_fx_free(stream_fx *f)
{
	assert_int_equal(atomic_load(&f->budget.objects), 0);
	assert_int_equal(atomic_load(&f->budget.tenants), 0);
	free(f);
	return 0;
}

/* One event per message, in sequence. */
static inline void ev1(stream_fx *f, const char *type, const char *tenant_id, const char *medium, const char *key)
{
	ev_spec e;
	ev_init(&e, EV_UPSTREAM, type, ++f->eid, B, tenant_id, medium, key);
	assert_int_equal(feed(f->st, ++f->seq, &e, 1), MKV_OK);
}

/* Tenant t's objects by placement, and its table holds as many. */
static inline void expect_placement(stream_fx *f, const char *t, uint64_t cpu_only, uint64_t disk_only, uint64_t both)
{
	const kv_tenant *tn = tenant(f->st, t);
	assert_non_null(tn);
	assert_int_equal(tn->counts.placement[MKV_PLACE_CPU_ONLY], cpu_only);
	assert_int_equal(tn->counts.placement[MKV_PLACE_DISK_ONLY], disk_only);
	assert_int_equal(tn->counts.placement[MKV_PLACE_CPU_AND_DISK], both);
	assert_int_equal(kv_objtable_count(&tn->objects), kv_tenant_objects(tn));
}

#endif
