/* SPDX-License-Identifier: Apache-2.0 */
/* A store's state into a handover stream, and back into a store
 * (mooncake_kv/handover.h).  The stream: a header, then per store a source
 * record, a record per member, the state's records (kv_state_io.h) and an
 * end; a trailer closes it (kv_pack.h). */
#include <stdlib.h>
#include <string.h>

#include "kv_state_io.h"
#include "kv_store_impl.h"

static const char magic[] = "mooncake-kv-state";
#define MAX_LABEL 4096

const char *kv_boot_result_name(enum kv_boot_result r)
{
	static const char *const names[KV_BOOT__COUNT] = {
		"taken",     "unreachable", "timeout", "http_status", "too_large", "truncated",     "checksum",
		"malformed", "version",     "absent",  "mismatch",    "limit",     "out_of_memory",
	};
	return (unsigned)r < KV_BOOT__COUNT ? names[r] : "invalid";
}

void kv_store_boot_note(kv_store *s, enum kv_boot_result r)
{
	if ((unsigned)r < KV_BOOT__COUNT)
		s->boot.results[r]++;
}

size_t kv_store_joins_waiting(const kv_store *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += kv_stream_join(s->parts[i].stream) == KV_JOIN_WAITING;
	return n;
}

/* --- what a member carries: the same fields written and read, in order --- */

typedef struct member_carry {
	kv_stream_carry stream;
	kv_dialect_choice dialect;
	bool have_status;
	kv_master_status status; /* its counters only */
	uint64_t last_sequence;
	kv_loss loss;
} member_carry;

/* One visitor writes or reads every field, so the two cannot drift apart. */
typedef struct fields {
	kv_pack_w *w; /* writing, or */
	kv_pack_r *r; /* reading */
} fields;

static void f_u64(fields *f, uint64_t *v)
{
	if (f->w)
		kv_pack_u64(f->w, *v);
	else
		*v = kv_unpack_u64(f->r);
}

static void f_i64(fields *f, int64_t *v)
{
	if (f->w)
		kv_pack_i64(f->w, *v);
	else
		*v = kv_unpack_i64(f->r);
}

static void f_f64(fields *f, double *v)
{
	if (f->w)
		kv_pack_f64(f->w, *v);
	else
		*v = kv_unpack_f64(f->r);
}

static void f_bool(fields *f, bool *v)
{
	uint64_t u = *v;
	if (f->w)
		kv_pack_u64(f->w, u);
	else
		*v = kv_unpack_bool(f->r);
}

static void f_int(fields *f, int *v, int lo, int hi)
{
	int64_t x = *v;
	f_i64(f, &x);
	if (f->r && (x < lo || x > hi)) {
		f->r->bad = true;
		x = lo;
	}
	*v = (int)x;
}

static void f_seqtrack(fields *f, kv_seqtrack *t)
{
	f_bool(f, &t->started);
	f_bool(f, &t->eid_started);
	f_bool(f, &t->epoch_whole);
	f_bool(f, &t->from_one);
	f_bool(f, &t->absent_seen);
	uint64_t *u[] = {&t->last_seq,    &t->last_event_id, &t->counted_upto,  &t->eid_counted_upto,
			 &t->eid_unread,  &t->gaps,          &t->missing,       &t->epoch_missing,
			 &t->duplicates,  &t->resets,        &t->event_id_gaps, &t->event_ids_missing,
			 &t->tail_losses, &t->tail_late};
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		f_u64(f, u[i]);
}

static void f_loss(fields *f, kv_loss *l)
{
	f_bool(f, &l->polled);
	f_bool(f, &l->epoch_based);
	f_bool(f, &l->orphan);
	f_bool(f, &l->tail_watch);
	f_bool(f, &l->behind_known);
	uint64_t *u[] = {&l->resets_seen, &l->credit,       &l->credit_messages,  &l->closed_done,   &l->epoch_done,
			 &l->epoch_used,  &l->dropped_prev, &l->tail_master_last, &l->tail_position, &l->behind,
			 &l->restarts,    &l->queue,        &l->transport,        &l->unattributed};
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		f_u64(f, u[i]);
	f_f64(f, &l->tail_since);
}

static void f_member(fields *f, member_carry *m)
{
	kv_stream_carry *c = &m->stream;
	f_seqtrack(f, &c->seq);
	f_bool(f, &c->ts_seen);
	f_i64(f, &c->ts_max);
	f_bool(f, &c->has_digest);
	f_u64(f, &c->digest);
	f_bool(f, &c->has_batch_ms);
	f_i64(f, &c->batch_ms);
	f_i64(f, &c->batch_at_ms);
	kv_dialect_choice *d = &m->dialect;
	int dialect = (int)d->dialect, basis = (int)d->basis;
	f_bool(f, &d->fixed);
	f_bool(f, &d->decided);
	f_int(f, &dialect, 0, KV_DIALECT__COUNT - 1);
	f_int(f, &basis, 0, KV_DIALECT_BY_NO_ANSWER);
	d->dialect = (enum kv_dialect)dialect;
	d->basis = (enum kv_dialect_basis)basis;
	f_u64(f, &d->switches);
	f_bool(f, &m->have_status);
	f_bool(f, &m->status.enabled);
	f_u64(f, &m->status.published_batches);
	f_u64(f, &m->status.published_events);
	f_u64(f, &m->status.dropped_events);
	f_u64(f, &m->last_sequence);
	f_loss(f, &m->loss);
}

static void f_leadership(fields *f, kv_leadership *h)
{
	f_int(f, &h->leader, -1, 1 << 20);
	f_int(f, &h->last_leader, -1, 1 << 20);
	f_bool(f, &h->has_view);
	f_bool(f, &h->split_brain);
	f_bool(f, &h->dropped);
	uint64_t *u[] = {&h->view, &h->failovers, &h->split_brains, &h->split_runs[0], &h->split_runs[1], &h->observed};
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		f_u64(f, u[i]);
}

/* --- writing --- */

struct sink {
	int (*fn)(void *arg, const void *p, size_t n);
	void *arg;
};

static int sink_of(void *arg, const void *p, size_t n)
{
	struct sink *k = arg;
	return k->fn(k->arg, p, n);
}

static void write_label(kv_pack_w *w, const char *label)
{
	kv_pack_bytes(w, label ? label : "", label ? strlen(label) : 0);
}

static void write_store(kv_pack_w *w, const kv_store *s)
{
	kv_pack_begin(w, KV_REC_SOURCE);
	write_label(w, s->cfg.name);
	kv_pack_u64(w, s->cfg.ha);
	kv_pack_u64(w, s->n);
	kv_pack_u64(w, s->cfg.key_groups != NULL);
	fields f = {w, NULL};
	kv_leadership lead = s->leadership;
	f_leadership(&f, &lead);
	kv_pack_end(w);
	for (size_t i = 0; i < s->n; i++) {
		const kv_store_part *p = &s->parts[i];
		member_carry m = {.dialect = p->dialect,
				  .have_status = p->master.have_status,
				  .status = p->master.status,
				  .last_sequence = p->master.last_sequence,
				  .loss = p->master.loss};
		kv_stream_carry_get(p->stream, &m.stream);
		kv_pack_begin(w, KV_REC_MEMBER);
		write_label(w, p->cfg.label);
		f_member(&f, &m);
		kv_pack_end(w);
	}
	kv_state_write(s->state, w);
	kv_pack_begin(w, KV_REC_SOURCE_END);
	kv_pack_end(w);
}

enum kv_err kv_handover_write(kv_store *const *stores, size_t n, int64_t taken_ms,
			      int (*sink)(void *arg, const void *p, size_t n), void *arg)
{
	struct sink k = {sink, arg};
	kv_pack_w w;
	if (kv_pack_w_init(&w, sink_of, &k) != KV_OK)
		return KV_ENOMEM;
	kv_pack_begin(&w, KV_REC_HEADER);
	kv_pack_bytes(&w, magic, sizeof(magic) - 1);
	kv_pack_u64(&w, KV_HANDOVER_VERSION);
	kv_pack_i64(&w, taken_ms);
	kv_pack_u64(&w, n);
	kv_pack_end(&w);
	for (size_t i = 0; i < n; i++)
		write_store(&w, stores[i]);
	int rc = kv_pack_finish(&w);
	kv_pack_w_free(&w);
	return rc;
}

/* --- reading --- */

typedef struct candidate {
	bool present;                /* the peer watched a source of this name */
	enum kv_boot_result refused; /* KV_BOOT_TAKEN: nothing of it refused */
	bool whole;                  /* its end record came */
	kv_leadership lead;
	member_carry *members;
	size_t n_members;
	kv_state *state;
} candidate;

struct kv_handover {
	kv_store *const *stores;
	size_t n;
	kv_pack_in in;
	bool header;
	int64_t taken_ms;
	uint64_t sources_left;
	candidate *c;
	long cur;  /* the store whose source is being read; -1 none */
	bool skip; /* a source nobody here takes: its records until its end */
	kv_state_load load;
	bool loading;
};

static enum kv_boot_result of_pack(enum kv_pack_error e)
{
	switch (e) {
	case KV_PACK_OK:
		return KV_BOOT_TAKEN;
	case KV_PACK_TOO_LARGE:
		return KV_BOOT_TOO_LARGE;
	case KV_PACK_CHECKSUM:
		return KV_BOOT_CHECKSUM;
	case KV_PACK_TRUNCATED:
		return KV_BOOT_TRUNCATED;
	case KV_PACK_NOMEM:
		return KV_BOOT_OUT_OF_MEMORY;
	case KV_PACK_REFUSED: /* the record callback's own: never reaches here */
	case KV_PACK_MALFORMED:
		break;
	}
	return KV_BOOT_MALFORMED;
}

/* Codes the record callback returns beyond kv_pack_error's. */
#define REC_VERSION 100

static bool label_is(kv_str got, const char *want)
{
	size_t n = want ? strlen(want) : 0;
	return got.len == n && (n == 0 || memcmp(got.ptr, want, n) == 0);
}

static int read_header(kv_handover *h, kv_pack_r *r)
{
	kv_str m = kv_unpack_bytes(r, 64);
	if (r->bad || m.len != sizeof(magic) - 1 || memcmp(m.ptr, magic, m.len) != 0)
		return KV_PACK_MALFORMED;
	if (kv_unpack_u64(r) != KV_HANDOVER_VERSION)
		return REC_VERSION;
	h->taken_ms = kv_unpack_i64(r);
	h->sources_left = kv_unpack_max(r, 1u << 16);
	if (!kv_unpack_done(r))
		return KV_PACK_MALFORMED;
	h->header = true;
	return KV_PACK_OK;
}

static int read_source(kv_handover *h, kv_pack_r *r)
{
	if (!h->sources_left || h->cur >= 0 || h->skip)
		return KV_PACK_MALFORMED;
	h->sources_left--;
	kv_str name = kv_unpack_bytes(r, MAX_LABEL);
	bool ha = kv_unpack_bool(r);
	uint64_t n_members = kv_unpack_max(r, 1u << 12);
	bool groups = kv_unpack_bool(r);
	kv_leadership lead = {0};
	fields f = {NULL, r};
	f_leadership(&f, &lead);
	if (!kv_unpack_done(r) || lead.leader >= (int)n_members || lead.last_leader >= (int)n_members)
		return KV_PACK_MALFORMED;
	for (size_t i = 0; i < h->n; i++) {
		const kv_store *s = h->stores[i];
		if (!label_is(name, s->cfg.name))
			continue;
		candidate *c = &h->c[i];
		if (c->present)
			return KV_PACK_MALFORMED; /* a source twice */
		c->present = true;
		if (ha != s->cfg.ha || n_members != s->n || groups != (s->cfg.key_groups != NULL)) {
			c->refused = KV_BOOT_MISMATCH;
			break;
		}
		if (!(c->members = calloc(s->n, sizeof(*c->members))))
			return KV_PACK_NOMEM;
		c->lead = lead;
		h->cur = (long)i;
		kv_state_load_init(&h->load, s->cfg.budget, s->cfg.key_groups);
		h->loading = true;
		return KV_PACK_OK;
	}
	h->skip = true;
	return KV_PACK_OK;
}

static int read_member(kv_handover *h, kv_pack_r *r)
{
	candidate *c = &h->c[h->cur];
	const kv_store *s = h->stores[h->cur];
	if (c->n_members == s->n || c->state)
		return KV_PACK_MALFORMED;
	kv_str label = kv_unpack_bytes(r, MAX_LABEL);
	member_carry *m = &c->members[c->n_members];
	fields f = {NULL, r};
	f_member(&f, m);
	if (!kv_unpack_done(r))
		return KV_PACK_MALFORMED;
	const kv_store_part *p = &s->parts[c->n_members++];
	/* another master, or a dialect this exporter is told to read otherwise */
	if (!label_is(label, p->cfg.label) ||
	    (p->cfg.dialect >= 0 && m->dialect.decided && (int)m->dialect.dialect != p->cfg.dialect))
		c->refused = KV_BOOT_MISMATCH;
	return KV_PACK_OK;
}

/* The source's records are over: its state is whole, or refused. */
static int end_source(kv_handover *h)
{
	size_t cur = (size_t)h->cur;
	candidate *c = &h->c[cur];
	int rc = kv_state_load_end(&h->load, &c->state);
	kv_state_load_free(&h->load);
	h->loading = false;
	h->cur = -1;
	if (rc != KV_PACK_OK)
		return rc;
	if (c->n_members != h->stores[cur]->n)
		return KV_PACK_MALFORMED;
	c->whole = true;
	return KV_PACK_OK;
}

static int on_record(void *arg, unsigned type, kv_pack_r *r)
{
	kv_handover *h = arg;
	if (!h->header)
		return type == KV_REC_HEADER ? read_header(h, r) : KV_PACK_MALFORMED;
	if (type == KV_REC_SOURCE)
		return read_source(h, r);
	if (h->skip) { /* what a source nobody here takes holds is not read */
		if (type == KV_REC_SOURCE_END)
			h->skip = false;
		return type == KV_REC_HEADER ? KV_PACK_MALFORMED : KV_PACK_OK;
	}
	if (h->cur < 0)
		return KV_PACK_MALFORMED;
	candidate *c = &h->c[h->cur];
	if (type == KV_REC_MEMBER)
		return read_member(h, r);
	if (type == KV_REC_SOURCE_END)
		return end_source(h);
	if (c->n_members != h->stores[h->cur]->n)
		return KV_PACK_MALFORMED; /* the state before every member */
	int rc = kv_state_load_record(&h->load, type, r);
	if (rc == KV_PACK_REFUSED) { /* beyond this exporter's limits: this source only */
		c->refused = KV_BOOT_LIMIT;
		kv_state_load_free(&h->load);
		h->loading = false;
		h->cur = -1;
		h->skip = true;
		return KV_PACK_OK;
	}
	return rc;
}

kv_handover *kv_handover_new(kv_store *const *stores, size_t n, uint64_t max_bytes)
{
	kv_handover *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->stores = stores;
	h->n = n;
	h->cur = -1;
	if (!(h->c = calloc(n ? n : 1, sizeof(*h->c))) || kv_pack_in_init(&h->in, max_bytes, on_record, h) != KV_OK) {
		kv_handover_free(h);
		return NULL;
	}
	return h;
}

void kv_handover_free(kv_handover *h)
{
	if (!h)
		return;
	for (size_t i = 0; h->c && i < h->n; i++) {
		free(h->c[i].members);
		kv_state_free(h->c[i].state);
	}
	free(h->c);
	if (h->loading)
		kv_state_load_free(&h->load);
	kv_pack_in_free(&h->in);
	free(h);
}

static enum kv_boot_result result_of(enum kv_pack_error e)
{
	return (int)e == REC_VERSION ? KV_BOOT_VERSION : of_pack(e);
}

enum kv_boot_result kv_handover_feed(kv_handover *h, const void *p, size_t n)
{
	return result_of(kv_pack_in_feed(&h->in, p, n));
}

enum kv_boot_result kv_handover_end(kv_handover *h)
{
	enum kv_pack_error e = kv_pack_in_end(&h->in);
	if (e == KV_PACK_OK && (h->sources_left || h->cur >= 0 || h->skip))
		e = KV_PACK_MALFORMED; /* whole and checksummed, yet not every source came */
	return result_of(e);
}

int64_t kv_handover_taken_ms(const kv_handover *h)
{
	return h->taken_ms;
}

enum kv_boot_result kv_handover_take(kv_handover *h, size_t i)
{
	kv_store *s = h->stores[i];
	candidate *c = &h->c[i];
	enum kv_boot_result r = !c->present                   ? KV_BOOT_ABSENT
				: c->refused != KV_BOOT_TAKEN ? c->refused
				: !c->whole                   ? KV_BOOT_MALFORMED
							      : KV_BOOT_TAKEN;
	if (r == KV_BOOT_TAKEN) {
		kv_state *old = s->state;
		s->state = c->state;
		c->state = NULL;
		kv_state_set_residency(s->state, s->cfg.residency);
		kv_state_set_ha(s->state, s->cfg.ha);
		for (size_t k = 0; k < s->n; k++) {
			kv_store_part *p = &s->parts[k];
			const member_carry *m = &c->members[k];
			kv_stream_rebind(p->stream, s->state);
			kv_stream_carry_set(p->stream, &m->stream);
			p->dialect = m->dialect;
			kv_stream_set_dialect(p->stream, p->dialect.dialect);
			p->master.have_status = m->have_status;
			p->master.status.enabled = m->status.enabled;
			p->master.status.published_batches = m->status.published_batches;
			p->master.status.published_events = m->status.published_events;
			p->master.status.dropped_events = m->status.dropped_events;
			p->master.last_sequence = m->last_sequence;
			p->master.loss = m->loss;
		}
		s->leadership = c->lead;
		kv_state_free(old);
	}
	kv_store_boot_note(s, r);
	return r;
}
