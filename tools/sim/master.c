/* SPDX-License-Identifier: Apache-2.0 */
/* The master's model: each tenant's objects and their replicas, changed by
 * the operations upstream's MasterService has, each published exactly as
 * the dialect being played publishes it (docs/upstream.md has the
 * citations), and the figures the admin endpoints report from it (quotas,
 * the status's skipped-event fields). */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "sim.h"

void master_set(struct sim *s, unsigned t, unsigned k, unsigned char media)
{
	pthread_mutex_lock(&s->model_lock);
	unsigned char *c = cell(s, s->master, t, k);
	if (!*c && media)
		atomic_fetch_add(&s->master_keys, 1);
	else if (*c && !media)
		atomic_fetch_sub(&s->master_keys, 1);
	*c = media;
	pthread_mutex_unlock(&s->model_lock);
}

static bool object_dialect(const struct sim *s)
{
	return s->o.dialect == DIALECT_OBJECT;
}

static bool main_3818(const struct sim *s)
{
	return s->o.mooncake == MC_MAIN;
}

/* Main with HA and the op log (--oplog on) erasing a whole object (Remove,
 * BatchRemove, RemoveAll, an eviction): its replicas are marked REMOVED and
 * the op log appended; FinalizeRemovedReplicasAfterDurable later pops them
 * and calls EraseMetadata with no media hint, so PublishKvRemoved finds no
 * replica to name and nothing is ever published (master_service.cpp at
 * 00390e6e).  Until the callback the entry holds the REMOVED replicas and a
 * put of the key is refused (held). */
static void oplog_erase(struct sim *s, unsigned t, unsigned k, unsigned c)
{
	unsigned char *h = cell(s, s->held, t, k);
	master_set(s, t, k, 0);
	s->n_late += !*h;
	*h |= (unsigned char)c;
	s->silent_removals++;
}

/* media: what SyncObjectState sends for a change of an object's media,
 * removed for each one lost, then stored for each one gained (dev/conductor's
 * kv_event_publisher.cpp at 19ffa6e, ~L317-368; main's since #3818, stateless,
 * from the media the master hands it); the object dialect sends nothing. */
void publish_delta(struct sim *s, unsigned t, unsigned k, unsigned before, unsigned after)
{
	if (object_dialect(s))
		return;
	for (unsigned m = REP_MEM; m <= REP_DISK; m <<= 1)
		if ((before & m) && !(after & m))
			publish(s, REMOVED, t, k, m);
	for (unsigned m = REP_MEM; m <= REP_DISK; m <<= 1)
		if (!(before & m) && (after & m))
			publish(s, STORED, t, k, m);
}

/* PutEnd of one replica type, the object's replicas now `now`: v0.3.12 sends
 * stored with that replica's medium (PublishKvStored, master_service.cpp at
 * 3b5a594 ~L4640, ~L12766); main since #3818 and dev/conductor
 * PublishCommitted, stored for every medium the object is now on (~L225-271
 * of conductor's publisher; main's PublishKvStored with KvMediaForMetadata). */
static void put_end(struct sim *s, unsigned t, unsigned k, unsigned replica, unsigned now)
{
	master_set(s, t, k, (unsigned char)now);
	if (object_dialect(s))
		publish(s, STORED, t, k, replica);
	else
		for (unsigned m = REP_MEM; m <= REP_DISK; m <<= 1)
			if (now & m)
				publish(s, STORED, t, k, m);
}

/* A put of a new key: a memory replica, and with the master's file system
 * (--root_fs_dir) a disk one too, completing in either order.  A put of a
 * key that exists changes nothing and publishes nothing. */
void op_put(struct sim *s, unsigned t, unsigned k, bool with_disk)
{
	if (*cell(s, s->master, t, k) || *cell(s, s->held, t, k)) /* held: refused (OBJECT_ALREADY_EXISTS) */
		return;
	if (!with_disk) {
		put_end(s, t, k, REP_MEM, REP_MEM);
		return;
	}
	unsigned first = rnd(s) & 1 ? REP_DISK : REP_MEM;
	put_end(s, t, k, first, first);
	put_end(s, t, k, (REP_MEM | REP_DISK) & ~first, REP_MEM | REP_DISK);
}

/* Remove: v0.3.12 sends one removed, medium MediumForMetadata's guess (cpu
 * if a memory replica exists, else disk: ~L6467, ~L12754); the guide one per
 * medium the object was on (PublishObjectRemoved). */
static void op_remove(struct sim *s, unsigned t, unsigned k)
{
	unsigned c = *cell(s, s->master, t, k);
	if (!c)
		return; /* OBJECT_NOT_FOUND */
	if (s->o.oplog) {
		oplog_erase(s, t, k, c);
		return;
	}
	master_set(s, t, k, 0);
	if (object_dialect(s))
		publish(s, REMOVED, t, k, c & REP_MEM ? REP_MEM : REP_DISK);
	else
		publish_delta(s, t, k, c, 0);
}

/* The removal of an object by one of many (RemoveAll, BatchRemove): the
 * publisher's sender keeps up with a long walk. */
static void remove_one(struct sim *s, unsigned t, unsigned k)
{
	op_remove(s, t, k);
	if (s->q_len >= MAX_BATCH)
		send_batch(s);
}

/* An eviction of one tier (memory: BatchEvict; disk: EvictDiskReplica).
 * v0.3.12 publishes only when the object becomes invalid, with the medium
 * of what is left, cpu once nothing is (PublishKvRemovedAfterEvict ~L12798,
 * EvictDiskReplica ~L5583 at 3b5a594); a tier lost while another stays is
 * silent.  dev/conductor publishes the delta.  Main since #3818 publishes
 * the delta of an object that stays (PublishKvRemovedAfterEvict's Sync;
 * under the op log from the durable callback, later, played here at once),
 * and EvictDiskReplica's removal of a disk-only object (it syncs before the
 * erase); but a memory eviction that empties the object publishes nothing:
 * the replicas are popped, PublishKvRemovedAfterEvict returns on an invalid
 * object, and EraseMetadata finds no medium left to name (00390e6e). */
static void op_evict(struct sim *s, unsigned t, unsigned k, unsigned tier)
{
	unsigned c = *cell(s, s->master, t, k);
	if (!(c & tier))
		return;
	unsigned after = c & ~tier;
	if (main_3818(s) && !after && s->o.oplog) {
		oplog_erase(s, t, k, c);
		return;
	}
	master_set(s, t, k, (unsigned char)after);
	if (object_dialect(s)) {
		if (!after)
			publish(s, REMOVED, t, k, REP_MEM);
	} else if (main_3818(s) && !after && tier == REP_MEM) {
		s->silent_removals++;
	} else {
		publish_delta(s, t, k, c, after);
	}
}

void op_space_evict(struct sim *s, unsigned t, unsigned k)
{
	op_evict(s, t, k, REP_MEM);
}

/* An offload (SSD, the master's file system) completes: a disk replica is
 * added.  Silent on main (NotifyOffloadSuccess publishes nothing); the
 * guide's delta is a stored disk. */
static void op_offload(struct sim *s, unsigned t, unsigned k)
{
	unsigned c = *cell(s, s->master, t, k);
	if (c != REP_MEM)
		return;
	master_set(s, t, k, REP_MEM | REP_DISK);
	publish_delta(s, t, k, c, c | REP_DISK);
}

/* Upsert of a key that exists: the new value's replicas replace the old
 * ones.  Main's UpsertStart publishes nothing and UpsertEnd goes through
 * PutEnd, one stored per replica type; the guide sends removed for the old
 * value, then stored for the new one. */
static void op_upsert(struct sim *s, unsigned t, unsigned k, bool with_disk)
{
	unsigned c = *cell(s, s->master, t, k), now = with_disk ? REP_MEM | REP_DISK : REP_MEM;
	if (!c) {
		op_put(s, t, k, with_disk);
		return;
	}
	if (!object_dialect(s)) {
		master_set(s, t, k, (unsigned char)now);
		publish_delta(s, t, k, c, 0);
		publish_delta(s, t, k, 0, now);
		return;
	}
	put_end(s, t, k, REP_MEM, REP_MEM);
	if (with_disk)
		put_end(s, t, k, REP_DISK, now);
}

/* EvictTenantMemoryForQuota: a tenant's memory replicas go, and an object
 * left with nothing is erased.  v0.3.12 publishes nothing (master_service.cpp
 * L9646-9889 at 3b5a594); dev/conductor publishes each (19ffa6e L6552,
 * L6557); main since #3818 the delta of an object that keeps its disk
 * replica, and nothing for one it empties (PublishKvRemovedAfterEvict
 * returns on an invalid object, EraseMetadata finds no medium left: 00390e6e
 * ~456-466k), whatever the op log.  All count the bytes freed in
 * mooncake_tenant_evict_bytes_total{tenant_id} (3b5a594 L9862). */
void op_quota_evict(struct sim *s, unsigned t, unsigned k)
{
	unsigned c = *cell(s, s->master, t, k);
	if (!(c & REP_MEM))
		return;
	bool silent = c == REP_MEM && s->o.mooncake != MC_CONDUCTOR;
	s->silent_removals += silent;
	master_set(s, t, k, (unsigned char)(c & ~REP_MEM));
	pthread_mutex_lock(&s->model_lock);
	s->evicted_bytes[t] += OBJECT_BYTES;
	pthread_mutex_unlock(&s->model_lock);
	if (!silent)
		publish_delta(s, t, k, c, c & ~REP_MEM);
}

/* BatchRemove, RemoveByRegex, the clean-ups: erased without an event on
 * v0.3.12 (and as the simulator has always played dev/conductor); main
 * since #3818 publishes each removal (EraseMetadata ->
 * PublishObjectRemoved), none with the op log (op_remove). */
void op_silent_remove(struct sim *s, unsigned t, unsigned k)
{
	if (main_3818(s)) {
		remove_one(s, t, k);
		return;
	}
	s->silent_removals += *cell(s, s->master, t, k) != 0;
	master_set(s, t, k, 0);
}

/* RemoveAll, of every tenant (only < 0) or of tenant `only`; `leased`
 * objects of each tenant are still leased and skipped (no force), the rest
 * erased.  v0.3.12 erases silently (its EraseMetadata publishes nothing,
 * master_service.cpp at 3b5a594 ~L6581-6758) and has no cleared.
 * dev/conductor's EraseMetadata publishes each object's removal (19ffa6e
 * L1752-1770: a removed per medium), all tenants' first, shard by shard,
 * then a cleared: of all tenants, for each one it saw and emptied
 * (L4647-4690: a tenant holding nothing is not seen); of one tenant,
 * whenever nothing of it remains, so for a tenant that held nothing too
 * (L4699-4739), unlike the guide.  Main since #3818 publishes each removal
 * and then cleared only for a tenant it emptied that held objects, none
 * where one was skipped (PublishKvClearedIfEpochUnchanged, the guide's
 * rule); with the op log (--oplog on) the objects whose append succeeded
 * count as removed, so its cleared goes out at once, and their removals
 * never (oplog_erase). */
void op_remove_all(struct sim *s, int only, unsigned leased)
{
	bool *had = calloc(s->o.tenants, sizeof(*had)), *kept = calloc(s->o.tenants, sizeof(*kept));
	if (!had || !kept)
		die("out of memory");
	for (unsigned t = 0; t < s->o.tenants; t++) {
		if (only >= 0 && t != (unsigned)only)
			continue;
		had[t] = only >= 0 && s->o.mooncake == MC_CONDUCTOR;
		unsigned skipped = 0;
		for (unsigned k = 0; k < s->o.keys; k++) {
			unsigned c = *cell(s, s->master, t, k);
			if (!c)
				continue;
			had[t] = true;
			if (skipped < leased) { /* still leased: skipped, the tenant not emptied */
				skipped++;
				kept[t] = true;
			} else if (object_dialect(s)) {
				s->silent_removals++;
				master_set(s, t, k, 0);
			} else if (s->o.oplog) {
				oplog_erase(s, t, k, c);
			} else {
				remove_one(s, t, k);
			}
		}
	}
	for (unsigned t = 0; t < s->o.tenants; t++)
		if (had[t] && !kept[t])
			publish(s, CLEARED, t, 0, 0);
	free(had);
	free(kept);
}

/* Objects the master holds before any subscriber: no event for them. */
void preload(struct sim *s, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		unsigned t = (unsigned)(rnd(s) % s->o.tenants), k = (unsigned)(rnd(s) % s->o.keys);
		master_set(s, t, k, (unsigned char)(1 + rnd(s) % 3));
	}
}

/* One random operation of a master under load.  Nothing in this mix erases
 * an object silently but main's removals under the op log (the phases
 * batch-remove, clear, evict and quota-evict do): the stream alone can keep
 * every object count of the master exact.  So on main the mix's memory
 * evictions take only objects that keep a disk replica (a demotion); one
 * that empties an object, silent on main, is the phase evict's. */
void random_op(struct sim *s)
{
	unsigned t = (unsigned)(rnd(s) % s->o.tenants), k = (unsigned)(rnd(s) % s->o.keys);
	bool disk = rnd(s) % 10 < 3;
	unsigned r = (unsigned)(rnd(s) % 1000);
	if (r < 450)
		op_put(s, t, k, disk);
	else if (r < 650)
		op_remove(s, t, k);
	else if (r < 760) {
		if (!main_3818(s) || *cell(s, s->master, t, k) & REP_DISK)
			op_evict(s, t, k, REP_MEM);
	} else if (r < 820)
		op_evict(s, t, k, REP_DISK);
	else if (r < 890)
		op_offload(s, t, k);
	else
		op_upsert(s, t, k, disk);
}

struct quota tenant_quota(struct sim *s, unsigned t)
{
	uint64_t objects = 0;
	for (unsigned k = 0; k < s->o.keys; k++)
		objects += *cell(s, s->master, t, k) != 0;
	struct quota q = {.requested = (t + 1) * s->o.quota_unit, .charged = objects * OBJECT_BYTES};
	/* an explicit policy on the even tenants grants what they ask; the
	 * others get half of it */
	q.explicit_policy = t % 2 == 0;
	q.effective = q.explicit_policy ? q.requested : q.requested / 2;
	q.over = q.charged > q.effective;
	return q;
}

json_t *quotas_json(struct sim *s)
{
	json_t *data = json_array();
	pthread_mutex_lock(&s->model_lock);
	for (unsigned t = 0; t < s->o.tenants; t++) {
		if (s->policy_deleted[t]) /* its snapshot is gone with its policy */
			continue;
		struct quota q = tenant_quota(s, t);
		char name[32];
		tenant_name(t, name, sizeof(name));
		/* upstream closes admission for a tenant with no explicit policy
		 * (tenant_quota.cpp, ApplyEffectiveQuota), not for one over quota */
		json_array_append_new(data, json_pack("{s:s,s:I,s:I,s:I,s:b,s:b,s:b}", "tenant_id", name,
						      "requested_quota_bytes", (json_int_t)q.requested,
						      "effective_quota_bytes", (json_int_t)q.effective, "charged_bytes",
						      (json_int_t)q.charged, "admission_closed", !q.explicit_policy,
						      "over_quota", q.over, "has_explicit_policy", q.explicit_policy));
	}
	pthread_mutex_unlock(&s->model_lock);
	return data;
}

void status_skipped(struct sim *s, json_t *j, uint64_t skipped)
{
	bool guide = s->o.spec_extras || main_3818(s); /* the guide's five fields */
	json_object_set_new(j, guide ? "skipped_keyless_events" : "skipped_unparsed_keys",
			    json_integer((json_int_t)skipped));
	if (s->o.mooncake == MC_CONDUCTOR && !s->o.spec_extras) /* dev/conductor's */
		json_object_set_new(j, "invalid_event_hashes", json_integer(0));
}

void op_quota_reject(struct sim *s, unsigned t)
{
	pthread_mutex_lock(&s->model_lock);
	s->quota_rejects[t]++;
	pthread_mutex_unlock(&s->model_lock);
}

char *metrics_text(struct sim *s, size_t *len)
{
	size_t cap = 256 + (s->o.quotas ? (size_t)s->o.tenants * 640 : 0), n = 0;
	char *b = malloc(cap);
	if (!b)
		die("out of memory");
	n += (size_t)snprintf(b + n, cap - n,
			      "# HELP master_key_count Total number of keys in the master\n"
			      "# TYPE master_key_count gauge\nmaster_key_count %llu\n",
			      (unsigned long long)(atomic_load(&s->master_keys) + s->o.foreign));
	pthread_mutex_lock(&s->model_lock);
	for (unsigned t = 0; s->o.quotas && t < s->o.tenants; t++) {
		if (s->policy_deleted[t])
			continue;
		struct quota q = tenant_quota(s, t);
		char name[32];
		tenant_name(t, name, sizeof(name));
		n += (size_t)snprintf(b + n, cap - n,
				      "mooncake_tenant_quota_requested_bytes{tenant_id=\"%s\"} %llu\n"
				      "mooncake_tenant_quota_effective_bytes{tenant_id=\"%s\"} %llu\n"
				      "mooncake_tenant_quota_charged_bytes{tenant_id=\"%s\"} %llu\n"
				      "mooncake_tenant_quota_admission_closed{tenant_id=\"%s\"} %d\n"
				      "mooncake_tenant_quota_over_quota{tenant_id=\"%s\"} %d\n"
				      "mooncake_tenant_evict_bytes_total{tenant_id=\"%s\"} %llu\n",
				      name, (unsigned long long)q.requested, name, (unsigned long long)q.effective,
				      name, (unsigned long long)q.charged, name, !q.explicit_policy, name, q.over, name,
				      (unsigned long long)s->evicted_bytes[t]);
		if (s->quota_rejects[t])
			n += (size_t)snprintf(
				b + n, cap - n,
				"mooncake_tenant_quota_reject_total{tenant_id=\"%s\",reason=\"quota_exceeded\"} "
				"%llu\n",
				name, (unsigned long long)s->quota_rejects[t]);
	}
	pthread_mutex_unlock(&s->model_lock);
	*len = n;
	return b;
}
