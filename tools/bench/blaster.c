/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake-kv-blaster: publishes pre-encoded 64-event batches as fast as
 * possible or at a fixed rate, with the upstream publisher's socket settings
 * (SNDHWM 10,000, LINGER 0 after a grace period), and reports what it sent
 * as one JSON line on stdout.  A payload goes out without a copy while no
 * earlier send of it is still queued (see send_msg).
 *
 *   mooncake-kv-blaster --pub tcp://127.0.0.1:5557 --keys 1000000 --load \
 *       --events 20000000 --rate 1000000
 *   mooncake-kv-blaster --pub ... --probe     one message per line read on stdin;
 *                                             prints the sequence and send time */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "workload.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct pub {
	void *sock;
	uint64_t seq, eid, messages, events;
};

/* A payload's sends still queued in ZMQ; its last one done, ZMQ's I/O
 * thread calls sent(). */
typedef struct outgoing {
	wl_msg *m;
	atomic_uint queued;
} outgoing;

static void sent(void *data, void *hint)
{
	(void)data;
	atomic_fetch_sub_explicit(&((outgoing *)hint)->queued, 1, memory_order_release);
}

/* The payload goes out without a copy, stamped in place, while no earlier
 * send of it is queued; else a copy is stamped and sent, the queued one
 * untouched.  Copying every 25 KB payload (malloc, page faults, memcpy)
 * was most of the sender's main thread at 1.5M events/s
 * (docs/performance.md, "A sender that sleeps and does not copy"), on the two cores it shares with
 * the receiver it measures. */
static void send_msg(struct pub *p, outgoing *o)
{
	wl_msg *m = o->m;
	unsigned char be[8];
	uint64_t s = ++p->seq;
	for (int i = 7; i >= 0; i--, s >>= 8)
		be[i] = (unsigned char)s;
	int64_t ts = (int64_t)(now_s() * 1000);
	zmq_msg_t msg;
	if (atomic_load_explicit(&o->queued, memory_order_acquire) == 0) {
		wl_stamp(m, p->eid + 1, ts);
		atomic_fetch_add_explicit(&o->queued, 1, memory_order_relaxed);
		zmq_msg_init_data(&msg, m->payload, m->len, sent, o);
	} else {
		zmq_msg_init_size(&msg, m->len);
		unsigned char *own = m->payload;
		m->payload = memcpy(zmq_msg_data(&msg), own, m->len);
		wl_stamp(m, p->eid + 1, ts);
		m->payload = own;
	}
	p->eid += WL_BATCH;
	zmq_send(p->sock, "", 0, ZMQ_SNDMORE);
	zmq_send(p->sock, be, 8, ZMQ_SNDMORE);
	if (zmq_msg_send(&msg, p->sock, 0) < 0)
		zmq_msg_close(&msg); /* calls sent() */
	p->messages++;
	p->events += WL_BATCH;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static outgoing *outgoing_of(wl_msg *m, size_t n)
{
	outgoing *o = calloc(n ? n : 1, sizeof(*o));
	if (!o)
		exit(1);
	for (size_t i = 0; i < n; i++) {
		o[i].m = &m[i];
		atomic_init(&o[i].queued, 0);
	}
	return o;
}

/* Sends count messages cycling through msgs[], paced at rate events/s (0:
 * flat out).  Paced, it sleeps until the next message is due and then sends
 * every message that is: a sender that spun instead took a whole core of the
 * two it shares with the receiver it measures (1,000-1,350 ns of CPU an event
 * at 1M events/s, 2026-12-04), as a master sending events as they come does
 * not; the price is bursts of a few messages, as long as the timer is late. */
static void run(struct pub *p, outgoing *msgs, size_t n_msgs, uint64_t count, double rate)
{
	double start = mono_s();
	for (uint64_t i = 0; i < count; i++) {
		if (rate > 0) {
			double due = start + (double)(i * WL_BATCH) / rate;
			if (mono_s() < due) {
				struct timespec ts = {.tv_sec = (time_t)due};
				ts.tv_nsec = (long)((due - (double)ts.tv_sec) * 1e9);
				while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
					; /* EINTR: sleep on */
			}
		}
		send_msg(p, &msgs[i % n_msgs]);
	}
}

int main(int argc, char **argv)
{
	const char *ep = NULL;
	wl_params wp = {.keys = 1000000, .tenants = 16, .key_bytes = 100, .stored_pct = 60, .seed = 7};
	uint64_t events = 6400000;
	double rate = 0;
	int load = 0, probe = 0, hwm = 10000, mix = 2048;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--load")) {
			load = 1;
			continue;
		}
		if (!strcmp(a, "--probe")) {
			probe = 1;
			continue;
		}
		if (!v) {
			fprintf(stderr, "%s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--pub"))
			ep = v;
		else if (!strcmp(a, "--events"))
			events = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--rate"))
			rate = strtod(v, NULL);
		else if (!strcmp(a, "--keys"))
			wp.keys = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--tenants"))
			wp.tenants = (unsigned)atoi(v);
		else if (!strcmp(a, "--backends"))
			wp.backends = (unsigned)atoi(v);
		else if (!strcmp(a, "--key-bytes"))
			wp.key_bytes = (unsigned)atoi(v);
		else if (!strcmp(a, "--sndhwm"))
			hwm = atoi(v);
		else if (!strcmp(a, "--mix-messages"))
			mix = atoi(v);
		else {
			fprintf(stderr, "unknown flag %s\n", a);
			return 2;
		}
	}
	if (!ep || wp.keys == 0 || wp.tenants == 0 || mix < 1) {
		fprintf(stderr,
			"usage: %s --pub EP [--events N] [--rate EV/S] [--keys N] [--tenants N] "
			"[--key-bytes N] [--backends N] [--load] [--probe] [--sndhwm N] [--mix-messages N]\n",
			argv[0]);
		return 2;
	}
	wl_msg *msgs = wl_encode_mix(&wp, (size_t)mix);
	size_t n_load = 0;
	wl_msg *loads = load ? wl_encode_load(&wp, &n_load) : NULL;
	outgoing *out_msgs = outgoing_of(msgs, (size_t)mix), *out_loads = outgoing_of(loads, n_load);

	void *ctx = zmq_ctx_new();
	struct pub p = {.sock = zmq_socket(ctx, ZMQ_XPUB)};
	int linger = 2000;
	zmq_setsockopt(p.sock, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(p.sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_bind(p.sock, ep)) {
		fprintf(stderr, "cannot bind %s: %s\n", ep, zmq_strerror(zmq_errno()));
		return 1;
	}
	char sub[64];
	if (zmq_recv(p.sock, sub, sizeof(sub), 0) < 0) /* a subscriber joined */
		return 1;

	double t0 = now_s();
	if (probe) {
		char line[64];
		while (fgets(line, sizeof(line), stdin)) {
			double t = now_s();
			send_msg(&p, &out_msgs[p.messages % (uint64_t)mix]);
			printf("%llu %.6f\n", (unsigned long long)p.seq, t);
			fflush(stdout);
		}
	} else {
		if (load)
			run(&p, out_loads, n_load, n_load, rate);
		double t1 = now_s();
		run(&p, out_msgs, (size_t)mix, events / WL_BATCH, rate);
		double t2 = now_s();
		uint64_t mixed = events / WL_BATCH * WL_BATCH;
		printf("{\"messages\":%llu,\"events\":%llu,\"last_seq\":%llu,\"load_seconds\":%.3f,"
		       "\"seconds\":%.3f,\"rate\":%.0f,\"message_bytes\":%zu}\n",
		       (unsigned long long)p.messages, (unsigned long long)p.events, (unsigned long long)p.seq, t1 - t0,
		       t2 - t1, mixed && t2 > t1 ? (double)mixed / (t2 - t1) : 0.0, msgs[0].len);
		fflush(stdout);
	}
	zmq_close(p.sock);
	zmq_ctx_term(ctx); /* after it, no send is queued: sent() ran for each */
	free(out_msgs);
	free(out_loads);
	wl_free(msgs, (size_t)mix);
	wl_free(loads, n_load);
	return 0;
}
