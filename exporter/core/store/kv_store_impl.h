/* SPDX-License-Identifier: Apache-2.0 */
/* The inside of a mkv_store (mooncake_kv/store.h), for the files of this
 * folder only: the store itself, its answers, its scrape and its
 * reconciliation runs. */
#ifndef KV_STORE_IMPL_H
#define KV_STORE_IMPL_H

#include <mooncake_kv/handover.h>
#include <mooncake_kv/store.h>

#include "kv_dialect.h"
#include "kv_drift.h"
#include "kv_leadership.h"
#include "kv_master_keys.h"
#include "kv_master_metrics.h"
#include "kv_master_quotas.h"
#include "kv_master_status.h"
#include "kv_reconcile_plan.h"
#include "kv_snapshot.h"
#include "kv_stream.h"

/* How far a member is in proving the store empty before its publisher's
 * first message (docs/design.md, "Exact from an empty store"): a status
 * answer with nothing published, then a key count of 0, then another
 * status answer with nothing published, nothing lost or disconnected and
 * nothing received meanwhile. */
enum kv_empty_step {
	KV_EMPTY_NONE,
	KV_EMPTY_QUIET, /* the status said nothing was published yet */
	KV_EMPTY_KEYS,  /* ... and then the key count was 0 */
};

/* Whether a member's master lists any tenant (docs/design.md, "Every
 * tenant reconciled"): found out from its answer to a per-tenant listing,
 * and found out again when its publisher restarts (an upgrade) or
 * KV_LISTS_RECHECK seconds after it listed default only. */
#define KV_LISTS_RECHECK 3600.0

/* One member: its stream (feeding the store's one state), its master's
 * figures and the readers of its answers. */
typedef struct kv_store_part {
	mkv_store_member cfg;
	kv_stream *stream;
	kv_master master;
	kv_dialect_choice dialect;
	uint64_t ha_errors[MKV_POLL__COUNT];
	kv_stream_pos before;       /* where the stream stood when the poll began */
	double events_before;       /* events it had decoded then */
	kv_metrics_reader metrics;  /* its poller's alone */
	kv_quotas_reader quotas_in; /* likewise */
	enum kv_empty_step empty;
	uint64_t empty_breaks; /* the store's breaks when the proof began */
	enum kv_lists lists;   /* whether its master lists tenants other than default */
	double lists_at;       /* when it was found to list default only (unix seconds) */
	bool connected;        /* its publisher connection is up (the shell's last word) */
	bool ever_connected;   /* it was up once: readiness; the next one is a reconnect */
	bool metrics_failing;  /* its last /metrics read failed (told once: mkv_read_news) */
	bool ha_failing;       /* its last /ha_status or /leader read failed (told once: mkv_poll_news) */
	bool quotas_failing;   /* likewise its quotas */
} kv_store_part;

struct mkv_store {
	mkv_store_cfg cfg; /* as given, but members: each part holds its own copy (cfg.members NULL) */
	kv_state *state;
	kv_store_part *parts;
	size_t n;
	kv_member_role *roles; /* each member's, in member order */
	kv_leadership leadership;
	kv_failover_tell tell;      /* when the log tells of a failover */
	kv_quotas quotas;           /* the leader's last answer */
	kv_quota_rejects rejects;   /* the leader's puts refused for a quota, from its /metrics */
	kv_quota_rejects evictions; /* the bytes the leader's quota eviction freed, per tenant */
	bool evictions_known;       /* evictions holds an answer: later rises are evictions we saw */
	uint64_t quota_errors[MKV_POLL__COUNT];
	kv_drift drift; /* the state against master_key_count */
	kv_reconcile_plan plan;
	kv_recon_stats recon;
	kv_hist scrape_hold; /* how long each scrape held the store's lock (the shell's clock) */
	kv_boot_stats boot;  /* bootstraps from a peer (its results, joins decided) */
};

/* What a member's dialect choice says, for the shell (store.c). */
void kv_dialect_info_of(const kv_dialect_choice *c, mkv_dialect_info *out);
/* Applies a dialect decision of a member (store.c). */
void kv_store_dialect_news(mkv_store *s, size_t member, enum mkv_dialect_news news);

/* What a per-tenant listing's answer said of member's master (reconcile_next.c). */
void kv_store_lists_note(mkv_store *s, int member, enum kv_listed how, double now);

/* The buckets of scrape_hold (scrape.c): from what a few tenants take to
 * what the receive queue holds at full speed (2,000 messages of 64 events
 * at 1M events/s is 128 ms). */
extern const double kv_hold_bounds[];
extern const size_t kv_hold_bounds_n;

/* Copies the store's figures into snap (the scrape's slot). */
enum mkv_err kv_store_snapshot(const mkv_store *s, const mkv_member_live *live, kv_source_snap *snap);

#endif
