/* SPDX-License-Identifier: Apache-2.0 */
/* One HTTP GET at a time over a reused libcurl easy handle (the connection
 * stays open), with a bounded body: the shell the status poller and the
 * reconciler talk to the master through. */
#ifndef KV_FETCH_H
#define KV_FETCH_H

#include <stdbool.h>
#include <curl/curl.h>

#include <mooncake_kv/buf.h>
#include <mooncake_kv/common.h>

/* Bytes of an answer as they arrive; false aborts the transfer. */
typedef bool (*kvd_fetch_sink)(const void *p, size_t n, void *ctx);

typedef struct kvd_fetch {
	CURL *h;
	mkv_buf body; /* the last answer's body (NUL-terminated; data NULL when empty) */
	size_t limit;
	double timeout_s;
	bool too_large;
	kvd_fetch_sink sink; /* while streaming */
	void *sink_ctx;
	bool sink_refused;
} kvd_fetch;

/* Returns 0 or MKV_ENOMEM. */
int kvd_fetch_init(kvd_fetch *f, double timeout_s, size_t limit);
void kvd_fetch_free(kvd_fetch *f);

/* GETs url.  Returns MKV_POLL_OK for a 200 with a body within the limit,
 * else the reason (MKV_POLL_HTTP_STATUS for another status); *http is the
 * status, 0 when no answer came. */
enum mkv_poll_error kvd_fetch_get(kvd_fetch *f, const char *url, long *http);

/* GETs url, handing the body to sink as it arrives instead of keeping it:
 * no size limit, the sink keeps what it needs (for answers that grow with
 * the tenants).  A large answer takes long: it fails when it stalls (less
 * than 1 KiB/s for the timeout) or after ten timeouts (30 s at least), not
 * after one.  Returns as kvd_fetch_get, or MKV_POLL_NO_MEMORY when the sink
 * refused. */
enum mkv_poll_error kvd_fetch_stream(kvd_fetch *f, const char *url, kvd_fetch_sink sink, void *ctx, long *http);

/* The reason for a failed transfer (too_large: the body outgrew its limit). */
enum mkv_poll_error kvd_fetch_classify(CURLcode rc, bool too_large);

/* The common options: no signals, timeouts, user agent, http(s) only. */
void kvd_fetch_setopts(CURL *h, double timeout_s);

#endif
