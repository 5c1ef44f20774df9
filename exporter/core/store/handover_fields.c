/* SPDX-License-Identifier: Apache-2.0 */
/* What a handover stream carries of a member and of a source's leadership
 * (kv_handover_fields.h): one visitor writes or reads every field, in
 * order, so that the writer and the reader cannot drift apart. */
#include "kv_handover_fields.h"

static void f_u64(kv_fields *f, uint64_t *v)
{
	if (f->w)
		kv_pack_u64(f->w, *v);
	else
		*v = kv_unpack_u64(f->r);
}

static void f_i64(kv_fields *f, int64_t *v)
{
	if (f->w)
		kv_pack_i64(f->w, *v);
	else
		*v = kv_unpack_i64(f->r);
}

static void f_f64(kv_fields *f, double *v)
{
	if (f->w)
		kv_pack_f64(f->w, *v);
	else
		*v = kv_unpack_f64(f->r);
}

static void f_bool(kv_fields *f, bool *v)
{
	uint64_t u = *v;
	if (f->w)
		kv_pack_u64(f->w, u);
	else
		*v = kv_unpack_bool(f->r);
}

static void f_int(kv_fields *f, int *v, int lo, int hi)
{
	int64_t x = *v;
	f_i64(f, &x);
	if (f->r && (x < lo || x > hi)) {
		f->r->bad = true;
		x = lo;
	}
	*v = (int)x;
}

static void f_seqtrack(kv_fields *f, kv_seqtrack *t)
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

static void f_loss(kv_fields *f, kv_loss *l)
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

void kv_fields_member(kv_fields *f, kv_member_carry *m)
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
	f_int(f, &dialect, 0, MKV_DIALECT__COUNT - 1);
	f_int(f, &basis, 0, KV_DIALECT_BY_NO_ANSWER);
	d->dialect = (enum mkv_dialect)dialect;
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

void kv_fields_leadership(kv_fields *f, kv_leadership *h)
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
