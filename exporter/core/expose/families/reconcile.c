/* SPDX-License-Identifier: Apache-2.0 */
/* Reconciliation of tenants with the master (tenant `default`, and every
 * tenant of a master that lists tenants), for the sources that reconcile. */
#include "kv_family.h"

static bool reconciles(const kv_source_snap *s)
{
	return s->recon.enabled;
}

static bool any_reconciles(const kv_exporter_snap *x)
{
	return kv_any_source(x, reconciles);
}

static void reconciliations_total(kv_emit *e, const kv_at *a)
{
	for (int r = 0; a->s->recon.enabled && r < MKV_RECON__RESULTS; r++)
		kv_sample_u64(e, (kv_label){"result", mkv_recon_result_name((enum mkv_recon_result)r)},
			      a->s->recon.results[r]);
}

static void reconcile_corrections_total(kv_emit *e, const kv_at *a)
{
	for (int k = 0; a->s->recon.enabled && k < KV_CORR__KINDS; k++)
		kv_sample_u64(e, (kv_label){"kind", kv_recon_correction_name((enum kv_recon_correction)k)},
			      a->s->recon.corrections[k]);
}

static void reconcile_duration_seconds(kv_emit *e, const kv_at *a)
{
	const kv_recon_stats *r = &a->s->recon;
	if (r->enabled && r->has_duration)
		kv_sample_double(e, KV_NO_LABEL, r->last_duration);
}

static void reconcile_last_success_timestamp_seconds(kv_emit *e, const kv_at *a)
{
	const kv_recon_stats *r = &a->s->recon;
	if (r->enabled && r->has_success)
		kv_sample_double(e, KV_NO_LABEL, r->last_success);
}

static void reconcile_listed_keys(kv_emit *e, const kv_at *a)
{
	const kv_recon_stats *r = &a->s->recon;
	if (r->enabled && r->has_success)
		kv_sample_u64(e, KV_NO_LABEL, r->last_keys);
}

static void master_lists_tenants(kv_emit *e, const kv_at *a)
{
	if (a->s->recon.enabled && a->m->has_master && a->m->lists_tenants != KV_LISTS_UNKNOWN)
		kv_sample_u64(e, KV_NO_LABEL, a->m->lists_tenants == KV_LISTS_TENANTS);
}

static const kv_family families[] = {
	{.name = "mooncake_kv_reconciliations_total",
	 .kind = KV_COUNTER,
	 .help = "Reconciliations of a tenant with the master (tenant default, and every tenant of a master that "
		 "lists tenants), by result (ok, failed, aborted by a limit, superseded by a break in the stream).",
	 .scope = KV_SCOPE_SOURCE,
	 .labels = "result",
	 .shown = any_reconciles,
	 .samples = reconciliations_total},
	{.name = "mooncake_kv_reconcile_corrections_total",
	 .kind = KV_COUNTER,
	 .help = "Objects reconciliation corrected: added (the master had them, the stream's view did not), removed "
		 "(the other way round), medium (on other media): the drift the stream alone would have shown.",
	 .scope = KV_SCOPE_SOURCE,
	 .labels = "kind",
	 .shown = any_reconciles,
	 .samples = reconcile_corrections_total},
	{.name = "mooncake_kv_reconcile_duration_seconds",
	 .kind = KV_GAUGE,
	 .help = "Duration of the last reconciliation attempt.",
	 .scope = KV_SCOPE_SOURCE,
	 .shown = any_reconciles,
	 .samples = reconcile_duration_seconds},
	{.name = "mooncake_kv_reconcile_last_success_timestamp_seconds",
	 .kind = KV_GAUGE,
	 .help = "When the last reconciliation succeeded, in unix seconds.",
	 .scope = KV_SCOPE_SOURCE,
	 .shown = any_reconciles,
	 .samples = reconcile_last_success_timestamp_seconds},
	{.name = "mooncake_kv_reconcile_listed_keys",
	 .kind = KV_GAUGE,
	 .help = "Keys the master listed in the last successful reconciliation of tenant default.",
	 .scope = KV_SCOPE_SOURCE,
	 .shown = any_reconciles,
	 .samples = reconcile_listed_keys},
	{.name = "mooncake_kv_master_lists_tenants",
	 .kind = KV_GAUGE,
	 .help = "1 when the master lists the keys of any tenant (GET /api/v1/tenant_keys): every tenant is "
		 "reconciled; 0 when it lists tenant default only (upstream as released): only default is.  Absent "
		 "until a tenant other than default, stale or due its periodic check, gave a reason to ask, or a "
		 "peer's "
		 "state said it (a handover).",
	 .scope = KV_SCOPE_MEMBER,
	 .flags = KV_FAM_MEMBER_ALWAYS,
	 .shown = any_reconciles,
	 .samples = master_lists_tenants},
};

KV_FAMILY_TABLE(kv_reconcile_families, families);
