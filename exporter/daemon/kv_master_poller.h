/* SPDX-License-Identifier: Apache-2.0 */
/* The libcurl shell around the master's facts (kv_master_status.h, kv_leadership.h, ...): polls one member. */
#ifndef KV_MASTER_POLLER_H
#define KV_MASTER_POLLER_H

/* Thread body; arg is the kvd_source.  Returns when the stop flag is set. */
void *kvd_master_poller_main(void *arg);

#endif
