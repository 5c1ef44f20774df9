/* One watched master: its ZMQ subscriber thread, its status poller thread,
 * and the stream and master state they feed.  The lock guards `stream` and
 * `master`; a scrape holds it only to copy figures out. */
#ifndef KV_SOURCE_H
#define KV_SOURCE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "kv_config.h"
#include "kv_master.h"
#include "kv_snapshot.h"
#include "kv_stream.h"

typedef struct kv_source {
	const kv_source_cfg *cfg; /* borrowed from the frozen configuration */
	const kv_config *config;
	const atomic_bool *stop; /* set once, at shutdown */

	pthread_mutex_t lock;
	kv_stream *stream;
	kv_master master;

	void *sub, *mon;      /* owned by the ingest thread once it runs */
	unsigned drift_polls; /* poller only: polls in a row the stream and master_key_count disagree */
	atomic_bool drift;    /* they disagree: the stream's view has gone wrong */
	kv_recon_stats recon; /* under lock */
	bool recon_started;
	pthread_t recon_thread;
	atomic_bool connected;
	atomic_uint_fast64_t backlog; /* messages drained since the socket was last found empty */
	atomic_bool ever_connected;   /* for /-/ready */
	bool ingest_started, poll_started;
	pthread_t ingest_thread;
	pthread_t poll_thread;
} kv_source;

/* Sets up the stream and the subscriber's sockets and connects them, so
 * that an endpoint ZMQ refuses fails here, before any thread runs (a host
 * name that does not resolve yet is not refused: ZMQ keeps retrying it).
 * Returns 0, or KV_EINVAL / KV_ENOMEM with a one-line reason in err; the
 * source then holds nothing. */
int kv_source_init(kv_source *s, const kv_config *cfg, const kv_source_cfg *src, void *zctx, kv_budget *budget,
		   uint64_t seed, const atomic_bool *stop, char *err, size_t errlen);
/* Starts the ingest thread, then the poller when the source has a status
 * URL.  Returns 0 or KV_ENOMEM (a thread could not be created). */
int kv_source_start(kv_source *s);
/* Joins the threads (the stop flag must be set) and frees everything. */
void kv_source_destroy(kv_source *s);

/* Copies the source's figures for a scrape.  Returns 0 or KV_ENOMEM. */
int kv_source_snapshot(kv_source *s, kv_source_snap *out);

/* True once the subscriber connected and, with a status URL, the first
 * poll finished. */
bool kv_source_ready(kv_source *s);

#endif
