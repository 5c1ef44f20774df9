/* SPDX-License-Identifier: Apache-2.0 */
/* The simulator's shared model: its options, the master's state and the
 * publisher's, and each file's functions (main.c says which file holds
 * what, and which way the calls go).  The master's model is guarded by model_lock: the admin
 * endpoints read it from libmicrohttpd's thread. */
#ifndef SIM_H
#define SIM_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#define MAX_BATCH 64

enum kind { STORED, REMOVED, CLEARED, POISON /* an unknown event_type, never applied */ };

/* The two dialects of docs/upstream.md: release v0.3.12 (main up to 3b5a594)
 * publishes one event per put and per erased object, with a guessed medium
 * (object); the subscriber guide, as main since PR #3818 and dev/conductor
 * implement it, per-medium deltas (media). */
enum { DIALECT_OBJECT, DIALECT_MEDIA };

/* Which Mooncake master the simulator plays (--mooncake): main since PR
 * #3818 (the guide, stateless publisher, five status fields), release
 * v0.3.12 (= main at 3b5a594: the object dialect), dev/conductor at 19ffa6e
 * (the guide, stateful publisher, six status fields).  MC_MAIN is 0: the
 * default. */
enum mooncake { MC_MAIN, MC_V0312, MC_CONDUCTOR };
extern const char *const mooncake_names[3];

static inline int mooncake_dialect(int mc)
{
	return mc == MC_V0312 ? DIALECT_OBJECT : DIALECT_MEDIA;
}

/* Replicas of an object in the master's model (a cell): memory, and disk of
 * any kind (the master's file system, a client's local disk, NVMe-oF), as
 * the wire's media name them. */
enum { REP_MEM = 1, REP_DISK = 2 };

struct event {
	enum kind kind;
	unsigned tenant;
	unsigned key;
	unsigned medium; /* 1 cpu, 2 disk; 0 for cleared */
};

/* Lifetimes an ideal subscriber observes (docs/design.md, "Residency"):
 * each life whose beginning it saw while the tenant was exact, in ms of
 * the publisher's clock, and the lives that ended otherwise. */
struct lives {
	uint64_t *ms;
	size_t n, cap;
	uint64_t unobserved;
};

#define MAX_MODELS 4 /* --models */

struct tenant_truth {
	uint64_t events[3];
	uint64_t dup, unknown;
	bool exact;                 /* a cleared was sent since the last break in the stream */
	bool removed_after_cleared; /* a removed it could not place (the op log's late ones) */
	bool pending_unseen;        /* its last cleared came while it was not exact: late removals of objects unseen */
	bool seen;                  /* at least one event reached the wire */
	struct lives lives, model_lives[MAX_MODELS]; /* the tenant's, and per model (key group) */
};

#define MAX_MEMBERS 4

struct opts {
	const char *pubs[MAX_MEMBERS], *status_addrs[MAX_MEMBERS]; /* --pub, --status: one per member */
	unsigned n_pubs, n_status;
	const char *truth, *backend;
	bool quotas;         /* the leader answers /api/v1/tenant_quotas (else 409) */
	int lists_tenants;   /* enum lists_tenants: the per-tenant listing of tools/upstream/tenant-listing.patch */
	uint64_t quota_unit; /* tenant t's requested quota: (t + 1) * quota_unit bytes */
	unsigned tenants, keys, queue_cap, sndhwm;
	uint64_t preload; /* objects the master holds before any subscriber */
	uint64_t foreign; /* keys of a tenant no event names, held since before any subscriber */
	int key_style;    /* enum key_style */
	unsigned models;  /* models (or releases) the keys spread over, key_style != KEYS_PLAIN */
	uint64_t seed;
	bool legacy, object_key, spec_extras;
	int mooncake; /* enum mooncake: the master played */
	int dialect;  /* what its publisher speaks: mooncake_dialect(mooncake) */
	bool oplog;   /* HA with the op log (main): whole-object removals never published */
	/* the model context of --model-name ... (NULL, -1: the master's default) */
	const char *model_name, *lora_name, *additional_salt;
	long block_size, dp_rank;
	char **phases;
	size_t n_phases;
};

/* Which per-tenant listing the master serves (--lists-tenants):
 * upstream as released has none (404 at /api/v1/tenant_keys and
 * /api/v1/tenant_batch_query_keys); the patched master lists any tenant and
 * names it in X-Mooncake-Tenant-Id (and "tenant_id"); a master that
 * ignores the parameter answers with tenant default's keys and names none. */
enum lists_tenants { LISTS_NO, LISTS_YES, LISTS_IGNORES };

/* One master of the cluster: member 0 leads at first; the others stand by,
 * with no PUB socket, until a failover promotes one. */
struct member {
	struct sim *s;
	unsigned index;
	struct MHD_Daemon *admin;
	atomic_bool serving;
	/* what its stream carried, for the ground truth */
	uint64_t messages, events, last_seq, publishers, standby_events;
};

struct sim {
	struct opts o;
	struct member members[MAX_MEMBERS];
	unsigned n_members;
	atomic_uint
		publishing; /* the member whose publisher is s->pub and the counters below (admin threads read it) */
	atomic_ullong view; /* view_version: grows with every leadership change */
	void *zctx, *pub;
	uint64_t rng;
	/* publisher process state (reset by restart) */
	uint64_t next_seq, next_event_id;
	atomic_ullong published_batches, published_events, dropped_events, skipped;
	unsigned batch; /* events a message at most (MAX_BATCH, or less for an ops phase) */
	/* the queue */
	struct event *queue;
	size_t q_head, q_len;
	uint64_t reserved; /* sequence numbers reserved by drops since the last send */
	/* models: the master's (authoritative) and the wire's (what was sent) */
	unsigned char *master, *wire;
	int64_t *wire_birth;     /* per cell: the birth an ideal subscriber holds, -1 none */
	int64_t clock_offset_ms; /* added to the publisher's clock (phase clock:step=MS) */
	int64_t ts_max;          /* the newest timestamp of the current publisher process */
	bool ts_seen;
	uint64_t ts_backwards;     /* events sent with a timestamp below ts_max */
	unsigned char *wire_since; /* the wire since the last promotion of a one-master source (see write_truth) */
	struct tenant_truth *truth;
	/* stream facts */
	uint64_t messages, events_sent, gaps, missing, restarts, last_seq, split_brains;
	uint64_t garbage[2];     /* by garbage_reasons */
	unsigned poison_pending; /* messages still to carry a poison event (phase poison) */
	uint64_t poisoned;       /* poison events sent */
	uint64_t dropped_total, keyless_total, silent_removals;
	uint64_t unheard, lost_messages, lost_events; /* sent while no socket was bound */
	pthread_mutex_t model_lock;                   /* the master's model: ops write, admin endpoints read */
	atomic_ullong master_keys;                    /* keys of all tenants in the master's model */
	atomic_ullong tenant_listings;                /* requests served at /api/v1/tenant_keys */
	uint64_t *quota_rejects;                      /* per tenant: puts refused for its quota (under model_lock) */
	uint64_t *evicted_bytes;                      /* per tenant: what its quota eviction freed (under model_lock) */
	bool *policy_deleted;                         /* per tenant: its quota policy deleted (under model_lock) */
	/* --oplog on: per cell, the media of an erased object's replicas still
	 * REMOVED in its entry, waiting for the op log's durable callback (the
	 * key's puts are refused meanwhile); n_late of them */
	unsigned char *held;
	size_t n_late;
	unsigned char *snapshot;     /* the master's model when the phase snapshot ran (NULL: none) */
	unsigned char *wire_pending; /* per cell: media whose removal a subscriber still expects (--oplog on) */
	uint64_t durable_erased, reputs, restored, cleanup_removals, discarded, revoked;
};

/* Key shapes of the integrations (docs/key-groups.md); the model of key k is
 * key_model(k), and every key ends with 16 hex digits that give k back. */
enum key_style { KEYS_PLAIN, KEYS_VLLM, KEYS_LMCACHE, KEYS_SGLANG };

static inline unsigned key_model_index(const struct sim *s, unsigned k)
{
	return k % (s->o.key_style == KEYS_PLAIN ? 3 : s->o.models);
}

static inline const char *key_model_name(const struct sim *s, unsigned i)
{
	static const char *const plain[] = {"model-a", "model-b", "model-c"};
	static const char *const models[] = {"llama-3.1-8b", "llama-3.1-8b-r2", "qwen2.5-7b", "deepseek-v3"};
	return s->o.key_style == KEYS_PLAIN ? plain[i] : models[i];
}

static inline const char *key_model(const struct sim *s, unsigned k)
{
	return key_model_name(s, key_model_index(s, k));
}

static inline unsigned n_models(const struct sim *s)
{
	return s->o.key_style == KEYS_PLAIN ? 3 : s->o.models;
}

static inline int key_name(const struct sim *s, unsigned k, char *buf, size_t n)
{
	unsigned long long h = (unsigned long long)((uint64_t)k * 0x9e3779b97f4a7c15ull);
	const char *m = key_model(s, k);
	switch (s->o.key_style) {
	case KEYS_VLLM: /* [cache_prefix@]model@tp_rank:N@pcpN@dcpN@pp_rank:N@group:N@hash */
		return snprintf(buf, n, "%s@tp_rank:%u@pcp0@dcp0@pp_rank:0@group:0@%016llx", m, k % 2, h);
	case KEYS_LMCACHE: /* fmt@model@world_size@worker_id@chunk_hash */
		return snprintf(buf, n, "vllm@%s@2@%u@%016llx", m, k % 2, h);
	case KEYS_SGLANG: /* extra_backend_tag_model_pagehash (the simulator's hash is short) */
		return snprintf(buf, n, "prod_%s_%016llx", m, h);
	default:
		return snprintf(buf, n, "%s/layer%02u/%016llx", m, k % 80, h);
	}
}

static inline void tenant_name(unsigned t, char *buf, size_t n)
{
	if (t == 0)
		snprintf(buf, n, "default");
	else
		snprintf(buf, n, "tenant-%u", t);
}

static inline unsigned char *cell(struct sim *s, unsigned char *model, unsigned t, unsigned k)
{
	return &model[(size_t)t * s->o.keys + k];
}

/* --- base.c --- */

extern volatile sig_atomic_t sim_stopping; /* set by SIGINT/SIGTERM */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
uint64_t rnd(struct sim *s);
double now_s(void);
void sleep_s(double s); /* returns early on a stop */

/* --- publisher.c: the publisher process --- */

/* main's model context when no flag says otherwise (a realistic one) */
#define SIM_MODEL      "meta-llama/Llama-3.1-8B-Instruct"
#define SIM_BLOCK_SIZE 16

/* The model context every event carries, as the master played stamps it
 * (NULL, 0: nil; dp_nil: v0.3.12's nil dp_rank). */
struct model_ctx {
	const char *model_name, *lora_name, *additional_salt;
	uint32_t block_size, dp_rank;
	bool dp_nil;
};
struct model_ctx model_context(const struct sim *s);

/* An event of the master's operation into the publisher's queue (what the
 * dialect and --object-key make of it). */
void publish(struct sim *s, enum kind k, unsigned t, unsigned key, unsigned medium);
void send_batch(struct sim *s);
void flush(struct sim *s);
/* Binds the publishing member's PUB socket; with after < 0 waits (up to
 * 10 s) for a subscriber, else publishes after that many seconds whoever
 * has joined (as a real master does). */
void pub_open(struct sim *s, double after);
void pub_close(struct sim *s);
/* Sends what is queued, lets it leave, closes the socket. */
void pub_stop(struct sim *s);
/* A new publisher process on the publishing member: numbering from 1. */
void new_publisher(struct sim *s);
/* The publisher's state, to let another member publish for a while. */
/* The publisher's state, to let another member publish for a while. */
struct pubstate {
	void *pub;
	unsigned publishing;
	uint64_t next_seq, next_event_id, reserved, unheard, batches, events, dropped, skipped;
};
struct pubstate pub_save(struct sim *s);
void pub_restore(struct sim *s, const struct pubstate *p);
/* n messages with a valid sequence number and a bad payload. */
void publish_garbage(struct sim *s, uint64_t n);
extern const char *const garbage_reasons[2]; /* the decode reasons they must give */

/* --- master.c: the master's model and operations --- */

/* The master's /metrics as upstream shapes it: master_key_count, and with
 * quotas on its per-tenant quota gauges (master_admin_service.cpp) and the
 * reject counter (master_metric_manager.cpp), some 450 bytes a tenant.
 * Returns a malloc'd body; takes model_lock. */
char *metrics_text(struct sim *s, size_t *len);

/* Sets a cell of the master's model, keeping master_keys. */
void master_set(struct sim *s, unsigned t, unsigned k, unsigned char media);
void random_op(struct sim *s); /* one random operation of a master under load */
void op_quota_evict(struct sim *s, unsigned t, unsigned k);
/* BatchEvict for space: key k of tenant t loses its memory replica. */
void op_space_evict(struct sim *s, unsigned t, unsigned k);
void op_silent_remove(struct sim *s, unsigned t, unsigned k);
/* RemoveAll of every tenant (only < 0) or of tenant `only`, with `leased`
 * objects of each tenant still leased and skipped (no force). */
void op_remove_all(struct sim *s, int only, unsigned leased);
/* A put of key k of tenant t (with a disk replica too), as random_op's. */
void op_put(struct sim *s, unsigned t, unsigned k, bool with_disk);
/* Changes an object's media, publishing what the master played publishes
 * for it (media: the delta; object: nothing). */
void publish_delta(struct sim *s, unsigned t, unsigned k, unsigned before, unsigned after);
void preload(struct sim *s, uint64_t n); /* objects held before any subscriber, no event */
/* Bytes the simulated store charges per object (its replicas' size_). */
#define OBJECT_BYTES 4096

/* Tenant t's quota figures from the master's model (call under model_lock). */
struct quota {
	uint64_t requested, effective, charged;
	bool over, explicit_policy;
};
struct quota tenant_quota(struct sim *s, unsigned t);
/* A put of tenant t refused for its quota: upstream counts it in
 * mooncake_tenant_quota_reject_total{reason="quota_exceeded"} once evicting
 * the tenant's own memory did not make room (master_service.cpp). */
void op_quota_reject(struct sim *s, unsigned t);
/* Every tenant's quota as upstream's GET /api/v1/tenant_quotas lists it
 * (the "data" array); takes model_lock. */
json_t *quotas_json(struct sim *s);

/* The skipped-event fields of /kv_events/status, as the master the
 * simulator plays reports them: main's skipped_unparsed_keys (object
 * dialect), dev/conductor's with invalid_event_hashes (media), the guide's
 * skipped_keyless_events (--spec-extras on). */
void status_skipped(struct sim *s, json_t *j, uint64_t skipped);

/* --- later.c: what main since #3818 still leaves unsaid, and its orderings --- */

/* The op log's durable callbacks: the held entries erased, nothing
 * published (--oplog on). */
void op_late_removals(struct sim *s);
/* Puts again n held keys (of tenant t, or any: -1) once
 * put_start_discard_timeout has passed: the old entry's removed, then the
 * new object's stored. */
void op_reput(struct sim *s, uint64_t n, int t);
/* The master's model as a snapshot holds it, and a master restored from
 * it: its objects without any stored, then `cleanup` of them erased, with
 * no event either. */
void op_snapshot(struct sim *s);
void op_restore(struct sim *s, uint64_t cleanup);
/* Harmless for the figures (only replicas never announced go): n copy/move
 * revokes, n discarded processing replicas; a tenant's quota policy
 * deleted. */
void op_revoke(struct sim *s, uint64_t n, int t);
void op_discard(struct sim *s, uint64_t n, int t);
void op_quota_delete(struct sim *s, unsigned t);

/* --- cluster.c --- */

/* Member m wins an election: a new view, its publisher from 1. */
void cluster_promote(struct sim *s, unsigned m, double after);
/* The same, its master restored from the snapshot (cleanup < 0: not). */
void cluster_promote_restored(struct sim *s, unsigned m, double after, double cleanup);
/* The member= of a phase (v >= 0), or the one after the publishing member. */
unsigned cluster_member(struct sim *s, double v);
void cluster_standby(struct sim *s, double seconds, double cleanup);
void cluster_failover(struct sim *s, unsigned to, double after, double cleanup);
void cluster_split_brain(struct sim *s, unsigned m, double seconds);
void cluster_standby_publish(struct sim *s, unsigned m, uint64_t count);
void cluster_crash(struct sim *s, double seconds, double after);
/* The member's admin endpoints up (when it has an address) or gone. */
void cluster_admin(struct member *m, bool on);

/* --- admin.c --- */

/* The admin HTTP endpoints of a member (admin.c): /kv_events/status,
 * /get_all_keys, /batch_query_keys, /metrics, /api/v1/tenant_quotas (503
 * unless it serves), /ha_status, /role, /leader.  Dies when it cannot
 * listen. */
struct MHD_Daemon *admin_start(struct member *m, const char *addr);

/* --- truth.c, phases.c --- */

void write_truth(struct sim *s, const char *path);
void run_phase(struct sim *s, const char *spec);

#endif
