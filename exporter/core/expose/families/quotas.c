/* SPDX-License-Identifier: Apache-2.0 */
/* Tenant quotas, as the leader's GET /api/v1/tenant_quotas reports them. */
#include "kv_family.h"

static void quota_bytes(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, (kv_label){"kind", "requested"}, a->q->requested);
	kv_sample_u64(e, (kv_label){"kind", "effective"}, a->q->effective);
}

static void charged(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->q->charged);
}

static void over_quota(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->q->over_quota);
}

static void admission_closed(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->q->admission_closed);
}

static void enabled(kv_emit *e, const kv_at *a)
{
	if (a->s->polled && a->s->quotas.mode != KV_QUOTAS_UNKNOWN)
		kv_sample_u64(e, KV_NO_LABEL, a->s->quotas.mode == KV_QUOTAS_ON);
}

static void overflow(kv_emit *e, const kv_at *a)
{
	if (a->s->polled && a->s->quotas.mode == KV_QUOTAS_ON)
		kv_sample_u64(e, KV_NO_LABEL, a->s->quotas.overflow);
}

static void poll_errors(kv_emit *e, const kv_at *a)
{
	if (a->s->polled)
		kv_sample_poll_errors(e, a->s->quota_errors);
}

#define QUOTA  KV_SCOPE_QUOTA, 0, kv_any_polled
#define SOURCE KV_SCOPE_SOURCE, 0, kv_any_polled

static const kv_family families[] = {
	{"mooncake_kv_tenant_quota_bytes", "gauge",
	 "The tenant's quota as the leader reports it: requested, and effective (what it enforces).", QUOTA,
	 quota_bytes},
	{"mooncake_kv_tenant_charged_bytes", "gauge", "Bytes the leader charges to the tenant's quota.", QUOTA,
	 charged},
	{"mooncake_kv_tenant_over_quota", "gauge", "1 when the leader says the tenant is over its quota.", QUOTA,
	 over_quota},
	{"mooncake_kv_tenant_admission_closed", "gauge", "1 when the leader admits no new objects of the tenant.",
	 QUOTA, admission_closed},
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
