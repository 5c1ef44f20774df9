/* SPDX-License-Identifier: Apache-2.0 */
/* A member's connection, as its monitor socket tells it: each handshake
 * and disconnection handed to the store (mkv_store_note_connect, ..._disconnect)
 * and logged; and, before a bootstrap, the wait for every member's
 * subscription to be up. */
#include <string.h>
#include <zmq.h>

#include "kv_clock.h"
#include "kv_source_impl.h"

/* Before a bootstrap: how long a connected member may stay silent before
 * the peer is asked all the same (kvd_source_await_connected). */
#define AWAIT_FIRST_MESSAGE_S 2.0

/* Takes one event of the monitor's, without waiting; false when none. */
static bool on_monitor_event(kvd_member *m)
{
	kvd_source *s = m->src;
	zmq_msg_t msg;
	zmq_msg_init(&msg);
	if (zmq_msg_recv(&msg, m->mon, ZMQ_DONTWAIT) < 0) {
		zmq_msg_close(&msg);
		return false;
	}
	uint16_t event = 0;
	if (zmq_msg_size(&msg) >= 6)
		memcpy(&event, zmq_msg_data(&msg), sizeof(event));
	while (zmq_msg_more(&msg)) { /* the endpoint frame */
		zmq_msg_close(&msg);
		zmq_msg_init(&msg);
		if (zmq_msg_recv(&msg, m->mon, 0) < 0)
			break;
	}
	zmq_msg_close(&msg);

	if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
		pthread_mutex_lock(&s->lock);
		bool again = mkv_store_note_connect(s->store, m->index, (int64_t)(kvd_now() * 1000));
		pthread_mutex_unlock(&s->lock);
		kvd_member_log(KVD_LOG_INFO, again ? "reconnected to the publisher" : "connected to the publisher", m);
	} else if (event == ZMQ_EVENT_DISCONNECTED) {
		pthread_mutex_lock(&s->lock);
		mkv_store_note_disconnect(s->store, m->index);
		pthread_mutex_unlock(&s->lock);
		kvd_member_log(KVD_LOG_WARN, "disconnected from the publisher", m);
	}
	return true;
}

/* Whatever the monitor has to say, without waiting: a receive that finds
 * nothing is one poll(2) in libzmq, where zmq_poll made two or three. */
void kvd_member_take_monitor_events(kvd_member *m, double now)
{
	m->monitor_asked_at = now;
	while (on_monitor_event(m))
		;
}

static bool member_connected(kvd_member *m)
{
	pthread_mutex_lock(&m->src->lock);
	bool up = mkv_store_is_connected(m->src->store, m->index);
	pthread_mutex_unlock(&m->src->lock);
	return up;
}

void kvd_source_await_connected(kvd_source *s, double until)
{
	for (size_t i = 0; i < s->n_members; i++) {
		kvd_member *m = &s->members[i];
		zmq_pollitem_t items[2] = {{m->mon, 0, ZMQ_POLLIN, 0}, {m->sub, 0, ZMQ_POLLIN, 0}};
		while (!member_connected(m) && kvd_mono() < until) {
			if (zmq_poll(items, 1, 10) > 0)
				on_monitor_event(m);
		}
		/* A handshake is not yet a subscription: the publisher drops what
		 * it sends until our subscription reaches it.  A message waiting
		 * (not taken) says it has; an idle publisher gets a moment. */
		double idle_until = kvd_mono() + AWAIT_FIRST_MESSAGE_S;
		while (member_connected(m) && kvd_mono() < until && kvd_mono() < idle_until) {
			if (zmq_poll(items, 2, 10) <= 0)
				continue;
			if (items[1].revents & ZMQ_POLLIN)
				break;
			if (items[0].revents & ZMQ_POLLIN)
				on_monitor_event(m);
		}
	}
}
