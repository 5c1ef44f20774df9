/* SPDX-License-Identifier: Apache-2.0 */
/* A one-pass msgpack reader.
 *
 * msgpack-c unpacks a whole payload into a tree of objects, ~1,000 of them
 * for a 64-event message, before the decoder reads the ten it needs: that
 * cost ~230 ns an event, 44% of the ingest thread at 1.5M events/s
 * (docs/performance.md).  This reader yields one object at a time, straight
 * from the bytes, and skips what the decoder does not use.  It checks every
 * length against the buffer's end (bad: truncated, or the unused tag 0xc1)
 * and the nesting: a container opened inside KV_MP_MAX_DEPTH others fails
 * (too_deep), as in msgpack-c, whose unpacker stops at the same depth. */
#ifndef KV_MPREAD_H
#define KV_MPREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KV_MP_MAX_DEPTH 32 /* msgpack-c's MSGPACK_EMBED_STACK_SIZE */

/* What msgpack-c calls the object types, the two floats as one. */
enum kv_mp_kind {
	KV_MP_NIL,
	KV_MP_BOOL,
	KV_MP_UINT, /* any integer encoding of a value >= 0 */
	KV_MP_NEG,  /* any integer encoding of a value < 0 */
	KV_MP_FLOAT,
	KV_MP_STR,
	KV_MP_BIN,
	KV_MP_EXT,
	KV_MP_ARRAY,
	KV_MP_MAP,
};

typedef struct kv_mp_obj {
	enum kv_mp_kind kind;
	uint32_t n; /* a string's bytes, a container's elements (a map's pairs) */
	union {
		uint64_t u;
		int64_t i;
		const char *ptr;
	} v;
} kv_mp_obj;

typedef struct kv_mp_reader {
	const unsigned char *p, *end;
	bool bad;      /* the bytes are no msgpack: a length past the end, 0xc1 */
	bool too_deep; /* a container nested deeper than KV_MP_MAX_DEPTH */
} kv_mp_reader;

/* Any object at p (kv_mp_next's out-of-line half). */
bool kv_mp_next_any(kv_mp_reader *r, kv_mp_obj *o);

/* The next object at p; a container's elements follow it.  False, with
 * bad set, when its bytes are not all there.  The tags of one byte that
 * make ~95% of an upstream event's objects (its keys are fixstr, most
 * values nil, small integers, short strings or empty arrays) are read
 * here, inline: as a call each, they were a third of the ingest thread's
 * time at 1.5M events/s (docs/performance.md, "Decoding in one pass"). */
static inline bool kv_mp_next(kv_mp_reader *r, kv_mp_obj *o)
{
	if (r->p < r->end) {
		unsigned b = *r->p;
		o->n = 0;
		if (b <= 0x7f) {
			o->kind = KV_MP_UINT;
			o->v.u = b;
			r->p++;
			return true;
		}
		if (b >= 0x80 && b <= 0x9f) { /* fixmap, fixarray */
			o->kind = b <= 0x8f ? KV_MP_MAP : KV_MP_ARRAY;
			o->n = b & 0x0f;
			r->p++;
			return true;
		}
		if (b == 0xc0) {
			o->kind = KV_MP_NIL;
			r->p++;
			return true;
		}
		/* a fixstr whose bytes are all there; one that is cut short
		 * goes the long way, to be called bad there */
		if (b >= 0xa0 && b <= 0xbf && (size_t)(r->end - r->p) > (b & 0x1f)) {
			o->kind = KV_MP_STR;
			o->n = b & 0x1f;
			o->v.ptr = (const char *)r->p + 1;
			r->p += 1 + o->n;
			return true;
		}
	}
	return kv_mp_next_any(r, o);
}

/* Skips the elements of container o, just read at nesting level `level`
 * (the containers around it).  False when they are bad, or (too_deep)
 * when a container inside would be opened at level KV_MP_MAX_DEPTH. */
bool kv_mp_skip_elements(kv_mp_reader *r, const kv_mp_obj *o, unsigned level);

/* Whether a container may be opened at `level`: sets too_deep if not. */
static inline bool kv_mp_may_open(kv_mp_reader *r, unsigned level)
{
	if (level < KV_MP_MAX_DEPTH)
		return true;
	r->too_deep = true;
	return false;
}

#endif
