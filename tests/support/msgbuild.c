/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "msgbuild.h"

static void add(ev_spec *e, fv v)
{
	if (e->n < EV_MAX_FIELDS)
		e->f[e->n++] = v;
}

void ev_init(ev_spec *e, enum ev_flavour fl, const char *type, uint64_t event_id, const char *backend,
	     const char *tenant, const char *medium, const char *key)
{
	bool stored = strcmp(type, "stored") == 0;
	bool cleared = strcmp(type, "cleared") == 0;
	bool legacy = fl != EV_SPEC_NO_LEGACY;
	const char *legacy_type = stored ? "BlockStored" : cleared ? "AllBlocksCleared" : "BlockRemoved";

	e->n = 0;
	add(e, UINT("event_id", event_id));
	add(e, UINT("timestamp", 1795982104612ull));
	add(e, STR("event_type", type));
	if (legacy)
		add(e, STR("type", legacy_type));
	add(e, NIL("model_name"));
	add(e, fl == EV_SPEC ? UINT("block_size", 16) : NIL("block_size"));
	add(e, NIL("additional_salt"));
	add(e, NIL("lora_name"));
	add(e, STR("tenant_id", tenant));
	add(e, STR("backend_id", backend));
	if (!cleared)
		add(e, NIL("group_id"));
	add(e, medium ? STR("medium", medium) : NIL("medium"));
	add(e, fl == EV_UPSTREAM ? NIL("dp_rank") : UINT("dp_rank", 0));
	if (cleared)
		return;
	if (key)
		add(e, STR("object_key", key));
	add(e, (fv){.name = "seq_hashes", .kind = FV_EMPTY_ARRAY});
	if (legacy)
		add(e, (fv){.name = "block_hashes", .kind = FV_EMPTY_ARRAY});
	add(e, fl == EV_UPSTREAM && stored ? UINT("base_block_idx", 0) : NIL("base_block_idx"));
	if (stored) {
		add(e, NIL("parent_hash"));
		add(e, NIL("token_ids"));
		if (legacy)
			add(e, NIL("parent_block_hash"));
	}
}

void ev_set(ev_spec *e, fv v)
{
	for (int i = 0; i < e->n; i++) {
		if (strcmp(e->f[i].name, v.name) == 0) {
			e->f[i] = v;
			return;
		}
	}
	add(e, v);
}

void ev_del(ev_spec *e, const char *name)
{
	for (int i = 0; i < e->n; i++) {
		if (strcmp(e->f[i].name, name) == 0) {
			memmove(&e->f[i], &e->f[i + 1], (size_t)(e->n - i - 1) * sizeof(fv));
			e->n--;
			return;
		}
	}
}

static void pack_str(msgpack_packer *pk, const char *s, size_t n)
{
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

void ev_pack(msgpack_packer *pk, const ev_spec *e)
{
	msgpack_pack_map(pk, (size_t)e->n);
	for (int i = 0; i < e->n; i++) {
		const fv *v = &e->f[i];
		size_t n = v->s ? (v->s_len ? v->s_len : strlen(v->s)) : 0;
		pack_str(pk, v->name, strlen(v->name));
		switch (v->kind) {
		case FV_STR:
			pack_str(pk, v->s, n);
			break;
		case FV_BIN:
			msgpack_pack_bin(pk, n);
			msgpack_pack_bin_body(pk, v->s, n);
			break;
		case FV_INT:
			msgpack_pack_int64(pk, v->i);
			break;
		case FV_UINT:
			msgpack_pack_uint64(pk, v->u);
			break;
		case FV_NIL:
			msgpack_pack_nil(pk);
			break;
		case FV_BOOL:
			msgpack_pack_true(pk);
			break;
		case FV_EMPTY_ARRAY:
			msgpack_pack_array(pk, 0);
			break;
		case FV_EMPTY_MAP:
			msgpack_pack_map(pk, 0);
			break;
		}
	}
}

void msg_init(msg *m)
{
	memset(m, 0, sizeof(*m));
	msgpack_sbuffer_init(&m->payload);
}

void msg_destroy(msg *m)
{
	msgpack_sbuffer_destroy(&m->payload);
}

static void set_frames(msg *m, uint64_t seq)
{
	for (int i = 7; i >= 0; i--, seq >>= 8)
		m->seq_be[i] = (unsigned char)(seq & 0xff);
	m->frames[0] = (mkv_frame){"", 0};
	m->frames[1] = (mkv_frame){m->seq_be, 8};
	m->frames[2] = (mkv_frame){m->payload.data, m->payload.size};
}

void msg_build(msg *m, uint64_t seq, int64_t ts, const ev_spec *events, size_t n)
{
	msgpack_packer pk;
	msgpack_sbuffer_clear(&m->payload);
	msgpack_packer_init(&pk, &m->payload, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 3);
	msgpack_pack_int64(&pk, ts);
	msgpack_pack_array(&pk, n);
	for (size_t i = 0; i < n; i++)
		ev_pack(&pk, &events[i]);
	msgpack_pack_uint32(&pk, 0);
	set_frames(m, seq);
}

void msg_set_raw_payload(msg *m, uint64_t seq, const void *bytes, size_t len)
{
	msgpack_sbuffer_clear(&m->payload);
	if (len)
		msgpack_sbuffer_write(&m->payload, bytes, len);
	set_frames(m, seq);
}
