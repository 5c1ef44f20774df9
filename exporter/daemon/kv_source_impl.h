/* SPDX-License-Identifier: Apache-2.0 */
/* What the source's files share (source.c, source_sockets.c,
 * source_monitor.c, source_ingest.c, source_wait.c, source_scrape.c): the
 * member's sockets, its monitor, its ingest thread. */
#ifndef KV_SOURCE_IMPL_H
#define KV_SOURCE_IMPL_H

#include <pthread.h>

#include "kv_log.h"
#include "kv_source.h"

/* The subscriber's receive timeout: an ingest thread notices a stop within
 * it. */
#define POLL_MS 100

static inline void kvd_member_log(enum kvd_log_level level, const char *msg, const kvd_member *m)
{
	kvd_log(level, msg, "source", m->src->cfg->name, "endpoint", m->cfg->zmq, NULL);
}

/* The member's SUB and monitor sockets, connected (source_sockets.c).
 * Returns 0, or MKV_EINVAL with the failed step and ZMQ's reason in err. */
int kvd_member_open_sockets(kvd_member *m, size_t index, void *zctx, char *err, size_t errlen);
void kvd_member_close_sockets(kvd_member *m);

/* Takes whatever the monitor has to say, without waiting (source_monitor.c). */
void kvd_member_take_monitor_events(kvd_member *m, double now);

/* The member's ingest thread (source_ingest.c). */
void *kvd_member_ingest_main(void *arg);

/* A condition timed on the monotonic clock (source_wait.c).  Returns 0 or
 * an errno. */
int kvd_cond_init_mono(pthread_cond_t *c);

#endif
