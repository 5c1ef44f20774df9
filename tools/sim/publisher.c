/* SPDX-License-Identifier: Apache-2.0 */
/* The master's KV event publisher process: its queue (dropping the oldest
 * event when full, each drop reserving a sequence number), its messages on
 * the wire (upstream's envelope, in either dialect), its PUB socket, and
 * what a subscriber that received every message knows (the wire model and
 * each tenant's truth).  A new publisher process numbers from 1. */
#include <stdlib.h>
#include <string.h>
#include <msgpack.h>
#include <zmq.h>

#include "sim.h"

static void pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

const char *const mooncake_names[3] = {"main", "v0.3.12", "conductor"};

/* The model context the master played stamps on every event: v0.3.12 none
 * (nil, its dp_rank too: "Indexer registration supplies model/block_size/
 * dp_rank", kv_event_publisher.cpp at 3b5a594 ~L281); main since #3818 and
 * dev/conductor the configured one (--kv_events_model_name ...; block_size
 * nil when 0), main with a realistic default here, conductor with upstream's
 * (nothing but dp_rank 0). */
struct model_ctx model_context(const struct sim *s)
{
	const struct opts *o = &s->o;
	if (o->mooncake == MC_V0312)
		return (struct model_ctx){.dp_nil = true};
	bool is_main = o->mooncake == MC_MAIN;
	struct model_ctx c = {
		.model_name = o->model_name ? o->model_name
			      : is_main     ? SIM_MODEL
					    : NULL,
		.lora_name = o->lora_name,
		.additional_salt = o->additional_salt,
		.block_size = o->block_size >= 0 ? (uint32_t)o->block_size
			      : is_main          ? SIM_BLOCK_SIZE
						 : 0,
		.dp_rank = o->dp_rank >= 0 ? (uint32_t)o->dp_rank : 0,
	};
	if (c.model_name && !*c.model_name) /* empty is nil, as upstream packs it */
		c.model_name = NULL;
	if (c.lora_name && !*c.lora_name)
		c.lora_name = NULL;
	if (c.additional_salt && !*c.additional_salt)
		c.additional_salt = NULL;
	return c;
}

/* A string of the model context, or nil. */
static void pack_opt(msgpack_packer *pk, const char *v)
{
	if (v)
		pack_str(pk, v);
	else
		msgpack_pack_nil(pk);
}

static void pack_context(struct sim *s, msgpack_packer *pk)
{
	struct model_ctx c = model_context(s);
	pack_str(pk, "model_name"), pack_opt(pk, c.model_name);
	pack_str(pk, "block_size");
	if (c.block_size)
		msgpack_pack_uint32(pk, c.block_size);
	else
		msgpack_pack_nil(pk);
	pack_str(pk, "additional_salt"), pack_opt(pk, c.additional_salt);
	pack_str(pk, "lora_name"), pack_opt(pk, c.lora_name);
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
	pack_context(s, pk);
	pack_str(pk, "tenant_id"), pack_str(pk, tenant);
	pack_str(pk, "backend_id"), pack_str(pk, s->o.backend);
	if (per_object)
		pack_str(pk, "group_id"), msgpack_pack_nil(pk);
	pack_str(pk, "medium");
	if (per_object)
		pack_str(pk, e->medium == 1 ? "cpu" : "disk");
	else
		msgpack_pack_nil(pk);
	pack_str(pk, "dp_rank");
	struct model_ctx c = model_context(s);
	if (c.dp_nil)
		msgpack_pack_nil(pk);
	else
		msgpack_pack_uint32(pk, c.dp_rank);
	if (!per_object)
		return;
	if (s->o.object_key) {
		key_name(s, e->key, key, sizeof(key));
		pack_str(pk, "object_key"), pack_str(pk, key);
	}
	pack_str(pk, "seq_hashes"), msgpack_pack_array(pk, 0);
	if (s->o.legacy)
		pack_str(pk, "block_hashes"), msgpack_pack_array(pk, 0);
	pack_str(pk, "base_block_idx");
	if (e->kind == STORED && s->o.mooncake == MC_V0312) /* depth 0 (3b5a594 ~L325) */
		msgpack_pack_uint32(pk, 0);
	else
		msgpack_pack_nil(pk);
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

static void life_add(struct lives *l, uint64_t ms)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		uint64_t *p = realloc(l->ms, cap * sizeof(*p));
		if (!p)
			die("out of memory");
		l->ms = p;
		l->cap = cap;
	}
	l->ms[l->n++] = ms;
}

/* A life of key k of tenant t ended at ts (usable: its time may be used);
 * by a cleared, its group counts it unobserved (no group per object). */
static void life_end(struct sim *s, unsigned t, unsigned k, int64_t ts, bool usable, bool cleared)
{
	struct tenant_truth *tt = &s->truth[t];
	int64_t *b = &s->wire_birth[(size_t)t * s->o.keys + k];
	struct lives *group = &tt->model_lives[key_model_index(s, k)];
	bool seen = *b >= 0 && usable;
	if (seen)
		life_add(&tt->lives, (uint64_t)(ts - *b));
	else
		tt->lives.unobserved++;
	if (seen && !cleared)
		life_add(group, (uint64_t)(ts - *b));
	else
		group->unobserved++;
	*b = -1;
}

/* Tenant t can no longer be sure of its figures (removed_after_cleared):
 * it is not exact, and forgets its births, as a subscriber does. */
static void tenant_unsure(struct sim *s, unsigned t)
{
	s->truth[t].removed_after_cleared = true;
	s->truth[t].exact = false;
	for (unsigned k = 0; k < s->o.keys; k++)
		s->wire_birth[(size_t)t * s->o.keys + k] = -1;
}

/* What a subscriber that got this event, published at ts, makes of it. */
static void wire_apply(struct sim *s, const struct event *e, int64_t ts)
{
	struct tenant_truth *t = &s->truth[e->tenant];
	t->seen = true;
	t->events[e->kind]++;
	/* a time older than the newest of this publisher process is no evidence */
	bool usable = !s->ts_seen || ts >= s->ts_max;
	if (usable) {
		s->ts_max = ts;
		s->ts_seen = true;
	} else {
		s->ts_backwards++;
	}
	if (e->kind == CLEARED) {
		/* with the op log the removals of what it held come later: a
		 * subscriber that knows it keeps what it held, and whether it knew
		 * all of it */
		if (s->o.oplog) {
			for (unsigned k = 0; k < s->o.keys; k++)
				*cell(s, s->wire_pending, e->tenant, k) |= *cell(s, s->wire, e->tenant, k);
			t->pending_unseen |= !t->exact;
			t->removed_after_cleared = false;
		}
		for (unsigned k = 0; k < s->o.keys; k++) /* every life ends */
			if (*cell(s, s->wire, e->tenant, k))
				life_end(s, e->tenant, k, ts, usable, true);
		memset(cell(s, s->wire, e->tenant, 0), 0, s->o.keys);
		memset(cell(s, s->wire_since, e->tenant, 0), 0, s->o.keys);
		t->exact = true;
		return;
	}
	unsigned char *c = cell(s, s->wire, e->tenant, e->key), *since = cell(s, s->wire_since, e->tenant, e->key);
	/* in the object dialect a removed erases the object, whatever its medium */
	unsigned del = s->o.dialect == DIALECT_OBJECT ? REP_MEM | REP_DISK : e->medium;
	unsigned after = e->kind == STORED ? (*c | e->medium) : (*c & ~del);
	if (s->o.oplog && e->kind == REMOVED) {
		/* a removal that takes away what was stored after the tenant's
		 * cleared, of a key the cleared's late removals may still name
		 * (or of any key, when the cleared came with objects unseen):
		 * the late one, or a new one?  It cannot tell */
		unsigned char *pend = cell(s, s->wire_pending, e->tenant, e->key);
		bool late = (*pend & del) || t->pending_unseen;
		*pend &= (unsigned char)~del;
		if (late && after != *c)
			tenant_unsure(s, e->tenant);
	}
	if (after == *c)
		*(e->kind == STORED ? &t->dup : &t->unknown) += 1;
	if (!*c && after) /* a life begins: seen only where the tenant is exact */
		s->wire_birth[(size_t)e->tenant * s->o.keys + e->key] = t->exact && usable ? ts : -1;
	else if (*c && !after)
		life_end(s, e->tenant, e->key, ts, usable, false);
	*c = (unsigned char)after;
	*since = (unsigned char)(e->kind == STORED ? (*since | e->medium) : (*since & ~del));
}

/* Every tenant loses its exactness when the stream breaks, and with it the
 * births it held. */
static void stream_break(struct sim *s)
{
	for (unsigned t = 0; t < s->o.tenants; t++)
		s->truth[t].exact = false;
	for (size_t i = 0; i < (size_t)s->o.tenants * s->o.keys; i++)
		s->wire_birth[i] = -1;
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

void send_batch(struct sim *s)
{
	size_t n = s->q_len < s->batch ? s->q_len : s->batch;
	if (!n)
		return;
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	int64_t ts = (int64_t)(now_s() * 1000) + s->clock_offset_ms;
	msgpack_pack_array(&pk, 3);
	msgpack_pack_int64(&pk, ts);
	/* a poison event in the middle (phase poison), alternately with the id
	 * 2^63 and with the next valid id (it has none of its own) */
	int poison = s->poison_pending && n >= 2 ? (int)(s->poison_pending-- % 2) + 1 : 0;
	msgpack_pack_array(&pk, n + (poison != 0));
	/* with no socket (rebind:lose=N) the message goes to no subscriber, as
	 * a PUB socket drops what it has nobody to send to */
	bool heard = s->pub != NULL;
	if (heard && (s->reserved || s->unheard)) {
		/* the gap comes right before the surviving tail: a subscriber
		 * sees it before it reads this message's events */
		s->gaps++;
		s->missing += s->reserved + s->unheard;
		stream_break(s);
		s->reserved = s->unheard = 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (poison && i == n / 2) {
			struct event bad = {POISON, 0, 0, REP_MEM};
			pack_event(s, &pk, &bad, poison == 1 ? 1ull << 63 : s->next_event_id, ts);
			s->poisoned++;
		}
		const struct event *e = &s->queue[(s->q_head + i) % s->o.queue_cap];
		pack_event(s, &pk, e, s->next_event_id++, ts);
		if (heard)
			wire_apply(s, e, ts);
	}
	msgpack_pack_uint32(&pk, model_context(s).dp_rank); /* the batch's */
	uint64_t seq = s->next_seq++;
	if (!heard) {
		s->unheard++;
		s->lost_messages++;
		s->lost_events += n;
	} else {
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

void flush(struct sim *s)
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

void publish(struct sim *s, enum kind k, unsigned t, unsigned key, unsigned medium)
{
	if (k == CLEARED && s->o.dialect == DIALECT_OBJECT)
		return; /* main's publisher has no cleared at all */
	/* v0.3.12 and conductor count every key that is not a number (ours are
	 * textual) in skipped_unparsed_keys, published or not; the guide (and
	 * main since #3818) only the events it does not publish, in
	 * skipped_keyless_events */
	bool keyless_only = s->o.spec_extras || s->o.mooncake == MC_MAIN;
	if (k != CLEARED && (!keyless_only || !s->o.object_key))
		atomic_fetch_add(&s->skipped, 1);
	if (k != CLEARED && !s->o.object_key) {
		/* without object keys a textual key leaves no trace on the wire */
		s->keyless_total++;
		return;
	}
	struct event e = {k, t, key, medium};
	enqueue(s, &e);
}

/* Binds and waits (up to 10 s) for a subscription, so that no message goes
 * to a subscriber that has not joined yet ("slow joiner"); with after >= 0,
 * as a real master does: waits for nobody, and publishes after that many
 * seconds whoever has joined by then. */
void pub_open(struct sim *s, double after)
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
	while (!sim_stopping && now_s() < until) {
		if (zmq_poll(&it, 1, 100) > 0) {
			char sub[256];
			if (zmq_recv(s->pub, sub, sizeof(sub), ZMQ_DONTWAIT) > 0 && sub[0] == 1)
				return;
		}
	}
	fprintf(stderr, "mooncake-kv-sim: no subscriber after 10 s, publishing anyway\n");
}

void pub_close(struct sim *s)
{
	zmq_close(s->pub);
	s->pub = NULL;
}

/* Sends what is queued, lets it leave (LINGER=0 discards what is still
 * queued when the socket goes, as the upstream captures took care to
 * avoid) and closes the socket. */
void pub_stop(struct sim *s)
{
	flush(s);
	sleep_s(0.3);
	pub_close(s);
}

/* A new publisher process on the publishing member: numbers, event ids
 * and counters from the start.  A restart for that member's stream if it
 * published before. */
void new_publisher(struct sim *s)
{
	s->next_seq = s->next_event_id = 1;
	atomic_store(&s->published_batches, 0);
	atomic_store(&s->published_events, 0);
	atomic_store(&s->dropped_events, 0);
	atomic_store(&s->skipped, 0);
	if (s->members[s->publishing].publishers++)
		s->restarts++;
	stream_break(s);
	s->ts_seen = false; /* a new process, a new clock */
}

struct pubstate pub_save(struct sim *s)
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

void pub_restore(struct sim *s, const struct pubstate *p)
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

/* Payloads a subscriber must reject, with the reason it must give. */
static const struct {
	const char *bytes;
	size_t len;
	int reason; /* index into garbage_reasons */
} garbage[] = {
	{"\xc1", 1, 0},          {"\x93\x01", 2, 0},         {"", 0, 0}, {"\x93\x01\xdd\xff\xff\xff\xff", 7, 0},
	{"\x81\xa1x\x01", 4, 1}, {"\x93\x01\x80\x00", 4, 1},
};
const char *const garbage_reasons[2] = {"msgpack_parse", "payload_shape"};

void publish_garbage(struct sim *s, uint64_t n)
{
	size_t kinds = sizeof(garbage) / sizeof(garbage[0]);
	for (uint64_t i = 0; i < n && !sim_stopping; i++) {
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
