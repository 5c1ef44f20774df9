/* The master's GET /kv_events/status: parsing the body and tracking what
 * successive polls say (restarts, the drop ratio over the last minute, and
 * loss the master's own counters do not explain).  Pure: the poller shell
 * does the HTTP and hands each outcome here. */
#ifndef KV_MASTER_H
#define KV_MASTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Label values of mooncake_kv_master_poll_errors_total{reason}. */
enum kv_poll_error {
	KV_POLL_OK = 0,
	KV_POLL_CONNECT,
	KV_POLL_TIMEOUT,
	KV_POLL_HTTP_STATUS,
	KV_POLL_BODY_TOO_LARGE,
	KV_POLL_PARSE,
	KV_POLL_FIELD,
	KV_POLL__COUNT
};

const char *kv_poll_error_name(enum kv_poll_error e);

typedef struct kv_master_status {
	bool enabled;
	uint64_t published_batches;
	uint64_t published_events;
	uint64_t dropped_events;
	uint64_t skipped_keyless_events; /* or upstream's skipped_unparsed_keys */
} kv_master_status;

/* KV_POLL_OK, KV_POLL_PARSE (not JSON, not an object, too-big integer) or
 * KV_POLL_FIELD (a field missing or of the wrong type). */
enum kv_poll_error kv_master_parse(const char *body, size_t len, kv_master_status *out);

#define KV_DROP_WINDOW_SECONDS 60.0
#define KV_DROP_WINDOW_SAMPLES 256

typedef struct kv_drop_sample {
	double t;
	uint64_t published, dropped;
} kv_drop_sample;

typedef struct kv_master {
	bool polled;      /* at least one poll finished, whatever its outcome */
	bool up;          /* the last poll got an answer (200 with a valid body, or 503) */
	bool standby;     /* the last answer was 503: a standby master */
	bool have_status; /* status holds a valid body */
	kv_master_status status;
	uint64_t restarts; /* counters moved backwards */
	uint64_t poll_errors[KV_POLL__COUNT];
	double last_poll_time;     /* unix seconds of the last finished poll */
	double last_poll_duration; /* seconds */
	double drop_ratio;         /* dropped / (published + dropped) over the window */
	kv_drop_sample win[KV_DROP_WINDOW_SAMPLES];
	size_t win_first, win_n;
	/* Transport loss: missing sequence numbers not explained by drops. */
	bool loss_base_set;
	uint64_t missing_base; /* stream missing count at the first good poll */
	uint64_t dropped_since_base;
	uint64_t lost_at_base;   /* transport_lost when the comparison restarted */
	uint64_t transport_lost; /* monotonic */
} kv_master;

/* One poll finished at `now` (unix seconds) after `duration` seconds.
 * http_status is 0 when no response came.  stream_missing is the stream's
 * missing-sequence count read *before* the request was sent: every gap seen
 * by then was caused by drops the master had already counted, so the
 * comparison cannot blame transport for a drop the master reports late. */
void kv_master_record(kv_master *m, double now, double duration, enum kv_poll_error err, long http_status,
		      const kv_master_status *st, uint64_t stream_missing);

#endif
