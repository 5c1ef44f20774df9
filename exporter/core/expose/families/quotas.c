/* SPDX-License-Identifier: Apache-2.0 */
/* Tenant quotas, as the leader's GET /api/v1/tenant_quotas reports them. */
#include "kv_family.h"

static void tenant_quota_requested_bytes(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->q->requested);
}

static void tenant_quota_effective_bytes(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->q->effective);
}

static void tenant_charged_bytes(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->q->charged);
}

static void tenant_over_quota(kv_emit *e, const kv_at *a)
{
	if (kv_news(a, a->q->over_quota)) /* only while it holds */
		kv_sample_u64(e, KV_NO_LABEL, a->q->over_quota);
}

static void tenant_admission_closed(kv_emit *e, const kv_at *a)
{
	if (kv_news(a, a->q->admission_closed))
		kv_sample_u64(e, KV_NO_LABEL, a->q->admission_closed);
}

/* The leader's answer said quotas are on. */
static bool quotas_on(const kv_source_snap *s)
{
	return s->polled && s->quotas.mode == KV_QUOTAS_ON;
}

static void tenant_quotas_enabled(kv_emit *e, const kv_at *a)
{
	if (a->s->polled && a->s->quotas.mode != KV_QUOTAS_UNKNOWN)
		kv_sample_u64(e, KV_NO_LABEL, a->s->quotas.mode == KV_QUOTAS_ON);
}

static void tenant_quotas_overflow(kv_emit *e, const kv_at *a)
{
	if (quotas_on(a->s))
		kv_sample_u64(e, KV_NO_LABEL, a->s->quotas.overflow);
}

static void tenant_quota_rejects_overflow(kv_emit *e, const kv_at *a)
{
	if (quotas_on(a->s))
		kv_sample_u64(e, KV_NO_LABEL, a->s->rejects.overflow);
}

static void tenant_evictions_overflow(kv_emit *e, const kv_at *a)
{
	if (quotas_on(a->s))
		kv_sample_u64(e, KV_NO_LABEL, a->s->evictions.overflow);
}

static void tenant_quota_rejects_total(kv_emit *e, const kv_at *a)
{
	const kv_quota_rejects *r = &a->s->rejects;
	for (size_t i = 0; a->s->polled && i < r->n; i++) {
		const kv_label l[] = {{"tenant_id", r->names.data + r->v[i].tenant_at},
				      {"reason", r->names.data + r->v[i].reason_at}};
		kv_sample_labels(e, l, 2, r->v[i].count);
	}
}

static void tenant_evicted_bytes_total(kv_emit *e, const kv_at *a)
{
	const kv_quota_rejects *r = &a->s->evictions;
	for (size_t i = 0; a->s->polled && i < r->n; i++)
		kv_sample_labels(e, &(kv_label){"tenant_id", r->names.data + r->v[i].tenant_at}, 1, r->v[i].count);
}

static void master_quota_poll_errors_total(kv_emit *e, const kv_at *a)
{
	if (a->s->polled)
		kv_sample_poll_errors(e, a->s->quota_errors);
}

static const kv_family families[] = {
	{.name = "mooncake_kv_tenant_quota_requested_bytes",
	 .kind = KV_GAUGE,
	 .help = "The tenant's quota as its policy asks for it.",
	 .scope = KV_SCOPE_QUOTA,
	 .shown = kv_any_polled,
	 .samples = tenant_quota_requested_bytes},
	{.name = "mooncake_kv_tenant_quota_effective_bytes",
	 .kind = KV_GAUGE,
	 .help = "The tenant's quota as the leader enforces it, after its fair-share recomputation across tenants.",
	 .scope = KV_SCOPE_QUOTA,
	 .shown = kv_any_polled,
	 .samples = tenant_quota_effective_bytes},
	{.name = "mooncake_kv_tenant_charged_bytes",
	 .kind = KV_GAUGE,
	 .help = "Bytes the leader charges to the tenant's quota.",
	 .scope = KV_SCOPE_QUOTA,
	 .shown = kv_any_polled,
	 .samples = tenant_charged_bytes},
	{.name = "mooncake_kv_tenant_over_quota",
	 .kind = KV_GAUGE,
	 .help = "1 when the leader says the tenant is over its quota.",
	 .scope = KV_SCOPE_QUOTA,
	 .shown = kv_any_polled,
	 .samples = tenant_over_quota},
	{.name = "mooncake_kv_tenant_admission_closed",
	 .kind = KV_GAUGE,
	 .help = "The leader's admission_closed: upstream closes admission for a tenant with no explicit quota policy "
		 "(not for one over its quota, whose puts evict its own objects first).",
	 .scope = KV_SCOPE_QUOTA,
	 .shown = kv_any_polled,
	 .samples = tenant_admission_closed},
	{.name = "mooncake_kv_tenant_quota_rejects_total",
	 .kind = KV_COUNTER,
	 .help = "Puts the leader refused for the tenant's quota, by reason: the master's "
		 "mooncake_tenant_quota_reject_total, read from its /metrics.",
	 .scope = KV_SCOPE_SOURCE,
	 .labels = "tenant_id,reason",
	 .flags = KV_FAM_MIRRORED,
	 .shown = kv_any_polled,
	 .samples = tenant_quota_rejects_total},
	{.name = "mooncake_kv_tenant_evicted_bytes_total",
	 .kind = KV_COUNTER,
	 .help = "Bytes the leader's quota eviction freed of the tenant: the master's "
		 "mooncake_tenant_evict_bytes_total, read from its /metrics. On Mooncake main the objects it erases "
		 "publish nothing: a rise turns the tenant stale (reason quota_eviction).",
	 .scope = KV_SCOPE_SOURCE,
	 .labels = "tenant_id",
	 .flags = KV_FAM_MIRRORED,
	 .shown = kv_any_polled,
	 .samples = tenant_evicted_bytes_total},
	{.name = "mooncake_kv_tenant_evictions_overflow",
	 .kind = KV_GAUGE,
	 .help = "Series of the leader's eviction counter left out: beyond 4 x --limits.max-tenants.",
	 .scope = KV_SCOPE_SOURCE,
	 .shown = kv_any_polled,
	 .samples = tenant_evictions_overflow},
	{.name = "mooncake_kv_tenant_quota_rejects_overflow",
	 .kind = KV_GAUGE,
	 .help = "Series of the leader's reject counter left out: beyond 4 x --limits.max-tenants.",
	 .scope = KV_SCOPE_SOURCE,
	 .shown = kv_any_polled,
	 .samples = tenant_quota_rejects_overflow},
	{.name = "mooncake_kv_tenant_quotas_enabled",
	 .kind = KV_GAUGE,
	 .help = "1 when the leader enforces tenant quotas, 0 when it answered 409 (not enabled); absent until known.",
	 .scope = KV_SCOPE_SOURCE,
	 .shown = kv_any_polled,
	 .samples = tenant_quotas_enabled},
	{.name = "mooncake_kv_tenant_quotas_overflow",
	 .kind = KV_GAUGE,
	 .help = "Tenants of the leader's last quota answer left out: beyond --limits.max-tenants.",
	 .scope = KV_SCOPE_SOURCE,
	 .shown = kv_any_polled,
	 .samples = tenant_quotas_overflow},
	{.name = "mooncake_kv_master_quota_poll_errors_total",
	 .kind = KV_COUNTER,
	 .help = "Failed reads of the leader's /api/v1/tenant_quotas, by reason (409, quotas not enabled, is not "
		 "counted).",
	 .scope = KV_SCOPE_SOURCE,
	 .labels = "reason",
	 .shown = kv_any_polled,
	 .samples = master_quota_poll_errors_total},
};

KV_FAMILY_TABLE(kv_quota_families, families);
