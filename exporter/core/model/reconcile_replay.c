/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include <mooncake_kv/buf.h>

#include "kv_array.h"
#include "kv_reconcile_replay.h"

void kv_recon_log_init(kv_recon_log *l, size_t max)
{
	memset(l, 0, sizeof(*l));
	l->max = max;
}

enum mkv_err kv_recon_log_add(kv_recon_log *l, uint64_t hash, unsigned type, unsigned medium, unsigned group)
{
	if (l->overflow)
		return MKV_ELIMIT;
	if (l->n == l->cap) {
		kv_recon_event *p = l->cap < l->max ? kv_array_grow(l->ev, &l->cap, sizeof(*p), 1024, l->max) : NULL;
		if (!p) {
			l->overflow = true;
			return l->cap < l->max ? MKV_ENOMEM : MKV_ELIMIT;
		}
		l->ev = p;
	}
	l->ev[l->n++] = (kv_recon_event){hash, (uint8_t)type, (uint8_t)medium, (uint16_t)group};
	return MKV_OK;
}

void kv_recon_log_free(kv_recon_log *l)
{
	free(l->ev);
	kv_recon_log_init(l, l->max);
}

/* The state's rule for one object: placement counts follow its media, in
 * the tenant's figures and its group's. */
static enum mkv_err set_media(kv_recon_table *t, uint64_t hash, unsigned add, unsigned del, unsigned group,
			      int64_t birth)
{
	kv_group_counts *g = kv_group_vec_at(&t->groups, group);
	unsigned before;
	if (!g)
		return MKV_ENOMEM;
	enum mkv_err rc = kv_objtable_update(&t->objects, hash, add, del, true, birth, &before, NULL);
	if (rc != MKV_OK)
		return rc;
	unsigned after = (before | add) & ~del;
	if (before)
		t->placement[mkv_placement_of(before)]--;
	if (after)
		t->placement[mkv_placement_of(after)]++;
	kv_group_move(g, before, after);
	return MKV_OK;
}

enum mkv_err kv_recon_put(kv_recon_table *t, uint64_t hash, unsigned media, unsigned group, int64_t birth)
{
	media &= MKV_MEDIUM_CPU | MKV_MEDIUM_DISK;
	return set_media(t, hash, media, (MKV_MEDIUM_CPU | MKV_MEDIUM_DISK) & ~media, group, birth);
}

enum mkv_err kv_recon_replay(kv_recon_table *t, const kv_recon_event *ev, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		enum mkv_err rc = MKV_OK;
		switch (ev[i].type) {
		case MKV_EV_STORED:
			rc = set_media(t, ev[i].hash, ev[i].medium, 0, ev[i].group, KV_NO_BIRTH);
			break;
		case MKV_EV_REMOVED:
			rc = set_media(t, ev[i].hash, 0, ev[i].medium, ev[i].group, KV_NO_BIRTH);
			break;
		case MKV_EV_CLEARED: {
			bool births = t->objects.with_births;
			kv_objtable_clear(&t->objects);
			kv_objtable_births(&t->objects, births); /* an empty table: cannot fail */
			memset(t->placement, 0, sizeof(t->placement));
			kv_group_vec_empty(&t->groups);
			break;
		}
		}
		if (rc != MKV_OK)
			return rc;
	}
	return MKV_OK;
}

void kv_recon_table_free(kv_recon_table *t)
{
	kv_objtable_clear(&t->objects);
	memset(t->placement, 0, sizeof(t->placement));
	kv_group_vec_free(&t->groups);
}
