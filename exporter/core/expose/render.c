/* SPDX-License-Identifier: Apache-2.0 */
/* Rendered metric-major: each family once, with its HELP and TYPE, then
 * its samples for every entity of its scope, as the text format requires.
 * The families are described in families/ (kv_family.h); this file walks
 * them and writes the bytes, in the format the scrape asked for and
 * without the families an operator left out, each decided per family from
 * its row (exposition.c says what the format makes of a row). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_emit.h"
#include "kv_family.h"
#include "kv_fmt.h"
#include "kv_render.h"

typedef struct mkv_buf B;

static char *put(char *w, const char *s, size_t n)
{
	if (n) /* s may be NULL then (no suffix) */
		memcpy(w, s, n);
	return w + n;
}

#define PUTS(w, lit) put(w, lit, sizeof(lit) - 1)

static void cache_free(kv_render_cache *c)
{
	mkv_buf_free(&c->text);
	free(c->tenant);
	free(c->group);
	free(c->tenant_base);
	free(c->group_base);
}

enum mkv_err kv_render_cache_alloc(kv_render_cache *c, const kv_exporter_snap *x)
{
	size_t tenants = 0, groups = 0;
	for (size_t si = 0; si < x->n_sources; si++) {
		tenants += x->sources[si].n_tenants;
		groups += x->sources[si].n_group_names;
	}
	size_t n = x->n_sources ? x->n_sources : 1;
	c->tenant_base = malloc(n * sizeof(size_t));
	c->group_base = malloc(n * sizeof(size_t));
	c->tenant = malloc((tenants ? tenants : 1) * sizeof(kv_text));
	c->group = malloc((groups ? groups : 1) * sizeof(kv_text));
	if (!c->tenant_base || !c->group_base || !c->tenant || !c->group)
		return MKV_ENOMEM;
	return MKV_OK;
}

static enum mkv_err cache_build(kv_render_cache *c, const kv_exporter_snap *x, const mkv_expo_opts *o)
{
	*c = (kv_render_cache){0};
	if (o && o->created > 0)
		c->created_len = (size_t)(kv_fmt_double(c->created, o->created) - c->created);
	for (size_t k = 0; k <= KV_LIFE_BUCKETS; k++) {
		char le[16] = "+Inf";
		if (k < KV_LIFE_BUCKETS)
			snprintf(le, sizeof(le), "%g", kv_life_bounds_ms[k] / 1000.0);
		c->life_le_len[k] = (size_t)snprintf(c->life_le[k], sizeof(c->life_le[k]), ",le=\"%s\"} ", le);
	}
	if (kv_render_cache_alloc(c, x) != MKV_OK)
		return MKV_ENOMEM;
	size_t ti = 0, gi = 0;
	for (size_t si = 0; si < x->n_sources; si++) {
		const kv_source_snap *s = &x->sources[si];
		c->tenant_base[si] = ti;
		c->group_base[si] = gi;
		/* every tenant's text opens with the source's: escaped once */
		size_t source_len = strlen(s->name);
		char *source = malloc(KV_ESCAPED_MAX(source_len) + 1), *end;
		if (!source)
			return MKV_ENOMEM;
		end = kv_label_escape(source, s->name, source_len, true);
		source_len = (size_t)(end - source);
		for (size_t i = 0; i < s->n_tenants; i++, ti++) {
			const kv_tenant_snap *t = &s->tenants[i];
			bool unclean = t->labels_unclean;
			char *w0 = mkv_buf_room(&c->text, 40 + source_len + KV_ESCAPED_MAX(t->backend_len) +
								  KV_ESCAPED_MAX(t->tenant_len)),
			     *w = w0;
			if (!w)
				break;
			w = PUTS(w, "source=\"");
			w = put(w, source, source_len);
			w = PUTS(w, "\",backend_id=\"");
			w = kv_label_escape(w, t->backend_id, t->backend_len, unclean);
			w = PUTS(w, "\",tenant_id=\"");
			w = kv_label_escape(w, t->tenant_id, t->tenant_len, unclean);
			*w++ = '"';
			c->tenant[ti] = (kv_text){c->text.len, (size_t)(w - w0)};
			mkv_buf_used(&c->text, (size_t)(w - w0));
		}
		free(source);
		for (size_t g = 0; g < s->n_group_names; g++, gi++) {
			c->group[gi].at = c->text.len;
			/* from the keys: sanitised */
			kv_render_label_value(&c->text, s->group_names[g].ptr, s->group_names[g].len, true);
			c->group[gi].len = c->text.len - c->group[gi].at;
		}
	}
	return mkv_buf_ok(&c->text) ? MKV_OK : MKV_ENOMEM;
}

static char *label(char *w, bool *first, const char *name, size_t name_len, const char *value, size_t n, bool sanitize)
{
	*w++ = *first ? '{' : ',';
	*first = false;
	w = put(w, name, name_len);
	w = PUTS(w, "=\"");
	w = kv_label_escape(w, value, n, sanitize);
	*w++ = '"';
	return w;
}

/* A label of the scope into the scratch text: ,name="value" (the leading
 * comma dropped when the scope is taken), as label() writes it. */
static void scratch_label(B *b, const char *name, const char *value, size_t n)
{
	size_t name_len = strlen(name);
	char *w0 = mkv_buf_room(b, 4 + name_len + KV_ESCAPED_MAX(n));
	bool first = false;
	if (w0)
		mkv_buf_used(b, (size_t)(label(w0, &first, name, name_len, value, n, true) - w0));
}

/* The entity's scope labels, in the order every family gives them: a
 * tenant's are the render's cached text; the rest are written here once
 * for the entity's samples.  Failing to write them (no memory) fails the
 * render. */
static void enter(kv_emit *e)
{
	const kv_family *f = e->f;
	const kv_at *a = &e->at;
	const kv_source_snap *s = a->s;
	const kv_render_cache *c = e->c;
	e->scope = NULL;
	e->scope_len = 0;
	if (e->proto) {
		kv_proto_enter(e);
		return;
	}
	if (f->scope == KV_SCOPE_EXPORTER)
		return;
	if (f->scope == KV_SCOPE_TENANT) {
		kv_text t = c->tenant[c->tenant_base[e->si] + e->ti];
		e->scope = c->text.data + t.at;
		e->scope_len = t.len;
		return;
	}
	B *b = e->scratch;
	mkv_buf_reset(b);
	if (f->scope == KV_SCOPE_GROUP) {
		kv_text t = c->tenant[c->tenant_base[e->si] + e->ti];
		mkv_buf_addc(b, ',');
		mkv_buf_add(b, c->text.data + t.at, t.len);
		mkv_buf_adds(b, ",key_group=\"");
		if (a->g->id < s->n_group_names) {
			kv_text g = c->group[c->group_base[e->si] + a->g->id];
			mkv_buf_add(b, c->text.data + g.at, g.len);
		}
		mkv_buf_addc(b, '"');
	} else {
		scratch_label(b, "source", s->name, strlen(s->name));
		if (f->scope == KV_SCOPE_MEMBER && a->m->label && (s->ha || (f->flags & KV_FAM_MEMBER_ALWAYS)))
			scratch_label(b, "member", a->m->label, strlen(a->m->label));
		if (f->scope == KV_SCOPE_QUOTA)
			scratch_label(b, "tenant_id", s->quotas.names.data + a->q->name_at, a->q->name_len);
	}
	if (!mkv_buf_ok(b)) {
		e->b->failed = true; /* a sample without its scope would be wrong */
		return;
	}
	e->scope = b->data + 1;
	e->scope_len = b->len - 1;
}

static char *scope_labels(char *w, bool *first, const kv_emit *e)
{
	if (!e->scope_len)
		return w;
	*w++ = '{';
	*first = false;
	return put(w, e->scope, e->scope_len);
}

/* A sample's value, of one of the kinds the families give. */
typedef struct kv_value {
	enum { V_U64, V_DOUBLE, V_MS } kind;
	union {
		uint64_t u;
		double d;
		int64_t ms;
	};
} kv_value;

/* A sample's head at w: the family's name and suffix, then the scope's
 * labels (opening the braces when it has any).  At most head_bound(). */
static size_t head_bound(const kv_emit *e, size_t suffix_len)
{
	return e->name_len + suffix_len + 1 + e->scope_len;
}

static char *head(char *w, const kv_emit *e, const char *suffix, size_t suffix_len, bool *first)
{
	*first = true;
	w = put(w, e->f->name, e->name_len);
	w = put(w, suffix, suffix_len);
	return scope_labels(w, first, e);
}

static char *value(char *w, kv_value v)
{
	return v.kind == V_U64 ? kv_fmt_u64(w, v.u) : v.kind == V_MS ? kv_fmt_ms_as_s(w, v.ms) : kv_fmt_double(w, v.d);
}

/* OpenMetrics: the _created sample that follows a sample of a family with
 * them (e->created), with its labels (the braces and what they hold, or
 * nothing): the family's name, _created, the labels, the exporter's start.
 * At most created_bound(). */
static size_t created_bound(const kv_emit *e, size_t labels_len)
{
	return e->family_len + 8 + labels_len + 2 + e->c->created_len;
}

static char *created(char *w, const kv_emit *e, const char *labels, size_t labels_len)
{
	w = put(w, e->f->name, e->family_len);
	w = PUTS(w, "_created");
	w = put(w, labels, labels_len);
	*w++ = ' ';
	w = put(w, e->c->created, e->c->created_len);
	*w++ = '\n';
	return w;
}

/* A tenant's counter starts when the tenant is first seen, not with the
 * exporter: a sample with a tenant_id label has no _created. */
static bool tenant_label(const kv_label *l)
{
	return l->name && !strcmp(l->name, "tenant_id");
}

/* One sample: its head, the extra labels, the value; written into room
 * made once. */
static void sample(kv_emit *e, const char *suffix, const kv_label *extra, size_t n, kv_value v)
{
	/* the extra labels' lengths, measured once (kv_family.h: at most KV_LABELS_MAX) */
	size_t name_len[KV_LABELS_MAX], value_len[KV_LABELS_MAX];
	if (n > KV_LABELS_MAX)
		n = KV_LABELS_MAX;
	size_t suffix_len = suffix ? strlen(suffix) : 0;
	size_t need = head_bound(e, suffix_len) + 2 + KV_FMT_MAX + 2;
	for (size_t i = 0; i < n; i++) {
		name_len[i] = extra[i].name ? strlen(extra[i].name) : 0;
		value_len[i] = extra[i].name ? strlen(extra[i].value) : 0;
		need += name_len[i] + 4 + KV_ESCAPED_MAX(value_len[i]);
	}
	bool created_too = e->created;
	for (size_t i = 0; i < n; i++)
		created_too = created_too && !tenant_label(&extra[i]);
	char *w0 = mkv_buf_room(e->b, created_too ? need + created_bound(e, need) : need), *w = w0;
	if (!w)
		return;
	bool first;
	w = head(w, e, suffix, suffix_len, &first);
	for (size_t i = 0; i < n; i++)
		if (extra[i].name)
			w = label(w, &first, extra[i].name, name_len[i], extra[i].value, value_len[i], true);
	if (!first)
		*w++ = '}';
	/* the labels: from the head's name and suffix to here */
	const char *labels = w0 + e->name_len + suffix_len;
	size_t labels_len = (size_t)(w - labels);
	*w++ = ' ';
	w = value(w, v);
	*w++ = '\n';
	if (created_too)
		w = created(w, e, labels, labels_len);
	mkv_buf_used(e->b, (size_t)(w - w0));
}

/* The label's text in the family's memo, escaped there the first time;
 * false when the memo has no room for it. */
static bool memo_get(kv_memo *m, kv_label l, const char **text, size_t *len)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].name == l.name && m->v[i].value == l.value) {
			*text = m->text + m->v[i].at;
			*len = m->v[i].len;
			return true;
		}
	size_t name_len = strlen(l.name), value_len = strlen(l.value);
	if (m->n == MEMO_MAX || 4 + name_len + KV_ESCAPED_MAX(value_len) > MEMO_TEXT - m->used)
		return false;
	char *w0 = m->text + m->used, *w = w0;
	bool first = false;
	w = label(w, &first, l.name, name_len, l.value, value_len, true);
	m->v[m->n++] = (struct kv_memo_word){l.name, l.value, m->used, (size_t)(w - w0)};
	m->used += (size_t)(w - w0);
	*text = w0;
	*len = (size_t)(w - w0);
	return true;
}

/* A sample with at most one extra label, a word of the program's: its
 * name, the entity's scope and the label's memo, the value. */
static void sample_one(kv_emit *e, kv_label l, kv_value v)
{
	const char *lt = NULL;
	size_t ll = 0;
	if (l.name && !memo_get(&e->memo, l, &lt, &ll)) {
		sample(e, NULL, &l, 1, v);
		return;
	}
	size_t need = e->name_len + e->scope_len + ll + 4 + KV_FMT_MAX;
	bool created_too = e->created && !tenant_label(&l);
	char *w0 = mkv_buf_room(e->b, created_too ? need + created_bound(e, need) : need), *w = w0;
	if (!w)
		return;
	w = put(w, e->f->name, e->name_len);
	const char *labels = w;
	if (e->scope_len || ll) {
		*w++ = '{';
		w = put(w, e->scope, e->scope_len);
		/* the memo's text opens with the comma that follows a scope */
		w = e->scope_len ? put(w, lt, ll) : put(w, lt + 1, ll - 1);
		*w++ = '}';
	}
	size_t labels_len = (size_t)(w - labels);
	*w++ = ' ';
	w = value(w, v);
	*w++ = '\n';
	if (created_too)
		w = created(w, e, labels, labels_len);
	mkv_buf_used(e->b, (size_t)(w - w0));
}

/* In the protobuf exposition every value is a double. */
#define PROTO(e, extra, v)                                                     \
	do {                                                                   \
		if ((e)->proto) {                                              \
			kv_proto_sample(e, &(extra), (extra).name != NULL, v); \
			return;                                                \
		}                                                              \
	} while (0)

void kv_sample_u64(kv_emit *e, kv_label extra, uint64_t v)
{
	PROTO(e, extra, (double)v);
	sample_one(e, extra, (kv_value){.kind = V_U64, .u = v});
}

void kv_sample_double(kv_emit *e, kv_label extra, double v)
{
	PROTO(e, extra, v);
	sample_one(e, extra, (kv_value){.kind = V_DOUBLE, .d = v});
}

void kv_sample_ms_as_s(kv_emit *e, kv_label extra, int64_t ms)
{
	PROTO(e, extra, (double)ms / 1000.0);
	sample_one(e, extra, (kv_value){.kind = V_MS, .ms = ms});
}

void kv_sample_labels(kv_emit *e, const kv_label *extra, size_t n, double v)
{
	if (e->proto) {
		kv_proto_sample(e, extra, n, v);
		return;
	}
	sample(e, NULL, extra, n, (kv_value){.kind = V_DOUBLE, .d = v});
}

static void bucket(kv_emit *e, const char *le, uint64_t cumulative)
{
	kv_label l = {"le", le};
	sample(e, "_bucket", &l, 1, (kv_value){.kind = V_U64, .u = cumulative});
}

static void count(kv_emit *e, uint64_t n)
{
	sample(e, "_count", NULL, 0, (kv_value){.kind = V_U64, .u = n});
}

void kv_sample_hist(kv_emit *e, const kv_hist *h)
{
	if (e->proto) {
		kv_proto_hist(e, h);
		return;
	}
	uint64_t cum = 0;
	char le[32];
	for (size_t k = 0; k < h->n_bounds; k++) {
		snprintf(le, sizeof(le), "%g", h->bounds[k]);
		bucket(e, le, cum += h->counts[k]);
	}
	bucket(e, "+Inf", cum + h->counts[h->n_bounds]);
	sample(e, "_sum", NULL, 0, (kv_value){.kind = V_DOUBLE, .d = h->sum});
	count(e, h->count);
}

/* A lifetime histogram is half of a tenant's samples: its bucket lines
 * share one head (name_bucket{ and the scope's labels), written once and
 * copied, and their le texts are the render's. */
void kv_sample_life(kv_emit *e, const kv_life_hist *h)
{
	if (e->proto) {
		kv_proto_life(e, h);
		return;
	}
	const kv_render_cache *c = e->c;
	size_t line_max = head_bound(e, 7) + 1 + 24 + KV_FMT_MAX + 1;
	char *w0 = mkv_buf_room(e->b, (KV_LIFE_BUCKETS + 1) * line_max), *w = w0;
	if (!w)
		return;
	bool first;
	w = head(w, e, "_bucket", 7, &first);
	size_t head_len = (size_t)(w - w0);
	uint64_t cum = 0;
	for (size_t k = 0; k <= KV_LIFE_BUCKETS; k++) {
		if (k)
			w = put(w, w0, head_len);
		/* the scope's labels opened the braces; with none, le opens them */
		const char *le = c->life_le[k] + first;
		size_t le_len = c->life_le_len[k] - first;
		if (first)
			*w++ = '{';
		w = put(w, le, le_len);
		w = kv_fmt_u64(w, cum += h->counts[k]);
		*w++ = '\n';
	}
	mkv_buf_used(e->b, (size_t)(w - w0));
	/* whole milliseconds: the division is the only rounding */
	sample(e, "_sum", NULL, 0,
	       h->sum_ms <= INT64_MAX ? (kv_value){.kind = V_MS, .ms = (int64_t)h->sum_ms}
				      : (kv_value){.kind = V_DOUBLE, .d = (double)h->sum_ms / 1000.0});
	count(e, h->count);
}

/* Every tenant of the source, or every key group of every tenant: a
 * dropped source describes no tenant. */
static void walk_tenants(kv_emit *e, const kv_source_snap *s)
{
	kv_at *a = &e->at;
	for (size_t i = 0; !s->leadership.dropped && i < s->n_tenants; i++) {
		a->t = &s->tenants[i];
		e->ti = i;
		if (e->f->scope == KV_SCOPE_TENANT) {
			enter(e);
			e->f->samples(e, a);
			continue;
		}
		for (size_t g = 0; g < a->t->n_groups; g++) {
			a->g = &s->group_pool[a->t->group_at + g];
			enter(e);
			e->f->samples(e, a);
		}
	}
}

/* Calls the family's accessor for every entity of its scope. */
static void walk(kv_emit *e, const kv_exporter_snap *x)
{
	const kv_family *f = e->f;
	kv_at *a = &e->at;
	a->x = x;
	if (f->scope == KV_SCOPE_EXPORTER) {
		enter(e);
		f->samples(e, a);
		return;
	}
	for (size_t si = 0; si < x->n_sources; si++) {
		const kv_source_snap *s = a->s = &x->sources[si];
		e->si = si;
		switch (f->scope) {
		case KV_SCOPE_SOURCE:
			enter(e);
			f->samples(e, a);
			break;
		case KV_SCOPE_MEMBER:
			for (size_t i = 0; i < s->n_members; i++) {
				a->m = &s->members[i];
				enter(e);
				f->samples(e, a);
			}
			break;
		case KV_SCOPE_TENANT:
		case KV_SCOPE_GROUP:
			walk_tenants(e, s);
			break;
		case KV_SCOPE_QUOTA:
			for (size_t i = 0; i < s->quotas.n; i++) {
				a->q = &s->quotas.v[i];
				enter(e);
				f->samples(e, a);
			}
			break;
		default:
			break;
		}
	}
}

enum mkv_err kv_render(B *out, const kv_exporter_snap *x, const mkv_expo_opts *o)
{
	bool pb = o && o->protobuf, om = o && o->openmetrics && !pb;
	kv_render_cache c = {0};
	mkv_buf scratch;
	mkv_buf_init(&scratch);
	if ((pb ? kv_proto_cache_build(&c, x) : cache_build(&c, x, o)) != MKV_OK) {
		cache_free(&c);
		return MKV_ENOMEM;
	}
	size_t k = 0; /* the family's number (kv_family.h) */
	for (size_t t = 0; t < kv_family_tables_n; t++)
		for (size_t i = 0; i < kv_family_tables[t]->n; i++, k++) {
			const kv_family *f = &kv_family_tables[t]->v[i];
			if (!kv_expo_serves(f, k, x, o))
				continue;
			kv_emit e = {.b = out,
				     .f = f,
				     .name_len = strlen(f->name),
				     .family_len = kv_expo_family_name_len(f, om),
				     .created = kv_expo_created(f, o),
				     .c = &c,
				     .at = {.all_series = o && o->all_series},
				     .scratch = &scratch,
				     .proto = pb};
			if (pb)
				kv_proto_family_begin(&e, x);
			else
				kv_expo_family_header(out, f, om);
			walk(&e, x);
			if (pb)
				kv_proto_family_end(&e);
		}
	if (om)
		mkv_buf_adds(out, "# EOF\n");
	mkv_buf_free(&scratch);
	cache_free(&c);
	return mkv_buf_ok(out) ? MKV_OK : MKV_ENOMEM;
}
