/* SPDX-License-Identifier: Apache-2.0 */
/* Shorthands for feeding hand-built events through a stream in tests. */
#ifndef FEED_H
#define FEED_H

#include "kv_stream.h"
#include "msgbuild.h"

#define B "mooncake-master-1"

static inline mkv_str S(const char *s)
{
	return (mkv_str){s, (uint32_t)strlen(s)};
}

/* One message with n events at sequence seq; returns kv_stream_ingest's code. */
/* One message received at now_ms (and published then). */
static inline int feed_at(kv_stream *st, uint64_t seq, const ev_spec *e, size_t n, int64_t now_ms)
{
	msg m;
	msg_init(&m);
	msg_build(&m, seq, now_ms, e, n);
	int rc = kv_stream_ingest(st, m.frames, 3, now_ms, NULL);
	msg_destroy(&m);
	return rc;
}

static inline int feed(kv_stream *st, uint64_t seq, const ev_spec *e, size_t n)
{
	return feed_at(st, seq, e, n, 1795982104612);
}

static inline const kv_tenant *tenant(const kv_stream *st, const char *t)
{
	return kv_state_find_tenant(kv_stream_state(st), S(B), S(t));
}

static inline unsigned media_of(const kv_stream *st, const char *t, const char *key)
{
	const kv_tenant *tn = tenant(st, t);
	return tn ? kv_state_object_media(kv_stream_state(st), tn, S(key)) : 0;
}

#endif
