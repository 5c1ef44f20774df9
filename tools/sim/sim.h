/* The simulator's shared model: its options, the master's state and the
 * publisher's, what the admin endpoints (admin.c) and the publisher
 * (sim.c) both see.  The master's model is guarded by model_lock: the admin
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

#define MAX_BATCH 64

enum kind { STORED, REMOVED, CLEARED };

struct event {
	enum kind kind;
	unsigned tenant;
	unsigned key;
	unsigned medium; /* 1 cpu, 2 disk; 0 for cleared */
};

struct tenant_truth {
	uint64_t events[3];
	uint64_t dup, unknown;
	bool exact; /* a cleared was sent since the last break in the stream */
	bool seen;  /* at least one event reached the wire */
};

struct opts {
	const char *pub, *status_addr, *truth, *backend;
	unsigned tenants, keys, queue_cap, sndhwm;
	uint64_t preload; /* objects the master holds before any subscriber */
	uint64_t seed;
	bool legacy, object_key, spec_extras;
	char **phases;
	size_t n_phases;
};

struct sim {
	struct opts o;
	void *zctx, *pub;
	uint64_t rng;
	/* publisher process state (reset by restart) */
	uint64_t next_seq, next_event_id;
	atomic_ullong published_batches, published_events, dropped_events, skipped;
	atomic_bool standby;
	unsigned batch; /* events a message at most (MAX_BATCH, or less for an ops phase) */
	/* the queue */
	struct event *queue;
	size_t q_head, q_len;
	uint64_t reserved; /* sequence numbers reserved by drops since the last send */
	/* models: the master's (authoritative) and the wire's (what was sent) */
	unsigned char *master, *wire;
	struct tenant_truth *truth;
	/* stream facts */
	uint64_t messages, events_sent, gaps, missing, restarts, last_seq;
	uint64_t garbage[2]; /* by garbage_reasons */
	uint64_t dropped_total, keyless_total, silent_removals;
	uint64_t unheard, lost_messages, lost_events; /* sent while no socket was bound */
	struct MHD_Daemon *status;
	pthread_mutex_t model_lock; /* the master's model: ops write, admin endpoints read */
	atomic_ullong master_keys;  /* keys of all tenants in the master's model */
};

/* The simulator's keys are textual, as most integrations' are. */
static inline int key_name(unsigned k, char *buf, size_t n)
{
	uint64_t h = (uint64_t)k * 0x9e3779b97f4a7c15ull;
	return snprintf(buf, n, "model-%c/layer%02u/%016llx", 'a' + (int)(k % 3), k % 80, (unsigned long long)h);
}

static inline unsigned char *cell(struct sim *s, unsigned char *model, unsigned t, unsigned k)
{
	return &model[(size_t)t * s->o.keys + k];
}

/* Sets a cell of the master's model, keeping master_keys. */
void master_set(struct sim *s, unsigned t, unsigned k, unsigned char media);

/* The admin HTTP endpoints (admin.c): /kv_events/status, /get_all_keys,
 * /batch_query_keys, /metrics.  Dies when it cannot listen. */
struct MHD_Daemon *admin_start(struct sim *s, const char *addr);

void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
