#include <string.h>
#include <jansson.h>

#include "kv_master.h"

static bool get_u64(const json_t *o, const char *name, uint64_t *v)
{
	const json_t *j = json_object_get(o, name);
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return false;
	*v = (uint64_t)json_integer_value(j);
	return true;
}

enum kv_poll_error kv_master_parse(const char *body, size_t len, kv_master_status *out)
{
	json_error_t err;
	/* A u64 above INT64_MAX fails the whole document in jansson: that is a
	 * parse error to count, which is all such a counter deserves. */
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
	if (!root)
		return KV_POLL_PARSE;
	enum kv_poll_error rc = KV_POLL_PARSE;
	if (!json_is_object(root))
		goto out;
	rc = KV_POLL_FIELD;
	const json_t *en = json_object_get(root, "enabled");
	if (!json_is_boolean(en))
		goto out;
	memset(out, 0, sizeof(*out));
	out->enabled = json_is_true(en);
	if (!get_u64(root, "published_batches", &out->published_batches) ||
	    !get_u64(root, "published_events", &out->published_events) ||
	    !get_u64(root, "dropped_events", &out->dropped_events))
		goto out;
	/* The spec's name, else the name upstream uses today. */
	if (!get_u64(root, "skipped_keyless_events", &out->skipped_keyless_events) &&
	    !get_u64(root, "skipped_unparsed_keys", &out->skipped_keyless_events))
		goto out;
	rc = KV_POLL_OK;
out:
	json_decref(root);
	return rc;
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

static bool went_backwards(const kv_master_status *old, const kv_master_status *now)
{
	return now->published_batches < old->published_batches || now->published_events < old->published_events ||
	       now->dropped_events < old->dropped_events;
}

void kv_master_record(kv_master *m, double now, double duration, enum kv_poll_error err, long http_status,
		      const kv_master_status *st, uint64_t stream_missing)
{
	m->polled = true;
	m->last_poll_time = now;
	m->last_poll_duration = duration;
	if (http_status == 503) {
		/* A standby master: its service plane is not active. Reachable,
		 * not an error, and its counters (if any) are not ours to track. */
		m->up = true;
		m->standby = true;
		return;
	}
	m->standby = false;
	if (err != KV_POLL_OK) {
		m->poll_errors[err]++;
		m->up = false;
		return;
	}
	m->up = true;
	uint64_t dropped_delta = 0;
	bool restarted = m->have_status && went_backwards(&m->status, st);
	if (restarted) {
		m->restarts++;
		window_reset(m);
	} else if (m->have_status) {
		dropped_delta = st->dropped_events - m->status.dropped_events;
	}
	window_add(m, now, st);

	/* A restart takes with it the drops counted since the last poll: the
	 * gaps seen meanwhile cannot be told apart, so the comparison starts
	 * again (transport loss in that window goes unseen, rather than queue
	 * drops being blamed on transport). */
	if (!m->loss_base_set || restarted) {
		m->loss_base_set = true;
		m->missing_base = stream_missing;
		m->dropped_since_base = 0;
		m->lost_at_base = m->transport_lost;
	} else {
		m->dropped_since_base += dropped_delta;
		uint64_t seen = stream_missing - m->missing_base;
		uint64_t unexplained = seen > m->dropped_since_base ? seen - m->dropped_since_base : 0;
		if (m->lost_at_base + unexplained > m->transport_lost)
			m->transport_lost = m->lost_at_base + unexplained;
	}
	m->status = *st;
	m->have_status = true;
}
