/* SPDX-License-Identifier: Apache-2.0 */
/* The lives the upstream captures show: what residency takes from the
 * upstream publisher's timestamps, and dev/conductor's capture (the media
 * dialect, with RemoveAll), whose truth is the master's model and the
 * lifetimes the publisher's timestamps give. */
#include "support/captures.h"

/* What residency relies on (docs/upstream.md, "The timestamps"): the
 * upstream publisher stamps every event with its message's time, and one
 * process's times never go back.  And from a stream whose tenants are never
 * exact (no cleared in any capture), no lifetime is observed: every life
 * that ends is unobserved. */
static void test_upstream_timestamps(void **state)
{
	(void)state;
	static const char *const caps[] = {"basic.zmqcap",         "tenants_media.zmqcap", "no_legacy.zmqcap",
					   "no_object_key.zmqcap", "drops.zmqcap",         "edge.zmqcap",
					   "restart.zmqcap",       "volume.zmqcap.gz",     "conductor.zmqcap.gz"};
	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		char path[512];
		snprintf(path, sizeof(path), DIR "%s", caps[c]);
		zmqcap *z = zmqcap_open(path);
		assert_non_null(z);
		kv_decoder *d = kv_decoder_new();
		mkv_frame frames[ZMQCAP_MAX_FRAMES];
		size_t n, events = 0;
		int64_t newest = 0;
		uint64_t last_seq = 0;
		while (zmqcap_next(z, frames, &n) == 1) {
			kv_batch b;
			assert_int_equal(kv_decode(d, frames, n, &b), MKV_OK);
			if (b.reject != MKV_R_OK)
				continue;
			if (b.seq <= last_seq) /* a new publisher process: a new clock */
				newest = 0;
			last_seq = b.seq;
			assert_true(b.timestamp_ms >= newest);
			newest = b.timestamp_ms;
			for (size_t i = 0; i < b.n_events; i++) {
				if (b.events[i].reject != MKV_R_OK)
					continue;
				assert_false(b.events[i].timestamp_bad);
				assert_true(b.events[i].timestamp_ms == b.timestamp_ms);
				events++;
			}
		}
		assert_true(events > 0);
		kv_decoder_free(d);
		zmqcap_close(z);
	}

	mkv_budget budget;
	kv_stream *st = replay(&budget, "volume.zmqcap.gz");
	const kv_state *s = kv_stream_state(st);
	uint64_t unobserved = 0;
	for (size_t t = 0; t < kv_state_tenant_count(s); t++) {
		const kv_tenant *tn = kv_state_tenant_at(s, t);
		assert_int_equal(tn->counts.life.count, 0);
		assert_int_equal(tn->objects.births_n, 0);
		unobserved += tn->counts.life.unobserved;
	}
	assert_true(unobserved > 1000);
	assert_int_equal(kv_stream_stats_of(st)->timestamps_backwards, 0);
	kv_stream_free(st);
}

/* Mooncake dev/conductor's real publisher (19ffa6e), driven as its master's
 * call sites do (tools/upstream/driver.cpp), RemoveAll included: its
 * removals, then a cleared.  The truth (conductor.truth.json) is the master's
 * model (objects, media, how many lives a subscriber from the first message
 * sees whole and how many it cannot) and each whole life's length from the
 * publisher's timestamps, which tools/upstream/capture_truth.py wrote only
 * where the wire and the model agree.  Every bucket, the count and the sum
 * must be the exporter's, to the millisecond, in the media dialect. */
static void test_conductor(void **state)
{
	(void)state;
	mkv_budget budget;
	json_t *truth = load_json("conductor.truth.json");
	kv_stream *st = replay_in(&budget, "conductor.zmqcap.gz", MKV_DIALECT_MEDIA);
	const kv_state *s = kv_stream_state(st);
	const json_t *stats = json_object_get(truth, "publisher_stats");
	assert_int_equal((uint64_t)json_number_value(json_object_get(stats, "dropped_events")), 0);
	assert_int_equal(kv_stream_stats_of(st)->batch_events.count,
			 (uint64_t)json_number_value(json_object_get(truth, "messages")));
	assert_int_equal(kv_stream_stats_of(st)->timestamps_backwards, 0);

	const json_t *bounds = json_object_get(truth, "bucket_bounds_s");
	assert_int_equal(json_array_size(bounds), KV_LIFE_BUCKETS);
	for (size_t i = 0; i < KV_LIFE_BUCKETS; i++) /* the buckets the README states */
		assert_int_equal(kv_life_bounds_ms[i], (uint32_t)(json_number_value(json_array_get(bounds, i)) * 1000));

	const json_t *backend = json_object_get(truth, "backend_id");
	const char *tname;
	const json_t *want;
	uint64_t whole = 0;
	json_object_foreach(json_object_get(truth, "tenants"), tname, want)
	{
		const kv_tenant *t = check_tenant(s, backend, tname, want);
		whole += t->counts.life.count;
	}
	assert_int_equal(json_object_size(json_object_get(truth, "tenants")), kv_state_tenant_count(s));
	assert_true(whole > 500); /* the capture has lives to compare */
	json_decref(truth);
	kv_stream_free(st);
}

/* 100,000 events in 2,686 messages: the per-key final state, the summary
 * per tenant and the event counts from the generator's call counts. */

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upstream_timestamps),
		cmocka_unit_test(test_conductor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
