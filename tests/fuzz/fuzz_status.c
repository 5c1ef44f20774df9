/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: a stream message and a /kv_events/status body ->
 * kv_master_parse, then what the poller does with the outcome.  The first
 * three bytes make the message (its number and first event id), the rest is
 * the body; the tracker and the master keep their history across inputs. */
#include <stddef.h>

#include "kv_master_status.h"
#include "kv_stream.h"

/* The stream side is a real sequence tracker fed numbers from the input,
 * so that the positions handed to the loss accounting are ones a stream
 * can have. */
static kv_stream_pos position(const kv_seqtrack *t, uint64_t messages)
{
	kv_stream_pos pos;
	kv_stream_position_of_seq(t, &pos);
	pos.messages = messages;
	pos.last_receive_ms = 1;
	return pos;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static kv_master m; /* keeps its history across inputs, as a poller does */
	static kv_seqtrack t;
	static uint64_t messages;
	static double now = 1e9;
	if (size < 3)
		return 0;
	/* first a message on the stream, then a poll */
	uint64_t seq = (uint64_t)data[1] | (uint64_t)data[2] << 8;
	if (kv_seq_observe(&t, seq, data[0] & 1, data[2]) != MKV_SEQ_DUPLICATE && (data[0] & 1))
		kv_seq_observe_event_id(&t, data[2], false);
	messages++;
	data += 3, size -= 3;
	long http = size && data[0] % 7 == 0 ? 503 : 200;
	kv_master_status st;
	enum mkv_poll_error err = kv_master_parse((const char *)data, size, &st);
	now += 1 + (size ? data[0] % 5 : 0);
	kv_stream_pos pos = position(&t, messages);
	kv_master_record(&m, now, 0.01, http == 503 ? MKV_POLL_HTTP_STATUS : err, http, err == MKV_POLL_OK ? &st : NULL,
			 &pos);
	uint64_t upto, eid;
	if (err == MKV_POLL_OK && http == 200 && kv_master_tail(&m, &pos, now + 100, 5, &upto, &eid))
		kv_seq_tail_lost(&t, upto, eid);
	if (m.drop_ratio < 0 || m.drop_ratio > 1 || m.win_n > KV_DROP_WINDOW_SAMPLES)
		__builtin_trap();
	/* the books balance after every valid poll */
	const kv_loss *l = &m.loss;
	if (err == MKV_POLL_OK && http == 200 && l->queue + l->transport + l->unattributed != t.missing)
		__builtin_trap();
	return 0;
}
