/* SPDX-License-Identifier: Apache-2.0 */
/* One watched store: a source of one master, or of several highly
 * available ones (members).  Each member has its ZMQ subscriber thread and
 * its status poller thread, its own stream numbering and master figures;
 * all members feed the source's one tenant state, because they describe
 * the same store.  The lock guards the state, every member's stream,
 * master and HA figures, the leadership judgement and the quotas; a scrape
 * holds it only to copy figures out. */
#ifndef KV_SOURCE_H
#define KV_SOURCE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "kv_config.h"
#include "kv_dialect.h"
#include "kv_drift.h"
#include "kv_leadership.h"
#include "kv_master_status.h"
#include "kv_master_metrics.h"
#include "kv_master_quotas.h"
#include "kv_snapshot.h"
#include "kv_stream.h"

typedef struct kv_source kv_source;

typedef struct kv_member {
	kv_source *src;
	const kv_member_cfg *cfg; /* borrowed from the frozen configuration */
	kv_stream *stream;        /* under lock: its numbering, feeding src->state */
	kv_master master;         /* under lock */
	kv_member_role *role;     /* under lock: &src->roles[its index] */
	uint64_t ha_errors[KV_POLL__COUNT];
	kv_dialect_choice dialect;   /* under lock: what its publisher speaks (its stream is read so) */
	atomic_bool dialect_decided; /* dialect.decided, for the ingest thread waiting to start */
	atomic_bool poll_now;        /* set by the ingest thread: the poller polls at once */

	void *sub, *mon; /* owned by the ingest thread once it runs */
	atomic_bool connected;
	atomic_uint_fast64_t backlog; /* messages drained since the socket was last found empty */
	atomic_bool ever_connected;   /* for /-/ready */
	bool ingest_started, poll_started;
	pthread_t ingest_thread;
	pthread_t poll_thread;
} kv_member;

struct kv_source {
	const kv_source_cfg *cfg; /* borrowed from the frozen configuration */
	const kv_config *config;
	const atomic_bool *stop; /* set once, at shutdown */

	pthread_mutex_t lock;
	kv_state *state;
	kv_member *members;
	size_t n_members;
	kv_leadership leadership; /* under lock: who leads, failovers, split brains, a dropped state */
	kv_member_role *roles;    /* under lock: each member's, in member order */
	kv_quotas quotas;         /* under lock: the leader's last answer */
	kv_quota_rejects rejects; /* under lock: the leader's puts refused for a quota, from its /metrics */
	uint64_t quota_errors[KV_POLL__COUNT];

	kv_drift drift;       /* under lock: the state against master_key_count */
	atomic_bool drifting; /* drift.on, for the reconciler */
	kv_recon_stats recon; /* under lock */
	bool recon_started;
	pthread_t recon_thread;
};

/* Sets up the state, and each member's stream and subscriber sockets,
 * connected, so that an endpoint ZMQ refuses fails here, before any thread
 * runs (a host name that does not resolve yet is not refused: ZMQ keeps
 * retrying it).  Returns 0, or KV_EINVAL / KV_ENOMEM with a one-line reason
 * in err; the source then holds nothing. */
int kv_source_init(kv_source *s, const kv_config *cfg, const kv_source_cfg *src, void *zctx, kv_budget *budget,
		   uint64_t seed, const atomic_bool *stop, char *err, size_t errlen);
/* Starts every member's ingest thread and poller (when it has an admin URL),
 * and the reconciler.  Returns 0 or KV_ENOMEM (a thread could not be
 * created). */
int kv_source_start(kv_source *s);
/* Joins the threads (the stop flag must be set) and frees everything. */
void kv_source_destroy(kv_source *s);

/* Copies the source's figures for a scrape.  Returns 0 or KV_ENOMEM. */
int kv_source_snapshot(kv_source *s, kv_source_snap *out);

/* True once every member with an admin URL was polled, every member that
 * serves connected, and at least one member connected or answered as a
 * standby: a standby, which has no publisher, is ready as it is; a master
 * that stays down does not hold up a source whose leader is fine. */
bool kv_source_ready(kv_source *s);

/* The serving member's admin URL (the only member's for a one-master
 * source), or NULL when none serves.  Call under the lock. */
const char *kv_source_leader_url(const kv_source *s);
/* Sets the member's dialect after a decision (kv_dialect_observe or
 * _give_up) and applies what follows: its stream is read so from now on;
 * a switch marks the tenants stale (reason dialect), which a reconciling
 * source answers with a reconciliation.  Call under the lock. */
void kv_member_dialect_news(kv_member *m, enum kv_dialect_news news);
/* Logs a decision (call without the lock). */
void kv_member_log_dialect(const kv_member *m, enum kv_dialect_news news, const kv_dialect_choice *c);

/* Gaps and restarts of all members' streams: anything that can have lost
 * an event.  Call under the lock. */
uint64_t kv_source_breaks(const kv_source *s);

#endif
