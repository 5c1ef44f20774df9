/* SPDX-License-Identifier: Apache-2.0 */
/* Rendered metric-major: each family once, with its HELP and TYPE, then
 * its samples for every entity of its scope, as the text format requires.
 * The families are described in families/ (kv_family.h); this file walks
 * them and writes the bytes. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kv_family.h"
#include "kv_render.h"
#include "kv_utf8.h"

typedef struct kv_buf B;

void kv_render_label_value(B *b, const char *s, size_t n, bool sanitize)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t run = 0; /* start of the bytes not yet copied */
	for (size_t i = 0; i < n;) {
		unsigned char c = p[i];
		const char *esc = c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : NULL;
		size_t l = 1;
		if (!esc && sanitize && (l = kv_utf8_seq_len(p + i, n - i)) == 0)
			esc = "\xef\xbf\xbd", l = 1;
		if (esc) {
			kv_buf_add(b, s + run, i - run);
			kv_buf_adds(b, esc);
			run = i + l;
		}
		i += l;
	}
	kv_buf_add(b, s + run, n - run);
}

/* Where one family's samples go: the family, and the entity they describe. */
struct kv_emit {
	B *b;
	const kv_family *f;
	kv_at at; /* the entity being described */
};

static void label(B *b, bool *first, const char *name, const char *value, size_t n, bool sanitize)
{
	kv_buf_adds(b, *first ? "{" : ",");
	*first = false;
	kv_buf_adds(b, name);
	kv_buf_adds(b, "=\"");
	kv_render_label_value(b, value, n, sanitize);
	kv_buf_addc(b, '"');
}

/* The scope's labels, in the order every family gives them. */
static void scope_labels(B *b, bool *first, const kv_family *f, const kv_at *a)
{
	const kv_source_snap *s = a->s;
	if (f->scope == KV_SCOPE_EXPORTER)
		return;
	label(b, first, "source", s->name, strlen(s->name), true);
	switch (f->scope) {
	case KV_SCOPE_MEMBER:
		if (a->m->label && (s->ha || (f->flags & KV_FAM_MEMBER_ALWAYS)))
			label(b, first, "member", a->m->label, strlen(a->m->label), true);
		break;
	case KV_SCOPE_TENANT:
	case KV_SCOPE_GROUP:
		label(b, first, "backend_id", a->t->backend_id, a->t->backend_len, a->t->labels_unclean);
		label(b, first, "tenant_id", a->t->tenant_id, a->t->tenant_len, a->t->labels_unclean);
		if (f->scope == KV_SCOPE_GROUP) {
			kv_str gn = a->g->id < s->n_group_names ? s->group_names[a->g->id] : (kv_str){"", 0};
			label(b, first, "key_group", gn.ptr, gn.len, true); /* from the keys: sanitised */
		}
		break;
	case KV_SCOPE_QUOTA:
		label(b, first, "tenant_id", s->quotas.names.data + a->q->name_at, a->q->name_len, true);
		break;
	default:
		break;
	}
}

static void sample_open(kv_emit *e, const char *suffix, const kv_label *extra, size_t n)
{
	B *b = e->b;
	bool first = true;
	kv_buf_adds(b, e->f->name);
	if (suffix)
		kv_buf_adds(b, suffix);
	scope_labels(b, &first, e->f, &e->at);
	for (size_t i = 0; i < n; i++)
		if (extra[i].name)
			label(b, &first, extra[i].name, extra[i].value, strlen(extra[i].value), true);
	kv_buf_adds(b, first ? " " : "} ");
}

void kv_sample_u64(kv_emit *e, kv_label extra, uint64_t v)
{
	sample_open(e, NULL, &extra, 1);
	kv_buf_add_u64(e->b, v);
	kv_buf_addc(e->b, '\n');
}

void kv_sample_double(kv_emit *e, kv_label extra, double v)
{
	sample_open(e, NULL, &extra, 1);
	kv_buf_add_double(e->b, v);
	kv_buf_addc(e->b, '\n');
}

void kv_sample_labels(kv_emit *e, const kv_label *extra, size_t n, double v)
{
	sample_open(e, NULL, extra, n);
	kv_buf_add_double(e->b, v);
	kv_buf_addc(e->b, '\n');
}

static void bucket(kv_emit *e, const char *le, uint64_t cumulative)
{
	kv_label l = {"le", le};
	sample_open(e, "_bucket", &l, 1);
	kv_buf_add_u64(e->b, cumulative);
	kv_buf_addc(e->b, '\n');
}

static void sum_count(kv_emit *e, double sum, uint64_t count)
{
	sample_open(e, "_sum", NULL, 0);
	kv_buf_add_double(e->b, sum);
	kv_buf_addc(e->b, '\n');
	sample_open(e, "_count", NULL, 0);
	kv_buf_add_u64(e->b, count);
	kv_buf_addc(e->b, '\n');
}

void kv_sample_hist(kv_emit *e, const kv_hist *h)
{
	uint64_t cum = 0;
	char le[32];
	for (size_t k = 0; k < h->n_bounds; k++) {
		snprintf(le, sizeof(le), "%g", h->bounds[k]);
		bucket(e, le, cum += h->counts[k]);
	}
	bucket(e, "+Inf", cum + h->counts[h->n_bounds]);
	sum_count(e, h->sum, h->count);
}

void kv_sample_life(kv_emit *e, const kv_life_hist *h)
{
	uint64_t cum = 0;
	char le[32];
	for (size_t k = 0; k < KV_LIFE_BUCKETS; k++) {
		snprintf(le, sizeof(le), "%g", kv_life_bounds_ms[k] / 1000.0);
		bucket(e, le, cum += h->counts[k]);
	}
	bucket(e, "+Inf", cum + h->counts[KV_LIFE_BUCKETS]);
	/* whole milliseconds: the division is the only rounding */
	sum_count(e, (double)h->sum_ms / 1000.0, h->count);
}

void kv_sample_poll_errors(kv_emit *e, const uint64_t n[KV_POLL__COUNT])
{
	for (int r = KV_POLL_OK + 1; r < KV_POLL__COUNT; r++)
		kv_sample_u64(e, (kv_label){"reason", kv_poll_error_name(r)}, n[r]);
}

KV_ANY_SOURCE(extern, kv_any_polled, s->polled)
KV_ANY_SOURCE(extern, kv_any_residency, s->residency)
KV_ANY_SOURCE(extern, kv_any_groups, s->has_groups)

/* Every tenant of the source, or every key group of every tenant: a
 * dropped source describes no tenant. */
static void walk_tenants(kv_emit *e, const kv_source_snap *s)
{
	kv_at *a = &e->at;
	for (size_t i = 0; !s->leadership.dropped && i < s->n_tenants; i++) {
		a->t = &s->tenants[i];
		if (e->f->scope == KV_SCOPE_TENANT) {
			e->f->samples(e, a);
			continue;
		}
		for (size_t g = 0; g < a->t->n_groups; g++) {
			a->g = &s->group_pool[a->t->group_at + g];
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
		f->samples(e, a);
		return;
	}
	for (size_t si = 0; si < x->n_sources; si++) {
		const kv_source_snap *s = a->s = &x->sources[si];
		switch (f->scope) {
		case KV_SCOPE_SOURCE:
			f->samples(e, a);
			break;
		case KV_SCOPE_MEMBER:
			for (size_t i = 0; i < s->n_members; i++) {
				a->m = &s->members[i];
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
				f->samples(e, a);
			}
			break;
		default:
			break;
		}
	}
}

static const kv_family_table *const tables[] = {
	&kv_stream_families,    &kv_tenant_families,    &kv_key_group_families,
	&kv_residency_families, &kv_master_families,    &kv_leadership_families,
	&kv_quota_families,     &kv_reconcile_families, &kv_self_families,
};
#define N_TABLES (sizeof(tables) / sizeof(tables[0]))

bool kv_family_mirrored(const char *name, size_t len)
{
	for (size_t t = 0; t < N_TABLES; t++)
		for (size_t i = 0; i < tables[t]->n; i++) {
			const kv_family *f = &tables[t]->v[i];
			if ((f->flags & KV_FAM_MIRRORED) && strlen(f->name) == len && !memcmp(f->name, name, len))
				return true;
		}
	return false;
}

int kv_render(B *out, const kv_exporter_snap *x)
{
	for (size_t t = 0; t < N_TABLES; t++)
		for (size_t i = 0; i < tables[t]->n; i++) {
			const kv_family *f = &tables[t]->v[i];
			if (f->shown && !f->shown(x))
				continue;
			kv_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, f->type);
			kv_emit e = {.b = out, .f = f};
			walk(&e, x);
		}
	return kv_buf_ok(out) ? KV_OK : KV_ENOMEM;
}
