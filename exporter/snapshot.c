#include <stdlib.h>

#include "kv_snapshot.h"

int kv_snapshot_stream(kv_source_snap *snap, const kv_stream *st)
{
	snap->stats = *kv_stream_stats_of(st);
	snap->seq = *kv_stream_seq(st);
	return kv_snapshot_state(snap, kv_stream_state(st));
}

int kv_snapshot_state(kv_source_snap *snap, const kv_state *s)
{
	size_t n = kv_state_tenant_count(s);
	snap->tenants_overflow = kv_state_tenants_overflow(s);
	snap->objects_overflow = kv_state_objects_overflow(s);
	snap->unclean_labels = kv_state_unclean_labels(s);
	snap->table_bytes = kv_state_table_bytes(s);
	snap->n_tenants = 0;
	if (n > snap->cap_tenants) {
		kv_tenant_snap *p = realloc(snap->tenants, n * sizeof(*p));
		if (!p)
			return KV_ENOMEM;
		snap->tenants = p;
		snap->cap_tenants = n;
	}
	for (size_t i = 0; i < n; i++) {
		const kv_tenant *t = kv_state_tenant_at(s, i);
		kv_tenant_snap *o = &snap->tenants[i];
		o->backend_id = t->backend_id;
		o->tenant_id = t->tenant_id;
		o->backend_len = t->backend_len;
		o->tenant_len = t->tenant_len;
		o->labels_unclean = t->labels_unclean;
		o->stale = t->stale;
		o->counts = t->counts;
	}
	snap->n_tenants = n;
	return KV_OK;
}

void kv_source_snap_release(kv_source_snap *snap)
{
	free(snap->tenants);
	snap->tenants = NULL;
	snap->n_tenants = snap->cap_tenants = 0;
}
