/* SPDX-License-Identifier: Apache-2.0 */
/* A store's state into a handover stream, and back into a store
 * (mooncake_kv/handover.h).  The stream: a header, then per store a source
 * record, a record per member, the state's records (kv_state_io.h) and an
 * end, and after that end, where it has anything to say, the source's
 * annex; a trailer closes it (kv_pack.h).
 *
 * The annex carries what version 1 of the format did not: it is a source of
 * its own, named ANNEX_PREFIX and the source's name (a name no --source can
 * have), so that an exporter older than it skips it as a source it does not
 * watch, and takes the rest as before.  Its records are read by type (one it
 * does not know is skipped), each field after those a reader knows ignored:
 * what is added later goes there too, and older readers keep taking it. */
#include <stdlib.h>
#include <string.h>

#include "kv_handover_fields.h"
#include "kv_state_io.h"
#include "kv_store_impl.h"

static const char magic[] = "mooncake-kv-state";
#define ANNEX_PREFIX "annex:"
#define MAX_LABEL    4096

const char *mkv_boot_result_name(enum mkv_boot_result r)
{
	static const char *const names[MKV_BOOT__COUNT] = {
		"taken",     "unreachable", "timeout", "http_status", "too_large", "truncated",     "checksum",
		"malformed", "version",     "absent",  "mismatch",    "limit",     "out_of_memory",
	};
	return (unsigned)r < MKV_BOOT__COUNT ? names[r] : "invalid";
}

void mkv_store_boot_note(mkv_store *s, enum mkv_boot_result r)
{
	if ((unsigned)r < MKV_BOOT__COUNT)
		s->boot.results[r]++;
}

size_t mkv_store_joins_waiting(const mkv_store *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += kv_stream_join(s->parts[i].stream) == MKV_JOIN_WAITING;
	return n;
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

static void write_source(kv_pack_w *w, const mkv_store *s, const char *prefix, const kv_leadership *lead)
{
	kv_pack_begin(w, KV_REC_SOURCE);
	size_t np = strlen(prefix), nn = s->cfg.name ? strlen(s->cfg.name) : 0;
	char *name = malloc(np + nn + 1);
	if (name) {
		memcpy(name, prefix, np);
		memcpy(name + np, s->cfg.name ? s->cfg.name : "", nn + 1);
	}
	write_label(w, name ? name : "");
	free(name);
	kv_pack_u64(w, s->cfg.ha);
	kv_pack_u64(w, s->n);
	kv_pack_u64(w, s->cfg.key_groups != NULL);
	kv_fields f = {w, NULL};
	kv_leadership copy = *lead;
	kv_fields_leadership(&f, &copy);
	kv_pack_end(w);
}

/* Whether the store has anything for its annex: a member's listing known. */
static bool has_annex(const mkv_store *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->parts[i].lists != KV_LISTS_UNKNOWN)
			return true;
	return false;
}

static void write_annex(kv_pack_w *w, const mkv_store *s)
{
	/* a source record an older reader takes as well formed, then skips */
	write_source(w, s, ANNEX_PREFIX, &(kv_leadership){.leader = -1, .last_leader = -1});
	for (size_t i = 0; i < s->n; i++) {
		const kv_store_part *p = &s->parts[i];
		kv_pack_begin(w, KV_REC_MEMBER_ANNEX);
		write_label(w, p->cfg.label);
		kv_pack_u64(w, (uint64_t)p->lists);
		kv_pack_f64(w, p->lists_at);
		kv_pack_end(w);
	}
	kv_pack_begin(w, KV_REC_SOURCE_END);
	kv_pack_end(w);
}

static void write_store(kv_pack_w *w, const mkv_store *s)
{
	write_source(w, s, "", &s->leadership);
	kv_fields f = {w, NULL};
	for (size_t i = 0; i < s->n; i++) {
		const kv_store_part *p = &s->parts[i];
		kv_member_carry m = {.dialect = p->dialect,
				     .have_status = p->master.have_status,
				     .status = p->master.status,
				     .last_sequence = p->master.last_sequence,
				     .loss = p->master.loss};
		kv_stream_carry_get(p->stream, &m.stream);
		kv_pack_begin(w, KV_REC_MEMBER);
		write_label(w, p->cfg.label);
		kv_fields_member(&f, &m);
		kv_pack_end(w);
	}
	kv_state_write(s->state, w);
	kv_pack_begin(w, KV_REC_SOURCE_END);
	kv_pack_end(w);
	if (has_annex(s))
		write_annex(w, s);
}

enum mkv_err mkv_handover_write(mkv_store *const *stores, size_t n, int64_t taken_ms,
				int (*sink)(void *arg, const void *p, size_t n), void *arg)
{
	struct sink k = {sink, arg};
	kv_pack_w w;
	if (kv_pack_w_init(&w, sink_of, &k) != MKV_OK)
		return MKV_ENOMEM;
	kv_pack_begin(&w, KV_REC_HEADER);
	kv_pack_bytes(&w, magic, sizeof(magic) - 1);
	kv_pack_u64(&w, MKV_HANDOVER_VERSION);
	kv_pack_i64(&w, taken_ms);
	size_t sources = n; /* an annex counts as a source: an older reader skips it as one */
	for (size_t i = 0; i < n; i++)
		sources += has_annex(stores[i]);
	kv_pack_u64(&w, sources);
	kv_pack_end(&w);
	for (size_t i = 0; i < n; i++)
		write_store(&w, stores[i]);
	enum mkv_err rc = kv_pack_finish(&w);
	kv_pack_w_free(&w);
	return rc;
}

/* --- reading --- */

typedef struct candidate {
	bool present;                 /* the peer watched a source of this name */
	enum mkv_boot_result refused; /* MKV_BOOT_TAKEN: nothing of it refused */
	bool whole;                   /* its end record came */
	kv_leadership lead;
	kv_member_carry *members;
	size_t n_members;
	kv_state *state;
} candidate;

struct mkv_handover {
	mkv_store *const *stores;
	size_t n;
	kv_pack_in in;
	bool header;
	int64_t taken_ms;
	uint64_t sources_left;
	candidate *c;
	long cur;   /* the store whose source is being read; -1 none */
	long annex; /* the store whose annex is being read; -1 none */
	bool skip;  /* a source nobody here takes: its records until its end */
	kv_state_load load;
	bool loading;
};

static enum mkv_boot_result of_pack(enum kv_pack_error e)
{
	switch (e) {
	case KV_PACK_OK:
		return MKV_BOOT_TAKEN;
	case KV_PACK_TOO_LARGE:
		return MKV_BOOT_TOO_LARGE;
	case KV_PACK_CHECKSUM:
		return MKV_BOOT_CHECKSUM;
	case KV_PACK_TRUNCATED:
		return MKV_BOOT_TRUNCATED;
	case KV_PACK_NOMEM:
		return MKV_BOOT_OUT_OF_MEMORY;
	case KV_PACK_VERSION:
		return MKV_BOOT_VERSION;
	case KV_PACK_REFUSED: /* the record callback's own: never reaches here */
	case KV_PACK_MALFORMED:
		break;
	}
	return MKV_BOOT_MALFORMED;
}

static bool label_is(mkv_str got, const char *want)
{
	size_t n = want ? strlen(want) : 0;
	return got.len == n && (n == 0 || memcmp(got.ptr, want, n) == 0);
}

static enum kv_pack_error read_header(mkv_handover *h, kv_pack_r *r)
{
	mkv_str m = kv_unpack_bytes(r, 64);
	if (r->bad || m.len != sizeof(magic) - 1 || memcmp(m.ptr, magic, m.len) != 0)
		return KV_PACK_MALFORMED;
	if (kv_unpack_u64(r) != MKV_HANDOVER_VERSION)
		return KV_PACK_VERSION;
	h->taken_ms = kv_unpack_i64(r);
	h->sources_left = kv_unpack_max(r, 1u << 16);
	if (!kv_unpack_done(r))
		return KV_PACK_MALFORMED;
	h->header = true;
	return KV_PACK_OK;
}

static enum kv_pack_error read_source(mkv_handover *h, kv_pack_r *r)
{
	if (!h->sources_left || h->cur >= 0 || h->skip)
		return KV_PACK_MALFORMED;
	h->sources_left--;
	mkv_str name = kv_unpack_bytes(r, MAX_LABEL);
	bool ha = kv_unpack_bool(r);
	uint64_t n_members = kv_unpack_max(r, 1u << 12);
	bool groups = kv_unpack_bool(r);
	kv_leadership lead = {0};
	kv_fields f = {NULL, r};
	kv_fields_leadership(&f, &lead);
	if (!kv_unpack_done(r) || lead.leader >= (int)n_members || lead.last_leader >= (int)n_members)
		return KV_PACK_MALFORMED;
	size_t np = sizeof(ANNEX_PREFIX) - 1;
	if (name.len >= np && !memcmp(name.ptr, ANNEX_PREFIX, np)) {
		/* the annex of a source read whole before it, else nothing to us */
		mkv_str of = {name.ptr + np, (uint32_t)(name.len - np)};
		for (size_t i = 0; i < h->n; i++)
			if (label_is(of, h->stores[i]->cfg.name) && h->c[i].whole && n_members == h->stores[i]->n) {
				h->annex = (long)i;
				h->c[i].n_members = 0; /* counts the annex's members now */
				return KV_PACK_OK;
			}
		h->skip = true;
		return KV_PACK_OK;
	}
	for (size_t i = 0; i < h->n; i++) {
		const mkv_store *s = h->stores[i];
		if (!label_is(name, s->cfg.name))
			continue;
		candidate *c = &h->c[i];
		if (c->present)
			return KV_PACK_MALFORMED; /* a source twice */
		c->present = true;
		if (ha != s->cfg.ha || n_members != s->n || groups != (s->cfg.key_groups != NULL)) {
			c->refused = MKV_BOOT_MISMATCH;
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

static enum kv_pack_error read_member(mkv_handover *h, kv_pack_r *r)
{
	candidate *c = &h->c[h->cur];
	const mkv_store *s = h->stores[h->cur];
	if (c->n_members == s->n || c->state)
		return KV_PACK_MALFORMED;
	mkv_str label = kv_unpack_bytes(r, MAX_LABEL);
	kv_member_carry *m = &c->members[c->n_members];
	kv_fields f = {NULL, r};
	kv_fields_member(&f, m);
	if (!kv_unpack_done(r))
		return KV_PACK_MALFORMED;
	const kv_store_part *p = &s->parts[c->n_members++];
	/* another master, or a dialect this exporter is told to read otherwise */
	if (!label_is(label, p->cfg.label) ||
	    (p->cfg.dialect != MKV_DIALECT_AUTO && m->dialect.decided && m->dialect.dialect != p->cfg.dialect))
		c->refused = MKV_BOOT_MISMATCH;
	return KV_PACK_OK;
}

/* A member's annex: its fields in order, any after them (a later
 * version's) ignored.  A member of another label is left as it was. */
static enum kv_pack_error read_member_annex(mkv_handover *h, kv_pack_r *r)
{
	candidate *c = &h->c[h->annex];
	const mkv_store *s = h->stores[h->annex];
	if (c->n_members == s->n)
		return KV_PACK_MALFORMED;
	mkv_str label = kv_unpack_bytes(r, MAX_LABEL);
	uint64_t lists = kv_unpack_max(r, KV_LISTS_DEFAULT_ONLY);
	double at = kv_unpack_f64(r);
	if (r->bad)
		return KV_PACK_MALFORMED;
	kv_member_carry *m = &c->members[c->n_members];
	if (label_is(label, s->parts[c->n_members++].cfg.label)) {
		m->lists = (enum kv_lists)lists;
		m->lists_at = at;
	}
	return KV_PACK_OK;
}

static enum kv_pack_error on_annex(mkv_handover *h, unsigned type, kv_pack_r *r)
{
	if (type == KV_REC_MEMBER_ANNEX)
		return read_member_annex(h, r);
	if (type == KV_REC_SOURCE_END) {
		if (h->c[h->annex].n_members != h->stores[h->annex]->n)
			return KV_PACK_MALFORMED;
		h->annex = -1;
		return KV_PACK_OK;
	}
	/* a later version's record: skipped, as an older reader skips the annex */
	return type == KV_REC_HEADER || type == KV_REC_SOURCE ? KV_PACK_MALFORMED : KV_PACK_OK;
}

/* The source's records are over: its state is whole, or refused. */
static enum kv_pack_error end_source(mkv_handover *h)
{
	size_t cur = (size_t)h->cur;
	candidate *c = &h->c[cur];
	enum kv_pack_error rc = kv_state_load_end(&h->load, &c->state);
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

static enum kv_pack_error on_record(void *arg, unsigned type, kv_pack_r *r)
{
	mkv_handover *h = arg;
	if (!h->header)
		return type == KV_REC_HEADER ? read_header(h, r) : KV_PACK_MALFORMED;
	if (h->annex >= 0)
		return on_annex(h, type, r);
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
	enum kv_pack_error rc = kv_state_load_record(&h->load, type, r);
	if (rc == KV_PACK_REFUSED) { /* beyond this exporter's limits: this source only */
		c->refused = MKV_BOOT_LIMIT;
		kv_state_load_free(&h->load);
		h->loading = false;
		h->cur = -1;
		h->skip = true;
		return KV_PACK_OK;
	}
	return rc;
}

mkv_handover *mkv_handover_new(mkv_store *const *stores, size_t n, uint64_t max_bytes)
{
	mkv_handover *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->stores = stores;
	h->n = n;
	h->cur = -1;
	h->annex = -1;
	if (!(h->c = calloc(n ? n : 1, sizeof(*h->c))) || kv_pack_in_init(&h->in, max_bytes, on_record, h) != MKV_OK) {
		mkv_handover_free(h);
		return NULL;
	}
	return h;
}

void mkv_handover_free(mkv_handover *h)
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

enum mkv_boot_result mkv_handover_feed(mkv_handover *h, const void *p, size_t n)
{
	return of_pack(kv_pack_in_feed(&h->in, p, n));
}

enum mkv_boot_result mkv_handover_end(mkv_handover *h)
{
	enum kv_pack_error e = kv_pack_in_end(&h->in);
	if (e == KV_PACK_OK && (h->sources_left || h->cur >= 0 || h->annex >= 0 || h->skip))
		e = KV_PACK_MALFORMED; /* whole and checksummed, yet not every source came */
	return of_pack(e);
}

int64_t mkv_handover_taken_ms(const mkv_handover *h)
{
	return h->taken_ms;
}

enum mkv_boot_result mkv_handover_take(mkv_handover *h, size_t i)
{
	mkv_store *s = h->stores[i];
	candidate *c = &h->c[i];
	enum mkv_boot_result r = !c->present                    ? MKV_BOOT_ABSENT
				 : c->refused != MKV_BOOT_TAKEN ? c->refused
				 : !c->whole                    ? MKV_BOOT_MALFORMED
								: MKV_BOOT_TAKEN;
	if (r == MKV_BOOT_TAKEN) {
		kv_state *old = s->state;
		s->state = c->state;
		c->state = NULL;
		kv_state_set_residency(s->state, s->cfg.residency);
		kv_state_set_ha(s->state, s->cfg.ha);
		for (size_t k = 0; k < s->n; k++) {
			kv_store_part *p = &s->parts[k];
			const kv_member_carry *m = &c->members[k];
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
			p->lists = m->lists; /* unknown without the annex (an older peer's) */
			p->lists_at = m->lists_at;
		}
		s->leadership = c->lead;
		kv_state_free(old);
	}
	mkv_store_boot_note(s, r);
	return r;
}
