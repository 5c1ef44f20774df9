/* SPDX-License-Identifier: Apache-2.0 */
/* Decoder rules, one table row each: start from a spec- or upstream-shaped
 * event, change one thing, and check what the decoder makes of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "kv_decode.h"
#include "support/msgbuild.h"

#include <cmocka.h> /* last: with UNIT_TESTING it redefines malloc */

#define BACKEND "mooncake-master-1"

/* --- mutators: each changes one field of a default event --- */
static void m_none(ev_spec *e)
{
	(void)e;
}
static void m_no_event_type(ev_spec *e)
{
	ev_del(e, "event_type");
}
static void m_nil_event_type(ev_spec *e)
{
	ev_set(e, NIL("event_type"));
}
static void m_bad_event_type(ev_spec *e)
{
	ev_set(e, STR("event_type", "updated"));
}
static void m_int_event_type(ev_spec *e)
{
	ev_set(e, UINT("event_type", 1));
}
/* event_type is authoritative: a good legacy type does not rescue a bad one. */
static void m_bad_event_type_good_legacy(ev_spec *e)
{
	ev_set(e, STR("event_type", "Stored"));
	ev_set(e, STR("type", "BlockStored"));
}
static void m_only_legacy_stored(ev_spec *e)
{
	ev_del(e, "event_type");
	ev_set(e, STR("type", "BlockStored"));
}
static void m_only_legacy_removed(ev_spec *e)
{
	ev_del(e, "event_type");
	ev_set(e, STR("type", "BlockRemoved"));
}
static void m_only_legacy_cleared(ev_spec *e)
{
	ev_del(e, "event_type");
	ev_set(e, STR("type", "AllBlocksCleared"));
}
static void m_only_legacy_unknown(ev_spec *e)
{
	ev_del(e, "event_type");
	ev_set(e, STR("type", "BlockUpdated"));
}
static void m_neither_type(ev_spec *e)
{
	ev_del(e, "event_type");
	ev_del(e, "type");
}
/* event_type wins over a contradicting legacy field. */
static void m_types_disagree(ev_spec *e)
{
	ev_set(e, STR("type", "BlockRemoved"));
}
static void m_no_tenant(ev_spec *e)
{
	ev_del(e, "tenant_id");
}
static void m_nil_tenant(ev_spec *e)
{
	ev_set(e, NIL("tenant_id"));
}
static void m_int_tenant(ev_spec *e)
{
	ev_set(e, UINT("tenant_id", 7));
}
static void m_no_backend(ev_spec *e)
{
	ev_del(e, "backend_id");
}
static void m_array_backend(ev_spec *e)
{
	ev_set(e, (fv){.name = "backend_id", .kind = FV_EMPTY_ARRAY});
}
static void m_no_medium(ev_spec *e)
{
	ev_del(e, "medium");
}
static void m_nil_medium(ev_spec *e)
{
	ev_set(e, NIL("medium"));
}
static void m_int_medium(ev_spec *e)
{
	ev_set(e, UINT("medium", 1));
}
static void m_medium_CPU(ev_spec *e)
{
	ev_set(e, STR("medium", "CPU"));
}
static void m_medium_Disk(ev_spec *e)
{
	ev_set(e, STR("medium", "Disk"));
}
static void m_medium_nvme(ev_spec *e)
{
	ev_set(e, STR("medium", "nvme"));
}
static void m_medium_empty(ev_spec *e)
{
	ev_set(e, STR("medium", ""));
}
static void m_medium_cpu_prefix(ev_spec *e)
{
	ev_set(e, STR("medium", "cpux"));
}
static void m_no_key(ev_spec *e)
{
	ev_del(e, "object_key");
}
static void m_nil_key(ev_spec *e)
{
	ev_set(e, NIL("object_key"));
}
static void m_int_key(ev_spec *e)
{
	ev_set(e, UINT("object_key", 42));
}
static void m_bin_key(ev_spec *e)
{
	ev_set(e, BIN("object_key", "raw"));
}
static void m_negative_event_id(ev_spec *e)
{
	ev_set(e, INT("event_id", -1));
}
static void m_string_event_id(ev_spec *e)
{
	ev_set(e, STR("event_id", "1"));
}
static void m_no_event_id(ev_spec *e)
{
	ev_del(e, "event_id");
}
static void m_big_event_id(ev_spec *e)
{
	ev_set(e, UINT("event_id", UINT64_MAX));
}
static void m_extra_fields(ev_spec *e)
{
	ev_set(e, STR("future_field", "x"));
	ev_set(e, (fv){.name = "nested", .kind = FV_EMPTY_MAP});
	ev_set(e, (fv){.name = "flag", .kind = FV_BOOL});
}
/* Fields we do not use are not validated: a strange lora_name is no reason
 * to lose an object. */
static void m_odd_unused_fields(ev_spec *e)
{
	ev_set(e, UINT("lora_name", 3));
	ev_set(e, STR("dp_rank", "zero"));
	ev_set(e, INT("block_size", -5));
}
/* cleared is envelope-only: a stray medium or key is ignored, not applied. */
static void m_cleared_with_medium(ev_spec *e)
{
	ev_set(e, STR("medium", "nvme"));
}
/* Field order does not matter. */
static void m_reversed(ev_spec *e)
{
	for (int i = 0, j = e->n - 1; i < j; i++, j--) {
		fv t = e->f[i];
		e->f[i] = e->f[j];
		e->f[j] = t;
	}
}

struct ev_case {
	const char *name;
	enum ev_flavour fl;
	const char *type, *medium, *key;
	void (*mut)(ev_spec *);
	enum mkv_reason want;
	enum mkv_event_type want_type;
	unsigned want_medium;
	bool want_key;
};

#define OK_STORED(m)  MKV_R_OK, MKV_EV_STORED, (m), true
#define OK_REMOVED(m) MKV_R_OK, MKV_EV_REMOVED, (m), true
#define OK_CLEARED    MKV_R_OK, MKV_EV_CLEARED, 0, false
#define REJ(r)        (r), 0, 0, false

static const struct ev_case ev_cases[] = {
	{"spec stored", EV_SPEC, "stored", "cpu", "k1", m_none, OK_STORED(MKV_MEDIUM_CPU)},
	{"spec stored disk", EV_SPEC, "stored", "disk", "k1", m_none, OK_STORED(MKV_MEDIUM_DISK)},
	{"spec removed", EV_SPEC, "removed", "disk", "k1", m_none, OK_REMOVED(MKV_MEDIUM_DISK)},
	{"spec cleared", EV_SPEC, "cleared", NULL, NULL, m_none, OK_CLEARED},
	{"spec no legacy stored", EV_SPEC_NO_LEGACY, "stored", "cpu", "k", m_none, OK_STORED(MKV_MEDIUM_CPU)},
	{"spec no legacy cleared", EV_SPEC_NO_LEGACY, "cleared", NULL, NULL, m_none, OK_CLEARED},
	{"upstream stored", EV_UPSTREAM, "stored", "cpu", "42", m_none, OK_STORED(MKV_MEDIUM_CPU)},
	{"upstream removed", EV_UPSTREAM, "removed", "cpu", "42", m_none, OK_REMOVED(MKV_MEDIUM_CPU)},
	{"any field order", EV_UPSTREAM, "stored", "disk", "k", m_reversed, OK_STORED(MKV_MEDIUM_DISK)},
	{"unknown fields ignored", EV_SPEC, "stored", "cpu", "k", m_extra_fields, OK_STORED(MKV_MEDIUM_CPU)},
	{"unused fields not validated", EV_SPEC, "stored", "cpu", "k", m_odd_unused_fields, OK_STORED(MKV_MEDIUM_CPU)},
	{"legacy only stored", EV_SPEC, "stored", "cpu", "k", m_only_legacy_stored, OK_STORED(MKV_MEDIUM_CPU)},
	{"legacy only removed", EV_SPEC, "stored", "cpu", "k", m_only_legacy_removed, OK_REMOVED(MKV_MEDIUM_CPU)},
	{"legacy only cleared", EV_SPEC, "cleared", NULL, NULL, m_only_legacy_cleared, OK_CLEARED},
	{"nil event_type falls back to legacy", EV_SPEC, "stored", "cpu", "k", m_nil_event_type,
	 OK_STORED(MKV_MEDIUM_CPU)},
	{"event_type wins over legacy", EV_SPEC, "stored", "cpu", "k", m_types_disagree, OK_STORED(MKV_MEDIUM_CPU)},
	{"legacy unknown", EV_SPEC, "stored", "cpu", "k", m_only_legacy_unknown, REJ(MKV_R_UNKNOWN_EVENT_TYPE)},
	{"no type at all", EV_SPEC, "stored", "cpu", "k", m_neither_type, REJ(MKV_R_MISSING_FIELD)},
	{"no type, no legacy", EV_SPEC_NO_LEGACY, "stored", "cpu", "k", m_no_event_type, REJ(MKV_R_MISSING_FIELD)},
	{"unknown event_type", EV_SPEC, "stored", "cpu", "k", m_bad_event_type, REJ(MKV_R_UNKNOWN_EVENT_TYPE)},
	{"bad event_type not rescued", EV_SPEC, "stored", "cpu", "k", m_bad_event_type_good_legacy,
	 REJ(MKV_R_UNKNOWN_EVENT_TYPE)},
	{"event_type not a string", EV_SPEC, "stored", "cpu", "k", m_int_event_type, REJ(MKV_R_FIELD_TYPE)},
	{"missing tenant", EV_SPEC, "stored", "cpu", "k", m_no_tenant, REJ(MKV_R_MISSING_FIELD)},
	{"nil tenant", EV_SPEC, "stored", "cpu", "k", m_nil_tenant, REJ(MKV_R_MISSING_FIELD)},
	{"int tenant", EV_SPEC, "stored", "cpu", "k", m_int_tenant, REJ(MKV_R_FIELD_TYPE)},
	{"missing backend", EV_SPEC, "removed", "cpu", "k", m_no_backend, REJ(MKV_R_MISSING_FIELD)},
	{"array backend", EV_SPEC, "removed", "cpu", "k", m_array_backend, REJ(MKV_R_FIELD_TYPE)},
	{"cleared missing tenant", EV_SPEC, "cleared", NULL, NULL, m_no_tenant, REJ(MKV_R_MISSING_FIELD)},
	{"missing medium", EV_SPEC, "stored", "cpu", "k", m_no_medium, REJ(MKV_R_MISSING_FIELD)},
	{"nil medium on stored", EV_UPSTREAM, "stored", "cpu", "k", m_nil_medium, REJ(MKV_R_MISSING_FIELD)},
	{"int medium", EV_SPEC, "stored", "cpu", "k", m_int_medium, REJ(MKV_R_FIELD_TYPE)},
	{"medium CPU", EV_UPSTREAM, "stored", "cpu", "k", m_medium_CPU, OK_STORED(MKV_MEDIUM_CPU)},
	{"medium Disk", EV_UPSTREAM, "stored", "cpu", "k", m_medium_Disk, OK_STORED(MKV_MEDIUM_DISK)},
	{"medium nvme", EV_UPSTREAM, "stored", "cpu", "k", m_medium_nvme, REJ(MKV_R_UNKNOWN_MEDIUM)},
	{"medium empty string", EV_UPSTREAM, "removed", "cpu", "k", m_medium_empty, REJ(MKV_R_UNKNOWN_MEDIUM)},
	{"medium with suffix", EV_UPSTREAM, "stored", "cpu", "k", m_medium_cpu_prefix, REJ(MKV_R_UNKNOWN_MEDIUM)},
	{"cleared ignores medium", EV_SPEC, "cleared", NULL, NULL, m_cleared_with_medium, OK_CLEARED},
	{"keyless stored", EV_UPSTREAM, "stored", "cpu", "42", m_no_key, MKV_R_OK, MKV_EV_STORED, MKV_MEDIUM_CPU,
	 false},
	{"nil key is keyless", EV_SPEC, "removed", "cpu", "42", m_nil_key, MKV_R_OK, MKV_EV_REMOVED, MKV_MEDIUM_CPU,
	 false},
	{"int key", EV_SPEC, "stored", "cpu", "42", m_int_key, REJ(MKV_R_FIELD_TYPE)},
	{"bin key", EV_SPEC, "stored", "cpu", "42", m_bin_key, OK_STORED(MKV_MEDIUM_CPU)},
	{"negative event_id", EV_SPEC, "stored", "cpu", "k", m_negative_event_id, REJ(MKV_R_FIELD_TYPE)},
	{"string event_id", EV_SPEC, "stored", "cpu", "k", m_string_event_id, REJ(MKV_R_FIELD_TYPE)},
	{"no event_id still applies", EV_SPEC, "stored", "cpu", "k", m_no_event_id, OK_STORED(MKV_MEDIUM_CPU)},
	{"u64 max event_id", EV_SPEC, "stored", "cpu", "k", m_big_event_id, OK_STORED(MKV_MEDIUM_CPU)},
};

static void decode_one(const ev_spec *e, kv_batch *b, kv_decoder *d, msg *m)
{
	msg_build(m, 1, 1795982104612, e, 1);
	assert_int_equal(kv_decode(d, m->frames, 3, b), MKV_OK);
	assert_int_equal(b->reject, MKV_R_OK);
	assert_int_equal(b->n_events, 1);
}

static void test_event_table(void **state)
{
	(void)state;
	kv_decoder *d = kv_decoder_new();
	msg m;
	msg_init(&m);
	for (size_t i = 0; i < sizeof(ev_cases) / sizeof(ev_cases[0]); i++) {
		const struct ev_case *c = &ev_cases[i];
		ev_spec e;
		kv_batch b;
		ev_init(&e, c->fl, c->type, 9, BACKEND, "tenant-a", c->medium, c->key);
		c->mut(&e);
		decode_one(&e, &b, d, &m);
		const kv_event *ev = &b.events[0];
		print_message("case: %s\n", c->name);
		assert_string_equal(mkv_reason_name(ev->reject), mkv_reason_name(c->want));
		if (c->want != MKV_R_OK)
			continue;
		assert_int_equal(ev->type, c->want_type);
		assert_int_equal(ev->medium, c->want_medium);
		assert_int_equal(ev->has_key, c->want_key);
		assert_int_equal(ev->tenant_id.len, 8);
		assert_memory_equal(ev->tenant_id.ptr, "tenant-a", 8);
		assert_memory_equal(ev->backend_id.ptr, BACKEND, strlen(BACKEND));
	}
	msg_destroy(&m);
	kv_decoder_free(d);
}

static void test_event_fields_zero_copy(void **state)
{
	(void)state;
	kv_decoder *d = kv_decoder_new();
	msg m;
	msg_init(&m);
	ev_spec e;
	kv_batch b;
	static const char key[] = "nul\0inside";
	ev_init(&e, EV_UPSTREAM, "stored", 77, BACKEND, "t", "cpu", NULL);
	ev_set(&e, STRN("object_key", key, sizeof(key) - 1));
	decode_one(&e, &b, d, &m);
	const kv_event *ev = &b.events[0];
	assert_true(ev->has_event_id);
	assert_int_equal(ev->event_id, 77);
	assert_int_equal(ev->object_key.len, sizeof(key) - 1);
	assert_memory_equal(ev->object_key.ptr, key, sizeof(key) - 1);
	/* zero copy: the key points into the payload frame */
	const char *p = m.frames[2].data;
	assert_true(ev->object_key.ptr > p && ev->object_key.ptr < p + m.frames[2].len);
	assert_int_equal(b.seq, 1);
	assert_int_equal(b.timestamp_ms, 1795982104612);
	msg_destroy(&m);
	kv_decoder_free(d);
}

/* --- whole-message rejections --- */

static void expect_message(kv_decoder *d, const mkv_frame *f, size_t n, enum mkv_reason want, bool want_seq)
{
	kv_batch b;
	assert_int_equal(kv_decode(d, f, n, &b), MKV_OK);
	assert_string_equal(mkv_reason_name(b.reject), mkv_reason_name(want));
	assert_int_equal(b.has_seq, want_seq);
	if (want != MKV_R_OK)
		assert_int_equal(b.n_events, 0);
}

static void test_frames(void **state)
{
	(void)state;
	kv_decoder *d = kv_decoder_new();
	msg m;
	msg_init(&m);
	ev_spec e;
	ev_init(&e, EV_SPEC, "stored", 1, BACKEND, "t", "cpu", "k");
	msg_build(&m, 5, 1, &e, 1);

	expect_message(d, m.frames, 3, MKV_R_OK, true);
	expect_message(d, m.frames, 2, MKV_R_FRAME_COUNT, false);
	expect_message(d, m.frames, 1, MKV_R_FRAME_COUNT, false);
	mkv_frame four[4] = {m.frames[0], m.frames[1], m.frames[2], m.frames[2]};
	expect_message(d, four, 4, MKV_R_FRAME_COUNT, false);

	mkv_frame f[3] = {m.frames[0], {m.seq_be, 7}, m.frames[2]};
	expect_message(d, f, 3, MKV_R_SEQUENCE_LENGTH, false);
	unsigned char nine[9] = {0};
	f[1] = (mkv_frame){nine, 9};
	expect_message(d, f, 3, MKV_R_SEQUENCE_LENGTH, false);

	/* A non-empty topic is accepted: only its presence is required. */
	f[0] = (mkv_frame){"kv", 2};
	f[1] = m.frames[1];
	expect_message(d, f, 3, MKV_R_OK, true);

	/* Sequence is big-endian. */
	static const unsigned char be[8] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
	f[1] = (mkv_frame){be, 8};
	kv_batch b;
	kv_decode(d, f, 3, &b);
	assert_int_equal(b.seq, 0x0102030405060708ull);
	msg_destroy(&m);
	kv_decoder_free(d);
}

struct raw_case {
	const char *name;
	const char *bytes;
	size_t len;
	enum mkv_reason want;
};

#define RAW(n, s, r)                   \
	{                              \
		n, s, sizeof(s) - 1, r \
	}

static const struct raw_case raw_cases[] = {
	RAW("empty payload", "", MKV_R_MSGPACK_PARSE),
	RAW("truncated array", "\x93\x01", MKV_R_MSGPACK_PARSE),
	RAW("reserved byte 0xc1", "\xc1", MKV_R_MSGPACK_PARSE),
	RAW("trailing bytes", "\x93\x01\x90\x00\x00", MKV_R_MSGPACK_PARSE),
	RAW("str claims more than there is",
	    "\x93\x01\x91\x81\xa8"
	    "event_id"
	    "\xdb\xff\xff\xff\xff",
	    MKV_R_MSGPACK_PARSE),
	RAW("array of 2^32-1 elements, 3 bytes", "\x93\x01\xdd\xff\xff\xff\xff", MKV_R_MSGPACK_PARSE),
	RAW("not an array", "\x81\xa1\x61\x01", MKV_R_PAYLOAD_SHAPE),
	RAW("array of 2", "\x92\x01\x90", MKV_R_PAYLOAD_SHAPE),
	RAW("timestamp is a string", "\x93\xa1\x31\x90\x00", MKV_R_PAYLOAD_SHAPE),
	RAW("timestamp above int64", "\x93\xcf\xff\xff\xff\xff\xff\xff\xff\xff\x90\x00", MKV_R_PAYLOAD_SHAPE),
	RAW("events not an array", "\x93\x01\x80\x00", MKV_R_PAYLOAD_SHAPE),
	RAW("dp_rank a string", "\x93\x01\x90\xa1\x30", MKV_R_PAYLOAD_SHAPE),
	RAW("empty batch", "\x93\x01\x90\x00", MKV_R_OK),
	RAW("nil dp_rank", "\x93\x01\x90\xc0", MKV_R_OK),
	RAW("negative timestamp", "\x93\xff\x90\x00", MKV_R_OK),
	RAW("uint64 timestamp (upstream)", "\x93\xcf\x00\x00\x01\xa2\x28\xc5\x1a\x24\x90\x00", MKV_R_OK),
	RAW("extra trailing element", "\x94\x01\x90\x00\xa1\x78", MKV_R_OK),
};

static void test_payload_table(void **state)
{
	(void)state;
	kv_decoder *d = kv_decoder_new();
	msg m;
	msg_init(&m);
	for (size_t i = 0; i < sizeof(raw_cases) / sizeof(raw_cases[0]); i++) {
		print_message("case: %s\n", raw_cases[i].name);
		msg_set_raw_payload(&m, 3, raw_cases[i].bytes, raw_cases[i].len);
		expect_message(d, m.frames, 3, raw_cases[i].want, true);
	}
	msg_destroy(&m);
	kv_decoder_free(d);
}

/* Nesting deeper than msgpack-c's stack is an error, never a crash. */
static void test_deep_nesting(void **state)
{
	(void)state;
	unsigned char buf[4096];
	size_t n = 0;
	buf[n++] = 0x93;
	buf[n++] = 0x01;
	for (int i = 0; i < 1000; i++)
		buf[n++] = 0x91;
	buf[n++] = 0x00;
	buf[n++] = 0x00;
	kv_decoder *d = kv_decoder_new();
	msg m;
	msg_init(&m);
	msg_set_raw_payload(&m, 1, buf, n);
	kv_batch b;
	kv_decode(d, m.frames, 3, &b);
	assert_int_not_equal(b.reject, MKV_R_OK);
	msg_destroy(&m);
	kv_decoder_free(d);
}

/* A bad event inside a batch is reported alone; its neighbours decode. */
static void test_bad_event_in_batch(void **state)
{
	(void)state;
	ev_spec e[4];
	ev_init(&e[0], EV_UPSTREAM, "stored", 1, BACKEND, "t", "cpu", "a");
	ev_init(&e[1], EV_UPSTREAM, "stored", 2, BACKEND, "t", "tape", "b");
	ev_init(&e[2], EV_UPSTREAM, "removed", 3, BACKEND, "t", "disk", "c");
	ev_init(&e[3], EV_UPSTREAM, "stored", 4, BACKEND, "t", "cpu", "d");
	ev_del(&e[3], "tenant_id");
	kv_decoder *d = kv_decoder_new();
	msg m;
	msg_init(&m);
	msg_build(&m, 1, 1, e, 4);
	kv_batch b;
	kv_decode(d, m.frames, 3, &b);
	assert_int_equal(b.reject, MKV_R_OK);
	assert_int_equal(b.n_events, 4);
	assert_int_equal(b.events[0].reject, MKV_R_OK);
	assert_int_equal(b.events[1].reject, MKV_R_UNKNOWN_MEDIUM);
	assert_int_equal(b.events[2].reject, MKV_R_OK);
	assert_int_equal(b.events[3].reject, MKV_R_MISSING_FIELD);
	/* event ids survive a rejection, for continuity tracking */
	assert_true(b.events[1].has_event_id);
	assert_int_equal(b.events[3].event_id, 4);
	msg_destroy(&m);
	kv_decoder_free(d);
}

/* An event that is not a map is an event_shape rejection; the batch lives. */
static void test_event_not_a_map(void **state)
{
	(void)state;
	kv_decoder *d = kv_decoder_new();
	msg m;
	msg_init(&m);
	/* [1, [5, "x", {}, nil], 0] */
	msg_set_raw_payload(&m, 1, "\x93\x01\x94\x05\xa1\x78\x80\xc0\x00", 9);
	kv_batch b;
	kv_decode(d, m.frames, 3, &b);
	assert_int_equal(b.reject, MKV_R_OK);
	assert_int_equal(b.n_events, 4);
	assert_int_equal(b.events[0].reject, MKV_R_EVENT_SHAPE);
	assert_int_equal(b.events[1].reject, MKV_R_EVENT_SHAPE);
	assert_int_equal(b.events[2].reject, MKV_R_MISSING_FIELD);
	assert_int_equal(b.events[3].reject, MKV_R_EVENT_SHAPE);
	msg_destroy(&m);
	kv_decoder_free(d);
}

/* Up to 64 events is the spec; more must be accepted, not failed. */
static void test_large_batches(void **state)
{
	(void)state;
	static ev_spec e[300];
	kv_decoder *d = kv_decoder_new();
	msg m;
	msg_init(&m);
	for (int i = 0; i < 300; i++)
		ev_init(&e[i], EV_UPSTREAM, "stored", (uint64_t)i + 1, BACKEND, "t", "cpu", "k");
	size_t sizes[] = {0, 1, 15, 16, 64, 65, 300};
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		kv_batch b;
		msg_build(&m, s + 1, 1, e, sizes[s]);
		kv_decode(d, m.frames, 3, &b);
		assert_int_equal(b.reject, MKV_R_OK);
		assert_int_equal(b.n_events, sizes[s]);
		if (sizes[s])
			assert_int_equal(b.events[sizes[s] - 1].event_id, sizes[s]);
	}
	msg_destroy(&m);
	kv_decoder_free(d);
}

/* Integers in every width and signedness where the value fits. */
static void test_integer_widths(void **state)
{
	(void)state;
	/* event_id as positive fixint, uint8, uint16, uint32, uint64, and as
	 * int8..int64 encodings of non-negative values (msgpack-c decodes those
	 * as positive too). */
	static const struct {
		const char *bytes;
		size_t len;
		uint64_t want;
	} ids[] = {
		{"\x05", 1, 5},
		{"\xcc\xff", 2, 255},
		{"\xcd\x01\x00", 3, 256},
		{"\xce\x00\x01\x00\x00", 5, 65536},
		{"\xcf\x00\x00\x00\x01\x00\x00\x00\x00", 9, 4294967296ull},
		{"\xd0\x05", 2, 5},
		{"\xd1\x01\x00", 3, 256},
		{"\xd2\x00\x01\x00\x00", 5, 65536},
		{"\xd3\x00\x00\x00\x01\x00\x00\x00\x00", 9, 4294967296ull},
	};
	kv_decoder *d = kv_decoder_new();
	msg m;
	msg_init(&m);
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		unsigned char buf[256];
		size_t n = 0;
		const char *head = "\x93\x01\x91\x84";
		memcpy(buf, head, 4);
		n = 4;
		memcpy(buf + n,
		       "\xa8"
		       "event_id",
		       9);
		n += 9;
		memcpy(buf + n, ids[i].bytes, ids[i].len);
		n += ids[i].len;
		static const char rest[] = "\xaa"
					   "event_type"
					   "\xa7"
					   "cleared"
					   "\xa9"
					   "tenant_id"
					   "\xa1"
					   "t"
					   "\xaa"
					   "backend_id"
					   "\xa1"
					   "b"
					   "\x00";
		memcpy(buf + n, rest, sizeof(rest) - 1);
		n += sizeof(rest) - 1;
		msg_set_raw_payload(&m, 1, buf, n);
		kv_batch b;
		kv_decode(d, m.frames, 3, &b);
		assert_int_equal(b.reject, MKV_R_OK);
		assert_int_equal(b.events[0].reject, MKV_R_OK);
		assert_int_equal(b.events[0].event_id, ids[i].want);
	}
	msg_destroy(&m);
	kv_decoder_free(d);
}

static void test_names(void **state)
{
	(void)state;
	/* every reason has a distinct label value */
	for (int i = 0; i < MKV_R__COUNT; i++)
		for (int j = i + 1; j < MKV_R__COUNT; j++)
			assert_string_not_equal(mkv_reason_name(i), mkv_reason_name(j));
	assert_string_equal(mkv_reason_name(MKV_R__COUNT), "invalid");
	assert_string_equal(mkv_event_type_name(MKV_EV_CLEARED), "cleared");
	assert_string_equal(mkv_placement_name(MKV_PLACE_CPU_AND_DISK), "cpu_and_disk");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_table),     cmocka_unit_test(test_event_fields_zero_copy),
		cmocka_unit_test(test_frames),          cmocka_unit_test(test_payload_table),
		cmocka_unit_test(test_deep_nesting),    cmocka_unit_test(test_bad_event_in_batch),
		cmocka_unit_test(test_event_not_a_map), cmocka_unit_test(test_large_batches),
		cmocka_unit_test(test_integer_widths),  cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests_name("decode", tests, NULL, NULL);
}
