/* SPDX-License-Identifier: Apache-2.0 */
/* Records of a checksummed byte stream (the state handover,
 * mooncake_kv/handover.h).  A stream is records, each one byte of type,
 * four of length (little-endian) and its payload, closed by a trailer
 * record (KV_PACK_TRAILER) that holds the XXH3-64 of every byte before it
 * and the number of records.  Payloads are varints (unsigned LEB128),
 * zigzagged signed varints, raw little-endian doubles and length-prefixed
 * bytes.
 *
 * Writing goes into one small buffer that is handed to a sink whenever it
 * fills: a stream of any size is written with bounded memory.  Reading
 * takes bytes in pieces of any size, gathers one record at a time (at most
 * KV_PACK_MAX_RECORD bytes) and hands it whole to the caller; the caller
 * must not trust anything it read until kv_pack_in_end says the trailer
 * matched. */
#ifndef KV_PACK_H
#define KV_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <xxhash.h>

#include "kv_common.h"

#define KV_PACK_TRAILER    0xff
#define KV_PACK_MAX_RECORD (256u * 1024)

/* Takes n bytes; returns 0, or anything else to stop the writer. */
typedef int (*kv_pack_sink)(void *arg, const void *p, size_t n);

typedef struct kv_pack_w {
	kv_pack_sink sink;
	void *arg;
	unsigned char *buf; /* room for what is pending and one whole record more */
	size_t len, cap;
	size_t rec_at;    /* where the open record's header is, or SIZE_MAX */
	enum mkv_err err; /* the first failure: the sink's (MKV_EINVAL), or MKV_ELIMIT for a record too long */
	uint64_t bytes;   /* handed to the sink */
	uint64_t records;
	XXH3_state_t *xxh;
} kv_pack_w;

/* Returns 0 or MKV_ENOMEM. */
enum mkv_err kv_pack_w_init(kv_pack_w *w, kv_pack_sink sink, void *arg);
void kv_pack_w_free(kv_pack_w *w);
void kv_pack_begin(kv_pack_w *w, unsigned type);
void kv_pack_u64(kv_pack_w *w, uint64_t v);
void kv_pack_i64(kv_pack_w *w, int64_t v);
void kv_pack_f64(kv_pack_w *w, double v);
/* Eight bytes as they are: a hash gains nothing from a varint. */
void kv_pack_fixed64(kv_pack_w *w, uint64_t v);
void kv_pack_bytes(kv_pack_w *w, const void *p, size_t n);
/* Bytes as they are, without their length: a record's payload copied. */
void kv_pack_raw(kv_pack_w *w, const void *p, size_t n);
void kv_pack_end(kv_pack_w *w);
/* Writes the trailer and hands everything to the sink.  Returns MKV_OK or
 * the first failure. */
enum mkv_err kv_pack_finish(kv_pack_w *w);

/* One record's payload, read front to back.  A read past its end or a
 * malformed varint sets bad and returns 0. */
typedef struct kv_pack_r {
	const unsigned char *p, *end;
	bool bad;
} kv_pack_r;

uint64_t kv_unpack_u64(kv_pack_r *r);
int64_t kv_unpack_i64(kv_pack_r *r);
double kv_unpack_f64(kv_pack_r *r);
uint64_t kv_unpack_fixed64(kv_pack_r *r);
/* A u64 that must be at most max (else bad). */
uint64_t kv_unpack_max(kv_pack_r *r, uint64_t max);
bool kv_unpack_bool(kv_pack_r *r);
/* Length-prefixed bytes, borrowed from the record (at most max long). */
mkv_str kv_unpack_bytes(kv_pack_r *r, size_t max);
/* Every byte read, nothing malformed. */
static inline bool kv_unpack_done(const kv_pack_r *r)
{
	return !r->bad && r->p == r->end;
}

/* Why a stream was refused. */
enum kv_pack_error {
	KV_PACK_OK,
	KV_PACK_TOO_LARGE, /* more bytes than the limit */
	KV_PACK_MALFORMED, /* a record too long, of no known shape, or after the trailer */
	KV_PACK_CHECKSUM,  /* the trailer does not match what came before it */
	KV_PACK_TRUNCATED, /* it ended before its trailer */
	KV_PACK_REFUSED,   /* the caller refused a record */
	KV_PACK_VERSION,   /* the caller found its records of another format version */
	KV_PACK_NOMEM,
};

/* Called with each whole record before the trailer; returns KV_PACK_OK,
 * or why to stop. */
typedef enum kv_pack_error (*kv_pack_record_fn)(void *arg, unsigned type, kv_pack_r *payload);

typedef struct kv_pack_in {
	kv_pack_record_fn fn;
	void *arg;
	uint64_t max_bytes;
	uint64_t bytes, records;
	unsigned char *rec; /* the record being gathered */
	size_t have, need;  /* bytes of it held; its whole size once the header is in (0: not yet) */
	bool ended;         /* the trailer matched */
	enum kv_pack_error err;
	XXH3_state_t *xxh;
} kv_pack_in;

enum mkv_err kv_pack_in_init(kv_pack_in *in, uint64_t max_bytes, kv_pack_record_fn fn, void *arg);
void kv_pack_in_free(kv_pack_in *in);
/* Takes the next n bytes.  Returns KV_PACK_OK, or why the stream is
 * refused (and then ignores everything after). */
enum kv_pack_error kv_pack_in_feed(kv_pack_in *in, const void *p, size_t n);
/* The stream ended: KV_PACK_OK only when its trailer matched. */
enum kv_pack_error kv_pack_in_end(kv_pack_in *in);

#endif
