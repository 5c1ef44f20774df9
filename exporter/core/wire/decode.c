/* SPDX-License-Identifier: Apache-2.0 */
/* Decoder for the Mooncake KV event wire format (see the subscriber guide
 * and tests/fixtures/upstream/README.md for what upstream really sends).
 *
 * Lenient where the two formats differ (any integer width, nil for every
 * nullable field, extra fields ignored, legacy `type` as a fallback), strict
 * where a mistake would corrupt state (frame layout, event type, medium).
 * One pass over the payload's bytes (kv_mpread.h says why not msgpack-c's
 * tree); tests/test_decode_diff.c holds it to what the tree decoded. */
#include <stdlib.h>
#include <string.h>

#include "kv_decode.h"
#include "kv_mpcheck.h"
#include "kv_mpread.h"

/* The model context's fields (kv_decode.h, kv_model_ctx), in the order of
 * enum field below. */
enum { MF_MODEL, MF_BLOCK_SIZE, MF_SALT, MF_LORA, MF_DP_RANK, MF_N };
static const bool mf_string[MF_N] = {true, false, true, true, false};

/* One of them as an event carries it: a string's bytes (borrowed) or an
 * unsigned integer; has is false for none. */
typedef struct mf_val {
	bool has;
	uint32_t len;
	const char *ptr;
	uint64_t u;
} mf_val;

/* The member's last context: its values, each string's first bytes copied
 * here (the payload they came in goes), and what is shown of it. */
typedef struct model_last {
	mf_val v[MF_N];
	char bytes[MF_N][KV_MODEL_VALUE_MAX];
	kv_model_ctx ctx;
} model_last;

/* What one message's usable events said of it: taken only once the whole
 * message has decoded (a message rejected whole is no evidence). */
typedef struct model_news {
	bool any; /* v is the context of its last event that changed it */
	uint64_t changes;
	mf_val v[MF_N];
} model_news;

struct kv_decoder {
	kv_event *events;
	size_t cap;
	model_last model;
};

kv_decoder *kv_decoder_new(void)
{
	return calloc(1, sizeof(kv_decoder));
}

void kv_decoder_free(kv_decoder *d)
{
	if (!d)
		return;
	free(d->events);
	free(d);
}

const kv_model_ctx *kv_decoder_model(const kv_decoder *d)
{
	return &d->model.ctx;
}

static inline uint64_t load64(const char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* Whether key k is the literal lit of n bytes.  From 8 to 16 bytes, two
 * overlapping 8-byte loads each: the compiler does not always expand a
 * memcmp of 9 or 10 bytes inline, and a call per key was ~7% of the
 * decode (docs/performance.md, "The model context"). */
static inline bool key_is(const kv_mp_obj *k, const char *lit, size_t n)
{
	if (k->n != n)
		return false;
	if (n >= 8 && n <= 16)
		return load64(k->v.ptr) == load64(lit) && load64(k->v.ptr + n - 8) == load64(lit + n - 8);
	return memcmp(k->v.ptr, lit, n) == 0;
}
#define KEY_IS(k, lit) key_is((k), lit, sizeof(lit) - 1)

static bool is_nil(const kv_mp_obj *o)
{
	return o->kind == KV_MP_NIL;
}

static bool as_u64(const kv_mp_obj *o, uint64_t *v)
{
	if (o->kind != KV_MP_UINT)
		return false; /* a negative integer does not fit */
	*v = o->v.u;
	return true;
}

static bool as_i64(const kv_mp_obj *o, int64_t *v)
{
	if (o->kind == KV_MP_NEG || (o->kind == KV_MP_UINT && o->v.u <= INT64_MAX)) {
		*v = o->v.i;
		return true;
	}
	return false;
}

/* Keys and ids are raw bytes to us: accept str, and bin for a publisher
 * that sends bytes. Longer than 4 GiB cannot happen (msgpack str32). */
static bool as_str(const kv_mp_obj *o, mkv_str *s)
{
	if (o->kind != KV_MP_STR && o->kind != KV_MP_BIN)
		return false;
	s->ptr = o->v.ptr;
	s->len = o->n;
	return true;
}

static bool str_is(const mkv_str *s, const char *lit)
{
	size_t n = strlen(lit);
	return s->len == n && memcmp(s->ptr, lit, n) == 0;
}

static bool str_ieq(const mkv_str *s, const char *lit)
{
	size_t n = strlen(lit);
	if (s->len != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s->ptr[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != lit[i])
			return false;
	}
	return true;
}

static enum mkv_reason parse_event_type(const mkv_str *s, const char *const names[3], enum mkv_event_type *t)
{
	for (int i = 0; i < 3; i++) {
		if (str_is(s, names[i])) {
			*t = (enum mkv_event_type)i;
			return MKV_R_OK;
		}
	}
	return MKV_R_UNKNOWN_EVENT_TYPE;
}

static const char *const event_type_wire[3] = {"stored", "removed", "cleared"};
static const char *const legacy_type_wire[3] = {"BlockStored", "BlockRemoved", "AllBlocksCleared"};

/* The fields we use, found in one pass over the map: the last of a
 * duplicated key wins, as it did over msgpack-c's tree. */
enum field {
	F_NONE = -1, /* a key we do not use */
	F_EVENT_ID,
	F_EVENT_TYPE,
	F_TYPE,
	F_TENANT_ID,
	F_BACKEND_ID,
	F_MEDIUM,
	F_OBJECT_KEY,
	F_TIMESTAMP,
	F_MODEL_NAME, /* the model context, in MF_ order */
	F_BLOCK_SIZE,
	F_SALT,
	F_LORA_NAME,
	F_DP_RANK,
	F_N
};

struct fields {
	kv_mp_obj val[F_N];
	bool has[F_N];
};

static const kv_mp_obj *field(const struct fields *f, enum field i)
{
	return f->has[i] ? &f->val[i] : NULL;
}

static enum field field_of(const kv_mp_obj *k)
{
	if (k->kind != KV_MP_STR)
		return F_NONE;
	/* Dispatch on length, then on the first byte where several names
	 * share a length: most keys are rejected, or found, in one compare. */
	switch (k->n) {
	case 4:
		return KEY_IS(k, "type") ? F_TYPE : F_NONE;
	case 6:
		return KEY_IS(k, "medium") ? F_MEDIUM : F_NONE;
	case 7:
		return KEY_IS(k, "dp_rank") ? F_DP_RANK : F_NONE;
	case 8:
		return KEY_IS(k, "event_id") ? F_EVENT_ID : F_NONE;
	case 9:
		return KEY_IS(k, "tenant_id")   ? F_TENANT_ID
		       : KEY_IS(k, "timestamp") ? F_TIMESTAMP
		       : KEY_IS(k, "lora_name") ? F_LORA_NAME
						: F_NONE;
	case 10:
		return KEY_IS(k, "event_type")   ? F_EVENT_TYPE
		       : KEY_IS(k, "backend_id") ? F_BACKEND_ID
		       : KEY_IS(k, "object_key") ? F_OBJECT_KEY
		       : KEY_IS(k, "model_name") ? F_MODEL_NAME
		       : KEY_IS(k, "block_size") ? F_BLOCK_SIZE
						 : F_NONE;
	case 15:
		return KEY_IS(k, "additional_salt") ? F_SALT : F_NONE;
	default:
		return F_NONE;
	}
}

/* Reads one object at `level`, skipping a container's elements.  False
 * when its bytes are bad or nested too deep. */
static bool read_whole(kv_mp_reader *r, kv_mp_obj *o, unsigned level)
{
	if (!kv_mp_next(r, o))
		return false;
	if (o->kind != KV_MP_ARRAY && o->kind != KV_MP_MAP)
		return true;
	return kv_mp_may_open(r, level) && kv_mp_skip_elements(r, o, level);
}

/* The event map's n pairs, at level 3 (root, list, map around them). */
static bool locate_fields(kv_mp_reader *r, uint32_t n, struct fields *f)
{
	memset(f->has, 0, sizeof(f->has));
	for (uint32_t i = 0; i < n; i++) {
		kv_mp_obj k, v;
		if (!read_whole(r, &k, 3) || !read_whole(r, &v, 3))
			return false;
		enum field at = field_of(&k);
		if (at != F_NONE) {
			f->val[at] = v;
			f->has[at] = true;
		}
	}
	return true;
}

static enum mkv_reason decode_type(const struct fields *f, enum mkv_event_type *t)
{
	mkv_str s;
	/* event_type is authoritative when present and not nil; a bad one is
	 * not rescued by the legacy field. */
	const kv_mp_obj *et = field(f, F_EVENT_TYPE), *lt = field(f, F_TYPE);
	if (et && !is_nil(et)) {
		if (!as_str(et, &s))
			return MKV_R_FIELD_TYPE;
		return parse_event_type(&s, event_type_wire, t);
	}
	if (lt && !is_nil(lt)) {
		if (!as_str(lt, &s))
			return MKV_R_FIELD_TYPE;
		return parse_event_type(&s, legacy_type_wire, t);
	}
	return MKV_R_MISSING_FIELD;
}

static enum mkv_reason decode_required_str(const kv_mp_obj *o, mkv_str *s)
{
	if (!o || is_nil(o))
		return MKV_R_MISSING_FIELD;
	return as_str(o, s) ? MKV_R_OK : MKV_R_FIELD_TYPE;
}

static enum mkv_reason decode_medium(const kv_mp_obj *o, uint8_t *medium)
{
	mkv_str s;
	enum mkv_reason r = decode_required_str(o, &s);
	if (r != MKV_R_OK)
		return r;
	if (str_ieq(&s, mkv_medium_name(MKV_MEDIUM_CPU)))
		*medium = MKV_MEDIUM_CPU;
	else if (str_ieq(&s, mkv_medium_name(MKV_MEDIUM_DISK)))
		*medium = MKV_MEDIUM_DISK;
	else
		return MKV_R_UNKNOWN_MEDIUM;
	return MKV_R_OK;
}

/* The event's time for residency: its own `timestamp` (upstream sends its
 * message's), else its message's.  One that is not a non-negative integer
 * rejects nothing (the event's meaning does not depend on it) but is no
 * time either: timestamp_bad. */
static void decode_timestamp(const kv_mp_obj *o, int64_t batch_ts, kv_event *ev)
{
	ev->timestamp_ms = batch_ts;
	if (o && !is_nil(o) && !as_i64(o, &ev->timestamp_ms))
		ev->timestamp_bad = true;
	if (ev->timestamp_ms < 0)
		ev->timestamp_bad = true;
}

static enum mkv_reason decode_fields(const struct fields *f, int64_t batch_ts, kv_event *ev)
{
	enum mkv_reason r;
	const kv_mp_obj *id = field(f, F_EVENT_ID), *key = field(f, F_OBJECT_KEY);

	/* event_id first, so that sequence tracking sees it even when the
	 * event is rejected for another reason. */
	if (id && !is_nil(id)) {
		if (!as_u64(id, &ev->event_id))
			return MKV_R_FIELD_TYPE;
		ev->has_event_id = true;
	}
	decode_timestamp(field(f, F_TIMESTAMP), batch_ts, ev);
	if ((r = decode_type(f, &ev->type)) != MKV_R_OK)
		return r;
	if ((r = decode_required_str(field(f, F_TENANT_ID), &ev->tenant_id)) != MKV_R_OK)
		return r;
	if ((r = decode_required_str(field(f, F_BACKEND_ID), &ev->backend_id)) != MKV_R_OK)
		return r;
	if (ev->type == MKV_EV_CLEARED)
		return MKV_R_OK; /* envelope-only: medium is nil, no key */

	if ((r = decode_medium(field(f, F_MEDIUM), &ev->medium)) != MKV_R_OK)
		return r;
	/* Absent (kv_events_emit_object_key=false) and nil both mean keyless. */
	if (key && !is_nil(key)) {
		if (!as_str(key, &ev->object_key))
			return MKV_R_FIELD_TYPE;
		ev->has_key = true;
	}
	return MKV_R_OK;
}

/* --- the model context: compared where it is read, copied only when it
 * changes (a publisher stamps the same one on every event) --- */

/* Field i of the context as the event carries it (mf_val). */
static mf_val model_val(const struct fields *f, int i)
{
	const kv_mp_obj *o = field(f, (enum field)(F_MODEL_NAME + i));
	if (o && mf_string[i] && (o->kind == KV_MP_STR || o->kind == KV_MP_BIN))
		return (mf_val){.has = true, .len = o->n, .ptr = o->v.ptr};
	if (o && !mf_string[i] && o->kind == KV_MP_UINT)
		return (mf_val){.has = true, .u = o->v.u};
	return (mf_val){0};
}

/* Whether field i of the event is r, without building its mf_val: the
 * common case, where a publisher stamps the same context on every event
 * (and Mooncake main stamps none: each field a nil). */
static inline bool model_same(const struct fields *f, int i, const mf_val *r)
{
	const kv_mp_obj *o = field(f, (enum field)(F_MODEL_NAME + i));
	bool has = o && (mf_string[i] ? o->kind == KV_MP_STR || o->kind == KV_MP_BIN : o->kind == KV_MP_UINT);
	if (has != r->has)
		return false;
	if (!has)
		return true;
	if (!mf_string[i])
		return o->v.u == r->u;
	size_t n = o->n < KV_MODEL_VALUE_MAX ? o->n : KV_MODEL_VALUE_MAX;
	return o->n == r->len && (!n || memcmp(o->v.ptr, r->ptr, n) == 0);
}

/* A usable event's context against the one before it: its message's last
 * change, else the member's (none before the first: no change). */
static void model_note(const model_last *last, model_news *mn, const struct fields *f)
{
	const mf_val *ref = mn->any ? mn->v : last->ctx.seen ? last->v : NULL;
	if (ref) {
		if (model_same(f, MF_MODEL, &ref[MF_MODEL]) && model_same(f, MF_BLOCK_SIZE, &ref[MF_BLOCK_SIZE]) &&
		    model_same(f, MF_SALT, &ref[MF_SALT]) && model_same(f, MF_LORA, &ref[MF_LORA]) &&
		    model_same(f, MF_DP_RANK, &ref[MF_DP_RANK]))
			return;
		mn->changes++;
	}
	for (int i = 0; i < MF_N; i++)
		mn->v[i] = model_val(f, i);
	mn->any = true;
}

/* A string value's label text: at most KV_MODEL_VALUE_MAX bytes, cut at a
 * character's start, NUL as 0xff (no UTF-8: the renderer shows U+FFFD, as
 * for any invalid byte).  True when it was cut. */
static bool model_label(char *out, const mf_val *v)
{
	size_t n = v->has ? v->len : 0;
	bool cut = n > KV_MODEL_VALUE_MAX;
	if (cut) {
		n = KV_MODEL_VALUE_MAX;
		for (int k = 0; k < 3 && n && ((unsigned char)v->ptr[n] & 0xc0) == 0x80; k++)
			n--; /* ptr[n], the first byte left out, continues a character */
	}
	for (size_t i = 0; i < n; i++)
		out[i] = v->ptr[i] ? v->ptr[i] : (char)0xff;
	out[n] = '\0';
	return cut;
}

/* A decoded message changed the member's context: copy it (the message's
 * bytes are still there). */
static void model_take(model_last *l, const model_news *mn)
{
	kv_model_ctx *c = &l->ctx;
	const mf_val *v = mn->v;
	c->seen = true;
	c->changes += mn->changes;
	c->truncated += model_label(c->model_name, &v[MF_MODEL]);
	c->truncated += model_label(c->lora_name, &v[MF_LORA]);
	c->has_model = v[MF_MODEL].has;
	c->has_lora = v[MF_LORA].has;
	c->has_salt = v[MF_SALT].has;
	c->has_block_size = v[MF_BLOCK_SIZE].has;
	c->block_size = v[MF_BLOCK_SIZE].u;
	c->has_dp_rank = v[MF_DP_RANK].has;
	c->dp_rank = v[MF_DP_RANK].u;
	for (int i = 0; i < MF_N; i++) {
		l->v[i] = v[i];
		if (v[i].len) {
			memcpy(l->bytes[i], v[i].ptr, v[i].len < KV_MODEL_VALUE_MAX ? v[i].len : KV_MODEL_VALUE_MAX);
			l->v[i].ptr = l->bytes[i];
		}
	}
}

/* The event whose header o is, at level 2 (root and list around it): its
 * elements are read whatever it holds, and a usable one's model context
 * noted in mn.  False when they are bad or nested too deep. */
static bool decode_event(kv_mp_reader *r, const kv_mp_obj *o, int64_t batch_ts, kv_event *ev, const model_last *last,
			 model_news *mn)
{
	struct fields f;

	memset(ev, 0, sizeof(*ev));
	if (o->kind != KV_MP_MAP) {
		ev->reject = MKV_R_EVENT_SHAPE;
		return o->kind != KV_MP_ARRAY || (kv_mp_may_open(r, 2) && kv_mp_skip_elements(r, o, 2));
	}
	if (!locate_fields(r, o->n, &f))
		return false;
	ev->reject = decode_fields(&f, batch_ts, ev);
	if (ev->reject == MKV_R_OK)
		model_note(last, mn, &f);
	return true;
}

static enum mkv_err reserve_events(kv_decoder *d, size_t n)
{
	if (n <= d->cap)
		return MKV_OK;
	size_t cap = d->cap ? d->cap : 64;
	while (cap < n)
		cap *= 2;
	kv_event *e = realloc(d->events, cap * sizeof(*e));
	if (!e)
		return MKV_ENOMEM;
	d->events = e;
	d->cap = cap;
	return MKV_OK;
}

static uint64_t read_be64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

enum mkv_err kv_decode(kv_decoder *d, const mkv_frame *frames, size_t n_frames, kv_batch *out)
{
	memset(out, 0, sizeof(*out));
	out->events = d->events;

	if (n_frames != 3) {
		out->reject = MKV_R_FRAME_COUNT;
		return MKV_OK;
	}
	if (frames[1].len != 8) {
		out->reject = MKV_R_SEQUENCE_LENGTH;
		return MKV_OK;
	}
	out->seq = read_be64(frames[1].data);
	out->has_seq = true;

	/* One pass over [timestamp, [event, ...], rank, ...], every length
	 * checked as it is read: bad bytes anywhere reject the whole message,
	 * and so does nesting deeper than msgpack-c's stack, wherever the pass
	 * meets it.  A shape error ends the pass early: the pre-scan then
	 * tells whether the rest is msgpack at all, for bad bytes outrank a bad
	 * shape (as when msgpack-c unpacked the whole payload first). */
	const mkv_frame *p = &frames[2];
	kv_mp_obj root, ts, list, rank, rest;
	model_news mn = {0};
	if (!p->len) /* an empty frame may carry no buffer at all */
		goto unreadable;
	kv_mp_reader r = {.p = p->data, .end = (const unsigned char *)p->data + p->len};
	if (!kv_mp_next(&r, &root))
		goto unreadable;
	if (root.kind != KV_MP_ARRAY || root.n < 3)
		goto bad_shape;
	if (!kv_mp_next(&r, &ts))
		goto unreadable;
	if (!as_i64(&ts, &out->timestamp_ms))
		goto bad_shape;
	if (!kv_mp_next(&r, &list))
		goto unreadable;
	if (list.kind != KV_MP_ARRAY)
		goto bad_shape;
	/* every event takes a byte at least: a count beyond the bytes left is
	 * a lie, and must not size the event array */
	if (list.n > (size_t)(r.end - r.p))
		goto unreadable;
	if (reserve_events(d, list.n) != MKV_OK) {
		out->reject = MKV_R_PAYLOAD_SHAPE;
		return MKV_ENOMEM;
	}
	out->events = d->events;
	for (uint32_t i = 0; i < list.n; i++) {
		kv_mp_obj e;
		if (!kv_mp_next(&r, &e) || !decode_event(&r, &e, out->timestamp_ms, &d->events[i], &d->model, &mn))
			goto unreadable;
	}
	if (!kv_mp_next(&r, &rank))
		goto unreadable;
	if (rank.kind != KV_MP_NIL && rank.kind != KV_MP_UINT)
		goto bad_shape;
	for (uint32_t i = 3; i < root.n; i++) /* more elements: read, unused */
		if (!read_whole(&r, &rest, 1))
			goto unreadable;
	if (r.p != r.end) /* one frame holds exactly one object */
		goto unreadable;
	if (mn.any)
		model_take(&d->model, &mn);
	out->n_events = list.n;
	return MKV_OK;
bad_shape:
	out->reject = kv_msgpack_well_formed(p->data, p->len) ? MKV_R_PAYLOAD_SHAPE : MKV_R_MSGPACK_PARSE;
	return MKV_OK;
unreadable: /* bad bytes, or deeper than msgpack-c's stack */
	out->reject = MKV_R_MSGPACK_PARSE;
	return MKV_OK;
}
