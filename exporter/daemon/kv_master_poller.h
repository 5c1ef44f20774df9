/* The libcurl shell around kv_master: polls one source's master. */
#ifndef KV_STATUS_POLL_H
#define KV_STATUS_POLL_H

/* Thread body; arg is the kv_source.  Returns when the stop flag is set. */
void *kv_status_poll_main(void *arg);

#endif
