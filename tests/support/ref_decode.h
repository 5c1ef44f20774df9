/* SPDX-License-Identifier: Apache-2.0 */
/* The reference decoder over msgpack-c (ref_decode.c says why it is kept):
 * kv_decode's contract, on msgpack-c's object tree. */
#ifndef REF_DECODE_H
#define REF_DECODE_H

#include "kv_decode.h"

typedef struct ref_decoder ref_decoder;

ref_decoder *ref_decoder_new(void);
void ref_decoder_free(ref_decoder *d);
/* As kv_decode; nesting deeper than msgpack-c's stack returns MKV_ENOMEM
 * (msgpack-c reports it as lack of memory). */
int ref_decode(ref_decoder *d, const mkv_frame *frames, size_t n_frames, kv_batch *out);

#endif
