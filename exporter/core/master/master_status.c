/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "kv_master_json.h"
#include "kv_master_status.h"

enum mkv_poll_error kv_master_parse(const char *body, size_t len, kv_master_status *out)
{
	/* A u64 above INT64_MAX fails the whole document in jansson: that is a
	 * parse error to count, which is all such a counter deserves. */
	enum mkv_poll_error rc = MKV_POLL_PARSE;
	json_t *root = kv_master_json(body, len, &rc);
	if (!root)
		return rc;
	if (!json_is_object(root))
		goto out;
	rc = MKV_POLL_FIELD;
	const json_t *en = json_object_get(root, "enabled");
	if (!json_is_boolean(en))
		goto out;
	memset(out, 0, sizeof(*out));
	out->enabled = json_is_true(en);
	if (!kv_json_u64(root, "published_batches", &out->published_batches) ||
	    !kv_json_u64(root, "published_events", &out->published_events) ||
	    !kv_json_u64(root, "dropped_events", &out->dropped_events))
		goto out;
	/* The spec's field, upstream's field, or both: at least one.  An
	 * answer without them, or without one of the fields above, is no
	 * answer (MKV_POLL_FIELD): it decides no dialect (docs/guide.md, "Which
	 * dialect a master speaks"). */
	out->has_keyless = kv_json_u64(root, "skipped_keyless_events", &out->skipped_keyless_events);
	out->has_unparsed = kv_json_u64(root, "skipped_unparsed_keys", &out->skipped_unparsed_keys);
	if (!out->has_keyless && !out->has_unparsed)
		goto out;
	out->has_invalid_hashes = kv_json_u64(root, "invalid_event_hashes", &out->invalid_event_hashes);
	/* Release v0.3.12's exact field set (master_admin_service.cpp,
	 * HttpKvEventsStatusResponse at 3b5a594, main before PR #3818) is the object
	 * dialect: its four fields above and skipped_unparsed_keys, nothing
	 * more.  Any other set is the guide's media dialect: the guide's
	 * skipped_keyless_events (main since PR #3818), dev/conductor's
	 * invalid_event_hashes, a field main never sent (docs/upstream.md). */
	out->dialect = out->has_unparsed && json_object_size(root) == 5 ? MKV_DIALECT_OBJECT : MKV_DIALECT_MEDIA;
	rc = MKV_POLL_OK;
out:
	json_decref(root);
	return rc;
}

enum kv_publisher_seen kv_master_publisher_seen(enum mkv_poll_error err, long http_status, const kv_master_status *st)
{
	/* a refused connection or a standby's 503 says the publisher is not
	 * there; a timeout says only that no answer came in time, which a slow
	 * master, a loaded network or this exporter's own stall all cause */
	if (http_status == 503 || err == MKV_POLL_CONNECT)
		return KV_PUBLISHER_ABSENT;
	if (err == MKV_POLL_OK && st)
		return st->enabled ? KV_PUBLISHER_PUBLISHING : KV_PUBLISHER_ABSENT;
	return KV_PUBLISHER_UNKNOWN;
}

static void window_reset(kv_master *m)
{
	m->win_first = m->win_n = 0;
	m->drop_ratio = 0;
}

static void window_add(kv_master *m, double now, const kv_master_status *st)
{
	size_t cap = KV_DROP_WINDOW_SAMPLES;
	if (m->win_n == cap) { /* polling faster than the ring holds: shorten the window */
		m->win_first = (m->win_first + 1) % cap;
		m->win_n--;
	}
	size_t i = (m->win_first + m->win_n++) % cap;
	m->win[i].t = now;
	m->win[i].published = st->published_events;
	m->win[i].dropped = st->dropped_events;
	/* keep one sample at or before the window start as the baseline */
	while (m->win_n > 2 && m->win[(m->win_first + 1) % cap].t <= now - KV_DROP_WINDOW_SECONDS) {
		m->win_first = (m->win_first + 1) % cap;
		m->win_n--;
	}
	const kv_drop_sample *a = &m->win[m->win_first];
	uint64_t dp = st->published_events - a->published, dd = st->dropped_events - a->dropped;
	m->drop_ratio = dp + dd ? (double)dd / (double)(dp + dd) : 0.0;
}

static kv_loss_counters counters_of(const kv_master_status *st)
{
	return (kv_loss_counters){st->published_batches, st->published_events, st->dropped_events};
}

void kv_master_record(kv_master *m, double now, double duration, enum mkv_poll_error err, long http_status,
		      const kv_master_status *st, const kv_stream_pos *before)
{
	m->polled = true;
	m->last_poll_time = now;
	m->last_poll_duration = duration;
	if (http_status == 503) {
		/* A standby master: its service plane is not active. Reachable,
		 * not an error, and its counters (if any) are not ours to track. */
		m->up = true;
		m->standby = true;
		m->loss.behind_known = false;
		m->keys_known = false; /* the key count is the leader's to tell */
		return;
	}
	m->standby = false;
	if (err != MKV_POLL_OK) {
		m->poll_errors[err]++;
		m->up = false;
		return;
	}
	m->up = true;
	kv_loss_counters prev = counters_of(&m->status), cur = counters_of(st);
	if (kv_loss_poll(&m->loss, m->have_status ? &prev : NULL, &cur, before))
		window_reset(m); /* the drop ratio of a new process starts afresh */
	window_add(m, now, st);
	m->status = *st;
	m->have_status = true;
	m->last_sequence = kv_loss_master_last(&cur);
}

bool kv_master_tail(kv_master *m, const kv_stream_pos *now_pos, double now, double interval_s, uint64_t *upto_seq,
		    uint64_t *upto_eid)
{
	if (!m->have_status || m->standby || !m->up || !m->status.enabled) {
		m->behind_known = false;
		return false;
	}
	kv_loss_counters cur = counters_of(&m->status);
	bool lost = kv_loss_tail(&m->loss, &cur, now_pos, now, interval_s, upto_seq, upto_eid);
	m->behind_known = kv_loss_matched(&m->loss) && now_pos->started;
	m->behind = m->behind_known && !lost && m->last_sequence > now_pos->position
			    ? m->last_sequence - now_pos->position
			    : 0;
	return lost;
}

void kv_master_record_keys(kv_master *m, enum mkv_poll_error err, double keys)
{
	if (err != MKV_POLL_OK) {
		m->keys_errors[err]++;
		m->keys_known = false;
		return;
	}
	m->keys = keys;
	m->keys_known = true;
}
