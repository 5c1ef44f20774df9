/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <string.h>

#include "kv_reconcile_plan.h"

void kv_reconcile_plan_init(kv_reconcile_plan *p, double interval)
{
	memset(p, 0, sizeof(*p));
	p->interval = interval;
}

const char *kv_reconcile_backend(const kv_state *st, const char *given, const char **why)
{
	*why = NULL;
	if (given)
		return given;
	const kv_tenant *first = NULL;
	for (size_t i = 0; i < kv_state_tenant_count(st); i++) {
		const kv_tenant *t = kv_state_tenant_at(st, i);
		if (!first)
			first = t;
		else if (t->backend_len != first->backend_len ||
			 memcmp(t->backend_id, first->backend_id, t->backend_len)) {
			*why = "the stream carries several backend_ids: give backend= in --source";
			return NULL;
		}
	}
	if (!first)
		*why = "no event has arrived yet to tell the backend_id (or give backend= in --source)";
	return first ? first->backend_id : NULL;
}

bool kv_reconcile_stale(const kv_state *st, kv_str backend)
{
	const kv_tenant *t = kv_state_find_tenant(st, backend, KV_TENANT_DEFAULT);
	return t && (t->stale & ~(unsigned)KV_STALE_RECONCILE_INCOMPLETE);
}

const char *kv_reconcile_cause(const kv_reconcile_plan *p, bool drifting, bool stale, double now)
{
	if (!p->ever_ok)
		return "startup";
	if (drifting)
		return "drift";
	if (stale)
		return "stale";
	if (now >= p->last_ok + KV_RECONCILE_IDLE_PERIODS * p->interval)
		return "periodic";
	return NULL;
}

double kv_reconcile_done(kv_reconcile_plan *p, enum kv_recon_result res, double t0, double t1)
{
	if (res == KV_RECON__RESULTS) /* a standby: ask again later */
		return t1 + p->interval;
	if (res == KV_RECON_OK) {
		p->ever_ok = true;
		p->last_ok = t1;
		p->failures = 0;
		return t0 + p->interval;
	}
	/* 2, 4, 8 ... seconds, never more than the interval */
	p->failures += p->failures < 30;
	return t1 + fmin(p->interval, ldexp(1, (int)p->failures));
}
