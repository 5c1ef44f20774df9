/* SPDX-License-Identifier: Apache-2.0 */
/* The one-pass decoder against msgpack-c's tree: on every message of every
 * upstream capture, on random batches of every field kind and shape, and on
 * their corruptions (flipped bytes, cuts, nesting up to past msgpack-c's
 * stack), kv_decode gives what the reference decoder gives
 * (tests/support/ref_decode.c: msgpack_unpack, then the fields read off the
 * tree): the return code, the message's verdict, every event's verdict and
 * every field.  One difference is allowed, and checked: nesting deeper than
 * msgpack-c's stack, which msgpack-c reports as lack of memory, is the
 * input's fault here (msgpack_parse, or payload_shape when the message is
 * mis-shaped before the nesting is reached). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <msgpack.h>

#include "kv_decode.h"
#include "ref_decode.h"
#include "support/zmqcap.h"

#include <cmocka.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static unsigned pick(unsigned n)
{
	return (unsigned)(next() % n);
}

static kv_decoder *mine;
static ref_decoder *ref;
static struct {
	unsigned compared, accepted_events, deep;
} seen;

static void same_str(mkv_str a, mkv_str b)
{
	assert_int_equal(a.len, b.len);
	if (a.len)
		assert_ptr_equal(a.ptr, b.ptr);
}

/* Decodes frames with both and compares everything. */
static void compare(const mkv_frame *f, size_t n)
{
	kv_batch a, b;
	enum mkv_err ra = kv_decode(mine, f, n, &a);
	int rb = ref_decode(ref, f, n, &b);
	seen.compared++;
	if (rb == MKV_ENOMEM && b.reject == MKV_R_MSGPACK_PARSE) { /* msgpack-c's stack */
		seen.deep++;
		assert_int_equal(ra, MKV_OK);
		assert_true(a.reject == MKV_R_MSGPACK_PARSE || a.reject == MKV_R_PAYLOAD_SHAPE);
		assert_int_equal(a.n_events, 0);
		return;
	}
	assert_int_equal(ra, rb);
	assert_int_equal(a.reject, b.reject);
	assert_int_equal(a.has_seq, b.has_seq);
	assert_true(a.seq == b.seq);
	assert_int_equal(a.n_events, b.n_events);
	if (a.reject == MKV_R_OK)
		assert_true(a.timestamp_ms == b.timestamp_ms);
	for (size_t i = 0; i < a.n_events; i++) {
		const kv_event *x = &a.events[i], *y = &b.events[i];
		assert_int_equal(x->reject, y->reject);
		assert_int_equal(x->type, y->type);
		assert_int_equal(x->medium, y->medium);
		assert_int_equal(x->has_key, y->has_key);
		assert_int_equal(x->has_event_id, y->has_event_id);
		assert_int_equal(x->timestamp_bad, y->timestamp_bad);
		assert_true(x->event_id == y->event_id);
		assert_true(x->timestamp_ms == y->timestamp_ms);
		same_str(x->tenant_id, y->tenant_id);
		same_str(x->backend_id, y->backend_id);
		same_str(x->object_key, y->object_key);
		seen.accepted_events += x->reject == MKV_R_OK;
	}
}

static unsigned char seqb[8] = {0, 0, 0, 0, 0, 0, 0, 42};

static void compare_payload(const void *p, size_t len)
{
	mkv_frame f[3] = {{"", 0}, {seqb, 8}, {p, len}};
	compare(f, 3);
}

/* Corruptions of one payload: flipped bytes, cuts, a byte more. */
static void compare_corrupted(const unsigned char *p, size_t len, unsigned rounds)
{
	unsigned char *c = malloc(len + 1);
	assert_non_null(c);
	for (unsigned r = 0; r < rounds; r++) {
		memcpy(c, p, len);
		size_t n = len;
		switch (pick(4)) {
		case 0:
			n = len ? pick((unsigned)len) : 0;
			break;
		case 1:
			c[n++] = (unsigned char)next();
			break;
		default:
			for (unsigned k = 1 + pick(3); k && len; k--)
				c[pick((unsigned)len)] ^= (unsigned char)(1u << pick(8));
		}
		compare_payload(c, n);
	}
	free(c);
}

static const char *const strs[] = {"stored",   "removed", "cleared", "BlockStored", "BlockRemoved", "AllBlocksCleared",
				   "cpu",      "CPU",     "Disk",    "disk",        "tape",         "",
				   "tenant-a", "b1",      "default", "type"};
static const char key64[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
static const char *const fields[] = {"event_id", "event_type", "type",      "tenant_id", "backend_id",
				     "medium",   "object_key", "timestamp", "extra",     "rank"};

/* Arrays nested `depth` deep around a nil. */
static void pack_deep(msgpack_packer *pk, unsigned depth)
{
	for (unsigned i = 0; i < depth; i++)
		msgpack_pack_array(pk, 1);
	msgpack_pack_nil(pk);
}

static void pack_value(msgpack_packer *pk, int depth)
{
	switch (pick(depth < 3 ? 20 : 17)) {
	case 0:
		msgpack_pack_nil(pk);
		break;
	case 1:
		pick(2) ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
		break;
	case 2:
		msgpack_pack_uint64(pk, next() >> pick(64));
		break;
	case 3: /* a non-negative value in a signed encoding */
		switch (pick(4)) {
		case 0:
			msgpack_pack_fix_int8(pk, (int8_t)pick(128));
			break;
		case 1:
			msgpack_pack_fix_int16(pk, (int16_t)pick(32768));
			break;
		case 2:
			msgpack_pack_fix_int32(pk, (int32_t)pick(1u << 31));
			break;
		default:
			msgpack_pack_fix_int64(pk, (int64_t)(next() >> 1));
		}
		break;
	case 4:
		msgpack_pack_int64(pk, -(int64_t)(next() >> (1 + pick(63))));
		break;
	case 5:
		msgpack_pack_fix_uint64(pk, next() >> pick(2));
		break;
	case 6:
		pick(2) ? msgpack_pack_float(pk, 1.5f) : msgpack_pack_double(pk, -2.5);
		break;
	case 7:
	case 8:
	case 9:
	case 10: {
		const char *s = strs[pick(sizeof(strs) / sizeof(strs[0]))];
		msgpack_pack_str_with_body(pk, s, strlen(s));
		break;
	}
	case 11:
		msgpack_pack_str_with_body(pk, key64, 1 + pick(64));
		break;
	case 12: {
		const char *s = strs[pick(sizeof(strs) / sizeof(strs[0]))];
		msgpack_pack_bin_with_body(pk, s, strlen(s));
		break;
	}
	case 13:
		msgpack_pack_ext_with_body(pk, key64, (size_t[]){1, 2, 4, 8, 16, 3, 40}[pick(7)], 5);
		break;
	case 14: /* a long string: str16 */
		msgpack_pack_str(pk, 300);
		for (int i = 0; i < 300; i += 60)
			msgpack_pack_str_body(pk, key64, 60);
		break;
	case 15:
	case 16:
		if (!pick(8)) {
			pack_deep(pk, 28 + pick(8)); /* around msgpack-c's stack of 32 */
			break;
		}
		msgpack_pack_nil(pk);
		break;
	case 17: {
		unsigned n = pick(4);
		msgpack_pack_array(pk, n);
		for (unsigned i = 0; i < n; i++)
			pack_value(pk, depth + 1);
		break;
	}
	default: {
		unsigned n = pick(3);
		msgpack_pack_map(pk, n);
		for (unsigned i = 0; i < 2 * n; i++)
			pack_value(pk, depth + 1);
	}
	}
}

static void pack_str(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str_with_body(pk, s, strlen(s));
}

/* One event: mostly the fields upstream sends, right or wrong. */
static void pack_event(msgpack_packer *pk)
{
	unsigned shape = pick(20);
	if (shape == 0) { /* not a map */
		pack_value(pk, 2);
		return;
	}
	unsigned n = pick(11);
	msgpack_pack_map(pk, n);
	for (unsigned i = 0; i < n; i++) {
		unsigned k = pick(12);
		if (k >= 10) { /* a key that is no field name: bin, int, nested */
			if (k == 10)
				msgpack_pack_bin_with_body(pk, "tenant_id", 9);
			else
				pack_value(pk, 3);
		} else {
			pack_str(pk, fields[k]);
		}
		if (pick(4)) { /* the right kind of value */
			switch (k) {
			case 0:
				msgpack_pack_uint64(pk, next() >> pick(64));
				continue;
			case 1:
				pack_str(pk, strs[pick(3)]);
				continue;
			case 2:
				pack_str(pk, strs[3 + pick(3)]);
				continue;
			case 3:
			case 4:
				pack_str(pk, strs[12 + pick(4)]);
				continue;
			case 5:
				pack_str(pk, strs[6 + pick(5)]);
				continue;
			case 6:
				msgpack_pack_str_with_body(pk, key64, 1 + pick(64));
				continue;
			case 7:
				msgpack_pack_int64(pk, 1700000000000 + (int64_t)pick(100000));
				continue;
			default:
				break;
			}
		}
		pack_value(pk, 3);
	}
}

/* A batch: [timestamp, [event...], rank], and now and then another shape. */
static void pack_batch(msgpack_sbuffer *sb)
{
	msgpack_sbuffer_clear(sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	unsigned shape = pick(20);
	if (shape == 0) {
		pack_value(&pk, 0);
		return;
	}
	unsigned elems = shape == 1 ? pick(3) : shape == 2 ? 4 + pick(2) : 3;
	msgpack_pack_array(&pk, elems);
	for (unsigned e = 0; e < elems; e++) {
		if (e == 0) {
			if (pick(10))
				msgpack_pack_int64(&pk, 1700000000000 + (int64_t)pick(1000));
			else
				pack_value(&pk, 1);
		} else if (e == 1 && pick(15)) {
			unsigned n = pick(8) ? pick(6) : 20;
			msgpack_pack_array(&pk, n);
			for (unsigned i = 0; i < n; i++)
				pack_event(&pk);
		} else if (e == 2 && pick(4)) {
			pick(2) ? msgpack_pack_nil(&pk) : msgpack_pack_uint64(&pk, pick(8));
		} else {
			pack_value(&pk, 1);
		}
	}
}

static void test_random_batches(void **state)
{
	(void)state;
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	seen.compared = seen.accepted_events = seen.deep = 0;
	for (int round = 0; round < 30000; round++) {
		pack_batch(&sb);
		compare_payload(sb.data, sb.size);
		if (round % 4 == 0)
			compare_corrupted((const unsigned char *)sb.data, sb.size, 4);
	}
	msgpack_sbuffer_destroy(&sb);
	/* the generator reaches what it is for */
	assert_true(seen.accepted_events > 1000);
	assert_true(seen.deep > 10);
}

/* Nesting at each depth around msgpack-c's limit, in each place a payload
 * can hold it: an event's value, the rank, an element after it, an event. */
static void test_nesting_limit(void **state)
{
	(void)state;
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	for (unsigned depth = 26; depth <= 36; depth++) {
		for (int where = 0; where < 4; where++) {
			msgpack_sbuffer_clear(&sb);
			msgpack_packer pk;
			msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
			msgpack_pack_array(&pk, where == 2 ? 4 : 3);
			msgpack_pack_int64(&pk, 1700000000000);
			msgpack_pack_array(&pk, 2);
			msgpack_pack_map(&pk, 1);
			pack_str(&pk, "extra");
			if (where == 0)
				pack_deep(&pk, depth);
			else
				msgpack_pack_nil(&pk);
			if (where == 3)
				pack_deep(&pk, depth);
			else
				msgpack_pack_map(&pk, 0);
			if (where == 1)
				pack_deep(&pk, depth);
			else
				msgpack_pack_nil(&pk);
			if (where == 2)
				pack_deep(&pk, depth);
			compare_payload(sb.data, sb.size);
		}
	}
	msgpack_sbuffer_destroy(&sb);
}

/* Every message of every capture, whole and corrupted. */
static void test_captures(void **state)
{
	(void)state;
	const char *dir = FIXTURES_DIR "/upstream";
	DIR *d = opendir(dir);
	assert_non_null(d);
	unsigned files = 0;
	seen.compared = seen.accepted_events = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strstr(e->d_name, ".zmqcap"))
			continue;
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		zmqcap *c = zmqcap_open(path);
		assert_non_null(c);
		mkv_frame f[ZMQCAP_MAX_FRAMES];
		size_t n;
		unsigned msgs = 0;
		while (zmqcap_next(c, f, &n) == 1) {
			compare(f, n);
			if (n == 3 && msgs++ % 8 == 0)
				compare_corrupted(f[2].data, f[2].len, 8);
		}
		zmqcap_close(c);
		files++;
	}
	closedir(d);
	assert_true(files >= 8);
	assert_true(seen.accepted_events > 10000);
}

int main(void)
{
	mine = kv_decoder_new();
	ref = ref_decoder_new();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_captures),
		cmocka_unit_test(test_nesting_limit),
		cmocka_unit_test(test_random_batches),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	kv_decoder_free(mine);
	ref_decoder_free(ref);
	return rc;
}
