/* SPDX-License-Identifier: Apache-2.0 */
/* The inside of a kv_state, for the files that keep it: state.c (tenants,
 * events applied, lives), state_groups.c (key groups' names),
 * state_reconcile.c (a reconciliation's recording and cut-over),
 * state_cleared.c (the removals a cleared still expects), state_io.c. */
#ifndef KV_STATE_IMPL_H
#define KV_STATE_IMPL_H

#include "kv_state.h"

/* A key group's name, owned by the state (a mkv_str is a view). */
typedef struct kv_group_name {
	char *ptr;
	uint32_t len;
} kv_group_name;

struct kv_state {
	mkv_budget *budget;
	uint64_t seed;
	kv_tenant **tenants; /* first-seen order */
	size_t n_tenants;
	size_t cap_tenants;
	uint32_t *index; /* open addressing over tenants: i + 1, 0 empty */
	size_t index_mask;
	kv_tenant *last; /* consecutive events are mostly for one tenant */
	uint64_t tenants_overflow;
	uint64_t tenants_expired;
	uint64_t objects_overflow;
	uint64_t unclean_labels;
	kv_tenant *recorded; /* its applied events go to record (reconciliation) */
	kv_recon_log *record;
	bool record_unsure; /* a removal of it was ambiguous while recording (state_cleared.c): the replay may be wrong */
	/* key groups: NULL matcher when off; names by id, an index by hash */
	kv_keygroup_matcher *matcher;
	kv_group_name *gnames;
	size_t n_gnames, cap_gnames;
	uint32_t *gindex; /* open addressing: id + 1, 0 empty; at most half full */
	size_t gindex_mask;
	uint64_t groups_overflow;
	int64_t now_ms; /* the owner's clock, for stale_since (kv_state_set_now) */
	bool residency;
	bool born_exact; /* an empty store was proven and nothing lost since */
	bool ha;         /* several masters: a cleared may come before its removals (kv_state_set_ha) */
	uint64_t turned_stale[KV_STALE__BITS];
	uint64_t turned_exact[KV_EXACT__CAUSES];
};

/* Births are kept exactly while the tenant is exact (kv_state.h).  Out of
 * memory they stay off: nothing is observed, nothing is wrong. */
void kv_state_sync_births(const kv_state *s, kv_tenant *t);
/* Adds stale bits; the tenant's stale age starts when it stops being exact,
 * and its births are forgotten then. */
void kv_state_add_stale(kv_state *s, kv_tenant *t, unsigned bits);
/* A stale tenant became exact (stale 0 now): counted by cause. */
void kv_state_became_exact(kv_state *s, unsigned was_stale, kv_tenant *t, enum kv_exact_cause c);
/* state_cleared.c: a cleared of tenant t, before its objects go, opens (or
 * widens) the wait for their removals; a removal of `del` from an object
 * that held `before` is checked against it: true when it is ambiguous (the
 * tenant must turn stale).  Closing frees it.  _cleared returns false when
 * it could not open the wait (out of memory): the tenant must turn stale. */
bool kv_state_window_cleared(kv_state *s, kv_tenant *t);
bool kv_state_window_removed(kv_tenant *t, uint64_t hash, unsigned del, unsigned before);
void kv_state_window_close(kv_tenant *t);
/* Tenant t waits for removals of objects it cannot name (taken from a peer,
 * which does not hand them over). */
void kv_state_window_unseen(kv_tenant *t);
/* Puts v at hash h of an open-addressing index (0 is empty). */
void kv_state_index_put(uint32_t *index, size_t mask, uint64_t h, uint32_t v);
/* The tenant (backend, tenant), created if new.  Returns 0, MKV_ELIMIT (no
 * room under the tenant limit) or MKV_ENOMEM. */
enum mkv_err kv_state_tenant_get(kv_state *s, mkv_str backend, mkv_str tenant, kv_tenant **out);

#endif
