/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <string.h>

#include "kv_drift.h"
#include "kv_reconcile_plan.h"

/* The state's objects, and whether all of them are in tenant `default`. */
static uint64_t state_objects(const kv_state *state, bool *all_default)
{
	uint64_t n = 0;
	*all_default = true;
	for (size_t i = 0; i < kv_state_tenant_count(state); i++) {
		const kv_tenant *t = kv_state_tenant_at(state, i);
		uint64_t o = kv_tenant_objects(t);
		n += o;
		if (o && (t->tenant_len != KV_TENANT_DEFAULT.len ||
			  memcmp(t->tenant_id, KV_TENANT_DEFAULT.ptr, t->tenant_len)))
			*all_default = false;
	}
	return n;
}

double kv_drift_tolerance(double keys)
{
	return fmax(16, keys / 100);
}

bool kv_drift_observe(kv_drift *d, bool ok, double slack, double keys, const kv_state *state)
{
	bool all_default;
	double objects = (double)state_objects(state, &all_default);
	bool exact = kv_state_all_exact(state);
	bool judged_exact = exact && !all_default;
	if (ok && judged_exact && slack < 0) /* how much was in flight is unknown: this poll tells nothing */
		return d->on;
	double tolerance = kv_drift_tolerance(keys) + (judged_exact ? slack : 0);
	bool apart = ok && (all_default || exact) && fabs(objects - keys) > tolerance;
	d->polls = apart ? d->polls + 1 : 0;
	d->exact = apart && exact;
	d->on = d->polls >= KV_DRIFT_POLLS;
	if (!d->on)
		d->attempted = d->reconciled = false;
	return d->on;
}

void kv_drift_reconciled(kv_drift *d, bool ok)
{
	if (!d->on)
		return;
	d->attempted = true;
	d->reconciled = ok;
}

bool kv_drift_blame(const kv_drift *d, bool reconciles, bool *spare_default)
{
	*spare_default = reconciles && d->reconciled;
	return d->on && d->exact && (!reconciles || d->attempted);
}
