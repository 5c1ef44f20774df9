/* SPDX-License-Identifier: Apache-2.0 */
/* The reference decoder: the exporter's decoder as it was up to 0.3, over
 * msgpack-c's object tree (msgpack_unpack, then the fields read from the
 * tree).  Kept, not shipped, for two uses: the one-pass decoder
 * (exporter/core/wire/decode.c) must give what it gives on every input
 * (tests/test_decode_diff.c), and it is the decode of issue 31's floor,
 * "ZMQ receive plus msgpack-c decode with no state" (bench.c recv). */
#include <stdlib.h>
#include <string.h>
#include <msgpack.h>

#include "kv_mpcheck.h"
#include "ref_decode.h"

/* Enough for one 64-event upstream batch without growing the zone. */
#define ZONE_CHUNK (64 * 1024)

struct ref_decoder {
	msgpack_zone zone;
	kv_event *events;
	size_t cap;
};

ref_decoder *ref_decoder_new(void)
{
	ref_decoder *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	if (!msgpack_zone_init(&d->zone, ZONE_CHUNK)) {
		free(d);
		return NULL;
	}
	return d;
}

void ref_decoder_free(ref_decoder *d)
{
	if (!d)
		return;
	msgpack_zone_destroy(&d->zone);
	free(d->events);
	free(d);
}

static bool key_is(const msgpack_object_str *k, const char *lit, size_t n)
{
	return k->size == n && memcmp(k->ptr, lit, n) == 0;
}
#define KEY_IS(k, lit) key_is((k), lit, sizeof(lit) - 1)

static bool as_u64(const msgpack_object *o, uint64_t *v)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		*v = o->via.u64;
		return true;
	}
	/* msgpack-c decodes non-negative values as POSITIVE_INTEGER, so a
	 * NEGATIVE_INTEGER here is always below zero: it does not fit. */
	return false;
}

static bool as_i64(const msgpack_object *o, int64_t *v)
{
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*v = o->via.i64;
		return true;
	}
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX) {
		*v = (int64_t)o->via.u64;
		return true;
	}
	return false;
}

/* Keys and ids are raw bytes to us: accept str, and bin for a publisher
 * that sends bytes. Longer than 4 GiB cannot happen (msgpack str32). */
static bool as_str(const msgpack_object *o, mkv_str *s)
{
	if (o->type == MSGPACK_OBJECT_STR) {
		s->ptr = o->via.str.ptr;
		s->len = o->via.str.size;
		return true;
	}
	if (o->type == MSGPACK_OBJECT_BIN) {
		s->ptr = o->via.bin.ptr;
		s->len = o->via.bin.size;
		return true;
	}
	return false;
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

/* The fields we use, located in one pass over the map. */
struct fields {
	const msgpack_object *event_id, *event_type, *type, *tenant_id, *backend_id, *medium, *object_key, *timestamp;
};

static void locate_fields(const msgpack_object_map *m, struct fields *f)
{
	memset(f, 0, sizeof(*f));
	for (uint32_t i = 0; i < m->size; i++) {
		const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
		if (k->type != MSGPACK_OBJECT_STR)
			continue;
		const msgpack_object_str *ks = &k->via.str;
		/* Dispatch on length first: most keys are rejected in one compare. */
		switch (ks->size) {
		case 4:
			if (KEY_IS(ks, "type"))
				f->type = v;
			break;
		case 6:
			if (KEY_IS(ks, "medium"))
				f->medium = v;
			break;
		case 8:
			if (KEY_IS(ks, "event_id"))
				f->event_id = v;
			break;
		case 9:
			if (KEY_IS(ks, "tenant_id"))
				f->tenant_id = v;
			else if (KEY_IS(ks, "timestamp"))
				f->timestamp = v;
			break;
		case 10:
			if (KEY_IS(ks, "event_type"))
				f->event_type = v;
			else if (KEY_IS(ks, "backend_id"))
				f->backend_id = v;
			else if (KEY_IS(ks, "object_key"))
				f->object_key = v;
			break;
		default:
			break;
		}
	}
}

static enum mkv_reason decode_type(const struct fields *f, enum mkv_event_type *t)
{
	mkv_str s;
	/* event_type is authoritative when present and not nil; a bad one is
	 * not rescued by the legacy field. */
	if (f->event_type && f->event_type->type != MSGPACK_OBJECT_NIL) {
		if (!as_str(f->event_type, &s))
			return MKV_R_FIELD_TYPE;
		return parse_event_type(&s, event_type_wire, t);
	}
	if (f->type && f->type->type != MSGPACK_OBJECT_NIL) {
		if (!as_str(f->type, &s))
			return MKV_R_FIELD_TYPE;
		return parse_event_type(&s, legacy_type_wire, t);
	}
	return MKV_R_MISSING_FIELD;
}

static enum mkv_reason decode_required_str(const msgpack_object *o, mkv_str *s)
{
	if (!o || o->type == MSGPACK_OBJECT_NIL)
		return MKV_R_MISSING_FIELD;
	return as_str(o, s) ? MKV_R_OK : MKV_R_FIELD_TYPE;
}

static enum mkv_reason decode_medium(const msgpack_object *o, uint8_t *medium)
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
static void decode_timestamp(const msgpack_object *o, int64_t batch_ts, kv_event *ev)
{
	ev->timestamp_ms = batch_ts;
	if (o && o->type != MSGPACK_OBJECT_NIL && !as_i64(o, &ev->timestamp_ms))
		ev->timestamp_bad = true;
	if (ev->timestamp_ms < 0)
		ev->timestamp_bad = true;
}

static enum mkv_reason decode_event(const msgpack_object *o, int64_t batch_ts, kv_event *ev)
{
	struct fields f;
	enum mkv_reason r;

	memset(ev, 0, sizeof(*ev));
	if (o->type != MSGPACK_OBJECT_MAP)
		return MKV_R_EVENT_SHAPE;
	locate_fields(&o->via.map, &f);

	/* event_id first, so that sequence tracking sees it even when the
	 * event is rejected for another reason. */
	if (f.event_id && f.event_id->type != MSGPACK_OBJECT_NIL) {
		if (!as_u64(f.event_id, &ev->event_id))
			return MKV_R_FIELD_TYPE;
		ev->has_event_id = true;
	}
	decode_timestamp(f.timestamp, batch_ts, ev);
	if ((r = decode_type(&f, &ev->type)) != MKV_R_OK)
		return r;
	if ((r = decode_required_str(f.tenant_id, &ev->tenant_id)) != MKV_R_OK)
		return r;
	if ((r = decode_required_str(f.backend_id, &ev->backend_id)) != MKV_R_OK)
		return r;
	if (ev->type == MKV_EV_CLEARED)
		return MKV_R_OK; /* envelope-only: medium is nil, no key */

	if ((r = decode_medium(f.medium, &ev->medium)) != MKV_R_OK)
		return r;
	/* Absent (kv_events_emit_object_key=false) and nil both mean keyless. */
	if (f.object_key && f.object_key->type != MSGPACK_OBJECT_NIL) {
		if (!as_str(f.object_key, &ev->object_key))
			return MKV_R_FIELD_TYPE;
		ev->has_key = true;
	}
	return MKV_R_OK;
}

static int reserve_events(ref_decoder *d, size_t n)
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

int ref_decode(ref_decoder *d, const mkv_frame *frames, size_t n_frames, kv_batch *out)
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

	/* Also keeps an empty frame, whose data may be NULL, from msgpack-c. */
	if (!kv_msgpack_well_formed(frames[2].data, frames[2].len)) {
		out->reject = MKV_R_MSGPACK_PARSE;
		return MKV_OK;
	}
	msgpack_zone_clear(&d->zone);
	msgpack_object root;
	size_t off = 0;
	msgpack_unpack_return ur = msgpack_unpack(frames[2].data, frames[2].len, &off, &d->zone, &root);
	/* One frame holds exactly one object: trailing bytes are corruption.
	 * Past the scan, only nesting deeper than msgpack-c's stack fails here. */
	if (ur != MSGPACK_UNPACK_SUCCESS) {
		out->reject = MKV_R_MSGPACK_PARSE;
		return ur == MSGPACK_UNPACK_NOMEM_ERROR ? MKV_ENOMEM : MKV_OK;
	}
	if (root.type != MSGPACK_OBJECT_ARRAY || root.via.array.size < 3 ||
	    !as_i64(&root.via.array.ptr[0], &out->timestamp_ms) || root.via.array.ptr[1].type != MSGPACK_OBJECT_ARRAY) {
		out->reject = MKV_R_PAYLOAD_SHAPE;
		return MKV_OK;
	}
	const msgpack_object *rank = &root.via.array.ptr[2];
	if (rank->type != MSGPACK_OBJECT_NIL && rank->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
		out->reject = MKV_R_PAYLOAD_SHAPE;
		return MKV_OK;
	}

	const msgpack_object_array *list = &root.via.array.ptr[1].via.array;
	if (reserve_events(d, list->size) != MKV_OK) {
		out->reject = MKV_R_PAYLOAD_SHAPE;
		return MKV_ENOMEM;
	}
	out->events = d->events;
	for (uint32_t i = 0; i < list->size; i++)
		d->events[i].reject = decode_event(&list->ptr[i], out->timestamp_ms, &d->events[i]);
	out->n_events = list->size;
	return MKV_OK;
}
