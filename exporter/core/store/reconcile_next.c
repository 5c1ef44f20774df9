/* SPDX-License-Identifier: Apache-2.0 */
/* The plan's next step for a store (mkv_store_recon_next): tenant default
 * first, by the plan's own causes; then, where the serving master lists
 * tenants (or has not been asked yet), the other tenants of the backend,
 * stale ones before periodic ones.  And what a run found out about the
 * master's listing (kv_store_lists_note). */
#include <string.h>

#include "kv_master_keys.h"
#include "kv_store_impl.h"

static bool of_backend(const kv_tenant *t, const char *backend)
{
	size_t n = strlen(backend);
	return t->backend_len == n && !memcmp(t->backend_id, backend, n);
}

/* Whether the serving master may be asked about other tenants now (it
 * lists them, or was not asked since it said it lists default only). */
static bool may_list(kv_store_part *p, double now)
{
	if (p->lists == KV_LISTS_DEFAULT_ONLY && now >= p->lists_at + KV_LISTS_RECHECK)
		p->lists = KV_LISTS_UNKNOWN;
	return p->lists != KV_LISTS_DEFAULT_ONLY;
}

/* The other tenant most due, or -1: the first stale one whose time has
 * come, else the first due periodically.  A periodic turn asks a master
 * not yet asked whether it lists tenants too: with every tenant exact (an
 * empty store proven, a peer's state taken) nothing else would ask, and a
 * master that lists them would never have them checked. */
static long pick_tenant(mkv_store *s, const char *backend, double now, const char **cause)
{
	long periodic = -1;
	for (size_t i = 0; i < kv_state_tenant_count(s->state); i++) {
		const kv_tenant *t = kv_state_tenant_at(s->state, i);
		mkv_str id = {t->tenant_id, t->tenant_len};
		if (kv_tenant_is_default(id) || !of_backend(t, backend) || t->tenant_len >= MKV_RECON_TENANT_MAX ||
		    !kv_keys_tenant_nameable(id))
			continue;
		const char *why = kv_reconcile_tenant_cause(&s->plan, kv_state_recon_times(s->state, i),
							    kv_reconcile_curable(t), now);
		if (why && !strcmp(why, "stale")) {
			*cause = why;
			return (long)i;
		}
		if (why && periodic < 0)
			periodic = (long)i;
	}
	*cause = periodic >= 0 ? "periodic" : NULL;
	return periodic;
}

enum mkv_recon_next mkv_store_recon_next(mkv_store *s, double now, mkv_recon_job *job)
{
	memset(job, 0, sizeof(*job));
	job->backend = kv_reconcile_backend(s->state, s->cfg.backend, &job->why);
	/* the serving master's: after a failover, the new leader's */
	job->leader = mkv_store_leader(s);
	if (job->leader < 0)
		return MKV_RECON_NO_LEADER;
	if (!job->backend)
		return MKV_RECON_WAIT;
	bool stale = kv_reconcile_stale(s->state, (mkv_str){job->backend, (uint32_t)strlen(job->backend)});
	job->cause = kv_reconcile_cause(&s->plan, s->drift.on, stale, now);
	if (job->cause) {
		memcpy(job->tenant, KV_TENANT_DEFAULT.ptr, KV_TENANT_DEFAULT.len);
		return MKV_RECON_GO;
	}
	if (!may_list(&s->parts[job->leader], now))
		return MKV_RECON_NOT_NOW;
	long i = pick_tenant(s, job->backend, now, &job->cause);
	if (i < 0)
		return MKV_RECON_NOT_NOW;
	const kv_tenant *t = kv_state_tenant_at(s->state, (size_t)i);
	memcpy(job->tenant, t->tenant_id, t->tenant_len);
	return MKV_RECON_GO;
}

void kv_store_lists_note(mkv_store *s, int member, enum kv_listed how, double now)
{
	if (member < 0 || (size_t)member >= s->n)
		return;
	kv_store_part *p = &s->parts[member];
	if (how == KV_LISTED_TAKE) {
		p->lists = KV_LISTS_TENANTS;
	} else if (how == KV_LISTED_DEFAULT_ONLY) {
		p->lists = KV_LISTS_DEFAULT_ONLY;
		p->lists_at = now;
	}
}
