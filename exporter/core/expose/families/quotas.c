/* SPDX-License-Identifier: Apache-2.0 */
/* Tenant quotas, as the leader's GET /api/v1/tenant_quotas reports them. */
#include "kv_family.h"

KV_U64(requested, true, a->q->requested)
KV_U64(effective, true, a->q->effective)
KV_U64(charged, true, a->q->charged)
KV_U64(over_quota, true, a->q->over_quota)
KV_U64(admission_closed, true, a->q->admission_closed)
KV_U64(enabled, a->s->polled && a->s->quotas.mode != KV_QUOTAS_UNKNOWN, a->s->quotas.mode == KV_QUOTAS_ON)
KV_U64(overflow, a->s->polled && a->s->quotas.mode == KV_QUOTAS_ON, a->s->quotas.overflow)
KV_U64(rejects_overflow, a->s->polled && a->s->quotas.mode == KV_QUOTAS_ON, a->s->rejects.overflow)
KV_U64(evictions_overflow, a->s->polled && a->s->quotas.mode == KV_QUOTAS_ON, a->s->evictions.overflow)

static void rejects(kv_emit *e, const kv_at *a)
{
	const kv_quota_rejects *r = &a->s->rejects;
	for (size_t i = 0; a->s->polled && i < r->n; i++) {
		const kv_label l[] = {{"tenant_id", r->names.data + r->v[i].tenant_at},
				      {"reason", r->names.data + r->v[i].reason_at}};
		kv_sample_labels(e, l, 2, r->v[i].count);
	}
}

static void evicted(kv_emit *e, const kv_at *a)
{
	const kv_quota_rejects *r = &a->s->evictions;
	for (size_t i = 0; a->s->polled && i < r->n; i++)
		kv_sample_labels(e, &(kv_label){"tenant_id", r->names.data + r->v[i].tenant_at}, 1, r->v[i].count);
}

static void poll_errors(kv_emit *e, const kv_at *a)
{
	if (a->s->polled)
		kv_sample_poll_errors(e, a->s->quota_errors);
}

#define QUOTA  KV_SCOPE_QUOTA, 0, kv_any_polled
#define SOURCE KV_SCOPE_SOURCE, 0, kv_any_polled

static const kv_family families[] = {
	{"mooncake_kv_tenant_quota_requested_bytes", "gauge", "The tenant's quota as its policy asks for it.", QUOTA,
	 requested},
	{"mooncake_kv_tenant_quota_effective_bytes", "gauge",
	 "The tenant's quota as the leader enforces it, after its fair-share recomputation across tenants.", QUOTA,
	 effective},
	{"mooncake_kv_tenant_charged_bytes", "gauge", "Bytes the leader charges to the tenant's quota.", QUOTA,
	 charged},
	{"mooncake_kv_tenant_over_quota", "gauge", "1 when the leader says the tenant is over its quota.", QUOTA,
	 over_quota},
	{"mooncake_kv_tenant_admission_closed", "gauge",
	 "The leader's admission_closed: upstream closes admission for a tenant with no explicit quota policy "
	 "(not for one over its quota, whose puts evict its own objects first).",
	 QUOTA, admission_closed},
	{"mooncake_kv_tenant_quota_rejects_total", "counter",
	 "Puts the leader refused for the tenant's quota, by reason: the master's "
	 "mooncake_tenant_quota_reject_total, read from its /metrics.",
	 KV_SCOPE_SOURCE, KV_FAM_MIRRORED, kv_any_polled, rejects},
	{"mooncake_kv_tenant_evicted_bytes_total", "counter",
	 "Bytes the leader's quota eviction freed of the tenant: the master's mooncake_tenant_evict_bytes_total, read "
	 "from its /metrics. On Mooncake main the objects it erases publish nothing: a rise turns the tenant stale "
	 "(reason quota_eviction).",
	 KV_SCOPE_SOURCE, KV_FAM_MIRRORED, kv_any_polled, evicted},
	{"mooncake_kv_tenant_evictions_overflow", "gauge",
	 "Series of the leader's eviction counter left out: beyond 4 x --limits.max-tenants.", SOURCE,
	 evictions_overflow},
	{"mooncake_kv_tenant_quota_rejects_overflow", "gauge",
	 "Series of the leader's reject counter left out: beyond 4 x --limits.max-tenants.", SOURCE, rejects_overflow},
	{"mooncake_kv_tenant_quotas_enabled", "gauge",
	 "1 when the leader enforces tenant quotas, 0 when it answered 409 (not enabled); absent until known.", SOURCE,
	 enabled},
	{"mooncake_kv_tenant_quotas_overflow", "gauge",
	 "Tenants of the leader's last quota answer left out: beyond --limits.max-tenants.", SOURCE, overflow},
	{"mooncake_kv_master_quota_poll_errors_total", "counter",
	 "Failed reads of the leader's /api/v1/tenant_quotas, by reason (409, quotas not enabled, is not "
	 "counted).",
	 SOURCE, poll_errors},
};

KV_FAMILY_TABLE(kv_quota_families, families);
