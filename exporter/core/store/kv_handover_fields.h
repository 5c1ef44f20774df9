/* SPDX-License-Identifier: Apache-2.0 */
/* The fields of a handover stream's member and source records
 * (handover.c), written and read by one visitor each. */
#ifndef KV_HANDOVER_FIELDS_H
#define KV_HANDOVER_FIELDS_H

#include "kv_pack.h"
#include "kv_store_impl.h"

/* What a member carries.  The annex's fields (lists, lists_at) are read
 * apart, by handover.c: they are not in the member's record. */
typedef struct kv_member_carry {
	kv_stream_carry stream;
	kv_dialect_choice dialect;
	bool have_status;
	kv_master_status status; /* its counters only */
	uint64_t last_sequence;
	kv_loss loss;
	/* in the annex: whether its master lists tenants, and since when it
	 * listed default only (unix seconds) */
	enum kv_lists lists;
	double lists_at;
} kv_member_carry;

/* Writing (w) or reading (r): one of them set. */
typedef struct kv_fields {
	kv_pack_w *w;
	kv_pack_r *r;
} kv_fields;

void kv_fields_member(kv_fields *f, kv_member_carry *m);
void kv_fields_leadership(kv_fields *f, kv_leadership *h);

#endif
