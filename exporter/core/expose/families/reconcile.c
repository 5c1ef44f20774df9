/* SPDX-License-Identifier: Apache-2.0 */
/* Reconciliation of tenants with the master (tenant `default`, and every
 * tenant of a master that lists tenants), for the sources that reconcile. */
#include "kv_family.h"

KV_ANY_SOURCE(static, any_reconciles, s->recon.enabled)

static void results(kv_emit *e, const kv_at *a)
{
	for (int r = 0; a->s->recon.enabled && r < KV_RECON__RESULTS; r++)
		kv_sample_u64(e, (kv_label){"result", kv_recon_result_name(r)}, a->s->recon.results[r]);
}

static void corrections(kv_emit *e, const kv_at *a)
{
	for (int k = 0; a->s->recon.enabled && k < KV_CORR__KINDS; k++)
		kv_sample_u64(e, (kv_label){"kind", kv_recon_correction_name(k)}, a->s->recon.corrections[k]);
}

#define R a->s->recon
KV_DOUBLE(duration, (R.enabled && R.has_duration), R.last_duration)
KV_DOUBLE(last_success, (R.enabled && R.has_success), R.last_success)
KV_U64(listed_keys, (R.enabled && R.has_success), R.last_keys)
KV_U64(lists_tenants, (R.enabled && a->m->has_master && a->m->lists_tenants >= 0), a->m->lists_tenants)

#define SOURCE KV_SCOPE_SOURCE, 0, any_reconciles
#define MEMBER KV_SCOPE_MEMBER, KV_FAM_MEMBER_ALWAYS, any_reconciles

static const kv_family families[] = {
	{"mooncake_kv_reconciliations_total", "counter",
	 "Reconciliations of a tenant with the master (tenant default, and every tenant of a master that lists "
	 "tenants), by result (ok, failed, aborted by a limit, superseded by a break in the stream).",
	 SOURCE, results},
	{"mooncake_kv_reconcile_corrections_total", "counter",
	 "Objects reconciliation corrected: added (the master had them, the stream's view did not), removed "
	 "(the other way round), medium (on other media): the drift the stream alone would have shown.",
	 SOURCE, corrections},
	{"mooncake_kv_reconcile_duration_seconds", "gauge", "Duration of the last reconciliation attempt.", SOURCE,
	 duration},
	{"mooncake_kv_reconcile_last_success_timestamp_seconds", "gauge",
	 "When the last reconciliation succeeded, in unix seconds.", SOURCE, last_success},
	{"mooncake_kv_reconcile_listed_keys", "gauge",
	 "Keys the master listed in the last successful reconciliation of tenant default.", SOURCE, listed_keys},
	{"mooncake_kv_master_lists_tenants", "gauge",
	 "1 when the master lists the keys of any tenant (GET /api/v1/tenant_keys): every tenant is reconciled; 0 "
	 "when it lists tenant default only (upstream as released): only default is.  Absent until a stale tenant "
	 "other than default gave a reason to ask.",
	 MEMBER, lists_tenants},
};

KV_FAMILY_TABLE(kv_reconcile_families, families);
