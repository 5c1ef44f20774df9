/* SPDX-License-Identifier: Apache-2.0 */
/* A state written into a handover stream and read back (kv_pack.h,
 * mooncake_kv/handover.h): its own figures, its key groups' names, and
 * every tenant with its figures, stale reasons, reconciliation times and
 * objects (media and births).  What is read is checked as it comes: a
 * tenant twice, an object twice, an object without media, figures that do
 * not add up to the objects, a group the state does not know, more than the
 * budget allows: the stream is refused. */
#ifndef KV_STATE_IO_H
#define KV_STATE_IO_H

#include "kv_pack.h"
#include "kv_state.h"

/* Record types of a handover stream (the state's and the store's). */
enum kv_handover_record {
	KV_REC_HEADER = 1,
	KV_REC_SOURCE = 2,
	KV_REC_MEMBER = 3,
	KV_REC_STATE = 4,
	KV_REC_GROUP = 5,
	KV_REC_TENANT = 6,
	KV_REC_OBJECTS = 7,
	KV_REC_SOURCE_END = 8,
	/* in a source's annex (handover.c): one a member, what version 1 did
	 * not carry (whether its master lists tenants) */
	KV_REC_MEMBER_ANNEX = 9,
};

/* Objects per KV_REC_OBJECTS record: 18 bytes each at most. */
#define KV_STATE_IO_OBJECTS 8192

/* Writes the state's records (KV_REC_STATE, KV_REC_GROUP..., then per
 * tenant KV_REC_TENANT and its KV_REC_OBJECTS...).  Failures are the
 * writer's (kv_pack_finish). */
void kv_state_write(const kv_state *s, kv_pack_w *w);

/* Reading one state: the first record must be KV_REC_STATE. */
typedef struct kv_state_load {
	mkv_budget *budget;
	const mkv_keygroup_re *key_groups; /* the reader's own (NULL: none): the writer's must have had them too */
	kv_state *state;                   /* built as the records come: the caller's once complete */
	uint64_t tenants_left, groups_left;
	kv_tenant *tenant;     /* the one whose objects come next */
	uint64_t objects_left; /* of it */
	uint64_t tally[MKV_PLACE__COUNT];
	uint64_t carried[5]; /* the state's own counters, set once every tenant is in */
	uint64_t turned_stale[KV_STALE__BITS], turned_exact[KV_EXACT__CAUSES];
} kv_state_load;

void kv_state_load_init(kv_state_load *l, mkv_budget *budget, const mkv_keygroup_re *key_groups);
/* One record; returns a kv_pack_error (KV_PACK_OK to go on). */
enum kv_pack_error kv_state_load_record(kv_state_load *l, unsigned type, kv_pack_r *r);
/* The state's records are over: KV_PACK_OK when it is whole, and then the
 * state is taken from l (l->state NULL). */
enum kv_pack_error kv_state_load_end(kv_state_load *l, kv_state **out);
void kv_state_load_free(kv_state_load *l);

#endif
