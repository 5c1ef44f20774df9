/* SPDX-License-Identifier: Apache-2.0 */
/* GET /state (--state.serve): every source's state for the next exporter
 * (mooncake_kv/handover.h), written by a child process forked with every
 * source's lock held, so that the copy is of one instant and ingestion
 * waits only for the fork, not for the writing. */
#ifndef KV_STATE_SERVE_H
#define KV_STATE_SERVE_H

#include <stddef.h>

typedef struct kvd_source kvd_source;

/* At most this many copies are written at once; beyond, the caller answers 503. */
#define KVD_STATE_SERVE_MAX 2

/* Starts a copy: *fd is the pipe it comes through (the caller closes it),
 * *pause_s how long ingestion waited.  Returns 0, MKV_ELIMIT (too many copies
 * are being written) or MKV_ENOMEM (no pipe, no process). */
int kvd_state_serve_open(kvd_source *sources, size_t n, int *fd, double *pause_s);
/* Collects the children that have finished (each copy calls it; so does
 * shutdown, waiting for them). */
void kvd_state_serve_reap(int wait);

#endif
