/* SPDX-License-Identifier: Apache-2.0 */
/* Builds wire messages for tests: event maps field by field, so that every
 * test can start from a spec-shaped or upstream-shaped event and change,
 * retype or drop one field. */
#ifndef MSGBUILD_H
#define MSGBUILD_H

#include <stdbool.h>
#include <stdint.h>
#include <msgpack.h>

#include <mooncake_kv/common.h>

enum fv_kind { FV_STR, FV_BIN, FV_INT, FV_UINT, FV_NIL, FV_BOOL, FV_EMPTY_ARRAY, FV_EMPTY_MAP };

typedef struct fv {
	const char *name;
	enum fv_kind kind;
	const char *s;
	size_t s_len; /* for FV_STR/FV_BIN: 0 means strlen(s) */
	int64_t i;
	uint64_t u;
} fv;

#define EV_MAX_FIELDS 32

typedef struct ev_spec {
	fv f[EV_MAX_FIELDS];
	int n;
} ev_spec;

enum ev_flavour {
	EV_SPEC, /* the subscriber guide's field set, legacy compat on */
	EV_SPEC_NO_LEGACY,
	EV_UPSTREAM, /* what the upstream publisher sends (dp_rank nil, base_block_idx 0, ...) */
};

/* type: "stored", "removed" or "cleared"; medium/key may be NULL (nil / absent). */
void ev_init(ev_spec *e, enum ev_flavour fl, const char *type, uint64_t event_id, const char *backend,
	     const char *tenant, const char *medium, const char *key);
void ev_set(ev_spec *e, fv v); /* replaces the field of that name, or appends it */
void ev_del(ev_spec *e, const char *name);

#define STR(n, v)     ((fv){.name = (n), .kind = FV_STR, .s = (v)})
#define STRN(n, v, l) ((fv){.name = (n), .kind = FV_STR, .s = (v), .s_len = (l)})
#define BIN(n, v)     ((fv){.name = (n), .kind = FV_BIN, .s = (v)})
#define INT(n, v)     ((fv){.name = (n), .kind = FV_INT, .i = (v)})
#define UINT(n, v)    ((fv){.name = (n), .kind = FV_UINT, .u = (v)})
#define NIL(n)        ((fv){.name = (n), .kind = FV_NIL})

/* A three-frame message.  Owns its payload buffer. */
typedef struct msg {
	unsigned char seq_be[8];
	msgpack_sbuffer payload;
	mkv_frame frames[3];
} msg;

void msg_init(msg *m);
void msg_destroy(msg *m);
/* Packs [ts, [events...], 0] with sequence number seq and points the frames at it. */
void msg_build(msg *m, uint64_t seq, int64_t ts, const ev_spec *events, size_t n);
/* Replaces the payload with raw bytes. */
void msg_set_raw_payload(msg *m, uint64_t seq, const void *bytes, size_t len);
/* Packs one event spec into a packer (for hand-made payload shapes). */
void ev_pack(msgpack_packer *pk, const ev_spec *e);

#endif
