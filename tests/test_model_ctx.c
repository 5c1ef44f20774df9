/* SPDX-License-Identifier: Apache-2.0 */
/* The model context a publisher stamps on every event (kv_decode.h,
 * kv_model_ctx): what each publisher's events carry, how a change is
 * counted, what is no evidence, and the cap on its label values.  The
 * captures are the ground truth for what upstream stamps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kv_decode.h"
#include "support/msgbuild.h"
#include "support/zmqcap.h"

#include <cmocka.h> /* last: with UNIT_TESTING it redefines malloc */

#define BACKEND "mooncake-master-1"

/* An event of the guide's shape with a configured context. */
static void guide_event(ev_spec *e, uint64_t id, const char *model, const char *lora)
{
	ev_init(e, EV_SPEC, "stored", id, BACKEND, "t", "cpu", "k");
	ev_set(e, model ? STR("model_name", model) : NIL("model_name"));
	ev_set(e, lora ? STR("lora_name", lora) : NIL("lora_name"));
	ev_set(e, UINT("block_size", 16));
	ev_set(e, STR("additional_salt", "s3cr3t-namespace"));
	ev_set(e, UINT("dp_rank", 3));
}

/* Decodes one message of n events at seq; returns the batch's reject. */
static enum mkv_reason decode(kv_decoder *d, msg *m, uint64_t seq, const ev_spec *e, size_t n)
{
	kv_batch b;
	msg_build(m, seq, 1795982104612, e, n);
	assert_int_equal(kv_decode(d, m->frames, 3, &b), MKV_OK);
	return b.reject;
}

/* Nothing before the first event; then what it carried, as configured. */
static void test_guide_context(void **state)
{
	(void)state;
	kv_decoder *d = kv_decoder_new();
	msg m;
	msg_init(&m);
	const kv_model_ctx *c = kv_decoder_model(d);
	assert_false(c->seen);
	ev_spec e;
	guide_event(&e, 1, "meta-llama/Llama-3.1-8B-Instruct", "sql-adapter");
	assert_int_equal(decode(d, &m, 1, &e, 1), MKV_R_OK);
	assert_true(c->seen);
	assert_true(c->has_model && c->has_lora && c->has_block_size && c->has_dp_rank && c->has_salt);
	assert_string_equal(c->model_name, "meta-llama/Llama-3.1-8B-Instruct");
	assert_string_equal(c->lora_name, "sql-adapter");
	assert_int_equal(c->block_size, 16);
	assert_int_equal(c->dp_rank, 3);
	assert_int_equal(c->changes, 0); /* the first is no change */
	assert_int_equal(c->truncated, 0);
	msg_destroy(&m);
	kv_decoder_free(d);
}

/* Every change between consecutive usable events counts, inside a message
 * and across messages; the same context again does not; the latest wins. */
static void test_changes_counted(void **state)
{
	(void)state;
	kv_decoder *d = kv_decoder_new();
	msg m;
	msg_init(&m);
	ev_spec e[4];
	for (int i = 0; i < 3; i++)
		guide_event(&e[i], (uint64_t)i + 1, "model-a", NULL);
	assert_int_equal(decode(d, &m, 1, e, 3), MKV_R_OK);
	const kv_model_ctx *c = kv_decoder_model(d);
	assert_int_equal(c->changes, 0);
	assert_false(c->has_lora);
	assert_string_equal(c->lora_name, "");

	/* a -> b -> a -> b within one message: three changes, b the latest */
	guide_event(&e[0], 4, "model-b", NULL);
	guide_event(&e[1], 5, "model-a", NULL);
	guide_event(&e[2], 6, "model-b", NULL);
	assert_int_equal(decode(d, &m, 2, e, 3), MKV_R_OK);
	assert_int_equal(c->changes, 3);
	assert_string_equal(c->model_name, "model-b");

	/* the next message begins where the last ended: b again is no change */
	guide_event(&e[0], 7, "model-b", NULL);
	assert_int_equal(decode(d, &m, 3, e, 1), MKV_R_OK);
	assert_int_equal(c->changes, 3);

	/* each field is part of the context: one of them alone is a change */
	guide_event(&e[0], 8, "model-b", NULL);
	ev_set(&e[0], UINT("dp_rank", 4));
	guide_event(&e[1], 9, "model-b", NULL);
	ev_set(&e[1], UINT("dp_rank", 4));
	ev_set(&e[1], UINT("block_size", 32));
	guide_event(&e[2], 10, "model-b", "lora-x");
	ev_set(&e[2], UINT("dp_rank", 4));
	ev_set(&e[2], UINT("block_size", 32));
	guide_event(&e[3], 11, "model-b", "lora-x");
	ev_set(&e[3], UINT("dp_rank", 4));
	ev_set(&e[3], UINT("block_size", 32));
	ev_set(&e[3], STR("additional_salt", "another-namespace")); /* not shown, still a change */
	assert_int_equal(decode(d, &m, 4, e, 4), MKV_R_OK);
	assert_int_equal(c->changes, 7);
	assert_int_equal(c->dp_rank, 4);
	assert_int_equal(c->block_size, 32);
	assert_string_equal(c->lora_name, "lora-x");
	assert_true(c->has_salt);
	/* the salt gone: a change, and shown as absent */
	ev_set(&e[3], NIL("additional_salt"));
	assert_int_equal(decode(d, &m, 5, &e[3], 1), MKV_R_OK);
	assert_int_equal(c->changes, 8);
	assert_false(c->has_salt);
	msg_destroy(&m);
	kv_decoder_free(d);
}

/* A message rejected whole, and a rejected event, are no evidence: neither
 * moves the context nor counts a change. */
static void test_rejected_is_no_evidence(void **state)
{
	(void)state;
	kv_decoder *d = kv_decoder_new();
	msg m;
	msg_init(&m);
	ev_spec e[2];
	guide_event(&e[0], 1, "model-a", NULL);
	assert_int_equal(decode(d, &m, 1, e, 1), MKV_R_OK);
	const kv_model_ctx *c = kv_decoder_model(d);

	/* a good event of model-b, then bytes after the payload: rejected whole */
	guide_event(&e[0], 2, "model-b", NULL);
	msg_build(&m, 2, 1795982104612, e, 1);
	unsigned char buf[1024];
	size_t n = m.frames[2].len;
	assert_true(n < sizeof(buf));
	memcpy(buf, m.frames[2].data, n);
	buf[n++] = 0x00;
	msg_set_raw_payload(&m, 2, buf, n);
	kv_batch b;
	assert_int_equal(kv_decode(d, m.frames, 3, &b), MKV_OK);
	assert_int_equal(b.reject, MKV_R_MSGPACK_PARSE);
	assert_string_equal(c->model_name, "model-a");
	assert_int_equal(c->changes, 0);

	/* an event rejected for its medium carries model-b: not taken */
	guide_event(&e[0], 3, "model-b", NULL);
	ev_set(&e[0], STR("medium", "tape"));
	guide_event(&e[1], 4, "model-a", NULL);
	assert_int_equal(decode(d, &m, 3, e, 2), MKV_R_OK);
	assert_string_equal(c->model_name, "model-a");
	assert_int_equal(c->changes, 0);
	msg_destroy(&m);
	kv_decoder_free(d);
}

/* A field of another type than the guide's is none; the event still
 * applies (a strange lora_name is no reason to lose an object). */
static void test_other_types_are_none(void **state)
{
	(void)state;
	kv_decoder *d = kv_decoder_new();
	msg m;
	msg_init(&m);
	ev_spec e;
	guide_event(&e, 1, NULL, NULL);
	ev_set(&e, UINT("model_name", 7));
	ev_set(&e, (fv){.name = "lora_name", .kind = FV_EMPTY_ARRAY});
	ev_set(&e, STR("block_size", "16"));
	ev_set(&e, INT("dp_rank", -1));
	ev_set(&e, UINT("additional_salt", 9));
	kv_batch b;
	msg_build(&m, 1, 1795982104612, &e, 1);
	assert_int_equal(kv_decode(d, m.frames, 3, &b), MKV_OK);
	assert_int_equal(b.events[0].reject, MKV_R_OK);
	const kv_model_ctx *c = kv_decoder_model(d);
	assert_true(c->seen);
	assert_false(c->has_model || c->has_lora || c->has_block_size || c->has_dp_rank || c->has_salt);
	assert_string_equal(c->model_name, "");
	/* a bin model name is a string (as for keys) */
	ev_set(&e, BIN("model_name", "bin-model"));
	assert_int_equal(decode(d, &m, 2, &e, 1), MKV_R_OK);
	assert_string_equal(c->model_name, "bin-model");
	assert_int_equal(c->changes, 1);
	msg_destroy(&m);
	kv_decoder_free(d);
}

/* The cap: a longer name is cut to KV_MODEL_VALUE_MAX bytes at a
 * character's start and counted once per context taken; the same long name
 * again is no change, nor is one that differs only beyond the cap (its
 * label could not differ); NUL shows as an invalid byte. */
static void test_cap(void **state)
{
	(void)state;
	kv_decoder *d = kv_decoder_new();
	msg m;
	msg_init(&m);
	char longname[KV_MODEL_VALUE_MAX + 45];
	memset(longname, 'x', sizeof(longname));
	/* a two-byte character (U+00E9) across the cap: its bytes at MAX-1, MAX */
	longname[KV_MODEL_VALUE_MAX - 1] = (char)0xc3;
	longname[KV_MODEL_VALUE_MAX] = (char)0xa9;
	ev_spec e;
	guide_event(&e, 1, NULL, NULL);
	ev_set(&e, STRN("model_name", longname, sizeof(longname)));
	assert_int_equal(decode(d, &m, 1, &e, 1), MKV_R_OK);
	const kv_model_ctx *c = kv_decoder_model(d);
	assert_int_equal(strlen(c->model_name), KV_MODEL_VALUE_MAX - 1);
	assert_memory_equal(c->model_name, longname, KV_MODEL_VALUE_MAX - 1);
	assert_int_equal(c->truncated, 1);
	assert_int_equal(decode(d, &m, 2, &e, 1), MKV_R_OK);
	assert_int_equal(c->truncated, 1);
	assert_int_equal(c->changes, 0);
	longname[sizeof(longname) - 1] = 'y'; /* beyond the cap */
	ev_set(&e, STRN("model_name", longname, sizeof(longname)));
	assert_int_equal(decode(d, &m, 3, &e, 1), MKV_R_OK);
	assert_int_equal(c->changes, 0);
	/* exactly the cap: whole, not cut */
	ev_set(&e, STRN("model_name", longname + 45, KV_MODEL_VALUE_MAX));
	assert_int_equal(decode(d, &m, 4, &e, 1), MKV_R_OK);
	assert_int_equal(strlen(c->model_name), KV_MODEL_VALUE_MAX);
	assert_int_equal(c->truncated, 1);
	assert_int_equal(c->changes, 1);
	/* NUL inside */
	ev_set(&e, STRN("lora_name", "a\0b", 3));
	assert_int_equal(decode(d, &m, 5, &e, 1), MKV_R_OK);
	static const char shown[] = {'a', (char)0xff, 'b', '\0'};
	assert_memory_equal(c->lora_name, shown, sizeof(shown));
	msg_destroy(&m);
	kv_decoder_free(d);
}

/* Every event of a capture, decoded in order: the context at the end. */
static const kv_model_ctx *capture_context(kv_decoder *d, const char *name, size_t *messages)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/upstream/%s", FIXTURES_DIR, name);
	zmqcap *cap = zmqcap_open(path);
	assert_non_null(cap);
	mkv_frame f[ZMQCAP_MAX_FRAMES];
	size_t n;
	*messages = 0;
	while (zmqcap_next(cap, f, &n) == 1) {
		kv_batch b;
		assert_int_equal(kv_decode(d, f, n, &b), MKV_OK);
		assert_int_equal(b.reject, MKV_R_OK);
		(*messages)++;
	}
	zmqcap_close(cap);
	return kv_decoder_model(d);
}

/* Mooncake main (3b5a594) stamps nothing: model_name, block_size,
 * additional_salt, lora_name and the event's dp_rank are nil in every event
 * (tests/fixtures/upstream/README.md, "Value types observed"); dev/conductor
 * (19ffa6e) stamps its configured dp_rank, 0 in its capture, and nil for
 * the rest (conductor.decoded.jsonl.gz).  Neither ever changes. */
static void test_captures(void **state)
{
	(void)state;
	static const char *const main_captures[] = {"basic.zmqcap",        "tenants_media.zmqcap", "no_legacy.zmqcap",
						    "restart.zmqcap",      "edge.zmqcap",          "drops.zmqcap",
						    "no_object_key.zmqcap"};
	for (size_t i = 0; i < sizeof(main_captures) / sizeof(main_captures[0]); i++) {
		kv_decoder *d = kv_decoder_new();
		size_t n;
		const kv_model_ctx *c = capture_context(d, main_captures[i], &n);
		print_message("capture %s\n", main_captures[i]);
		assert_true(n > 0);
		assert_true(c->seen);
		assert_false(c->has_model || c->has_lora || c->has_block_size || c->has_dp_rank || c->has_salt);
		assert_int_equal(c->changes, 0);
		kv_decoder_free(d);
	}
	kv_decoder *d = kv_decoder_new();
	size_t n;
	const kv_model_ctx *c = capture_context(d, "conductor.zmqcap.gz", &n);
	assert_int_equal(n, 1627);
	assert_true(c->has_dp_rank);
	assert_int_equal(c->dp_rank, 0);
	assert_false(c->has_model || c->has_lora || c->has_block_size || c->has_salt);
	assert_int_equal(c->changes, 0);
	kv_decoder_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guide_context),
		cmocka_unit_test(test_changes_counted),
		cmocka_unit_test(test_rejected_is_no_evidence),
		cmocka_unit_test(test_other_types_are_none),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_captures),
	};
	return cmocka_run_group_tests_name("model_ctx", tests, NULL, NULL);
}
