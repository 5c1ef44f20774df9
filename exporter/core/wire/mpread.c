/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "kv_mpread.h"

static uint64_t be(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

static bool bad(kv_mp_reader *r)
{
	r->bad = true;
	return false;
}

/* Whether n more bytes are there. */
static bool has(const kv_mp_reader *r, size_t n)
{
	return (size_t)(r->end - r->p) >= n;
}

/* A length field of lenbytes, then (but for a container) that many bytes. */
static bool sized(kv_mp_reader *r, kv_mp_obj *o, enum kv_mp_kind kind, int lenbytes)
{
	if (!has(r, (size_t)lenbytes))
		return bad(r);
	o->kind = kind;
	o->n = (uint32_t)be(r->p, lenbytes);
	r->p += lenbytes;
	if (kind == KV_MP_ARRAY || kind == KV_MP_MAP)
		return true;
	size_t body = (size_t)o->n + (kind == KV_MP_EXT); /* ext: a type byte first */
	if (!has(r, body))
		return bad(r);
	o->v.ptr = (const char *)r->p + (kind == KV_MP_EXT);
	r->p += body;
	return true;
}

static bool fixed(kv_mp_reader *r, size_t n)
{
	if (!has(r, n))
		return bad(r);
	r->p += n;
	return true;
}

static bool signed_int(kv_mp_reader *r, kv_mp_obj *o, int bytes)
{
	if (!has(r, (size_t)bytes))
		return bad(r);
	uint64_t u = be(r->p, bytes);
	r->p += bytes;
	int shift = 64 - 8 * bytes; /* sign-extend */
	o->v.i = (int64_t)(u << shift) >> shift;
	o->kind = o->v.i < 0 ? KV_MP_NEG : KV_MP_UINT;
	return true;
}

bool kv_mp_next_any(kv_mp_reader *r, kv_mp_obj *o)
{
	if (r->p >= r->end)
		return bad(r);
	unsigned b = *r->p++;
	o->n = 0;
	if (b <= 0x7f) {
		o->kind = KV_MP_UINT;
		o->v.u = b;
		return true;
	}
	if (b >= 0xe0) {
		o->kind = KV_MP_NEG;
		o->v.i = (int8_t)b;
		return true;
	}
	if (b >= 0xa0 && b <= 0xbf) { /* fixstr: the keys and most values */
		o->kind = KV_MP_STR;
		o->n = b & 0x1f;
		o->v.ptr = (const char *)r->p;
		return fixed(r, o->n);
	}
	if (b <= 0x8f) {
		o->kind = KV_MP_MAP;
		o->n = b & 0x0f;
		return true;
	}
	if (b <= 0x9f) {
		o->kind = KV_MP_ARRAY;
		o->n = b & 0x0f;
		return true;
	}
	switch (b) {
	case 0xc0:
		o->kind = KV_MP_NIL;
		return true;
	case 0xc2:
	case 0xc3:
		o->kind = KV_MP_BOOL;
		o->v.u = b & 1;
		return true;
	case 0xc4:
	case 0xc5:
	case 0xc6:
		return sized(r, o, KV_MP_BIN, 1 << (b - 0xc4));
	case 0xc7:
	case 0xc8:
	case 0xc9:
		return sized(r, o, KV_MP_EXT, 1 << (b - 0xc7));
	case 0xca:
	case 0xcb:
		o->kind = KV_MP_FLOAT;
		return fixed(r, b == 0xca ? 4 : 8);
	case 0xcc:
	case 0xcd:
	case 0xce:
	case 0xcf: {
		int bytes = 1 << (b - 0xcc);
		if (!has(r, (size_t)bytes))
			return bad(r);
		o->kind = KV_MP_UINT;
		o->v.u = be(r->p, bytes);
		r->p += bytes;
		return true;
	}
	case 0xd0:
	case 0xd1:
	case 0xd2:
	case 0xd3:
		return signed_int(r, o, 1 << (b - 0xd0));
	case 0xd4:
	case 0xd5:
	case 0xd6:
	case 0xd7:
	case 0xd8: /* fixext 1..16: a type byte, then the data */
		o->kind = KV_MP_EXT;
		o->n = 1u << (b - 0xd4);
		o->v.ptr = (const char *)r->p + 1;
		return fixed(r, 1 + (size_t)o->n);
	case 0xd9:
	case 0xda:
	case 0xdb:
		return sized(r, o, KV_MP_STR, 1 << (b - 0xd9));
	case 0xdc:
	case 0xdd:
		return sized(r, o, KV_MP_ARRAY, 2 << (b - 0xdc));
	case 0xde:
	case 0xdf:
		return sized(r, o, KV_MP_MAP, 2 << (b - 0xde));
	default: /* 0xc1: never used */
		return bad(r);
	}
}

bool kv_mp_skip_elements(kv_mp_reader *r, const kv_mp_obj *o, unsigned level)
{
	/* left[k]: objects still to skip at level + 1 + k */
	uint64_t left[KV_MP_MAX_DEPTH + 1];
	unsigned top = 0;
	left[0] = o->kind == KV_MP_MAP ? 2 * (uint64_t)o->n : o->n;
	for (;;) {
		while (left[top] == 0) {
			if (top == 0)
				return true;
			top--;
		}
		left[top]--;
		kv_mp_obj c;
		if (!kv_mp_next(r, &c))
			return false;
		if (c.kind != KV_MP_ARRAY && c.kind != KV_MP_MAP)
			continue;
		if (!kv_mp_may_open(r, level + 1 + top))
			return false;
		uint64_t n = c.kind == KV_MP_MAP ? 2 * (uint64_t)c.n : c.n;
		if (n)
			left[++top] = n;
	}
}
