/* SPDX-License-Identifier: Apache-2.0 */
/* Conformance: replay the upstream wire captures through decoder + state.
 *
 * Two independent oracles:
 *  - the truth file's final_state, computed from the calls the publisher
 *    was given (not from the wire);
 *  - a reference model, written here with plain strings, fed from the
 *    capture as decoded by Python msgpack (NAME.decoded.jsonl), which gives
 *    the per-tenant event, duplicate and unknown-removal counts too.
 * The reference model is itself checked against final_state first.
 * The lives the captures show are test_capture_lives.c's, but for Mooncake
 * main since #3818's (test_main3818), whose truth has every figure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>

#include "kv_master_status.h"
#include "kv_stream.h"
#include "support/captures.h"

#include <cmocka.h>

static mkv_str key_from_json(const char *k, size_t len, char *buf, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < len && n < cap; n++) {
		if (i + 3 <= len && memcmp(k + i, NUL_SYMBOL, 3) == 0) {
			buf[n] = '\0';
			i += 3;
		} else {
			buf[n] = k[i++];
		}
	}
	return (mkv_str){buf, (uint32_t)n};
}

static size_t key_to_json(const char *k, size_t len, char *buf, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < len && n + 3 < cap; i++) {
		if (k[i] == '\0') {
			memcpy(buf + n, NUL_SYMBOL, 3);
			n += 3;
		} else {
			buf[n++] = k[i];
		}
	}
	return n;
}

/* What the spec's normalisation makes of a medium string: a bit, or 0 for
 * an event the exporter must reject. */
static unsigned medium_bit(const json_t *m)
{
	if (!json_is_string(m))
		return 0;
	const char *s = json_string_value(m);
	if (strcasecmp(s, "cpu") == 0)
		return MKV_MEDIUM_CPU;
	if (strcasecmp(s, "disk") == 0)
		return MKV_MEDIUM_DISK;
	return 0;
}

/* --- the reference model: tenant -> {keys: {key: mask}, counters} --- */

struct model {
	json_t *tenants; /* "backend\x1ftenant" -> tenant object */
	size_t rejected_medium_unknown, rejected_medium_missing, keyless, events;
};

static json_t *model_tenant(struct model *m, const json_t *ev)
{
	char id[512];
	snprintf(id, sizeof(id), "%s\x1f%s", json_string_value(json_object_get(ev, "backend_id")),
		 json_string_value(json_object_get(ev, "tenant_id")));
	json_t *t = json_object_get(m->tenants, id);
	if (!t) {
		t = json_pack("{s:o,s:i,s:i,s:i,s:i,s:i}", "keys", json_object(), "stored", 0, "removed", 0, "cleared",
			      0, "dup", 0, "unknown", 0);
		json_object_set_new(m->tenants, id, t);
	}
	return t;
}

static void bump(json_t *t, const char *field)
{
	json_object_set_new(t, field, json_integer(json_integer_value(json_object_get(t, field)) + 1));
}

static void model_apply(struct model *m, const json_t *ev)
{
	const char *type = json_string_value(json_object_get(ev, "event_type"));
	m->events++;
	if (strcmp(type, "cleared") == 0) {
		json_t *t = model_tenant(m, ev);
		json_object_clear(json_object_get(t, "keys"));
		bump(t, "cleared");
		return;
	}
	const json_t *med = json_object_get(ev, "medium");
	unsigned bit = medium_bit(med);
	if (!bit) {
		if (json_is_string(med))
			m->rejected_medium_unknown++;
		else
			m->rejected_medium_missing++;
		return;
	}
	const json_t *key = json_object_get(ev, "object_key");
	if (!key) {
		m->keyless++;
		return;
	}
	json_t *t = model_tenant(m, ev);
	json_t *keys = json_object_get(t, "keys");
	char kb[1024];
	size_t kn = key_to_json(json_string_value(key), json_string_length(key), kb, sizeof(kb));
	json_t *cur = json_object_getn(keys, kb, kn);
	unsigned was = cur ? (unsigned)json_integer_value(cur) : 0;
	bool stored = strcmp(type, "stored") == 0;
	unsigned now = stored ? was | bit : was & ~bit;
	bump(t, stored ? "stored" : "removed");
	if (now == was)
		bump(t, stored ? "dup" : "unknown");
	if (now)
		json_object_setn_new(keys, kb, kn, json_integer(now));
	else if (cur)
		json_object_deln(keys, kb, kn);
}

static void model_load(struct model *m, const char *scenario)
{
	char path[512];
	snprintf(path, sizeof(path), DIR "%s.decoded.jsonl", scenario);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	memset(m, 0, sizeof(*m));
	m->tenants = json_object();
	for (;;) {
		json_error_t err;
		int c;
		while ((c = fgetc(f)) == '\n')
			;
		if (c == EOF)
			break;
		ungetc(c, f);
		/* one record a line: read one value, leave the rest of the file */
		json_t *rec = json_loadf(f, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL | JSON_DISABLE_EOF_CHECK, &err);
		if (!rec)
			fail_msg("%s: %s", path, err.text);
		const json_t *events = json_array_get(json_object_get(rec, "payload"), 1);
		size_t i;
		const json_t *ev;
		json_array_foreach(events, i, ev) model_apply(m, ev);
		json_decref(rec);
	}
	fclose(f);
}

/* Every key of a final_state-shaped object has exactly the expected media
 * in the exporter's state, and each tenant holds no other object. */
static void expect_final_state(const kv_stream *st, const json_t *final)
{
	const char *backend;
	const json_t *tenants;
	json_object_foreach((json_t *) final, backend, tenants)
	{
		const char *tname;
		const json_t *keys;
		json_object_foreach((json_t *)tenants, tname, keys)
		{
			mkv_str b = {backend, (uint32_t)strlen(backend)};
			mkv_str tn = {tname, (uint32_t)strlen(tname)};
			const kv_tenant *t = kv_state_find_tenant(kv_stream_state(st), b, tn);
			size_t live = 0;
			void *it = json_object_iter((json_t *)keys);
			for (; it; it = json_object_iter_next((json_t *)keys, it)) {
				char kb[1024];
				mkv_str key = key_from_json(json_object_iter_key(it), json_object_iter_key_len(it), kb,
							    sizeof(kb));
				const json_t *media = json_object_iter_value(it);
				unsigned want = 0;
				size_t i;
				const json_t *m;
				json_array_foreach(media, i, m) want |= medium_bit(m);
				unsigned got = t ? kv_state_object_media(kv_stream_state(st), t, key) : 0;
				if (got != want)
					fail_msg("%s/%s key '%.*s': media %u, want %u", backend, tname, (int)key.len,
						 key.ptr, got, want);
				live += want != 0;
			}
			assert_int_equal(t ? kv_tenant_objects(t) : 0, live);
		}
	}
}

/* The reference model and the exporter agree on every figure. */
static void expect_model(const kv_stream *st, const struct model *m)
{
	const char *id;
	const json_t *mt;
	assert_int_equal(kv_state_tenant_count(kv_stream_state(st)), json_object_size(m->tenants));
	json_object_foreach(m->tenants, id, mt)
	{
		const char *sep = strchr(id, '\x1f');
		mkv_str b = {id, (uint32_t)(sep - id)};
		mkv_str tn = {sep + 1, (uint32_t)strlen(sep + 1)};
		const kv_tenant *t = kv_state_find_tenant(kv_stream_state(st), b, tn);
		assert_non_null(t);
		const json_t *keys = json_object_get(mt, "keys");
		uint64_t place[MKV_PLACE__COUNT] = {0};
		void *it = json_object_iter((json_t *)keys);
		for (; it; it = json_object_iter_next((json_t *)keys, it)) {
			char kb[1024];
			mkv_str key = key_from_json(json_object_iter_key(it), json_object_iter_key_len(it), kb,
						    sizeof(kb));
			unsigned want = (unsigned)json_integer_value(json_object_iter_value(it));
			assert_int_equal(kv_state_object_media(kv_stream_state(st), t, key), want);
			place[mkv_placement_of(want)]++;
		}
		for (int p = 0; p < MKV_PLACE__COUNT; p++)
			assert_int_equal(t->counts.placement[p], place[p]);
		assert_int_equal(t->counts.events[MKV_EV_STORED], json_integer_value(json_object_get(mt, "stored")));
		assert_int_equal(t->counts.events[MKV_EV_REMOVED], json_integer_value(json_object_get(mt, "removed")));
		assert_int_equal(t->counts.events[MKV_EV_CLEARED], json_integer_value(json_object_get(mt, "cleared")));
		assert_int_equal(t->counts.stored_duplicates, json_integer_value(json_object_get(mt, "dup")));
		assert_int_equal(t->counts.removed_unknown, json_integer_value(json_object_get(mt, "unknown")));
	}
	const kv_stream_stats *ss = kv_stream_stats_of(st);
	assert_int_equal(ss->decode_errors[MKV_R_UNKNOWN_MEDIUM], m->rejected_medium_unknown);
	assert_int_equal(ss->decode_errors[MKV_R_MISSING_FIELD], m->rejected_medium_missing);
	assert_int_equal(ss->keyless_events, m->keyless);
}

/* Sequence facts against the truth file's capture block. */
static void expect_capture(const kv_stream *st, const json_t *cap)
{
	const json_t *gaps = json_object_get(cap, "seq_gaps");
	uint64_t missing = 0;
	size_t i;
	const json_t *g;
	json_array_foreach(gaps, i, g) missing += (uint64_t)json_number_value(json_object_get(g, "missing"));
	assert_int_equal(kv_stream_stats_of(st)->messages,
			 (uint64_t)json_number_value(json_object_get(cap, "messages")));
	assert_int_equal(kv_stream_seq(st)->gaps, json_array_size(gaps));
	assert_int_equal(kv_stream_seq(st)->missing, missing);
	assert_int_equal(kv_stream_seq(st)->resets, json_array_size(json_object_get(cap, "seq_resets")));
	assert_int_equal(kv_stream_seq(st)->duplicates, 0);
	assert_int_equal(kv_stream_seq(st)->last_seq, (uint64_t)json_number_value(json_object_get(cap, "seq_last")));
	assert_int_equal(kv_stream_seq(st)->event_ids_missing, 0); /* no transport loss in any capture */
	for (int r = MKV_R_FRAME_COUNT; r <= MKV_R_PAYLOAD_SHAPE; r++)
		assert_int_equal(kv_stream_stats_of(st)->decode_errors[r], 0);
}

static void run_scenario(const char *name)
{
	char file[128];
	mkv_budget budget;
	kv_stream *st;
	struct model m;

	snprintf(file, sizeof(file), "%s.truth.json", name);
	json_t *truth = load_json(file);
	model_load(&m, name);
	json_t *final = json_object_get(truth, "final_state_excluding_publisher_skipped_calls");
	if (!final)
		final = json_object_get(truth, "final_state");
	bool keyed = json_is_true(
		json_object_get(json_array_get(json_object_get(truth, "publisher_configs"), 0), "emit_object_key"));
	bool lossless = json_array_size(json_object_get(json_object_get(truth, "capture"), "seq_gaps")) == 0;

	snprintf(file, sizeof(file), "%s.zmqcap", name);
	st = replay(&budget, file);

	expect_capture(st, json_object_get(truth, "capture"));
	expect_model(st, &m);
	if (keyed && lossless) {
		/* without loss, the wire reproduces what the publisher was told */
		expect_final_state(st, final);
	}
	if (!keyed) {
		/* emit_object_key=false: every per-object event is keyless */
		assert_int_equal(kv_stream_stats_of(st)->keyless_events, m.events);
		assert_int_equal(kv_state_tenant_count(kv_stream_state(st)), 0);
	}
	if (!lossless) {
		/* nothing is exact after loss; the first tenant predates the first
		 * gap (a capture starts with a message), so it carries the reason */
		for (size_t i = 0; i < kv_state_tenant_count(kv_stream_state(st)); i++)
			assert_int_not_equal(kv_state_tenant_at(kv_stream_state(st), i)->stale, 0);
		assert_true(kv_state_tenant_at(kv_stream_state(st), 0)->stale & KV_STALE_GAP);
	}
	json_decref(m.tenants);
	json_decref(truth);
	kv_stream_free(st);
}

/* The reference model agrees with the calls' final state wherever the wire
 * can reproduce it: the oracle is sound before it judges the exporter. */
static void test_model_matches_truth(void **state)
{
	(void)state;
	static const char *const lossless[] = {"basic", "tenants_media", "no_legacy", "restart", "edge"};
	for (size_t s = 0; s < sizeof(lossless) / sizeof(lossless[0]); s++) {
		char file[128];
		struct model m;
		snprintf(file, sizeof(file), "%s.truth.json", lossless[s]);
		json_t *truth = load_json(file);
		model_load(&m, lossless[s]);
		json_t *final = json_object_get(truth, "final_state_excluding_publisher_skipped_calls");
		if (!final)
			final = json_object_get(truth, "final_state");
		const json_t *tenants = json_object_get(final, "mooncake-master-1");
		const char *tname;
		const json_t *keys;
		json_object_foreach((json_t *)tenants, tname, keys)
		{
			char id[256];
			snprintf(id, sizeof(id), "mooncake-master-1\x1f%s", tname);
			const json_t *mkeys = json_object_get(json_object_get(m.tenants, id), "keys");
			size_t live = 0;
			void *it = json_object_iter((json_t *)keys);
			for (; it; it = json_object_iter_next((json_t *)keys, it)) {
				unsigned want = 0;
				size_t i;
				const json_t *med;
				json_array_foreach(json_object_iter_value(it), i, med) want |= medium_bit(med);
				const json_t *got = json_object_getn(mkeys, json_object_iter_key(it),
								     json_object_iter_key_len(it));
				assert_int_equal(got ? json_integer_value(got) : 0, want);
				live += want != 0;
			}
			assert_int_equal(mkeys ? json_object_size(mkeys) : 0, live);
		}
		json_decref(m.tenants);
		json_decref(truth);
	}
}

static void test_basic(void **state)
{
	(void)state;
	run_scenario("basic");
}
static void test_tenants_media(void **state)
{
	(void)state;
	run_scenario("tenants_media");
}
static void test_no_legacy(void **state)
{
	(void)state;
	run_scenario("no_legacy");
}
static void test_no_object_key(void **state)
{
	(void)state;
	run_scenario("no_object_key");
}
static void test_drops(void **state)
{
	(void)state;
	run_scenario("drops");
}
static void test_restart(void **state)
{
	(void)state;
	run_scenario("restart");
}
static void test_edge(void **state)
{
	(void)state;
	run_scenario("edge");
}

static void test_volume(void **state)
{
	(void)state;
	mkv_budget budget;
	kv_stream *st;
	json_t *truth = load_json("volume.truth.json");
	json_t *final = load_json("volume.final_state.json");
	st = replay(&budget, "volume.zmqcap.gz");

	expect_capture(st, json_object_get(truth, "capture"));
	expect_final_state(st, final);
	size_t i;
	const json_t *sum;
	json_array_foreach(json_object_get(truth, "final_state_summary"), i, sum)
	{
		const json_t *b = json_object_get(sum, "backend_id"), *tn = json_object_get(sum, "tenant");
		const kv_tenant *t = kv_state_find_tenant(kv_stream_state(st), js(b), js(tn));
		assert_non_null(t);
		assert_int_equal(kv_tenant_objects(t), json_number_value(json_object_get(sum, "keys_present")));
		assert_int_equal(kv_tenant_on_medium(t, MKV_MEDIUM_CPU),
				 json_number_value(json_object_get(sum, "on_cpu")));
		assert_int_equal(kv_tenant_on_medium(t, MKV_MEDIUM_DISK),
				 json_number_value(json_object_get(sum, "on_disk")));
		assert_int_equal(t->counts.placement[MKV_PLACE_CPU_AND_DISK],
				 json_number_value(json_object_get(sum, "on_both")));
	}
	uint64_t stored = 0, removed = 0, applied = 0;
	const json_t *cc;
	json_array_foreach(json_object_get(truth, "call_counts"), i, cc)
	{
		uint64_t n = (uint64_t)json_number_value(json_object_get(cc, "count"));
		*(strcmp(json_string_value(json_object_get(cc, "kind")), "stored") == 0 ? &stored : &removed) += n;
	}
	for (size_t t = 0; t < kv_state_tenant_count(kv_stream_state(st)); t++) {
		applied += kv_state_tenant_at(kv_stream_state(st), t)->counts.events[MKV_EV_STORED];
		applied += kv_state_tenant_at(kv_stream_state(st), t)->counts.events[MKV_EV_REMOVED];
	}
	assert_int_equal(applied, stored + removed);
	assert_int_equal(stored + removed, (uint64_t)json_number_value(json_object_get(truth, "num_calls")));
	assert_int_equal(kv_stream_stats_of(st)->batch_events.count, 2686);
	json_decref(final);
	json_decref(truth);
	kv_stream_free(st);
}

/* What the master's /kv_events/status would answer after #3818 (the
 * publisher's GetStats(): the guide's five fields) tells the media dialect. */
static void expect_media_status(const json_t *stats)
{
	json_t *answer = json_object(); /* load_json read its counters as reals */
	const char *name;
	const json_t *v;
	json_object_foreach((json_t *)stats, name, v) json_object_set_new(
		answer, name,
		json_is_real(v) ? json_integer((json_int_t)json_real_value(v)) : json_incref((json_t *)v));
	char body[512]; /* not json_dumps: this file's free is cmocka's */
	size_t len = json_dumpb(answer, body, sizeof(body), JSON_COMPACT);
	kv_master_status st;
	assert_true(len > 0 && len < sizeof(body));
	assert_int_equal(json_object_size(answer), 5);
	assert_int_equal(kv_master_parse(body, len, &st), MKV_POLL_OK);
	assert_true(st.has_keyless && !st.has_unparsed);
	assert_int_equal(st.dialect, MKV_DIALECT_MEDIA);
	assert_int_equal(st.published_events, (uint64_t)json_number_value(json_object_get(stats, "published_events")));
	json_decref(answer);
}

/* Mooncake main since PR #3818: its real publisher (0d1884d6), driven as
 * master_service.cpp at 00390e6e calls it (tools/upstream/driver.cpp,
 * main3818), RemoveAll included, which publishes a cleared only when it
 * emptied the tenant.  The truth (main3818.truth.json) is the wire as
 * Python's msgpack reads it under the guide's rules, written only where it
 * agrees with the driver's model of what was published: every figure, event
 * count and lifetime bucket must be the exporter's.  (The master holds fewer
 * objects, `master` in the truth: evictions that publish nothing, which no
 * subscriber can know.) */
static void test_main3818(void **state)
{
	(void)state;
	mkv_budget budget;
	json_t *truth = load_json("main3818.truth.json");
	expect_media_status(json_object_get(truth, "publisher_stats"));
	kv_stream *st = replay_in(&budget, "main3818.zmqcap.gz", MKV_DIALECT_MEDIA);
	const kv_state *s = kv_stream_state(st);
	const kv_stream_stats *ss = kv_stream_stats_of(st);
	assert_int_equal(ss->batch_events.count, (uint64_t)json_number_value(json_object_get(truth, "messages")));
	assert_int_equal(kv_stream_seq(st)->missing, 0);
	assert_int_equal(ss->timestamps_backwards, 0);
	assert_int_equal(ss->keyless_events, 0);
	for (int r = MKV_R_OK + 1; r < MKV_R__COUNT; r++) /* the model context decodes */
		assert_int_equal(ss->decode_errors[r], 0);

	const json_t *bounds = json_object_get(truth, "bucket_bounds_s");
	assert_int_equal(json_array_size(bounds), KV_LIFE_BUCKETS);
	for (size_t i = 0; i < KV_LIFE_BUCKETS; i++)
		assert_int_equal(kv_life_bounds_ms[i], (uint32_t)(json_number_value(json_array_get(bounds, i)) * 1000));

	const json_t *backend = json_object_get(truth, "backend_id");
	const char *tname;
	const json_t *want;
	uint64_t whole = 0, events = 0, cleared = 0, withheld = 0;
	json_object_foreach(json_object_get(truth, "tenants"), tname, want)
	{
		const kv_tenant *t = check_tenant(s, backend, tname, want);
#define WANT(f) ((uint64_t)json_number_value(json_object_get(want, f)))
		assert_int_equal(t->counts.events[MKV_EV_STORED], WANT("stored_events"));
		assert_int_equal(t->counts.events[MKV_EV_REMOVED], WANT("removed_events"));
		assert_int_equal(t->counts.stored_duplicates, WANT("stored_duplicates"));
		assert_int_equal(t->counts.removed_unknown, 0);
		events += t->counts.events[MKV_EV_STORED] + t->counts.events[MKV_EV_REMOVED] +
			  t->counts.events[MKV_EV_CLEARED];
		whole += t->counts.life.count;
		cleared += WANT("cleared");
		withheld += WANT("cleared_withheld");
#undef WANT
	}
	assert_int_equal(json_object_size(json_object_get(truth, "tenants")), kv_state_tenant_count(s));
	assert_int_equal(events, (uint64_t)json_number_value(json_object_get(truth, "events")));
	/* the capture has lives to compare, and RemoveAlls that cleared and that did not */
	assert_true(whole > 500 && cleared > 0 && withheld > 0);
	json_decref(truth);
	kv_stream_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model_matches_truth),
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_tenants_media),
		cmocka_unit_test(test_no_legacy),
		cmocka_unit_test(test_no_object_key),
		cmocka_unit_test(test_drops),
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_edge),
		cmocka_unit_test(test_volume),
		cmocka_unit_test(test_main3818),
	};
	return cmocka_run_group_tests_name("captures", tests, NULL, NULL);
}
