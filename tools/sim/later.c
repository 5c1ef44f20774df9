/* SPDX-License-Identifier: Apache-2.0 */
/* What Mooncake main since PR #3818 still leaves unsaid, and the orderings
 * that remain (docs/upstream.md, "main since #3818"): RemoveAll's removals
 * that the op log holds back until they are durable, a master restored from
 * a snapshot, and the silent operations.  Each changes the master's model
 * as upstream does; the stream says only what upstream publishes. */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* FinalizeRemovedReplicasAfterDurable: each object RemoveAll erased, its
 * removed for every medium it had, long after the tenant's cleared.  The
 * master's model is not touched: the object went at the RemoveAll, and a
 * key put again since is another object, which this removal does not erase
 * (its identity gate), whatever the stream says. */
void op_late_removals(struct sim *s)
{
	for (size_t i = 0; i < s->n_late; i++) {
		const struct late *l = &s->late[i];
		for (unsigned m = REP_MEM; m <= REP_DISK; m <<= 1)
			if (l->media & m)
				publish(s, REMOVED, l->tenant, l->key, m);
		if (s->q_len >= MAX_BATCH)
			send_batch(s);
	}
	s->late_removals_sent += s->n_late;
	s->n_late = 0;
	flush(s);
}

/* A client puts again keys RemoveAll erased, before their late removals:
 * new objects, announced by their stored. */
void op_reput(struct sim *s, uint64_t n, int t)
{
	for (size_t i = 0; i < s->n_late && n; i++) {
		const struct late *l = &s->late[i];
		if ((t >= 0 && l->tenant != (unsigned)t) || *cell(s, s->master, l->tenant, l->key))
			continue;
		op_put(s, l->tenant, l->key, false);
		s->reputs++;
		n--;
	}
	flush(s);
}

void op_snapshot(struct sim *s)
{
	size_t n = (size_t)s->o.tenants * s->o.keys;
	if (!s->snapshot && !(s->snapshot = malloc(n)))
		die("out of memory");
	pthread_mutex_lock(&s->model_lock);
	memcpy(s->snapshot, s->master, n);
	pthread_mutex_unlock(&s->model_lock);
}

/* A master that takes over from a snapshot (RestoreFromStandbyState, the
 * deserializer): it holds what the snapshot held, without a stored for any
 * of it; objects put since the snapshot are gone, objects erased since are
 * back.  Then ApplySnapshotState's cleanup erases `cleanup` of them,
 * publishing their removal: objects this publisher never announced. */
void op_restore(struct sim *s, uint64_t cleanup)
{
	if (!s->snapshot)
		die("restore: no snapshot (run the phase snapshot first)");
	for (unsigned t = 0; t < s->o.tenants; t++)
		for (unsigned k = 0; k < s->o.keys; k++) {
			unsigned char want = *cell(s, s->snapshot, t, k);
			if (*cell(s, s->master, t, k) != want) {
				master_set(s, t, k, want);
				s->restored++;
			}
		}
	s->n_late = 0; /* the old leader's durable callbacks died with it */
	for (uint64_t i = 0, tries = 0; i < cleanup && tries < 100 * cleanup + 1000; tries++) {
		unsigned t = (unsigned)(rnd(s) % s->o.tenants), k = (unsigned)(rnd(s) % s->o.keys);
		unsigned c = *cell(s, s->master, t, k);
		if (!c)
			continue;
		master_set(s, t, k, 0);
		publish_delta(s, t, k, c, 0);
		if (s->o.dialect == DIALECT_OBJECT)
			publish(s, REMOVED, t, k, c & REP_MEM ? REP_MEM : REP_DISK);
		s->cleanup_removals++;
		i++;
	}
	flush(s);
}

/* An object of tenant t (or any, t < 0) that holds `want` media (0: any),
 * found by random tries; false when none turned up. */
static bool pick(struct sim *s, int t, unsigned want, unsigned *tt, unsigned *kk)
{
	for (int i = 0; i < 100000; i++) {
		unsigned a = t >= 0 ? (unsigned)t : (unsigned)(rnd(s) % s->o.tenants),
			 k = (unsigned)(rnd(s) % s->o.keys);
		unsigned c = *cell(s, s->master, a, k);
		if (c && (!want || c == want)) {
			*tt = a;
			*kk = k;
			return true;
		}
	}
	return false;
}

/* CopyRevoke, MoveRevoke of an object whose source replica went during
 * the task: what is left, the task's processing targets, is erased and the
 * object with it (`if (!metadata.IsValid()) accessor.Erase()`), without an
 * event. */
void op_revoke(struct sim *s, uint64_t n, int t)
{
	unsigned a, k;
	for (uint64_t i = 0; i < n && pick(s, t, 0, &a, &k); i++) {
		master_set(s, a, k, 0);
		s->silent_removals++;
		s->revoked++;
	}
}

/* A tier of a surviving object announced, then turned processing (being
 * rewritten, moved) and discarded: the object keeps its other tier, and
 * the lost one is never retracted (KvMediaForRemoval covers the removal
 * paths, not this one). */
void op_discard(struct sim *s, uint64_t n, int t)
{
	unsigned a, k;
	for (uint64_t i = 0; i < n && pick(s, t, REP_MEM | REP_DISK, &a, &k); i++) {
		master_set(s, a, k, (unsigned char)(rnd(s) & 1 ? REP_MEM : REP_DISK));
		s->discarded++;
	}
}

/* DeleteTenantQuotaPolicy: refused (TENANT_NOT_EMPTY) while the tenant
 * holds an object; else its policy and quota snapshot go, with no event
 * and no cleared. */
void op_quota_delete(struct sim *s, unsigned t)
{
	pthread_mutex_lock(&s->model_lock);
	bool empty = true;
	for (unsigned k = 0; k < s->o.keys && empty; k++)
		empty = !*cell(s, s->master, t, k);
	if (empty)
		s->policy_deleted[t] = true;
	pthread_mutex_unlock(&s->model_lock);
	if (!empty)
		fprintf(stderr, "mooncake-kv-sim: quota-delete of tenant %u refused: TENANT_NOT_EMPTY\n", t);
}
