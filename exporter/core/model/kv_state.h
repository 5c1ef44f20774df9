/* SPDX-License-Identifier: Apache-2.0 */
/* Per-tenant object state of one stream, keyed by (backend_id, tenant_id).
 *
 * Every figure is kept incrementally, O(1) per event; nothing here scans the
 * objects.  Objects are stored as 64-bit key hashes (see docs/design.md for
 * the collision odds).  The state is single-threaded: its owner serialises
 * access (the daemon's ingest thread, a test). */
#ifndef KV_STATE_H
#define KV_STATE_H

#include <stdatomic.h>
#include <stdbool.h>

#include <mooncake_kv/store.h>

#include "kv_common.h"
#include "kv_decode.h"
#include "kv_key_group_counts.h"
#include "kv_key_group_regex.h"
#include "kv_lifetime.h"
#include "kv_objtable.h"
#include "kv_reconcile_replay.h"

/* mkv_budget: mooncake_kv/store.h */

/* Why a tenant's figures may be incomplete (bits of kv_tenant.stale). */
enum kv_stale_reason {
	KV_STALE_STARTUP = 1,                  /* seen only since we joined: no snapshot exists */
	KV_STALE_GAP = 2,                      /* messages were lost */
	KV_STALE_RESET = 4,                    /* the publisher restarted */
	KV_STALE_RECONNECT = 8,                /* the connection dropped */
	KV_STALE_OVERFLOW = 16,                /* the object limit refused one of its objects */
	KV_STALE_RECONCILE_INCOMPLETE = 32,    /* reconciled, but some keys could not be asked about */
	KV_STALE_FAILOVER = 64,                /* leadership moved to another master */
	KV_STALE_DIALECT = 128,                /* the master turned out to speak another dialect */
	KV_STALE_QUOTA_EVICTION = 256,         /* the master evicted its objects for its quota without events */
	KV_STALE_DRIFT = 512,                  /* every tenant exact, yet their sum is apart from the master's count */
	KV_STALE_BOOTSTRAP = 1024,             /* taken from a peer, but the stream did not provably continue it */
	KV_STALE_REMOVED_AFTER_CLEARED = 2048, /* a removal after its cleared that may be RemoveAll's, late */
};
#define KV_STALE__BITS 12

/* How a stale tenant became exact again (mooncake_kv_tenant_exact_transitions_total{cause}). */
enum kv_exact_cause {
	KV_EXACT_CLEARED,     /* a cleared emptied it (the media dialect) */
	KV_EXACT_RECONCILED,  /* rebuilt from the master's listing */
	KV_EXACT_EMPTY_STORE, /* the master proved the store empty before its publisher's first message */
	KV_EXACT__CAUSES
};
const char *kv_exact_cause_name(enum kv_exact_cause c);

/* The `reason` label value of bit index i (KV_STALE_STARTUP is bit 0). */
const char *kv_stale_reason_name(unsigned bit);

/* The figures of one tenant: kept by the state, copied whole into a
 * snapshot, read by the renderer through the helpers below. */
typedef struct kv_tenant_counts {
	uint64_t placement[MKV_PLACE__COUNT]; /* live objects by placement */
	uint64_t events[MKV_EV__COUNT];       /* applied events by type */
	uint64_t stored_duplicates;           /* stored for a medium it was already on */
	uint64_t removed_unknown;             /* removed of nothing held: a medium it was not on (media
						dialect), an object not held (object dialect) */
	uint64_t objects_overflow;            /* stored refused by the object limit */
	kv_life_hist life;                    /* lifetimes of its objects (residency) */
} kv_tenant_counts;

static inline uint64_t kv_counts_objects(const kv_tenant_counts *c)
{
	return c->placement[MKV_PLACE_CPU_ONLY] + c->placement[MKV_PLACE_DISK_ONLY] +
	       c->placement[MKV_PLACE_CPU_AND_DISK];
}

static inline uint64_t kv_counts_on_medium(const kv_tenant_counts *c, enum mkv_medium m)
{
	return c->placement[MKV_PLACE_CPU_AND_DISK] +
	       c->placement[m == MKV_MEDIUM_CPU ? MKV_PLACE_CPU_ONLY : MKV_PLACE_DISK_ONLY];
}

/* A tenant's reconciliations, as the plan keeps them (kv_reconcile_plan.h):
 * the times are the caller's unix seconds. */
typedef struct kv_recon_times {
	double last_ok;    /* the last that succeeded (with ever_ok), else when the plan first looked */
	double next;       /* none begins before this */
	unsigned failures; /* in a row */
	bool ever_ok;
} kv_recon_times;

/* What a tenant still expects after its cleared, from a store of several
 * masters (kv_state_set_ha): state_cleared.c. */
typedef struct kv_cleared_window kv_cleared_window;

typedef struct kv_tenant {
	char *backend_id; /* owned copies, NUL-terminated; may hold NULs: use the lengths */
	char *tenant_id;
	uint32_t backend_len;
	uint32_t tenant_len;
	uint64_t hash;
	kv_objtable objects;
	kv_cleared_window *window; /* NULL: no removal of RemoveAll's is expected */
	kv_tenant_counts counts;
	kv_group_vec groups;    /* per key group, with --key.group-regex */
	unsigned stale;         /* kv_stale_reason bits; 0 = exact */
	int64_t stale_since_ms; /* while stale: when it stopped being exact (the owner's clock) */
	int64_t last_event_ms;  /* its last event (the owner's clock), for kv_state_expire */
	bool labels_unclean;    /* an id is not valid UTF-8 (or has NUL) */
	kv_recon_times recon;   /* with a master that lists tenants (not default: the plan keeps its own) */
} kv_tenant;

static inline uint64_t kv_tenant_objects(const kv_tenant *t)
{
	return kv_counts_objects(&t->counts);
}

static inline uint64_t kv_tenant_on_medium(const kv_tenant *t, enum mkv_medium m)
{
	return kv_counts_on_medium(&t->counts, m);
}

typedef struct kv_state kv_state;

/* The budget must outlive the state.  The seed keys the object hash; pick
 * it at random in production so that nobody can aim keys at one slot. */
kv_state *kv_state_new(mkv_budget *budget, uint64_t seed);
void kv_state_free(kv_state *s);

/* Applies one decoded, accepted, keyed event (keyless and rejected events
 * never reach the state), read in the dialect of the publisher that sent
 * it: stored adds its medium; removed takes its medium away (media) or the
 * whole object (object); cleared empties the tenant.  Returns 0, or
 * MKV_ELIMIT when a limit refused it (counted here), or MKV_ENOMEM (nothing
 * changed). */
enum mkv_err kv_state_apply(kv_state *s, const kv_event *ev, enum mkv_dialect d);

/* The same in two steps, so that a batch can be looked at before it is
 * applied: kv_state_prepare hashes the key and finds the tenant (creating
 * nothing), kv_state_prefetch_slot starts loading the object's slot into
 * cache; applying the batch afterwards finds the memory there instead of
 * waiting for it. */
typedef struct kv_prepared {
	uint64_t key_hash;
	int64_t ts;        /* the event's publisher time (unix ms), KV_NO_BIRTH when not usable */
	uint8_t add, del;  /* the media the event adds and takes away, in its dialect */
	uint32_t group;    /* the key's group (KV_GROUP_NONE without key groups) */
	kv_tenant *tenant; /* NULL: not known yet (applying creates it) */
} kv_prepared;

void kv_state_prepare(kv_state *s, const kv_event *ev, enum mkv_dialect d, kv_prepared *p);
/* Starts loading the slot a prepared event's object is looked up in.  Apart
 * from kv_state_prepare, so that a batch's prefetches can be issued in a
 * loop of their own (docs/performance.md, "Prefetches in a loop of their own").  A hint. */
void kv_state_prefetch_slot(const kv_prepared *p);
enum mkv_err kv_state_apply_prepared(kv_state *s, const kv_event *ev, const kv_prepared *p);

/* The owner's clock (unix ms) for what it applies or marks next: a tenant's
 * stale age starts then.  The state keeps no clock of its own. */
void kv_state_set_now(kv_state *s, int64_t now_ms);
/* Forgets the tenants that hold no object and had no event for idle_ms
 * (tenant churn would otherwise fill --limits.max-tenants for good): their
 * series go, their room in the budget comes back, and one that returns
 * starts afresh, stale since start-up.  Not the tenant a reconciliation is
 * recording.  Returns how many went. */
size_t kv_state_expire(kv_state *s, int64_t now_ms, int64_t idle_ms);
/* Tenants forgotten so far. */
uint64_t kv_state_tenants_expired(const kv_state *s);

/* --- residency (lifetimes; docs/design.md, "Residency") ---
 *
 * A life begins with the event that makes an object present and ends with
 * the one that makes it absent (a cleared ends every life of its tenant);
 * its length is the difference of their publisher timestamps.  A birth is
 * kept only while the tenant is exact (stale 0): anywhere else a stored of
 * an object the state does not hold may be an old object coming back into
 * view (an upsert, a second replica, an offload), not a new one.  A tenant
 * that turns stale forgets its births; its lives end unobserved.  On by
 * default. */
void kv_state_set_residency(kv_state *s, bool on);
bool kv_state_residency(const kv_state *s);
/* The birth of an object (KV_NO_BIRTH: not held, not seen or not kept). */
int64_t kv_state_birth_by_hash(const kv_tenant *t, uint64_t hash);

/* An idle moment: drains up to `slots` slots of the object tables' old
 * arrays left by growth (they drain with each event, and without events
 * would stay).  Returns whether some remain. */
bool kv_state_settle(kv_state *s, size_t slots);

/* --- RemoveAll and the op log (docs/design.md, "RemoveAll and the op log") ---
 *
 * A store of several highly available masters may run the op log, and then
 * Mooncake main publishes a RemoveAll's cleared at once and each object's
 * removed later, from the durable callbacks, so that a key put again in
 * between may see the old object's removal after its own stored.  The
 * stream does not tell the two apart.  With ha on, a cleared keeps what the
 * tenant held (and whether it held all of it: it was exact) until each
 * medium's removal has come; a removal that would take away something held
 * of such a key (of any key, when the tenant was not exact at its cleared)
 * turns the tenant stale (removed_after_cleared).  A removal of what is not
 * held stays harmless.  A reconciliation, the proof of an empty store and
 * forgetting the tenant's objects end the wait.  Off by default. */
void kv_state_set_ha(kv_state *s, bool ha);
/* Whether tenant t waits for removals of its last cleared. */
bool kv_state_tenant_waits(const kv_tenant *t);

/* Marks every tenant stale for a reason; tenants first seen from now on
 * are born stale (since start-up), as before any proof of an empty store. */
void kv_state_mark_stale(kv_state *s, enum kv_stale_reason why);
/* Marks stale for a reason every tenant of that tenant id (in any backend:
 * the master's per-tenant figures carry no backend).  Returns how many
 * turned stale. */
size_t kv_state_mark_tenant_stale(kv_state *s, mkv_str tenant, enum kv_stale_reason why);
/* Marks stale for a reason every exact tenant, but `except` (a tenant id,
 * or {NULL, 0}).  Returns how many turned stale. */
size_t kv_state_mark_exact_stale(kv_state *s, enum kv_stale_reason why, mkv_str except);
/* The master proved the store empty before its publisher's first message
 * (docs/design.md, "Exact from an empty store"): every tenant is emptied
 * (what it held ended unseen) and exact, and tenants first seen from now
 * on are born exact, until a loss marks every tenant stale. */
void kv_state_prove_empty(kv_state *s);
/* Tenants are born exact (an empty store was proven, nothing lost since). */
bool kv_state_born_exact(const kv_state *s);
/* Tenants that turned stale so far, by the reason that did it (bit index),
 * and that became exact again, by cause. */
uint64_t kv_state_turned_stale(const kv_state *s, unsigned bit);
uint64_t kv_state_turned_exact(const kv_state *s, enum kv_exact_cause c);
/* Every tenant is exact (and there is one at least). */
bool kv_state_all_exact(const kv_state *s);
/* Forgets every tenant's objects (their event counters stay): the master
 * they describe is no longer the store's leader.  The tenants stay known,
 * stale since start-up, as if just joined. */
void kv_state_drop(kv_state *s);

/* --- key groups (see kv_key_group_regex.h) --- */

/* Turns key groups on, with a regex that must outlive the state.  Returns 0
 * or MKV_ENOMEM. */
enum mkv_err kv_state_set_keygroups(kv_state *s, const mkv_keygroup_re *re);
bool kv_state_has_keygroups(const kv_state *s);
/* The id of the group named name[0..len), registered if new; beyond the
 * budget's max_key_groups (all states together) KV_GROUP_OVERFLOW. */
uint32_t kv_state_group_id(kv_state *s, const char *name, size_t len);
size_t kv_state_group_count(const kv_state *s);
/* The name of a group id; its bytes are kept as long as the state. */
mkv_str kv_state_group_name(const kv_state *s, uint32_t id);
/* New groups refused by --limits.max-key-groups. */
uint64_t kv_state_groups_overflow(const kv_state *s);

/* --- reconciliation (see kv_reconcile_replay.h) --- */

/* The hash a key has in this state (seeded per process). */
uint64_t kv_state_key_hash(const kv_state *s, mkv_str key);
unsigned kv_state_media_by_hash(const kv_tenant *t, uint64_t hash);

/* Starts recording every event applied to tenant (backend, tenant) into
 * log, creating the tenant if it does not exist yet.  One recording at a
 * time per state.  Returns 0, MKV_ELIMIT (no room for the tenant), MKV_ENOMEM
 * or MKV_EINVAL (a recording is running). */
enum mkv_err kv_state_record_start(kv_state *s, mkv_str backend, mkv_str tenant, kv_recon_log *log);
void kv_state_record_stop(kv_state *s);

/* Cut-over: the recorded tenant's objects become fresh's (moved in), its
 * placement figures fresh's, its stale bits `stale`; the object budget
 * follows.  Its old table is moved to *old for the caller to free outside
 * any lock.  Returns 0, or MKV_ELIMIT when the budget has no room for the
 * difference (nothing changes), or MKV_EINVAL when nothing is recorded. */
enum mkv_err kv_state_adopt(kv_state *s, kv_recon_table *fresh, unsigned stale, kv_objtable *old);

/* Objects of the recorded tenant now (0 when none is recorded). */
size_t kv_state_recorded_objects(const kv_state *s);

size_t kv_state_tenant_count(const kv_state *s);
/* Tenants in the order they were first seen; stable pointers. */
const kv_tenant *kv_state_tenant_at(const kv_state *s, size_t i);
const kv_tenant *kv_state_find_tenant(const kv_state *s, mkv_str backend, mkv_str tenant);
/* The reconciliation times of tenant i, for the plan to keep. */
kv_recon_times *kv_state_recon_times(kv_state *s, size_t i);
unsigned kv_state_object_media(const kv_state *s, const kv_tenant *t, mkv_str key);

uint64_t kv_state_tenants_overflow(const kv_state *s);
uint64_t kv_state_objects_overflow(const kv_state *s);
/* Tenants whose ids had to be sanitised to be label values. */
uint64_t kv_state_unclean_labels(const kv_state *s);
/* Bytes held by object tables (not tenant bookkeeping). */
size_t kv_state_table_bytes(const kv_state *s);

#endif
