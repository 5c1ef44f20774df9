/* SPDX-License-Identifier: Apache-2.0 */
/* What Mooncake main since PR #3818 still leaves unsaid (docs/upstream.md,
 * "What main still does not publish"): the op log's durable callbacks and
 * a key put again after its discard timeout, a master restored from a
 * snapshot, and the operations that touch only replicas never announced.
 * Each changes the master's model as upstream does; the stream says only
 * what upstream publishes. */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* FinalizeRemovedReplicasAfterDurable, for every held entry: the
 * REMOVED replicas popped, the entry erased (EraseMetadata with no media
 * hint), nothing published (master_service.cpp at 00390e6e ~80-84k).  The
 * master's model lost the object at its removal already. */
void op_late_removals(struct sim *s)
{
	size_t n = (size_t)s->o.tenants * s->o.keys;
	for (size_t i = 0; i < n; i++)
		s->held[i] = 0;
	s->durable_erased += s->n_late;
	s->n_late = 0;
	flush(s);
}

/* A client puts again held keys once put_start_discard_timeout has passed
 * (before it PutStart refuses them: OBJECT_ALREADY_EXISTS): PutStart erases
 * the old entry, whose PublishKvRemoved names the REMOVED replicas' media,
 * then PutEnd announces the new object.  So the old removed always comes
 * before the new stored; the durable callback then finds the new entry's
 * replicas not REMOVED and publishes nothing (h2's reading, ~197-207k). */
void op_reput(struct sim *s, uint64_t n, int t)
{
	for (unsigned a = 0; a < s->o.tenants && n; a++) {
		if (t >= 0 && a != (unsigned)t)
			continue;
		for (unsigned k = 0; k < s->o.keys && n; k++) {
			unsigned char *h = cell(s, s->held, a, k);
			if (!*h || *cell(s, s->master, a, k))
				continue;
			for (unsigned m = REP_MEM; m <= REP_DISK; m <<= 1)
				if (*h & m)
					publish(s, REMOVED, a, k, m);
			*h = 0;
			s->n_late--;
			op_put(s, a, k, false);
			if (s->q_len >= MAX_BATCH)
				send_batch(s);
			s->reputs++;
			n--;
		}
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
 * back.  Then ApplySnapshotState's cleanup erases `cleanup` of them: on a
 * restore it runs in the constructor before the publisher exists, so it
 * publishes nothing either (00390e6e ~451-456k, ctor ~12k vs ~19.5k). */
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
	/* the old leader's held entries and their callbacks died with it */
	memset(s->held, 0, (size_t)s->o.tenants * s->o.keys);
	s->n_late = 0;
	for (uint64_t i = 0, tries = 0; i < cleanup && tries < 100 * cleanup + 1000; tries++) {
		unsigned t = (unsigned)(rnd(s) % s->o.tenants), k = (unsigned)(rnd(s) % s->o.keys);
		if (!*cell(s, s->master, t, k))
			continue;
		master_set(s, t, k, 0);
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

/* CopyRevoke, MoveRevoke: the task's PROCESSING target replicas are
 * erased; they were never announced (KvMediaForMetadata names COMPLETE
 * replicas only), the object keeps its source, nothing is published and no
 * figure changes (00390e6e ~279-297k).  Counted, to show it ran. */
void op_revoke(struct sim *s, uint64_t n, int t)
{
	unsigned a, k;
	for (uint64_t i = 0; i < n && pick(s, t, 0, &a, &k); i++)
		s->revoked++;
}

/* DiscardExpiredProcessingReplicas, a failed or expired promotion: a
 * PROCESSING replica (being written, staged) popped; never announced, so
 * again nothing published and no figure changes (~426-438k). */
void op_discard(struct sim *s, uint64_t n, int t)
{
	unsigned a, k;
	for (uint64_t i = 0; i < n && pick(s, t, 0, &a, &k); i++)
		s->discarded++;
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
