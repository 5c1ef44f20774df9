/* SPDX-License-Identifier: Apache-2.0 */
/* Records of a checksummed byte stream (kv_pack.h). */
#include <stdlib.h>
#include <string.h>

#include "kv_pack.h"

#define HEADER 5

enum mkv_err kv_pack_w_init(kv_pack_w *w, kv_pack_sink sink, void *arg)
{
	*w = (kv_pack_w){.sink = sink, .arg = arg, .cap = 2 * (KV_PACK_MAX_RECORD + HEADER) + 16, .rec_at = SIZE_MAX};
	w->buf = malloc(w->cap);
	w->xxh = XXH3_createState();
	if (!w->buf || !w->xxh) {
		kv_pack_w_free(w);
		return MKV_ENOMEM;
	}
	XXH3_64bits_reset(w->xxh);
	return MKV_OK;
}

void kv_pack_w_free(kv_pack_w *w)
{
	free(w->buf);
	if (w->xxh)
		XXH3_freeState(w->xxh);
	w->buf = NULL;
	w->xxh = NULL;
}

static void flush(kv_pack_w *w, size_t upto)
{
	if (!upto)
		return;
	XXH3_64bits_update(w->xxh, w->buf, upto);
	if (!w->err && w->sink(w->arg, w->buf, upto) != 0)
		w->err = MKV_EINVAL;
	w->bytes += upto;
	memmove(w->buf, w->buf + upto, w->len - upto);
	w->len -= upto;
}

/* Room for n more bytes of the open record: past KV_PACK_MAX_RECORD it is
 * a writer's bug, reported once and the bytes dropped. */
static unsigned char *room(kv_pack_w *w, size_t n)
{
	if (w->err)
		return NULL;
	if (w->len + n - w->rec_at > KV_PACK_MAX_RECORD + HEADER) {
		w->err = MKV_ELIMIT;
		return NULL;
	}
	unsigned char *p = w->buf + w->len;
	w->len += n;
	return p;
}

void kv_pack_begin(kv_pack_w *w, unsigned type)
{
	if (w->len > KV_PACK_MAX_RECORD) /* the buffer always has room for one whole record */
		flush(w, w->len);
	w->rec_at = w->len;
	unsigned char *p = w->buf + w->len;
	w->len += HEADER;
	p[0] = (unsigned char)type;
}

void kv_pack_end(kv_pack_w *w)
{
	size_t n = w->len - w->rec_at - HEADER;
	unsigned char *p = w->buf + w->rec_at + 1;
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(n >> (8 * i));
	w->rec_at = SIZE_MAX;
	w->records++;
}

void kv_pack_u64(kv_pack_w *w, uint64_t v)
{
	unsigned char tmp[10];
	size_t n = 0;
	do {
		tmp[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	unsigned char *p = room(w, n);
	if (p)
		memcpy(p, tmp, n);
}

void kv_pack_i64(kv_pack_w *w, int64_t v)
{
	kv_pack_u64(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void kv_pack_fixed64(kv_pack_w *w, uint64_t v)
{
	unsigned char *p = room(w, 8);
	for (int i = 0; p && i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

void kv_pack_f64(kv_pack_w *w, double v)
{
	uint64_t b;
	memcpy(&b, &v, sizeof(b));
	kv_pack_fixed64(w, b);
}

void kv_pack_raw(kv_pack_w *w, const void *src, size_t n)
{
	unsigned char *p = room(w, n);
	if (p && n)
		memcpy(p, src, n);
}

void kv_pack_bytes(kv_pack_w *w, const void *src, size_t n)
{
	kv_pack_u64(w, n);
	kv_pack_raw(w, src, n);
}

enum mkv_err kv_pack_finish(kv_pack_w *w)
{
	flush(w, w->len);
	uint64_t sum = XXH3_64bits_digest(w->xxh), records = w->records;
	kv_pack_begin(w, KV_PACK_TRAILER);
	unsigned char *p = room(w, 16);
	for (int i = 0; p && i < 8; i++) {
		p[i] = (unsigned char)(sum >> (8 * i));
		p[8 + i] = (unsigned char)(records >> (8 * i));
	}
	kv_pack_end(w);
	if (!w->err && w->sink(w->arg, w->buf, w->len) != 0)
		w->err = MKV_EINVAL;
	w->bytes += w->len;
	w->len = 0;
	return w->err;
}

uint64_t kv_unpack_u64(kv_pack_r *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			break;
		unsigned char b = *r->p++;
		if (shift == 63 && b > 1)
			break; /* more than 64 bits */
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

int64_t kv_unpack_i64(kv_pack_r *r)
{
	uint64_t u = kv_unpack_u64(r);
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

uint64_t kv_unpack_fixed64(kv_pack_r *r)
{
	if (r->end - r->p < 8) {
		r->bad = true;
		return 0;
	}
	uint64_t b = 0;
	for (int i = 0; i < 8; i++)
		b |= (uint64_t)r->p[i] << (8 * i);
	r->p += 8;
	return b;
}

double kv_unpack_f64(kv_pack_r *r)
{
	uint64_t b = kv_unpack_fixed64(r);
	double v;
	memcpy(&v, &b, sizeof(v));
	return v;
}

uint64_t kv_unpack_max(kv_pack_r *r, uint64_t max)
{
	uint64_t v = kv_unpack_u64(r);
	if (v > max) {
		r->bad = true;
		return 0;
	}
	return v;
}

bool kv_unpack_bool(kv_pack_r *r)
{
	return kv_unpack_max(r, 1) == 1;
}

mkv_str kv_unpack_bytes(kv_pack_r *r, size_t max)
{
	uint64_t n = kv_unpack_max(r, max);
	if (r->bad || (uint64_t)(r->end - r->p) < n) {
		r->bad = true;
		return (mkv_str){"", 0};
	}
	mkv_str s = {(const char *)r->p, (uint32_t)n};
	r->p += n;
	return s;
}

enum mkv_err kv_pack_in_init(kv_pack_in *in, uint64_t max_bytes, kv_pack_record_fn fn, void *arg)
{
	*in = (kv_pack_in){.fn = fn, .arg = arg, .max_bytes = max_bytes};
	in->rec = malloc(HEADER + KV_PACK_MAX_RECORD);
	in->xxh = XXH3_createState();
	if (!in->rec || !in->xxh) {
		kv_pack_in_free(in);
		return MKV_ENOMEM;
	}
	XXH3_64bits_reset(in->xxh);
	return MKV_OK;
}

void kv_pack_in_free(kv_pack_in *in)
{
	free(in->rec);
	if (in->xxh)
		XXH3_freeState(in->xxh);
	in->rec = NULL;
	in->xxh = NULL;
}

static enum kv_pack_error trailer(kv_pack_in *in)
{
	if (in->need != HEADER + 16)
		return KV_PACK_MALFORMED;
	uint64_t sum = 0, records = 0;
	for (int i = 0; i < 8; i++) {
		sum |= (uint64_t)in->rec[HEADER + i] << (8 * i);
		records |= (uint64_t)in->rec[HEADER + 8 + i] << (8 * i);
	}
	if (sum != XXH3_64bits_digest(in->xxh) || records != in->records)
		return KV_PACK_CHECKSUM;
	in->ended = true;
	return KV_PACK_OK;
}

/* A whole record is in: the trailer closes the stream; any other goes to
 * the caller once it is part of the checksum. */
static enum kv_pack_error record(kv_pack_in *in)
{
	unsigned type = in->rec[0];
	if (type == KV_PACK_TRAILER)
		return trailer(in);
	XXH3_64bits_update(in->xxh, in->rec, in->need);
	in->records++;
	kv_pack_r r = {in->rec + HEADER, in->rec + in->need, false};
	return in->fn(in->arg, type, &r);
}

enum kv_pack_error kv_pack_in_feed(kv_pack_in *in, const void *src, size_t n)
{
	const unsigned char *p = src;
	if (in->err)
		return in->err;
	if (in->bytes + n > in->max_bytes)
		return in->err = KV_PACK_TOO_LARGE;
	in->bytes += n;
	while (n) {
		if (in->ended)
			return in->err = KV_PACK_MALFORMED; /* bytes after the trailer */
		size_t want = (in->need ? in->need : HEADER) - in->have;
		size_t take = n < want ? n : want;
		memcpy(in->rec + in->have, p, take);
		in->have += take;
		p += take;
		n -= take;
		if (!in->need && in->have == HEADER) {
			uint32_t len = 0;
			for (int i = 0; i < 4; i++)
				len |= (uint32_t)in->rec[1 + i] << (8 * i);
			if (len > KV_PACK_MAX_RECORD)
				return in->err = KV_PACK_MALFORMED;
			in->need = HEADER + len;
		}
		if (in->need && in->have == in->need) {
			enum kv_pack_error e = record(in);
			if (e != KV_PACK_OK)
				return in->err = e;
			in->have = in->need = 0;
		}
	}
	return KV_PACK_OK;
}

enum kv_pack_error kv_pack_in_end(kv_pack_in *in)
{
	if (in->err)
		return in->err;
	return in->ended ? KV_PACK_OK : (in->err = KV_PACK_TRUNCATED);
}
