/* SPDX-License-Identifier: Apache-2.0 */
/* The master's GET /kv_events/status: parsing the body and tracking what
 * successive polls say (restarts, the drop ratio over the last minute, and
 * loss the master's own counters do not explain).  Pure: the poller shell
 * does the HTTP and hands each outcome here. */
#ifndef KV_MASTER_STATUS_H
#define KV_MASTER_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kv_common.h"
#include "kv_loss.h"

typedef struct kv_master_status {
	bool enabled;
	uint64_t published_batches;
	uint64_t published_events;
	uint64_t dropped_events;
	/* The spec's skipped_keyless_events (per-object events suppressed for
	 * want of a key) and upstream's skipped_unparsed_keys (every event whose
	 * key is not a number, published or not) are different figures: each is
	 * kept only when the master reports it. */
	bool has_keyless, has_unparsed;
	uint64_t skipped_keyless_events;
	uint64_t skipped_unparsed_keys;
	bool has_invalid_hashes; /* dev/conductor's: keys whose block hash it could not encode */
	uint64_t invalid_event_hashes;
	enum mkv_dialect dialect; /* what the set of fields says the publisher speaks */
} kv_master_status;

/* MKV_POLL_OK, MKV_POLL_PARSE (not JSON, not an object, too-big integer) or
 * MKV_POLL_FIELD (a field missing or of the wrong type). */
enum mkv_poll_error kv_master_parse(const char *body, size_t len, kv_master_status *out);

/* What a poll's outcome says of the master's publisher. */
enum kv_publisher_seen {
	KV_PUBLISHER_UNKNOWN,    /* nothing: a bad or late answer is no evidence either way */
	KV_PUBLISHER_ABSENT,     /* a standby's 503, a refused connection, enabled=false */
	KV_PUBLISHER_PUBLISHING, /* a valid answer with enabled */
};
enum kv_publisher_seen kv_master_publisher_seen(enum mkv_poll_error err, long http_status, const kv_master_status *st);

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
	uint64_t poll_errors[MKV_POLL__COUNT];
	double last_poll_time;     /* unix seconds of the last finished poll */
	double last_poll_duration; /* seconds */
	double drop_ratio;         /* dropped / (published + dropped) over the window */
	kv_drop_sample win[KV_DROP_WINDOW_SAMPLES];
	size_t win_first, win_n;
	uint64_t last_sequence; /* published_batches + dropped_events of the last valid answer */
	bool behind_known;      /* the stream and the answer describe the same publisher process */
	uint64_t behind;        /* last_sequence minus the stream's position, at the last poll */
	kv_loss loss;           /* restarts and loss by cause */
	/* the master's own key count (master_key_count of its /metrics) */
	bool keys_known;
	double keys;
	uint64_t keys_errors[MKV_POLL__COUNT];
} kv_master;

/* One poll finished at `now` (unix seconds) after `duration` seconds.
 * http_status is 0 when no response came.  before is the stream's position
 * read *before* the request was sent (see kv_loss.h). */
void kv_master_record(kv_master *m, double now, double duration, enum mkv_poll_error err, long http_status,
		      const kv_master_status *st, const kv_stream_pos *before);

/* The outcome of reading master_key_count from the master's /metrics. */
void kv_master_record_keys(kv_master *m, enum mkv_poll_error err, double keys);

/* After a valid answer, with the stream's position now: updates
 * loss.behind and says whether a tail is certainly lost (kv_loss_tail:
 * interval_s is the poll interval); the caller then counts it with
 * kv_stream_tail_lost(upto_seq, upto_eid). */
bool kv_master_tail(kv_master *m, const kv_stream_pos *now_pos, double now, double interval_s, uint64_t *upto_seq,
		    uint64_t *upto_eid);

#endif
