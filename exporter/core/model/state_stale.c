/* SPDX-License-Identifier: Apache-2.0 */
/* Which tenants are exact and which stale, and why: the stale bits added
 * (a tenant's stale age and its births follow), the marks a judgement puts
 * on all tenants, one, or every exact one, and the counts of tenants that
 * turned stale or exact, by reason. */
#include <string.h>

#include "kv_state_impl.h"

/* Births are kept exactly while the tenant is exact (kv_state.h).  Out of
 * memory they stay off: nothing is observed, nothing is wrong. */
void kv_state_sync_births(const kv_state *s, kv_tenant *t)
{
	kv_objtable_births(&t->objects, s->residency && t->stale == 0);
}

/* Adds stale bits; the tenant's stale age starts when it stops being exact,
 * and its births are forgotten then: from there on a stored may be an
 * object coming back, and one held may have died and come back unseen. */
void kv_state_add_stale(kv_state *s, kv_tenant *t, unsigned bits)
{
	bool was_exact = !t->stale;
	t->stale |= bits;
	if (was_exact && bits) {
		t->stale_since_ms = s->now_ms;
		kv_state_sync_births(s, t);
		s->turned_stale[__builtin_ctz(bits)]++; /* the reason that did it */
	}
}

void kv_state_became_exact(kv_state *s, unsigned was_stale, kv_tenant *t, enum kv_exact_cause c)
{
	if (was_stale && !t->stale)
		s->turned_exact[c]++;
}

void kv_state_mark_stale(kv_state *s, enum kv_stale_reason why)
{
	s->born_exact = false;
	for (size_t i = 0; i < s->n_tenants; i++)
		kv_state_add_stale(s, s->tenants[i], why);
}

static bool tenant_id_is(const kv_tenant *t, mkv_str id)
{
	return t->tenant_len == id.len && memcmp(t->tenant_id, id.ptr, id.len) == 0;
}

size_t kv_state_mark_tenant_stale(kv_state *s, mkv_str tenant, enum kv_stale_reason why)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n_tenants; i++)
		if (tenant_id_is(s->tenants[i], tenant)) {
			n += !s->tenants[i]->stale;
			kv_state_add_stale(s, s->tenants[i], why);
		}
	return n;
}

size_t kv_state_mark_exact_stale(kv_state *s, enum kv_stale_reason why, mkv_str except)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n_tenants; i++) {
		kv_tenant *t = s->tenants[i];
		if (!t->stale && !(except.ptr && tenant_id_is(t, except))) {
			kv_state_add_stale(s, t, why);
			n++;
		}
	}
	return n;
}

bool kv_state_born_exact(const kv_state *s)
{
	return s->born_exact;
}

uint64_t kv_state_turned_stale(const kv_state *s, unsigned bit)
{
	return bit < KV_STALE__BITS ? s->turned_stale[bit] : 0;
}

uint64_t kv_state_turned_exact(const kv_state *s, enum kv_exact_cause c)
{
	return (unsigned)c < KV_EXACT__CAUSES ? s->turned_exact[c] : 0;
}

bool kv_state_all_exact(const kv_state *s)
{
	for (size_t i = 0; i < s->n_tenants; i++)
		if (s->tenants[i]->stale)
			return false;
	return s->n_tenants > 0;
}
