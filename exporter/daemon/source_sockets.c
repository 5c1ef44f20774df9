/* SPDX-License-Identifier: Apache-2.0 */
/* A member's ZMQ sockets: one SUB socket, subscribed to everything, and
 * one monitor socket that reports its connection's events; set up by
 * kvd_source_init, then owned by the member's ingest thread. */
#include <stdio.h>
#include <zmq.h>

#include "kv_source_impl.h"

/* Reconnect attempts to a publisher that is not there, without backing off:
 * a standby binds no PUB port until it is promoted, and a new leader's first
 * messages are lost for as long as we take to find it (docs/design.md,
 * "Highly available masters"). */
#define RECONNECT_MS 100

static int setopt_int(void *sock, int opt, int v)
{
	return zmq_setsockopt(sock, opt, &v, sizeof(v));
}

void kvd_member_close_sockets(kvd_member *m)
{
	if (m->sub)
		zmq_socket_monitor(m->sub, NULL, 0);
	if (m->mon)
		zmq_close(m->mon);
	if (m->sub)
		zmq_close(m->sub);
	m->sub = m->mon = NULL;
}

/* Returns 0, or MKV_EINVAL with the failed step and ZMQ's reason in err. */
int kvd_member_open_sockets(kvd_member *m, size_t index, void *zctx, char *err, size_t errlen)
{
	const kvd_config *c = m->src->config;
	const char *name = m->src->cfg->name, *step = "create a socket for";
	char mon_ep[128];
	int64_t maxmsg = c->zmq_max_message_size;
	if (!(m->sub = zmq_socket(zctx, ZMQ_SUB)))
		goto fail;
	step = "set the socket options for";
	if (zmq_setsockopt(m->sub, ZMQ_SUBSCRIBE, "", 0) || setopt_int(m->sub, ZMQ_LINGER, 0) ||
	    setopt_int(m->sub, ZMQ_RCVHWM, c->zmq_rcvhwm) ||
	    zmq_setsockopt(m->sub, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg)) ||
	    setopt_int(m->sub, ZMQ_RECONNECT_IVL, RECONNECT_MS) || setopt_int(m->sub, ZMQ_RECONNECT_IVL_MAX, 0) ||
	    setopt_int(m->sub, ZMQ_RCVTIMEO, POLL_MS) || setopt_int(m->sub, ZMQ_HEARTBEAT_IVL, 5000) ||
	    setopt_int(m->sub, ZMQ_HEARTBEAT_TIMEOUT, 15000))
		goto fail;
	step = "monitor the connection to";
	snprintf(mon_ep, sizeof(mon_ep), "inproc://monitor-%s-%zu", name, index);
	if (zmq_socket_monitor(m->sub, mon_ep, ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) ||
	    !(m->mon = zmq_socket(zctx, ZMQ_PAIR)) || setopt_int(m->mon, ZMQ_LINGER, 0) || zmq_connect(m->mon, mon_ep))
		goto fail;
	step = "connect to";
	if (zmq_connect(m->sub, m->cfg->zmq))
		goto fail;
	return MKV_OK;
fail:
	snprintf(err, errlen, "source \"%s\": cannot %s %s: %s", name, step, m->cfg->zmq, zmq_strerror(zmq_errno()));
	kvd_member_close_sockets(m);
	return MKV_EINVAL;
}
