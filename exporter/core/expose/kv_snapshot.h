/* SPDX-License-Identifier: Apache-2.0 */
/* What one scrape renders: plain copies of the counters, taken under the
 * owners' locks and rendered after they are released.  Everything is
 * copied (tenant ids too: an idle tenant can be freed meanwhile,
 * kv_state_expire), except key group names, which are never freed. */
#ifndef KV_SNAPSHOT_H
#define KV_SNAPSHOT_H

#include <mooncake_kv/handover.h>
#include <mooncake_kv/scrape.h> /* mkv_process_snap */

#include "kv_dialect.h"
#include "kv_leadership.h"
#include "kv_master_status.h"
#include "kv_master_metrics.h"
#include "kv_master_quotas.h"
#include "kv_stream.h"

typedef struct kv_tenant_snap {
	const char *backend_id;
	const char *tenant_id;
	uint32_t backend_len;
	uint32_t tenant_len;
	bool labels_unclean;
	unsigned stale;
	int64_t stale_since_ms;
	kv_tenant_counts counts;
	uint64_t aged;             /* live objects whose birth is held (residency) */
	double birth_mean_ms;      /* their mean birth, publisher's unix ms (when aged) */
	size_t group_at, n_groups; /* its groups: group_pool[group_at .. + n_groups) */
} kv_tenant_snap;

/* One member (master) of a source: its stream and its master's figures. */
/* Whether a master lists tenants other than default in its keys' answer. */
enum kv_lists { KV_LISTS_UNKNOWN, KV_LISTS_TENANTS, KV_LISTS_DEFAULT_ONLY };

typedef struct kv_member_snap {
	const char *label; /* the `member` label (admin URL host:port), or NULL */
	bool connected;
	uint64_t backlog; /* messages drained since the socket was last found empty */
	kv_stream_stats stats;
	kv_seqtrack seq;
	bool has_master; /* polled: it has an admin URL */
	kv_master master;
	kv_ha_obs ha;
	uint64_t ha_errors[MKV_POLL__COUNT];
	uint64_t standby_events;
	kv_dialect_choice dialect;   /* the dialect its stream is read in, once decided */
	kv_model_ctx model;          /* the model context its publisher stamps (model.seen: any yet) */
	enum kv_lists lists_tenants; /* whether its master lists tenants other than default */
} kv_member_snap;

/* A store's state taken from a peer: the bootstraps by result, and what
 * its members' streams proved since. */
typedef struct kv_boot_stats {
	uint64_t results[MKV_BOOT__COUNT];
	uint64_t continued, broken; /* members' joins decided */
	uint64_t waiting;           /* members still waiting for their proof (in a snapshot) */
	uint64_t overlap;           /* messages received that the peer's state already held (in a snapshot) */
} kv_boot_stats;

typedef struct kv_source_snap {
	const char *name;
	bool ha;                 /* given as several masters: per-member families carry `member` */
	bool polled;             /* every member has an admin URL: the HA families are rendered */
	kv_member_snap *members; /* owned by the snapshot */
	size_t n_members, cap_members;
	kv_leadership leadership; /* leadership.dropped: its one master stands by, no per-tenant series */
	bool object_dialect;      /* every member speaks release v0.3.12's dialect: it never sends cleared */
	kv_quotas quotas;
	kv_quota_rejects rejects;
	kv_quota_rejects evictions; /* the leader's mooncake_tenant_evict_bytes_total */
	uint64_t quota_errors[MKV_POLL__COUNT];
	uint64_t tenants_overflow;
	uint64_t tenants_expired;
	uint64_t objects_overflow;
	uint64_t unclean_labels;
	uint64_t table_bytes;
	bool residency;  /* lifetimes kept (kv_state_residency) */
	bool born_exact; /* an empty store was proven: tenants first seen are exact */
	uint64_t turned_stale[KV_STALE__BITS];
	uint64_t turned_exact[KV_EXACT__CAUSES];
	kv_recon_stats recon;    /* recon.enabled: the source reconciles */
	kv_hist scrape_hold;     /* the scrapes' holds of its lock, as the shell timed them */
	kv_boot_stats boot;      /* its state taken from a peer (mooncake_kv/handover.h) */
	kv_tenant_snap *tenants; /* owned by the snapshot */
	mkv_buf ids;             /* their backend and tenant ids, each NUL-terminated */
	size_t n_tenants;
	size_t cap_tenants;
	/* key groups (has_groups): every tenant's group figures, and the names
	 * by id (bytes borrowed from the state: group names are never freed) */
	bool has_groups;
	kv_group_counts *group_pool;
	size_t group_pool_cap;
	mkv_str *group_names;
	size_t n_group_names, cap_group_names;
	uint64_t groups_overflow;
} kv_source_snap;

typedef struct kv_exporter_snap {
	mkv_exporter_info info; /* the exporter's own figures (mooncake_kv/scrape.h) */
	const kv_source_snap *sources;
	size_t n_sources;
	uint64_t tracked_objects;
	uint64_t tracked_tenants;
	uint64_t max_objects;
	uint64_t max_tenants;
	uint64_t max_key_groups;
	uint64_t tracked_key_groups;
} kv_exporter_snap;

/* Makes room for n members, zeroed.  Returns 0 or MKV_ENOMEM. */
enum mkv_err kv_snapshot_members(kv_source_snap *snap, size_t n);
/* A stream's own figures (not its state's). */
void kv_snapshot_member_stream(kv_member_snap *m, const kv_stream *st);
/* A one-stream source: its one member and its state (reusing the arrays).
 * Returns 0 or MKV_ENOMEM (snap then holds no tenants). */
enum mkv_err kv_snapshot_stream(kv_source_snap *snap, const kv_stream *st);
/* Only the state's part: tenants and the limits' figures. */
enum mkv_err kv_snapshot_state(kv_source_snap *snap, const kv_state *s);
void kv_source_snap_release(kv_source_snap *snap);

#endif
