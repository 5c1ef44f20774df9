/* SPDX-License-Identifier: Apache-2.0 */
/* One watched store: a source of one master, or of several highly
 * available ones (members).  The core's mkv_store (mooncake_kv/store.h)
 * holds and decides everything; this shell gives each member its ZMQ
 * subscriber thread and its status poller thread, and the source a
 * reconciler thread.  The lock guards the store; a scrape holds it only to
 * copy figures out. */
#ifndef KV_SOURCE_H
#define KV_SOURCE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <mooncake_kv/scrape.h>
#include <mooncake_kv/store.h>

#include "kv_config.h"

typedef struct kvd_source kvd_source;

/* A member's connection and dialect are the store's (mkv_store_is_connected,
 * mkv_store_dialect): the shell reports what its sockets saw and reads the
 * store's word under the lock, and keeps no copy of either. */
typedef struct kvd_member {
	kvd_source *src;
	const kvd_member_cfg *cfg; /* borrowed from the frozen configuration */
	size_t index;              /* in the store */
	atomic_bool poll_now;      /* set by the ingest thread: the poller polls at once */

	void *sub, *mon;              /* owned by the ingest thread once it runs */
	atomic_uint_fast64_t backlog; /* messages drained since the socket was last found empty */
	double last_message_at;       /* kvd_now() of the last message received (the ingest thread's) */
	double monitor_asked_at;      /* and of the last look at the monitor (likewise) */
	bool ingest_started, poll_started;
	pthread_t ingest_thread;
	pthread_t poll_thread;
} kvd_member;

struct kvd_source {
	const kvd_source_cfg *cfg; /* borrowed from the frozen configuration */
	const kvd_config *config;
	const atomic_bool *stop; /* set once, at shutdown */

	pthread_mutex_t lock;
	mkv_store *store; /* under lock */
	/* Broadcast under the lock when a member's dialect is decided (a
	 * poller) and at stop: an ingest thread waits on it for its member's
	 * first decision (on CLOCK_MONOTONIC, at most --master.timeout). */
	pthread_cond_t decided;
	/* Broadcast under the lock when an ingest thread asks its poller to
	 * poll at once, and at stop: the pollers and the reconciler wait on it
	 * for their next round (kvd_source_wait). */
	pthread_cond_t wake;
	kvd_member *members;
	size_t n_members;
	bool recon_started;
	pthread_t recon_thread;
};

/* Sets up the state, and each member's stream and subscriber sockets,
 * connected, so that an endpoint ZMQ refuses fails here, before any thread
 * runs (a host name that does not resolve yet is not refused: ZMQ keeps
 * retrying it).  Returns 0, or MKV_EINVAL / MKV_ENOMEM with a one-line reason
 * in err; the source then holds nothing. */
int kvd_source_init(kvd_source *s, const kvd_config *cfg, const kvd_source_cfg *src, void *zctx, mkv_budget *budget,
		    uint64_t seed, const atomic_bool *stop, char *err, size_t errlen);
/* Starts every member's ingest thread and poller (when it has an admin URL),
 * and the reconciler.  Returns 0 or MKV_ENOMEM (a thread could not be
 * created). */
int kvd_source_start(kvd_source *s);
/* Before the threads start (a bootstrap from a peer): waits until every
 * member's subscription is up (its handshake, then a first message waiting:
 * at most 2 s for an idle publisher), or until `until` (kvd_mono), so that
 * what the peer's copy lacks is queued here. */
void kvd_source_await_connected(kvd_source *s, double until);
/* Wakes the source's threads that wait for the store (the stop flag must
 * be set), and joins them, and frees everything. */
void kvd_source_destroy(kvd_source *s);
/* Waits at most `seconds`, until the stop, or, when wake is given, until
 * *wake is set (it clears it: true).  A duration, not a time: each caller
 * decides when its round is due on one clock of its own.  Never a loop of
 * sleeps: a condition variable on the monotonic clock. */
bool kvd_source_wait(kvd_source *s, atomic_bool *wake, double seconds);

/* Copies the source's figures into slot i of a scrape.  Returns 0 or
 * MKV_ENOMEM. */
int kvd_source_scrape(kvd_source *s, mkv_scrape *sc, size_t i);

/* True once every member with an admin URL was polled, every member that
 * serves connected, and at least one member connected or answered as a
 * standby (mkv_store_ready). */
bool kvd_source_ready(kvd_source *s);

/* Logs a dialect decision (call without the lock). */
void kvd_member_log_dialect(const kvd_member *m, enum mkv_dialect_news news, const mkv_dialect_info *d);

#endif
