/* mooncake-kv-sim: a Mooncake master's KV event publisher and status
 * endpoint, for demos and tests.  By default it behaves as the upstream
 * master does (kvcache-ai/Mooncake main at 3b5a594, the `object` dialect of
 * docs/upstream.md): each object has its real replicas (memory, disk); a
 * put publishes one stored per replica type, a Remove one removed with a
 * guessed medium, an eviction only when the object becomes invalid; tier
 * evictions, offloads, RemoveAll, BatchRemove and quota evictions publish
 * nothing, no `cleared` ever; a standby binds no PUB port and its promotion
 * starts a new publisher at 1, and the status reports main's fields
 * (skipped_unparsed_keys: every event whose key is not a number, all of
 * the simulator's textual keys).  --dialect media plays the subscriber
 * guide as dev/conductor implements it: per-medium deltas, `cleared` from
 * RemoveAll, invalid_event_hashes in the status; --spec-extras on the
 * guide's skipped_keyless_events instead.
 *
 *   mooncake-kv-sim --pub tcp://127.0.0.1:5557 --status 127.0.0.1:9003 \
 *       --phase steady:rate=2000                      (the demo: until Ctrl-C)
 *   mooncake-kv-sim ... --phase ops:count=5000 --phase burst:events=3000 \
 *       --phase restart --phase ops:count=100 --truth truth.json
 *
 * Phases run in order:
 *   steady:rate=N[,seconds=S]  random operations at N events/s (S=0: forever)
 *   ops:count=N[,batch=B]      N random operations, sent as fast as allowed, B events a message (64)
 *   burst:events=N             N stored events enqueued before the sender runs:
 *                              whatever exceeds --queue is dropped oldest-first,
 *                              each drop reserving one sequence number
 *   clear:all                  RemoveAll on every tenant (media dialect: cleared where it held objects)
 *   batch-remove:count=N       BatchRemove of N random objects: no event, as upstream
 *   quota-evict:count=N        EvictTenantMemoryForQuota on N random objects: silent on main
 *   upgrade                    the master is upgraded in place: a new process that speaks the other dialect
 *   restart                    new publisher process: sequence, event ids and
 *                              counters back to their start, socket re-bound
 *   standby:seconds=S          the master stands by for S seconds: status 503, no PUB port;
 *                              then it is promoted (view_version + 1) and starts a new publisher (at 1)
 *   failover[:to=I]            a cluster (--pub and --status once per member): the leader stands
 *                              by and closes its publisher; member I (the next one) is promoted,
 *                              view_version + 1, and starts its publisher at 1 on its own endpoint
 *   split-brain:seconds=S[,member=I]  member I serves as well as the leader for S seconds
 *   standby-publish:count=N[,member=I]  member I, standing by, publishes N operations on its own
 *                              endpoint (numbered from 1): real mutations from a master that does not serve
 *   rebind[:lose=N]            the PUB socket is closed and bound again, numbering goes on
 *                              (a connection reset that loses nothing, or N messages sent meanwhile)
 *   outage:seconds=S[,member=I]  member I's admin endpoints are gone (connection refused) for S seconds
 *   admin-off, admin-on        the leader's admin endpoints go, and come back, while it publishes
 *   poison:count=N             N messages each with one event of an unknown event_type, its event_id
 *                              alternately 2^63 and the next valid id (a subscriber must not read it)
 *   failover and crash take after=S: the new publisher waits for no subscriber and publishes after
 *                              S seconds (0: at once), as a real master does
 *   crash:seconds=S            the leading master's process dies for S seconds (publisher and admin
 *                              endpoints gone) and comes back as a new process (a restart)
 *   garbage:count=N            N messages with a valid sequence and a bad payload
 *   sleep:seconds=S
 *   truth                      write the ground truth now (and again at exit)
 *   wait                       until SIGINT/SIGTERM
 *
 * The ground truth (--truth FILE, written at exit) holds what a subscriber
 * that received every message must show, per tenant and per stream, and
 * what the master holds (including what the queue dropped), per member
 * what its stream carried, and with --quotas on the tenants' quotas. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>
#include <microhttpd.h>
#include <msgpack.h>
#include <zmq.h>

#include "sim.h"

static volatile sig_atomic_t stopping;

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("mooncake-kv-sim: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static uint64_t rnd(struct sim *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	if (s <= 0)
		return;
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stopping)
		;
}

/* --- the wire --- */

static void pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

static void pack_event(struct sim *s, msgpack_packer *pk, const struct event *e, uint64_t id, int64_t ts)
{
	static const char *const types[] = {"stored", "removed", "cleared", "exploded"};
	static const char *const legacy[] = {"BlockStored", "BlockRemoved", "AllBlocksCleared", "Exploded"};
	char tenant[32], key[128];
	tenant_name(e->tenant, tenant, sizeof(tenant));
	bool per_object = e->kind != CLEARED;
	size_t n = 11 + s->o.legacy; /* the envelope */
	if (per_object)
		n += 1 + s->o.object_key + 2 + s->o.legacy + (e->kind == STORED ? 2 + s->o.legacy : 0);
	msgpack_pack_map(pk, n);
	pack_str(pk, "event_id"), msgpack_pack_uint64(pk, id);
	pack_str(pk, "timestamp"), msgpack_pack_int64(pk, ts);
	pack_str(pk, "event_type"), pack_str(pk, types[e->kind]);
	if (s->o.legacy)
		pack_str(pk, "type"), pack_str(pk, legacy[e->kind]);
	pack_str(pk, "model_name"), msgpack_pack_nil(pk);
	pack_str(pk, "block_size"), msgpack_pack_nil(pk);
	pack_str(pk, "additional_salt"), msgpack_pack_nil(pk);
	pack_str(pk, "lora_name"), msgpack_pack_nil(pk);
	pack_str(pk, "tenant_id"), pack_str(pk, tenant);
	pack_str(pk, "backend_id"), pack_str(pk, s->o.backend);
	if (per_object)
		pack_str(pk, "group_id"), msgpack_pack_nil(pk);
	pack_str(pk, "medium");
	if (per_object)
		pack_str(pk, e->medium == 1 ? "cpu" : "disk");
	else
		msgpack_pack_nil(pk);
	pack_str(pk, "dp_rank"), msgpack_pack_uint32(pk, 0);
	if (!per_object)
		return;
	if (s->o.object_key) {
		key_name(s, e->key, key, sizeof(key));
		pack_str(pk, "object_key"), pack_str(pk, key);
	}
	pack_str(pk, "seq_hashes"), msgpack_pack_array(pk, 0);
	if (s->o.legacy)
		pack_str(pk, "block_hashes"), msgpack_pack_array(pk, 0);
	pack_str(pk, "base_block_idx"), msgpack_pack_nil(pk);
	if (e->kind == STORED) {
		pack_str(pk, "parent_hash"), msgpack_pack_nil(pk);
		pack_str(pk, "token_ids"), msgpack_pack_nil(pk);
		if (s->o.legacy)
			pack_str(pk, "parent_block_hash"), msgpack_pack_nil(pk);
	}
}

static void send_frames(struct sim *s, uint64_t seq, const void *payload, size_t len)
{
	unsigned char be[8];
	for (int i = 7; i >= 0; i--, seq >>= 8)
		be[i] = (unsigned char)seq;
	zmq_send(s->pub, "", 0, ZMQ_SNDMORE);
	zmq_send(s->pub, be, 8, ZMQ_SNDMORE);
	zmq_send(s->pub, payload, len, 0);
}

/* What a subscriber that got this event makes of it. */
static void wire_apply(struct sim *s, const struct event *e)
{
	struct tenant_truth *t = &s->truth[e->tenant];
	t->seen = true;
	t->events[e->kind]++;
	if (e->kind == CLEARED) {
		memset(cell(s, s->wire, e->tenant, 0), 0, s->o.keys);
		memset(cell(s, s->wire_since, e->tenant, 0), 0, s->o.keys);
		t->exact = true;
		return;
	}
	unsigned char *c = cell(s, s->wire, e->tenant, e->key), *since = cell(s, s->wire_since, e->tenant, e->key);
	/* in the object dialect a removed erases the object, whatever its medium */
	unsigned del = s->o.dialect == DIALECT_OBJECT ? REP_MEM | REP_DISK : e->medium;
	unsigned after = e->kind == STORED ? (*c | e->medium) : (*c & ~del);
	if (after == *c)
		*(e->kind == STORED ? &t->dup : &t->unknown) += 1;
	*c = (unsigned char)after;
	*since = (unsigned char)(e->kind == STORED ? (*since | e->medium) : (*since & ~del));
}

/* Every tenant loses its exactness when the stream breaks. */
static void stream_break(struct sim *s)
{
	for (unsigned t = 0; t < s->o.tenants; t++)
		s->truth[t].exact = false;
}

/* A message left on the publishing member's socket. */
static void sent(struct sim *s, uint64_t seq, size_t events)
{
	struct member *m = &s->members[s->publishing];
	s->last_seq = seq;
	s->messages++;
	m->last_seq = seq;
	m->messages++;
	m->events += events;
	if (!atomic_load(&m->serving))
		m->standby_events += events;
}

static void send_batch(struct sim *s)
{
	size_t n = s->q_len < s->batch ? s->q_len : s->batch;
	if (!n)
		return;
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	int64_t ts = (int64_t)(now_s() * 1000);
	msgpack_pack_array(&pk, 3);
	msgpack_pack_int64(&pk, ts);
	/* a poison event in the middle (phase poison), alternately with the id
	 * 2^63 and with the next valid id (it has none of its own) */
	int poison = s->poison_pending && n >= 2 ? (int)(s->poison_pending-- % 2) + 1 : 0;
	msgpack_pack_array(&pk, n + (poison != 0));
	/* with no socket (rebind:lose=N) the message goes to no subscriber, as
	 * a PUB socket drops what it has nobody to send to */
	bool heard = s->pub != NULL;
	for (size_t i = 0; i < n; i++) {
		if (poison && i == n / 2) {
			struct event bad = {POISON, 0, 0, REP_MEM};
			pack_event(s, &pk, &bad, poison == 1 ? 1ull << 63 : s->next_event_id, ts);
			s->poisoned++;
		}
		const struct event *e = &s->queue[(s->q_head + i) % s->o.queue_cap];
		pack_event(s, &pk, e, s->next_event_id++, ts);
		if (heard)
			wire_apply(s, e);
	}
	msgpack_pack_uint32(&pk, 0);
	uint64_t seq = s->next_seq++;
	if (!heard) {
		s->unheard++;
		s->lost_messages++;
		s->lost_events += n;
	} else {
		if (s->reserved || s->unheard) { /* the gap comes right before the surviving tail */
			s->gaps++;
			s->missing += s->reserved + s->unheard;
			stream_break(s);
			s->reserved = s->unheard = 0;
		}
		send_frames(s, seq, sb.data, sb.size);
		sent(s, seq, n);
		s->events_sent += n;
	}
	s->q_head = (s->q_head + n) % s->o.queue_cap;
	s->q_len -= n;
	atomic_fetch_add(&s->published_batches, 1);
	atomic_fetch_add(&s->published_events, n);
	msgpack_sbuffer_destroy(&sb);
}

static void flush(struct sim *s)
{
	while (s->q_len)
		send_batch(s);
}

/* Enqueue, dropping the oldest event when the queue is full. */
static void enqueue(struct sim *s, const struct event *e)
{
	if (s->q_len == s->o.queue_cap) {
		s->q_head = (s->q_head + 1) % s->o.queue_cap;
		s->q_len--;
		s->next_seq++; /* reserved: the gap stays visible */
		s->reserved++;
		s->dropped_total++;
		atomic_fetch_add(&s->dropped_events, 1);
	}
	s->queue[(s->q_head + s->q_len++) % s->o.queue_cap] = *e;
}

/* --- the master's operations --- */

static void publish(struct sim *s, enum kind k, unsigned t, unsigned key, unsigned medium)
{
	if (k == CLEARED && s->o.dialect == DIALECT_OBJECT)
		return; /* main's publisher has no cleared at all */
	/* upstream counts every key that is not a number (ours are textual) in
	 * skipped_unparsed_keys, published or not; the spec counts only the
	 * events it does not publish, in skipped_keyless_events */
	if (k != CLEARED && (!s->o.spec_extras || !s->o.object_key))
		atomic_fetch_add(&s->skipped, 1);
	if (k != CLEARED && !s->o.object_key) {
		/* without object keys a textual key leaves no trace on the wire */
		s->keyless_total++;
		return;
	}
	struct event e = {k, t, key, medium};
	enqueue(s, &e);
}

void master_set(struct sim *s, unsigned t, unsigned k, unsigned char media)
{
	pthread_mutex_lock(&s->model_lock);
	unsigned char *c = cell(s, s->master, t, k);
	if (!*c && media)
		atomic_fetch_add(&s->master_keys, 1);
	else if (*c && !media)
		atomic_fetch_sub(&s->master_keys, 1);
	*c = media;
	pthread_mutex_unlock(&s->model_lock);
}

static bool object_dialect(const struct sim *s)
{
	return s->o.dialect == DIALECT_OBJECT;
}

/* media: what dev/conductor's SyncObjectState sends for a change of an
 * object's media, removed for each one lost, then stored for each one
 * gained (kv_event_publisher.cpp at 19ffa6e, ~L317-368). */
static void publish_delta(struct sim *s, unsigned t, unsigned k, unsigned before, unsigned after)
{
	for (unsigned m = REP_MEM; m <= REP_DISK; m <<= 1)
		if ((before & m) && !(after & m))
			publish(s, REMOVED, t, k, m);
	for (unsigned m = REP_MEM; m <= REP_DISK; m <<= 1)
		if (!(before & m) && (after & m))
			publish(s, STORED, t, k, m);
}

/* PutEnd of one replica type, the object's replicas now `now`: main sends
 * stored with that replica's medium (PublishKvStored, master_service.cpp at
 * 3b5a594 ~L4640, ~L12766); dev/conductor's PublishCommitted, stored for
 * every medium the object is now on (~L225-271 of its publisher). */
static void put_end(struct sim *s, unsigned t, unsigned k, unsigned replica, unsigned now)
{
	master_set(s, t, k, (unsigned char)now);
	if (object_dialect(s))
		publish(s, STORED, t, k, replica);
	else
		for (unsigned m = REP_MEM; m <= REP_DISK; m <<= 1)
			if (now & m)
				publish(s, STORED, t, k, m);
}

/* A put of a new key: a memory replica, and with the master's file system
 * (--root_fs_dir) a disk one too, completing in either order.  A put of a
 * key that exists changes nothing and publishes nothing. */
static void op_put(struct sim *s, unsigned t, unsigned k, bool with_disk)
{
	if (*cell(s, s->master, t, k))
		return;
	if (!with_disk) {
		put_end(s, t, k, REP_MEM, REP_MEM);
		return;
	}
	unsigned first = rnd(s) & 1 ? REP_DISK : REP_MEM;
	put_end(s, t, k, first, first);
	put_end(s, t, k, (REP_MEM | REP_DISK) & ~first, REP_MEM | REP_DISK);
}

/* Remove: main sends one removed, medium MediumForMetadata's guess (cpu if
 * a memory replica exists, else disk: ~L6467, ~L12754); the guide one per
 * medium the object was on (PublishObjectRemoved). */
static void op_remove(struct sim *s, unsigned t, unsigned k)
{
	unsigned c = *cell(s, s->master, t, k);
	if (!c)
		return; /* OBJECT_NOT_FOUND */
	master_set(s, t, k, 0);
	if (object_dialect(s))
		publish(s, REMOVED, t, k, c & REP_MEM ? REP_MEM : REP_DISK);
	else
		publish_delta(s, t, k, c, 0);
}

/* An eviction of one tier (memory: BatchEvict; disk: EvictDiskReplica).
 * Main publishes only when the object becomes invalid, with the medium of
 * what is left, cpu once nothing is (PublishKvRemovedAfterEvict ~L12798,
 * EvictDiskReplica ~L5583); a tier lost while another stays valid is
 * silent.  The guide publishes the delta. */
static void op_evict(struct sim *s, unsigned t, unsigned k, unsigned tier)
{
	unsigned c = *cell(s, s->master, t, k);
	if (!(c & tier))
		return;
	unsigned after = c & ~tier;
	master_set(s, t, k, (unsigned char)after);
	if (!object_dialect(s))
		publish_delta(s, t, k, c, after);
	else if (!after)
		publish(s, REMOVED, t, k, REP_MEM);
}

/* An offload (SSD, the master's file system) completes: a disk replica is
 * added.  Silent on main (NotifyOffloadSuccess publishes nothing); the
 * guide's delta is a stored disk. */
static void op_offload(struct sim *s, unsigned t, unsigned k)
{
	unsigned c = *cell(s, s->master, t, k);
	if (c != REP_MEM)
		return;
	master_set(s, t, k, REP_MEM | REP_DISK);
	if (!object_dialect(s))
		publish_delta(s, t, k, c, c | REP_DISK);
}

/* Upsert of a key that exists: the new value's replicas replace the old
 * ones.  Main's UpsertStart publishes nothing and UpsertEnd goes through
 * PutEnd, one stored per replica type; the guide sends removed for the old
 * value, then stored for the new one. */
static void op_upsert(struct sim *s, unsigned t, unsigned k, bool with_disk)
{
	unsigned c = *cell(s, s->master, t, k), now = with_disk ? REP_MEM | REP_DISK : REP_MEM;
	if (!c) {
		op_put(s, t, k, with_disk);
		return;
	}
	if (!object_dialect(s)) {
		master_set(s, t, k, (unsigned char)now);
		publish_delta(s, t, k, c, 0);
		publish_delta(s, t, k, 0, now);
		return;
	}
	put_end(s, t, k, REP_MEM, REP_MEM);
	if (with_disk)
		put_end(s, t, k, REP_DISK, now);
}

/* EvictTenantMemoryForQuota: a tenant's memory replicas go, and an object
 * left with nothing is erased, without an event on main (master_service.cpp
 * ~L9646-9889 publishes nothing); the guide's delta. */
static void op_quota_evict(struct sim *s, unsigned t, unsigned k)
{
	unsigned c = *cell(s, s->master, t, k);
	if (!(c & REP_MEM))
		return;
	s->silent_removals += object_dialect(s) && c == REP_MEM;
	master_set(s, t, k, (unsigned char)(c & ~REP_MEM));
	if (!object_dialect(s))
		publish_delta(s, t, k, c, c & ~REP_MEM);
}

/* BatchRemove, RemoveByRegex, the clean-ups: erased without an event. */
static void op_silent_remove(struct sim *s, unsigned t, unsigned k)
{
	s->silent_removals += *cell(s, s->master, t, k) != 0;
	master_set(s, t, k, 0);
}

/* RemoveAll: nothing on main; the guide's cleared for a tenant it emptied. */
static void op_remove_all(struct sim *s, unsigned t)
{
	bool had = false;
	for (unsigned k = 0; k < s->o.keys; k++)
		had |= *cell(s, s->master, t, k) != 0;
	if (!had)
		return; /* not emitted for a tenant that held no objects */
	for (unsigned k = 0; k < s->o.keys; k++) {
		s->silent_removals += object_dialect(s) && *cell(s, s->master, t, k);
		master_set(s, t, k, 0);
	}
	publish(s, CLEARED, t, 0, 0);
}

/* Objects the master holds before any subscriber: no event for them. */
static void preload(struct sim *s, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		unsigned t = (unsigned)(rnd(s) % s->o.tenants), k = (unsigned)(rnd(s) % s->o.keys);
		master_set(s, t, k, (unsigned char)(1 + rnd(s) % 3));
	}
}

/* One random operation of a master under load.  Nothing in this mix erases
 * an object silently (the phases batch-remove, clear:all and quota-evict
 * do): the stream alone can keep every object count of the master exact. */
static void random_op(struct sim *s)
{
	unsigned t = (unsigned)(rnd(s) % s->o.tenants), k = (unsigned)(rnd(s) % s->o.keys);
	bool disk = rnd(s) % 10 < 3;
	unsigned r = (unsigned)(rnd(s) % 1000);
	if (r < 450)
		op_put(s, t, k, disk);
	else if (r < 650)
		op_remove(s, t, k);
	else if (r < 760)
		op_evict(s, t, k, REP_MEM);
	else if (r < 820)
		op_evict(s, t, k, REP_DISK);
	else if (r < 890)
		op_offload(s, t, k);
	else
		op_upsert(s, t, k, disk);
}

/* --- the publisher socket --- */

/* Binds and waits (up to 10 s) for a subscription, so that no message goes
 * to a subscriber that has not joined yet ("slow joiner"); with after >= 0,
 * as a real master does: waits for nobody, and publishes after that many
 * seconds whoever has joined by then. */
static void pub_open(struct sim *s, double after)
{
	s->pub = zmq_socket(s->zctx, ZMQ_XPUB);
	int zero = 0, hwm = (int)s->o.sndhwm;
	zmq_setsockopt(s->pub, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(s->pub, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	const char *ep = s->o.pubs[s->publishing];
	if (zmq_bind(s->pub, ep) != 0)
		die("cannot bind %s: %s", ep, zmq_strerror(zmq_errno()));
	if (after >= 0) {
		sleep_s(after);
		return;
	}
	zmq_pollitem_t it = {s->pub, 0, ZMQ_POLLIN, 0};
	double until = now_s() + 10;
	while (!stopping && now_s() < until) {
		if (zmq_poll(&it, 1, 100) > 0) {
			char sub[256];
			if (zmq_recv(s->pub, sub, sizeof(sub), ZMQ_DONTWAIT) > 0 && sub[0] == 1)
				return;
		}
	}
	fprintf(stderr, "mooncake-kv-sim: no subscriber after 10 s, publishing anyway\n");
}

static void pub_close(struct sim *s)
{
	zmq_close(s->pub);
	s->pub = NULL;
}

/* Sends what is queued, lets it leave (LINGER=0 discards what is still
 * queued when the socket goes, as the upstream captures took care to
 * avoid) and closes the socket. */
static void pub_stop(struct sim *s)
{
	flush(s);
	sleep_s(0.3);
	pub_close(s);
}

/* A new publisher process on the publishing member: numbers, event ids
 * and counters from the start.  A restart for that member's stream if it
 * published before. */
static void new_publisher(struct sim *s)
{
	s->next_seq = s->next_event_id = 1;
	atomic_store(&s->published_batches, 0);
	atomic_store(&s->published_events, 0);
	atomic_store(&s->dropped_events, 0);
	atomic_store(&s->skipped, 0);
	if (s->members[s->publishing].publishers++)
		s->restarts++;
	stream_break(s);
}

/* Member m wins an election: a new view, its publisher from 1.  A
 * subscriber of that member alone sees the wire from here on. */
static void promote(struct sim *s, unsigned m, double after)
{
	atomic_fetch_add(&s->view, 1);
	s->publishing = m;
	new_publisher(s);
	memset(s->wire_since, 0, (size_t)s->o.tenants * s->o.keys);
	/* the service plane, publisher included, is built before it is
	 * declared available */
	pub_open(s, after);
	atomic_store(&s->members[m].serving, true);
}

/* The publisher's state, to let another member publish for a while. */
struct pubstate {
	void *pub;
	unsigned publishing;
	uint64_t next_seq, next_event_id, reserved, unheard, batches, events, dropped, skipped;
};

static struct pubstate pub_save(struct sim *s)
{
	return (struct pubstate){s->pub,
				 s->publishing,
				 s->next_seq,
				 s->next_event_id,
				 s->reserved,
				 s->unheard,
				 atomic_load(&s->published_batches),
				 atomic_load(&s->published_events),
				 atomic_load(&s->dropped_events),
				 atomic_load(&s->skipped)};
}

static void pub_restore(struct sim *s, const struct pubstate *p)
{
	s->pub = p->pub;
	s->publishing = p->publishing;
	s->next_seq = p->next_seq;
	s->next_event_id = p->next_event_id;
	s->reserved = p->reserved;
	s->unheard = p->unheard;
	atomic_store(&s->published_batches, p->batches);
	atomic_store(&s->published_events, p->events);
	atomic_store(&s->dropped_events, p->dropped);
	atomic_store(&s->skipped, p->skipped);
}

/* The member= of a phase, or the one after the publishing member. */
static unsigned member_param(struct sim *s, double v)
{
	unsigned m = v < 0 ? (s->publishing + 1) % s->n_members : (unsigned)v;
	if (m >= s->n_members)
		die("member %u: the cluster has %u (give --pub once per member)", m, s->n_members);
	return m;
}

/* --- phases --- */

static double param(const char *spec, const char *name, double dflt)
{
	const char *p = strstr(spec, name);
	size_t n = strlen(name);
	while (p && !((p == spec || p[-1] == ':' || p[-1] == ',') && p[n] == '='))
		p = strstr(p + 1, name);
	return p ? strtod(p + n + 1, NULL) : dflt;
}

static void phase_steady(struct sim *s, double rate, double seconds)
{
	double start = now_s(), tick = 0.01;
	uint64_t done = 0;
	while (!stopping && (seconds <= 0 || now_s() - start < seconds)) {
		uint64_t due = (uint64_t)((now_s() - start) * rate);
		while (done < due && !stopping) {
			random_op(s);
			done++;
			if (s->q_len >= MAX_BATCH)
				send_batch(s);
		}
		flush(s);
		sleep_s(tick);
	}
}

/* Payloads a subscriber must reject, with the reason it must give. */
static const struct {
	const char *bytes;
	size_t len;
	int reason; /* index into garbage_reasons */
} garbage[] = {
	{"\xc1", 1, 0},          {"\x93\x01", 2, 0},         {"", 0, 0}, {"\x93\x01\xdd\xff\xff\xff\xff", 7, 0},
	{"\x81\xa1x\x01", 4, 1}, {"\x93\x01\x80\x00", 4, 1},
};
static const char *const garbage_reasons[] = {"msgpack_parse", "payload_shape"};

static void phase_garbage(struct sim *s, uint64_t n)
{
	size_t kinds = sizeof(garbage) / sizeof(garbage[0]);
	for (uint64_t i = 0; i < n && !stopping; i++) {
		uint64_t seq = s->next_seq++;
		send_frames(s, seq, garbage[i % kinds].bytes, garbage[i % kinds].len);
		s->garbage[garbage[i % kinds].reason]++;
		sent(s, seq, 0);
		/* a message the publisher sent, as far as its counters go */
		atomic_fetch_add(&s->published_batches, 1);
		if (i % 1000 == 999) /* stay under the send high-water mark */
			sleep_s(0.005);
	}
}

static void write_truth(struct sim *s, const char *path);

static void run_phase(struct sim *s, const char *spec)
{
	if (!strncmp(spec, "steady", 6))
		phase_steady(s, param(spec, "rate", 1000), param(spec, "seconds", 0));
	else if (!strncmp(spec, "ops", 3)) {
		uint64_t n = (uint64_t)param(spec, "count", 1000);
		double b = param(spec, "batch", MAX_BATCH);
		s->batch = b >= 1 && b <= MAX_BATCH ? (unsigned)b : MAX_BATCH;
		for (uint64_t i = 0; i < n && !stopping; i++) {
			random_op(s);
			if (s->q_len >= s->batch)
				send_batch(s);
		}
		flush(s);
		s->batch = MAX_BATCH;
	} else if (!strncmp(spec, "burst", 5)) {
		/* one stored each: a PutEnd of one replica (main), a replica
		 * published with PublishStored (the guide) */
		uint64_t n = (uint64_t)param(spec, "events", 1000);
		for (uint64_t i = 0; i < n; i++) {
			unsigned t = (unsigned)(rnd(s) % s->o.tenants), k = (unsigned)(rnd(s) % s->o.keys);
			unsigned m = 1 + (unsigned)(rnd(s) & 1);
			master_set(s, t, k, (unsigned char)(*cell(s, s->master, t, k) | m));
			publish(s, STORED, t, k, m);
		}
		flush(s);
	} else if (!strncmp(spec, "quota-evict", 11)) {
		uint64_t n = (uint64_t)param(spec, "count", 100);
		for (uint64_t i = 0; i < n; i++)
			op_quota_evict(s, (unsigned)(rnd(s) % s->o.tenants), (unsigned)(rnd(s) % s->o.keys));
		flush(s);
	} else if (!strcmp(spec, "upgrade")) {
		/* the master is upgraded in place: a new process, which speaks the
		 * other dialect */
		pub_stop(s);
		s->o.dialect = s->o.dialect == DIALECT_OBJECT ? DIALECT_MEDIA : DIALECT_OBJECT;
		new_publisher(s);
		sleep_s(0.3);
		pub_open(s, -1);
	} else if (!strncmp(spec, "clear", 5)) {
		for (unsigned t = 0; t < s->o.tenants; t++)
			op_remove_all(s, t);
		flush(s);
	} else if (!strcmp(spec, "restart")) {
		pub_stop(s);
		new_publisher(s);
		sleep_s(0.3);
		pub_open(s, -1);
	} else if (!strncmp(spec, "rebind", 6)) {
		pub_stop(s);
		/* lose=N: N random operations, one event a message, sent while the
		 * socket is gone: lost, with their numbers and event ids */
		uint64_t lose = (uint64_t)param(spec, "lose", 0), goal = s->lost_messages + lose;
		s->batch = 1;
		for (uint64_t i = 0; s->lost_messages < goal && i < 100 * lose; i++) { /* some ops publish nothing */
			random_op(s);
			flush(s);
		}
		s->batch = MAX_BATCH;
		sleep_s(0.3);
		pub_open(s, -1);
	} else if (!strncmp(spec, "standby-publish", 15)) {
		unsigned m = member_param(s, param(spec, "member", -1));
		if (atomic_load(&s->members[m].serving))
			die("standby-publish: member %u serves", m);
		flush(s);
		struct pubstate leader = pub_save(s);
		s->publishing = m;
		new_publisher(s);
		pub_open(s, -1);
		for (uint64_t i = 0, n = (uint64_t)param(spec, "count", 100); i < n && !stopping; i++) {
			random_op(s);
			if (s->q_len >= s->batch)
				send_batch(s);
		}
		pub_stop(s);
		pub_restore(s, &leader);
	} else if (!strncmp(spec, "standby", 7)) {
		/* upstream builds the publisher only on promotion: a standby has no
		 * PUB port, and the next leader's publisher numbers from 1 */
		unsigned m = s->publishing;
		pub_stop(s);
		atomic_store(&s->members[m].serving, false);
		sleep_s(param(spec, "seconds", 1));
		promote(s, m, -1);
	} else if (!strncmp(spec, "failover", 8)) {
		unsigned to = member_param(s, param(spec, "to", -1));
		if (to == s->publishing)
			die("failover: member %u leads already", to);
		pub_stop(s);
		atomic_store(&s->members[s->publishing].serving, false);
		sleep_s(0.2);
		promote(s, to, param(spec, "after", -1));
	} else if (!strncmp(spec, "split-brain", 11)) {
		unsigned m = member_param(s, param(spec, "member", -1));
		atomic_store(&s->members[m].serving, true);
		s->split_brains++;
		sleep_s(param(spec, "seconds", 1));
		atomic_store(&s->members[m].serving, m == s->publishing);
	} else if (!strncmp(spec, "batch-remove", 12)) {
		uint64_t n = (uint64_t)param(spec, "count", 100);
		for (uint64_t i = 0; i < n; i++)
			op_silent_remove(s, (unsigned)(rnd(s) % s->o.tenants), (unsigned)(rnd(s) % s->o.keys));
	} else if (!strncmp(spec, "crash", 5)) {
		/* the master process dies: publisher and admin endpoints go; it
		 * comes back as a new process (a restart: the view does not move),
		 * its publisher up before its admin port */
		struct member *m = &s->members[s->publishing];
		pub_stop(s);
		if (m->admin)
			MHD_stop_daemon(m->admin);
		m->admin = NULL;
		sleep_s(param(spec, "seconds", 1));
		new_publisher(s);
		pub_open(s, param(spec, "after", -1));
		if (s->o.status_addrs[m->index])
			m->admin = admin_start(m, s->o.status_addrs[m->index]);
	} else if (!strncmp(spec, "poison", 6)) {
		/* N messages of random operations, each with one event of an
		 * unknown event_type among them */
		s->poison_pending = (unsigned)param(spec, "count", 10);
		for (uint64_t i = 0; s->poison_pending && i < 100000 && !stopping; i++) {
			random_op(s);
			if (s->q_len >= 4)
				send_batch(s);
		}
		flush(s);
	} else if (!strcmp(spec, "admin-off") || !strcmp(spec, "admin-on")) {
		/* the publishing member's admin endpoints go (connection refused),
		 * or come back, while the publisher goes on */
		struct member *m = &s->members[s->publishing];
		if (m->admin && spec[7] == 'f') {
			MHD_stop_daemon(m->admin);
			m->admin = NULL;
		} else if (!m->admin && spec[7] == 'n' && s->o.status_addrs[m->index]) {
			m->admin = admin_start(m, s->o.status_addrs[m->index]);
		}
	} else if (!strncmp(spec, "outage", 6)) {
		double v = param(spec, "member", -1);
		struct member *m = &s->members[v < 0 ? s->publishing : member_param(s, v)];
		if (m->admin) {
			MHD_stop_daemon(m->admin);
			sleep_s(param(spec, "seconds", 1));
			m->admin = admin_start(m, s->o.status_addrs[m->index]);
		}
	} else if (!strncmp(spec, "garbage", 7)) {
		phase_garbage(s, (uint64_t)param(spec, "count", 100));
	} else if (!strncmp(spec, "sleep", 5)) {
		sleep_s(param(spec, "seconds", 1));
	} else if (!strcmp(spec, "truth")) {
		flush(s);
		sleep_s(0.2); /* sent, before the truth says so */
		if (s->o.truth)
			write_truth(s, s->o.truth);
	} else if (!strcmp(spec, "wait")) {
		while (!stopping)
			sleep_s(0.1);
	} else {
		die("unknown phase \"%s\"", spec);
	}
}

/* --- ground truth --- */

static json_t *tenant_json(struct sim *s, unsigned t, const unsigned char *model, const struct tenant_truth *tt)
{
	uint64_t place[3] = {0};
	for (unsigned k = 0; k < s->o.keys; k++) {
		unsigned m = model[(size_t)t * s->o.keys + k];
		if (m)
			place[m == 1 ? 0 : m == 2 ? 1 : 2]++;
	}
	char name[32];
	tenant_name(t, name, sizeof(name));
	json_t *j = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I}", "backend_id", s->o.backend, "tenant_id", name,
			      "objects", (json_int_t)(place[0] + place[1] + place[2]), "cpu",
			      (json_int_t)(place[0] + place[2]), "disk", (json_int_t)(place[1] + place[2]), "cpu_only",
			      (json_int_t)place[0], "disk_only", (json_int_t)place[1], "cpu_and_disk",
			      (json_int_t)place[2]);
	/* per model: what --key.group-regex should make of this tenant */
	json_t *groups = json_object();
	for (unsigned k = 0; k < s->o.keys; k++) {
		unsigned m = model[(size_t)t * s->o.keys + k];
		if (!m)
			continue;
		json_t *g = json_object_get(groups, key_model(s, k));
		if (!g) {
			g = json_pack("{s:I,s:I,s:I}", "objects", (json_int_t)0, "cpu", (json_int_t)0, "disk",
				      (json_int_t)0);
			json_object_set_new(groups, key_model(s, k), g);
		}
		json_object_set_new(g, "objects", json_integer(json_integer_value(json_object_get(g, "objects")) + 1));
		if (m & 1)
			json_object_set_new(g, "cpu", json_integer(json_integer_value(json_object_get(g, "cpu")) + 1));
		if (m & 2)
			json_object_set_new(g, "disk",
					    json_integer(json_integer_value(json_object_get(g, "disk")) + 1));
	}
	json_object_set_new(j, "groups", groups);
	if (tt) {
		json_object_set_new(j, "stored", json_integer((json_int_t)tt->events[STORED]));
		json_object_set_new(j, "removed", json_integer((json_int_t)tt->events[REMOVED]));
		json_object_set_new(j, "cleared", json_integer((json_int_t)tt->events[CLEARED]));
		json_object_set_new(j, "stored_duplicates", json_integer((json_int_t)tt->dup));
		json_object_set_new(j, "removed_unknown", json_integer((json_int_t)tt->unknown));
		json_object_set_new(j, "stale", json_boolean(!tt->exact));
	}
	return j;
}

static void write_truth(struct sim *s, const char *path)
{
	json_t *wire = json_array(), *master = json_array();
	for (unsigned t = 0; t < s->o.tenants; t++) {
		if (s->truth[t].seen)
			json_array_append_new(wire, tenant_json(s, t, s->wire, &s->truth[t]));
		json_array_append_new(master, tenant_json(s, t, s->master, NULL));
	}
	json_t *root = json_pack(
		"{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:{s:b,s:I,s:I,s:I},s:o,s:o}", "messages",
		(json_int_t)s->messages, "events_sent", (json_int_t)s->events_sent, "last_seq", (json_int_t)s->last_seq,
		"gaps", (json_int_t)s->gaps, "missing", (json_int_t)s->missing, "restarts", (json_int_t)s->restarts,
		"garbage_messages", (json_int_t)(s->garbage[0] + s->garbage[1]), "dropped_total",
		(json_int_t)s->dropped_total, "keyless_total", (json_int_t)s->keyless_total, "seed",
		(json_int_t)s->o.seed, "status", "enabled", 1, "published_batches",
		(json_int_t)atomic_load(&s->published_batches), "published_events",
		(json_int_t)atomic_load(&s->published_events), "dropped_events",
		(json_int_t)atomic_load(&s->dropped_events), "tenants", wire, "master_tenants", master);
	status_skipped(s, json_object_get(root, "status"), atomic_load(&s->skipped));
	/* "tenants" is what an ideal subscriber of this dialect knows from the
	 * wire; "master_tenants" what the master holds */
	json_object_set_new(root, "dialect", json_string(s->o.dialect == DIALECT_OBJECT ? "object" : "media"));
	json_object_set_new(root, "silent_removals", json_integer((json_int_t)s->silent_removals));
	/* what a subscriber of one member that forgets all when its master stands
	 * by shows: the wire since the last promotion */
	json_t *since = json_array();
	for (unsigned t = 0; t < s->o.tenants; t++)
		if (s->truth[t].seen)
			json_array_append_new(since, tenant_json(s, t, s->wire_since, NULL));
	json_object_set_new(root, "tenants_since_promotion", since);
	json_t *members = json_array();
	for (unsigned i = 0; i < s->n_members; i++) {
		const struct member *m = &s->members[i];
		json_array_append_new(members,
				      json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:b}", "status",
						s->o.status_addrs[i] ? s->o.status_addrs[i] : "", "messages",
						(json_int_t)m->messages, "events", (json_int_t)m->events, "last_seq",
						(json_int_t)m->last_seq, "restarts",
						(json_int_t)(m->publishers ? m->publishers - 1 : 0), "standby_events",
						(json_int_t)m->standby_events, "serving", atomic_load(&m->serving)));
	}
	json_object_set_new(root, "members", members);
	json_object_set_new(root, "leader", json_integer(s->publishing));
	json_object_set_new(root, "view_version", json_integer((json_int_t)atomic_load(&s->view)));
	/* every promotion moved the view: a failover */
	json_object_set_new(root, "failovers", json_integer((json_int_t)atomic_load(&s->view) - 1));
	json_object_set_new(root, "split_brains", json_integer((json_int_t)s->split_brains));
	if (s->o.quotas) /* as the leader answers /api/v1/tenant_quotas */
		json_object_set_new(root, "quotas", quotas_json(s));
	json_object_set_new(root, "lost_messages", json_integer((json_int_t)s->lost_messages));
	json_object_set_new(root, "lost_events", json_integer((json_int_t)s->lost_events));
	json_object_set_new(root, "spec_extras", json_boolean(s->o.spec_extras));
	json_t *dec = json_object();
	for (int r = 0; r < 2; r++)
		json_object_set_new(dec, garbage_reasons[r], json_integer((json_int_t)s->garbage[r]));
	json_object_set_new(dec, "unknown_event_type", json_integer((json_int_t)s->poisoned));
	json_object_set_new(root, "decode_errors", dec);
	/* whole or not at all: a reader may be waiting for the file */
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (json_dump_file(root, tmp, JSON_INDENT(1) | JSON_SORT_KEYS) != 0 || rename(tmp, path) != 0)
		fprintf(stderr, "mooncake-kv-sim: cannot write %s\n", path);
	json_decref(root);
}

/* --- main --- */

static const char usage[] =
	"usage: mooncake-kv-sim --pub ENDPOINT [--status HOST:PORT] [--phase SPEC]... [options]\n"
	"  --pub and --status once per member of a cluster of masters (up to 4; member 0 leads first)\n"
	"  --quotas on|off (off)  the leader answers /api/v1/tenant_quotas (off: 409, as a master without them)\n"
	"  --quota-bytes N (1048576)  tenant t asks for (t + 1) * N bytes; each object is charged 4096\n"
	"  --seed N (1)  --tenants N (4)  --keys N (2000)  --queue N (65536)  --backend ID  --sndhwm N (10000)\n"
	"  --preload N    random objects the master holds before any subscriber (no event for them)\n"
	"  --key-style plain|vllm|lmcache|sglang (plain)  --models N (3; 1..4): keys shaped like an integration's,\n"
	"                 over N models; the truth gives each tenant's figures per model (\"groups\")\n"
	"  --legacy on|off (on)  --object-key on|off (on)\n"
	"  --dialect object|media (object)  object: as Mooncake main's master (one event per put and per erased\n"
	"                 object, the medium guessed; tier changes, RemoveAll, BatchRemove silent; no cleared);\n"
	"                 media: the subscriber guide, as dev/conductor (per-medium deltas, cleared,\n"
	"                 invalid_event_hashes in the status)\n"
	"  --spec-extras on|off (off)  on: the guide's status field skipped_keyless_events (implies --dialect media)\n"
	"  --truth FILE   write the ground truth at exit\n"
	"phases: steady:rate=N[,seconds=S] ops:count=N[,batch=B] burst:events=N clear:all batch-remove:count=N\n"
	"        truth restart rebind[:lose=N] standby:seconds=S outage:seconds=S[,member=I] crash:seconds=S\n"
	"        garbage:count=N failover[:to=I] split-brain:seconds=S[,member=I] standby-publish:count=N[,member=I]\n"
	"        quota-evict:count=N upgrade admin-off admin-on poison:count=N (failover, crash: after=S) "
	"sleep:seconds=S "
	"wait\n";

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static bool onoff(const char *v, const char *flag)
{
	if (!strcmp(v, "on"))
		return true;
	if (!strcmp(v, "off"))
		return false;
	die("%s takes on or off", flag);
	return false;
}

int main(int argc, char **argv)
{
	struct sim sim = {0};
	struct sim *s = &sim;
	struct opts *o = &s->o;
	*o = (struct opts){.backend = "mooncake-master-1",
			   .tenants = 4,
			   .keys = 2000,
			   .queue_cap = 65536,
			   .sndhwm = 10000,
			   .models = 3,
			   .quota_unit = 1 << 20,
			   .seed = 1,
			   .legacy = true,
			   .object_key = true};
	o->phases = calloc((size_t)argc, sizeof(char *));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help")) {
			fputs(usage, stdout);
			return 0;
		}
		if (i + 1 >= argc)
			die("%s needs a value\n%s", a, usage);
		const char *v = argv[++i];
		if (!strcmp(a, "--pub") && o->n_pubs < MAX_MEMBERS)
			o->pubs[o->n_pubs++] = v;
		else if (!strcmp(a, "--status") && o->n_status < MAX_MEMBERS)
			o->status_addrs[o->n_status++] = v;
		else if (!strcmp(a, "--quotas"))
			o->quotas = onoff(v, a);
		else if (!strcmp(a, "--quota-bytes"))
			o->quota_unit = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--truth"))
			o->truth = v;
		else if (!strcmp(a, "--backend"))
			o->backend = v;
		else if (!strcmp(a, "--seed"))
			o->seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--tenants"))
			o->tenants = (unsigned)atoi(v);
		else if (!strcmp(a, "--keys"))
			o->keys = (unsigned)atoi(v);
		else if (!strcmp(a, "--queue"))
			o->queue_cap = (unsigned)atoi(v);
		else if (!strcmp(a, "--legacy"))
			o->legacy = onoff(v, a);
		else if (!strcmp(a, "--object-key"))
			o->object_key = onoff(v, a);
		else if (!strcmp(a, "--key-style")) {
			static const char *const styles[] = {"plain", "vllm", "lmcache", "sglang"};
			o->key_style = -1;
			for (int k = 0; k < 4; k++)
				if (!strcmp(v, styles[k]))
					o->key_style = k;
			if (o->key_style < 0)
				die("--key-style is plain, vllm, lmcache or sglang");
		} else if (!strcmp(a, "--models"))
			o->models = (unsigned)atoi(v);
		else if (!strcmp(a, "--preload"))
			o->preload = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--sndhwm"))
			o->sndhwm = (unsigned)atoi(v);
		else if (!strcmp(a, "--spec-extras"))
			o->spec_extras = onoff(v, a);
		else if (!strcmp(a, "--dialect")) {
			if (strcmp(v, "object") && strcmp(v, "media"))
				die("--dialect is object or media");
			o->dialect = strcmp(v, "object") ? DIALECT_MEDIA : DIALECT_OBJECT;
		} else if (!strcmp(a, "--phase"))
			o->phases[o->n_phases++] = (char *)v;
		else
			die("unknown flag %s\n%s", a, usage);
	}
	if (!o->n_pubs)
		die("--pub is required\n%s", usage);
	if (o->n_status && o->n_status != o->n_pubs)
		die("--status once per --pub, or not at all");
	if (o->models < 1 || o->models > 4)
		die("--models 1..4");
	if (o->tenants < 1 || o->tenants > 100000 || o->keys < 1 || o->keys > 10000000 || o->queue_cap < 1)
		die("--tenants 1..100000, --keys 1..10000000, --queue >= 1");
	if (!o->n_phases)
		o->phases[o->n_phases++] = "wait";
	if (o->spec_extras) /* the guide's status fields go with the guide's events */
		o->dialect = DIALECT_MEDIA;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	s->rng = o->seed;
	s->batch = MAX_BATCH;
	s->next_seq = s->next_event_id = 1;
	s->queue = calloc(o->queue_cap, sizeof(*s->queue));
	s->master = calloc((size_t)o->tenants * o->keys, 1);
	s->wire = calloc((size_t)o->tenants * o->keys, 1);
	s->wire_since = calloc((size_t)o->tenants * o->keys, 1);
	s->truth = calloc(o->tenants, sizeof(*s->truth));
	if (!s->queue || !s->master || !s->wire || !s->wire_since || !s->truth)
		die("out of memory");
	s->zctx = zmq_ctx_new();
	pthread_mutex_init(&s->model_lock, NULL);
	preload(s, o->preload);
	s->n_members = o->n_pubs;
	atomic_store(&s->view, 1);
	for (unsigned i = 0; i < s->n_members; i++) {
		struct member *m = &s->members[i];
		m->s = s;
		m->index = i;
		atomic_store(&m->serving, i == 0);
		m->admin = o->status_addrs[i] ? admin_start(m, o->status_addrs[i]) : NULL;
	}
	s->members[0].publishers = 1;
	pub_open(s, -1);
	fprintf(stderr, "mooncake-kv-sim: publishing on %s%s%s (%u members)\n", o->pubs[0],
		o->n_status ? ", status on " : "", o->n_status ? o->status_addrs[0] : "", s->n_members);
	for (size_t i = 0; i < o->n_phases && !stopping; i++)
		run_phase(s, o->phases[i]);
	flush(s);
	/* let the last messages leave before the socket goes (LINGER is 0) */
	sleep_s(0.2);
	if (o->truth)
		write_truth(s, o->truth);
	pub_close(s);
	for (unsigned i = 0; i < s->n_members; i++)
		if (s->members[i].admin)
			MHD_stop_daemon(s->members[i].admin);
	zmq_ctx_term(s->zctx);
	free(s->queue);
	free(s->master);
	free(s->wire);
	free(s->wire_since);
	free(s->truth);
	free(o->phases);
	return 0;
}
