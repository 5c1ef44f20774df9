/* SPDX-License-Identifier: Apache-2.0 */
/* The upstream wire captures and their truths (tests/fixtures/upstream/),
 * replayed through a stream, for the tests that check the core against
 * them. */
#ifndef CAPTURES_H
#define CAPTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>

#include "kv_stream.h"
#include "support/zmqcap.h"

#include <cmocka.h>

#define DIR FIXTURES_DIR "/upstream/"

static inline mkv_str js(const json_t *s)
{
	return (mkv_str){json_string_value(s), (uint32_t)json_string_length(s)};
}

/* jansson cannot hold a NUL inside an object key, and the edge capture has
 * the key "nul\0inside".  Keys travel through JSON with NUL written as
 * U+2400 (SYMBOL FOR NULL), which no capture uses, and are turned back
 * before the exporter is asked. */
#define NUL_SYMBOL "\xe2\x90\x80"

static inline json_t *load_json(const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), DIR "%s", name);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	size_t len = (size_t)ftell(f);
	rewind(f);
	char *text = test_malloc(len + 1);
	assert_int_equal(fread(text, 1, len, f), len);
	fclose(f);
	/* \u0000 (6 characters) becomes \u2400 in place */
	for (char *p = text; (p = memmem(p, (size_t)(text + len - p), "\\u0000", 6)); p += 6)
		memcpy(p, "\\u2400", 6);
	json_error_t err;
	json_t *j = json_loadb(text, len, JSON_DECODE_INT_AS_REAL, &err);
	test_free(text);
	if (!j)
		fail_msg("%s: %s (line %d)", path, err.text, err.line);
	return j;
}

static inline kv_stream *replay_in(mkv_budget *budget, const char *file, enum mkv_dialect dialect)
{
	char path[512];
	snprintf(path, sizeof(path), DIR "%s", file);
	mkv_budget_init(budget, 1000, 10000000);
	kv_stream *st = kv_stream_new(budget, 0x5eed);
	assert_non_null(st);
	kv_stream_set_dialect(st, dialect);
	zmqcap *c = zmqcap_open(path);
	assert_non_null(c);
	mkv_frame frames[ZMQCAP_MAX_FRAMES];
	size_t n;
	int rc;
	while ((rc = zmqcap_next(c, frames, &n)) == 1)
		assert_int_equal(kv_stream_ingest(st, frames, n, 1795982104612, NULL), MKV_OK);
	assert_int_equal(rc, 0);
	zmqcap_close(c);
	return st;
}

/* The captures of Mooncake main, read by the guide's rules (media), as the
 * checks below were written for. */
static inline kv_stream *replay(mkv_budget *budget, const char *file)
{
	return replay_in(budget, file, MKV_DIALECT_MEDIA);
}

/* A tenant's lives against its truth (want: the tenant's object in a
 * .truth.json): the histogram's count, sum and unseen, every cumulative
 * bucket (lifetime_le), and what a cleared gives: exact, with every live
 * object's birth held; a tenant never cleared is stale since start-up and
 * holds none. */
static inline void check_lives(const kv_tenant *t, const json_t *want)
{
#define LIVES_WANT(f) ((uint64_t)json_number_value(json_object_get(want, f)))
	const kv_life_hist *h = &t->counts.life;
	assert_int_equal(h->count, LIVES_WANT("lifetime_count"));
	assert_int_equal(h->sum_ms, LIVES_WANT("lifetime_sum_ms"));
	assert_int_equal(h->unobserved, LIVES_WANT("lives_unseen"));
	uint64_t le = 0;
	for (size_t i = 0; i < KV_LIFE_BUCKETS; i++) {
		le += h->counts[i];
		assert_int_equal(le,
				 (uint64_t)json_number_value(json_array_get(json_object_get(want, "lifetime_le"), i)));
	}
	assert_int_equal(le + h->counts[KV_LIFE_BUCKETS], h->count);
	assert_int_equal(t->stale, LIVES_WANT("cleared") ? 0 : KV_STALE_STARTUP);
	assert_int_equal(t->objects.births_n, LIVES_WANT("cleared") ? LIVES_WANT("objects") : 0);
#undef LIVES_WANT
}

/* A tenant's figures against its truth (want, as in check_lives): its
 * objects, on each medium and on both, the cleareds it saw, and its lives.
 * Returns the tenant, for the figures only some truths hold. */
static inline const kv_tenant *check_tenant(const kv_state *s, const json_t *backend, const char *tname,
					    const json_t *want)
{
#define TENANT_WANT(f) ((uint64_t)json_number_value(json_object_get(want, f)))
	mkv_str tn = {tname, (uint32_t)strlen(tname)};
	const kv_tenant *t = kv_state_find_tenant(s, js(backend), tn);
	assert_non_null(t);
	assert_int_equal(kv_tenant_objects(t), TENANT_WANT("objects"));
	assert_int_equal(kv_tenant_on_medium(t, MKV_MEDIUM_CPU), TENANT_WANT("cpu"));
	assert_int_equal(kv_tenant_on_medium(t, MKV_MEDIUM_DISK), TENANT_WANT("disk"));
	assert_int_equal(t->counts.placement[MKV_PLACE_CPU_AND_DISK], TENANT_WANT("both"));
	assert_int_equal(t->counts.events[MKV_EV_CLEARED], TENANT_WANT("cleared"));
	check_lives(t, want);
	return t;
#undef TENANT_WANT
}

#endif
