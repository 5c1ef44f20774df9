/* SPDX-License-Identifier: Apache-2.0 */
/* The master's keys as reconciliation reads them (kv_master_keys.h): the
 * listing split as it arrives in pieces of any size, the batch query's URL,
 * and the batch answer's media. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kv_master_keys.h"

struct got {
	char keys[64][64];
	size_t n;
	size_t stop_after; /* 0: never stop */
};

static bool take(const char *key, size_t len, void *ctx)
{
	struct got *g = ctx;
	assert_true(len < sizeof(g->keys[0]));
	memcpy(g->keys[g->n], key, len);
	g->keys[g->n][len] = '\0';
	g->n++;
	return !g->stop_after || g->n < g->stop_after;
}

/* Feeds text in pieces of `step` bytes, splitting after each. */
static void feed(kv_listing *l, struct got *g, const char *text, size_t step)
{
	size_t len = strlen(text);
	for (size_t at = 0; at < len; at += step) {
		size_t n = len - at < step ? len - at : step;
		assert_int_equal(kv_listing_feed(l, text + at, n), MKV_OK);
		assert_true(kv_listing_split(l, false, take, g));
	}
	assert_true(kv_listing_split(l, true, take, g));
}

static void test_listing_pieces(void **state)
{
	(void)state;
	const char *text = "a\nbb\n\nccc\nd,e\n\xff\xfe\nlast";
	for (size_t step = 1; step <= strlen(text); step++) {
		kv_listing l;
		kv_listing_init(&l, 100);
		struct got g = {0};
		feed(&l, &g, text, step);
		/* every piece size gives the same keys: the empty line is no key,
		 * a comma or bytes that are not UTF-8 cannot be asked about */
		assert_int_equal(g.n, 4);
		assert_string_equal(g.keys[0], "a");
		assert_string_equal(g.keys[1], "bb");
		assert_string_equal(g.keys[2], "ccc");
		assert_string_equal(g.keys[3], "last");
		assert_int_equal(l.listed, 6);
		assert_int_equal(l.unaskable, 2);
		assert_false(l.too_long);
		kv_listing_free(&l);
	}
}

static void test_listing_overlong_line(void **state)
{
	(void)state;
	size_t big = KV_KEYS_MAX_KEY_BYTES * 3;
	char *text = malloc(big + 16);
	memcpy(text, "x\n", 2);
	memset(text + 2, 'k', big);
	memcpy(text + 2 + big, "\ny\n", 4);
	for (size_t step = 1000; step <= big; step += big / 2) {
		kv_listing l;
		kv_listing_init(&l, 100);
		struct got g = {0};
		feed(&l, &g, text, step);
		assert_int_equal(g.n, 2);
		assert_string_equal(g.keys[1], "y");
		assert_int_equal(l.listed, 3);
		assert_int_equal(l.unaskable, 1);
		/* never held whole */
		assert_true(l.carry.cap <= 2 * (KV_KEYS_MAX_KEY_BYTES + step) + 64);
		kv_listing_free(&l);
	}
	free(text);
}

static void test_listing_limits(void **state)
{
	(void)state;
	/* an empty listing (found by fuzzing: no buffer at all yet) */
	kv_listing e;
	kv_listing_init(&e, 3);
	struct got none = {0};
	assert_true(kv_listing_split(&e, true, take, &none));
	assert_int_equal(e.listed, 0);
	kv_listing_free(&e);
	kv_listing l;
	kv_listing_init(&l, 3);
	struct got g = {0};
	assert_int_equal(kv_listing_feed(&l, "a\n,\nc\nd\ne\n", 11), MKV_OK);
	assert_false(kv_listing_split(&l, false, take, &g));
	assert_true(l.too_long);
	assert_int_equal(g.n, 2); /* a, c: the unaskable line counts toward the limit */
	kv_listing_reset(&l);
	assert_false(l.too_long);
	/* the callback stops it: not too long */
	struct got h = {.stop_after = 1};
	assert_int_equal(kv_listing_feed(&l, "a\nb\n", 4), MKV_OK);
	assert_false(kv_listing_split(&l, false, take, &h));
	assert_false(l.too_long);
	assert_int_equal(h.n, 1);
	kv_listing_free(&l);
}

static void test_batch_url(void **state)
{
	(void)state;
	kv_key_batch b;
	kv_key_batch_init(&b);
	const char *base = "http://127.0.0.1:9003";
	kv_keys_at at;
	kv_keys_at_init(&at);
	assert_int_equal(kv_keys_at_set(&at, base, (mkv_str){"default", 7}), MKV_OK);
	assert_string_equal(at.listing.data, "http://127.0.0.1:9003/get_all_keys");
	assert_false(kv_key_batch_full(&b, &at, 10));
	assert_int_equal(kv_key_batch_add(&b, &at, "a b/c", 5), MKV_OK);
	assert_int_equal(kv_key_batch_add(&b, &at, "x~y_z.-", 7), MKV_OK);
	assert_string_equal(b.url.data, "http://127.0.0.1:9003/batch_query_keys?keys=a%20b%2Fc,x~y_z.-");
	assert_int_equal(b.n, 2);
	assert_string_equal(kv_key_batch_key(&b, 0), "a b/c");
	assert_string_equal(kv_key_batch_key(&b, 1), "x~y_z.-");
	/* the URL stays within its bound: a batch fills, by bytes */
	kv_key_batch_reset(&b);
	char key[101];
	memset(key, 'q', 100);
	key[100] = '\0';
	size_t added = 0;
	while (!kv_key_batch_full(&b, &at, 100)) {
		assert_int_equal(kv_key_batch_add(&b, &at, key, 100), MKV_OK);
		added++;
	}
	assert_true(added > 10);
	assert_true(b.url.len <= KV_KEYS_QUERY_BYTES + at.query.len + 300);
	/* another tenant: the per-tenant endpoints, its id encoded */
	kv_key_batch_reset(&b);
	assert_int_equal(kv_keys_at_set(&at, base, (mkv_str){"team a/&b", 9}), MKV_OK);
	assert_string_equal(at.listing.data, "http://127.0.0.1:9003/api/v1/tenant_keys?tenant_id=team%20a%2F%26b");
	assert_int_equal(kv_key_batch_add(&b, &at, "k,1", 3), MKV_OK);
	assert_string_equal(
		b.url.data,
		"http://127.0.0.1:9003/api/v1/tenant_batch_query_keys?tenant_id=team%20a%2F%26b&keys=k%2C1");
	/* ids upstream's TenantId::IsValid refuses can be named by no request */
	static const mkv_str unnameable[] = {{"", 0}, {"_sys", 4}, {"a\tb", 3}, {"a\x7f", 2}, {"a\0b", 3}};
	for (size_t i = 0; i < sizeof(unnameable) / sizeof(unnameable[0]); i++) {
		assert_false(kv_keys_tenant_nameable(unnameable[i]));
		assert_int_equal(kv_keys_at_set(&at, base, unnameable[i]), MKV_EINVAL);
	}
	assert_true(kv_keys_tenant_nameable((mkv_str){"t\xc3\xa9", 3}));
	kv_keys_at_free(&at);
	kv_key_batch_free(&b);
}

/* What a listing's answer says: of tenant default, only its status; of
 * another, also whether the master lists tenants at all. */
static void test_listing_answer(void **state)
{
	(void)state;
	kv_keys_at d, t;
	kv_keys_at_init(&d);
	kv_keys_at_init(&t);
	assert_int_equal(kv_keys_at_set(&d, "http://m", (mkv_str){"default", 7}), MKV_OK);
	assert_int_equal(kv_keys_at_set(&t, "http://m", (mkv_str){"tenant-1", 8}), MKV_OK);
	assert_int_equal(kv_keys_listed(&d, 200, NULL), KV_LISTED_TAKE);
	assert_int_equal(kv_keys_listed(&d, 503, NULL), KV_LISTED_STANDBY);
	assert_int_equal(kv_keys_listed(&d, 404, NULL), KV_LISTED_REFUSED);
	assert_int_equal(kv_keys_listed(&d, 500, NULL), KV_LISTED_REFUSED);
	/* a master with the per-tenant listing names the tenant it listed */
	assert_int_equal(kv_keys_listed(&t, 200, "tenant-1"), KV_LISTED_TAKE);
	/* an old master has no such path */
	assert_int_equal(kv_keys_listed(&t, 404, NULL), KV_LISTED_DEFAULT_ONLY);
	assert_int_equal(kv_keys_listed(&t, 405, NULL), KV_LISTED_DEFAULT_ONLY);
	/* a 200 that names no tenant, or another (multi-tenancy off: it listed
	 * default): never taken for tenant-1's keys */
	assert_int_equal(kv_keys_listed(&t, 200, NULL), KV_LISTED_DEFAULT_ONLY);
	assert_int_equal(kv_keys_listed(&t, 200, "default"), KV_LISTED_DEFAULT_ONLY);
	assert_int_equal(kv_keys_listed(&t, 200, "tenant-10"), KV_LISTED_DEFAULT_ONLY);
	assert_int_equal(kv_keys_listed(&t, 200, "tenant-"), KV_LISTED_DEFAULT_ONLY);
	assert_int_equal(kv_keys_listed(&t, 503, NULL), KV_LISTED_STANDBY);
	assert_int_equal(kv_keys_listed(&t, 400, NULL), KV_LISTED_REFUSED);
	assert_int_equal(kv_keys_listed(&t, 500, "tenant-1"), KV_LISTED_REFUSED);
	kv_keys_at_free(&d);
	kv_keys_at_free(&t);
}

static void test_batch_answer(void **state)
{
	(void)state;
	kv_key_batch b;
	kv_key_batch_init(&b);
	kv_keys_at at;
	kv_keys_at_init(&at);
	assert_int_equal(kv_keys_at_set(&at, "http://m", (mkv_str){"default", 7}), MKV_OK);
	const char *keys[] = {"mem", "disk", "both", "nof", "gone", "failed", "unanswered", "empty"};
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(kv_key_batch_add(&b, &at, keys[i], strlen(keys[i])), MKV_OK);
	/* upstream's /batch_query_keys answer shape (master_admin_service.cpp) */
	const char *body = "{\"success\":true,\"data\":{"
			   "\"mem\":{\"ok\":true,\"values\":[{}]},"
			   "\"disk\":{\"ok\":true,\"disk_values\":[{}]},"
			   "\"both\":{\"ok\":true,\"values\":[{}],\"local_disk_values\":[{}]},"
			   "\"nof\":{\"ok\":true,\"nof_values\":[{}]},"
			   "\"gone\":{\"ok\":false,\"error\":\"OBJECT_NOT_FOUND\"},"
			   "\"failed\":{\"ok\":false,\"error\":\"INTERNAL_ERROR\"},"
			   "\"empty\":{\"ok\":true}}}";
	unsigned media[8];
	uint64_t unknown = 0;
	assert_int_equal(kv_key_batch_parse(&b, &at, body, strlen(body), media, &unknown), MKV_POLL_OK);
	assert_int_equal(media[0], MKV_MEDIUM_CPU);
	assert_int_equal(media[1], MKV_MEDIUM_DISK);
	assert_int_equal(media[2], MKV_MEDIA_ALL);
	assert_int_equal(media[3], MKV_MEDIUM_DISK);
	assert_int_equal(media[4], 0); /* removed since the listing: the replay says so */
	assert_int_equal(media[5], 0);
	assert_int_equal(media[6], 0);
	assert_int_equal(media[7], 0); /* held with no replica: nothing to count */
	assert_int_equal(unknown, 2);  /* failed, unanswered */
	static const char *const bad[] = {"", "[]", "{\"success\":false,\"data\":{}}", "{\"success\":true,\"data\":[]}",
					  "{\"success\":true,\"success\":true,\"data\":{}}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(kv_key_batch_parse(&b, &at, bad[i], strlen(bad[i]), media, &unknown), MKV_POLL_PARSE);
	assert_int_equal(unknown, 2);
	/* upstream writes an empty std::optional as null (yalantinglibs' iguana
	 * json_writer.hpp): no replica of that kind, and no error */
	const char *nulls = "{\"success\":true,\"data\":{\"mem\":{\"ok\":true,\"error\":null,\"values\":[{}],"
			    "\"disk_values\":null,\"local_disk_values\":null,\"nof_values\":null},"
			    "\"gone\":{\"ok\":false,\"error\":\"OBJECT_NOT_FOUND\",\"values\":null}}}";
	unknown = 0;
	assert_int_equal(kv_key_batch_parse(&b, &at, nulls, strlen(nulls), media, &unknown), MKV_POLL_OK);
	assert_int_equal(media[0], MKV_MEDIUM_CPU);
	assert_int_equal(media[4], 0);
	assert_int_equal(unknown, 6); /* the keys it did not answer */
	/* asked per tenant, the answer must name that tenant */
	assert_int_equal(kv_keys_at_set(&at, "http://m", (mkv_str){"tenant-1", 8}), MKV_OK);
	const char *named =
		"{\"success\":true,\"tenant_id\":\"tenant-1\",\"data\":{\"mem\":{\"ok\":true,\"values\":[{}]}}}";
	memset(media, 0xff, sizeof(media));
	assert_int_equal(kv_key_batch_parse(&b, &at, named, strlen(named), media, &unknown), MKV_POLL_OK);
	assert_int_equal(media[0], MKV_MEDIUM_CPU);
	static const char *const others[] = {"{\"success\":true,\"data\":{}}",
					     "{\"success\":true,\"tenant_id\":\"default\",\"data\":{}}",
					     "{\"success\":true,\"tenant_id\":\"tenant-10\",\"data\":{}}",
					     "{\"success\":true,\"tenant_id\":1,\"data\":{}}"};
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		assert_int_equal(kv_key_batch_parse(&b, &at, others[i], strlen(others[i]), media, &unknown),
				 MKV_POLL_FIELD);
	kv_keys_at_free(&at);
	kv_key_batch_free(&b);
}

static char *slurp(const char *name, size_t *len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/upstream/tenant-listing/%s", FIXTURES_DIR, name);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	static char buf[8192];
	*len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

/* What real masters answered (tests/fixtures/upstream/tenant-listing):
 * only the patched master with multi-tenancy on lists tenant-a, and its
 * batch answer is tenant-a's; an old master, and one with multi-tenancy
 * off, list default only. */
static void test_real_answers(void **state)
{
	(void)state;
	kv_keys_at a;
	kv_keys_at_init(&a);
	assert_int_equal(kv_keys_at_set(&a, "http://127.0.0.1:9003", (mkv_str){"tenant-a", 8}), MKV_OK);
	size_t len;
	char *text = slurp("answers.txt", &len);
	unsigned listings = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char master[32], req[128], hdr[64];
		long http;
		if (line[0] == '#' || sscanf(line, "%31s %127s %ld %63s", master, req, &http, hdr) != 4)
			continue;
		if (strncmp(req, "/api/v1/tenant_keys?tenant_id=tenant-a", 39))
			continue;
		listings++;
		enum kv_listed want = !strcmp(master, "patched") ? KV_LISTED_TAKE : KV_LISTED_DEFAULT_ONLY;
		assert_int_equal(kv_keys_listed(&a, http, strcmp(hdr, "-") ? hdr : NULL), want);
	}
	assert_int_equal(listings, 3);
	/* the URL the exporter asks is the one recorded */
	assert_string_equal(a.listing.data, "http://127.0.0.1:9003/api/v1/tenant_keys?tenant_id=tenant-a");

	kv_key_batch b;
	kv_key_batch_init(&b);
	static const char *const keys[] = {"tenant-a-key-0", "tenant-b-key-0", "nope"};
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(kv_key_batch_add(&b, &a, keys[i], strlen(keys[i])), MKV_OK);
	unsigned media[3];
	uint64_t unknown = 0;
	char *body = slurp("patched-batch-tenant-a.json", &len);
	assert_int_equal(kv_key_batch_parse(&b, &a, body, len, media, &unknown), MKV_POLL_OK);
	assert_int_equal(media[0], MKV_MEDIUM_CPU);
	assert_int_equal(media[1], 0); /* another tenant's key */
	assert_int_equal(media[2], 0);
	assert_int_equal(unknown, 0);
	body = slurp("patched-batch-multitenancy-off.json", &len);
	assert_int_equal(kv_key_batch_parse(&b, &a, body, len, media, &unknown), MKV_POLL_FIELD);
	kv_key_batch_free(&b);

	/* upstream's own batch answer, of tenant default */
	assert_int_equal(kv_keys_at_set(&a, "http://127.0.0.1:9003", (mkv_str){"default", 7}), MKV_OK);
	kv_key_batch_init(&b);
	assert_int_equal(kv_key_batch_add(&b, &a, "default-key-0", 13), MKV_OK);
	assert_int_equal(kv_key_batch_add(&b, &a, "tenant-a-key-0", 14), MKV_OK);
	body = slurp("batch-default.json", &len);
	assert_int_equal(kv_key_batch_parse(&b, &a, body, len, media, &unknown), MKV_POLL_OK);
	assert_int_equal(media[0], MKV_MEDIUM_CPU);
	assert_int_equal(media[1], 0);
	assert_int_equal(unknown, 0);
	kv_key_batch_free(&b);
	kv_keys_at_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listing_pieces), cmocka_unit_test(test_listing_overlong_line),
		cmocka_unit_test(test_listing_limits), cmocka_unit_test(test_batch_url),
		cmocka_unit_test(test_batch_answer),   cmocka_unit_test(test_listing_answer),
		cmocka_unit_test(test_real_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
