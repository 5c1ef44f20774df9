/* SPDX-License-Identifier: Apache-2.0 */
/* RemoveAll and the op log (kv_state.h; docs/design.md, "RemoveAll and the
 * op log"): what a tenant's cleared still expects.  Mooncake main with HA
 * and the op log publishes a RemoveAll's cleared at once; by the reading of
 * its source (00390e6e) the erased objects' removals never come, a key put
 * again gets its old entry's removed before its new stored, and only
 * partial removals come late.  But nothing in the stream tells a late
 * removal from a fresh one, and a late one after a new stored would leave
 * the tenant silently wrong: a removal that may be one turns it stale. */
#include <stdlib.h>

#include "kv_state_impl.h"

struct kv_cleared_window {
	kv_objtable pending; /* hash -> media whose removal may still come */
	bool unseen;         /* the tenant was not exact at a cleared: it may have held objects not in pending */
};

void kv_state_set_ha(kv_state *s, bool ha)
{
	s->ha = ha;
}

bool kv_state_tenant_waits(const kv_tenant *t)
{
	return t->window != NULL;
}

void kv_state_window_close(kv_tenant *t)
{
	if (!t->window)
		return;
	kv_objtable_clear(&t->window->pending);
	free(t->window);
	t->window = NULL;
}

void kv_state_window_unseen(kv_tenant *t)
{
	if (!t->window)
		t->window = calloc(1, sizeof(*t->window));
	if (t->window)
		t->window->unseen = true;
}

static void expect(uint64_t hash, unsigned media, int64_t birth, void *arg)
{
	(void)birth;
	kv_cleared_window *w = arg;
	/* out of memory: the object is not expected, so any key may be one */
	if (kv_objtable_update(&w->pending, hash, media, 0, true, KV_NO_BIRTH, NULL, NULL) != MKV_OK)
		w->unseen = true;
}

bool kv_state_window_cleared(kv_state *s, kv_tenant *t)
{
	if (!s->ha || (!t->stale && !kv_objtable_count(&t->objects) && !t->window))
		return true; /* exact and empty: nothing can come late */
	if (!t->window && !(t->window = calloc(1, sizeof(*t->window))))
		return false; /* out of memory: nothing watches for its late removals */
	/* what an earlier cleared still expects may still come: kept */
	t->window->unseen |= t->stale != 0;
	kv_objtable_each(&t->objects, expect, t->window);
	if (!kv_objtable_count(&t->window->pending) && !t->window->unseen)
		kv_state_window_close(t);
	return true;
}

bool kv_state_window_removed(kv_tenant *t, uint64_t hash, unsigned del, unsigned before)
{
	kv_cleared_window *w = t->window;
	unsigned pend = kv_objtable_get(&w->pending, hash) & del;
	if (pend) /* that removal came, late or not: not expected again */
		kv_objtable_update(&w->pending, hash, 0, pend, false, KV_NO_BIRTH, NULL, NULL);
	bool ambiguous = (before & del) && (pend || w->unseen);
	if (!w->unseen && !kv_objtable_count(&w->pending))
		kv_state_window_close(t);
	return ambiguous;
}
