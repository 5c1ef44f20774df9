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

bool kv_reconcile_curable(const kv_tenant *t)
{
	return t->stale & ~(unsigned)KV_STALE_RECONCILE_INCOMPLETE;
}

bool kv_reconcile_stale(const kv_state *st, mkv_str backend)
{
	const kv_tenant *t = kv_state_find_tenant(st, backend, KV_TENANT_DEFAULT);
	return t && kv_reconcile_curable(t);
}

static bool periodic(const kv_reconcile_plan *p, const kv_recon_times *t, double now)
{
	return now >= t->last_ok + KV_RECONCILE_IDLE_PERIODS * p->interval;
}

const char *kv_reconcile_cause(const kv_reconcile_plan *p, bool drifting, bool stale, double now)
{
	const kv_recon_times *t = &p->dflt;
	if (now < t->next)
		return NULL;
	if (!t->ever_ok)
		return "startup";
	if (drifting)
		return "drift";
	if (stale)
		return "stale";
	return periodic(p, t, now) ? "periodic" : NULL;
}

const char *kv_reconcile_tenant_cause(const kv_reconcile_plan *p, kv_recon_times *t, bool stale, double now)
{
	if (!t->ever_ok && t->last_ok == 0)
		t->last_ok = now; /* the periodic rhythm of a tenant never reconciled starts here */
	if (now < t->next || now < p->others_next)
		return NULL;
	if (stale)
		return "stale";
	return periodic(p, t, now) ? "periodic" : NULL;
}

/* 2, 4, 8 ... seconds after t1, never more than the interval */
static double backoff(const kv_reconcile_plan *p, unsigned *failures, double t1)
{
	*failures += *failures < 30;
	return t1 + fmin(p->interval, ldexp(1, (int)*failures));
}

static double times_done(const kv_reconcile_plan *p, kv_recon_times *t, enum mkv_recon_result res, double t0, double t1)
{
	if (res == MKV_RECON_NOT_COUNTED) /* a standby: ask again later */
		return t->next = t1 + p->interval;
	if (res == MKV_RECON_OK) {
		t->ever_ok = true;
		t->last_ok = t1;
		t->failures = 0;
		return t->next = t0 + p->interval; /* from the start: a fixed rhythm */
	}
	return t->next = backoff(p, &t->failures, t1);
}

double kv_reconcile_done(kv_reconcile_plan *p, enum mkv_recon_result res, double t0, double t1)
{
	return times_done(p, &p->dflt, res, t0, t1);
}

double kv_reconcile_tenant_done(kv_reconcile_plan *p, kv_recon_times *t, enum mkv_recon_result res, double t0,
				double t1)
{
	if (res == MKV_RECON_OK || res == MKV_RECON_NOT_COUNTED) {
		p->others_failures = 0;
		p->others_next = 0;
	} else {
		p->others_next = backoff(p, &p->others_failures, t1);
	}
	return times_done(p, t, res, t0, t1);
}
