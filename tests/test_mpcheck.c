/* SPDX-License-Identifier: Apache-2.0 */
/* The msgpack bounds pre-scan against msgpack-c itself: whatever msgpack-c
 * packs is accepted; every truncation of it, and any trailing byte, is not;
 * and whatever the scan accepts, msgpack-c unpacks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <msgpack.h>

#include "kv_mpcheck.h"

#include <cmocka.h>

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static char blob[70000];

/* A random object of every msgpack kind, containers down to depth 4. */
static void pack_random(msgpack_packer *pk, int depth)
{
	unsigned kind = (unsigned)(next() % (depth < 4 ? 16 : 12));
	static const size_t lens[] = {0, 1, 31, 32, 255, 256, 65535, 65536};
	size_t n = lens[next() % 8];
	switch (kind) {
	case 0:
		msgpack_pack_nil(pk);
		break;
	case 1:
		msgpack_pack_true(pk);
		break;
	case 2:
		msgpack_pack_uint64(pk, next() >> (next() % 64));
		break;
	case 3:
		msgpack_pack_int64(pk, -(int64_t)(next() >> (1 + next() % 63)));
		break;
	case 4:
		msgpack_pack_float(pk, 1.5f);
		break;
	case 5:
		msgpack_pack_double(pk, 2.5);
		break;
	case 6:
		msgpack_pack_str_with_body(pk, blob, n);
		break;
	case 7:
		msgpack_pack_bin_with_body(pk, blob, n);
		break;
	case 8:
		msgpack_pack_ext_with_body(pk, blob, (size_t[]){1, 2, 4, 8, 16, 3, 300, 70000}[next() % 8], 7);
		break;
	case 9:
		msgpack_pack_uint8(pk, 200);
		break;
	case 10:
		msgpack_pack_int16(pk, -300);
		break;
	case 11:
		msgpack_pack_uint32(pk, 70000);
		break;
	case 12:
	case 13: {
		size_t k = (size_t[]){0, 1, 15, 16, 17}[next() % 5];
		msgpack_pack_array(pk, k);
		for (size_t i = 0; i < k; i++)
			pack_random(pk, depth + 1);
		break;
	}
	default: {
		size_t k = (size_t[]){0, 1, 15, 16}[next() % 4];
		msgpack_pack_map(pk, k);
		for (size_t i = 0; i < 2 * k; i++)
			pack_random(pk, depth + 1);
		break;
	}
	}
}

static void test_agrees_with_msgpack_c(void **state)
{
	(void)state;
	memset(blob, 'x', sizeof(blob));
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_zone zone;
	msgpack_zone_init(&zone, 4096);
	for (int round = 0; round < 300; round++) {
		msgpack_sbuffer_clear(&sb);
		msgpack_packer pk;
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		pack_random(&pk, 0);
		assert_true(kv_msgpack_well_formed(sb.data, sb.size));
		/* every prefix is incomplete; check a spread of them */
		size_t step = sb.size > 2000 ? sb.size / 500 : 1;
		for (size_t cut = 0; cut < sb.size; cut += step)
			assert_false(kv_msgpack_well_formed(sb.data, cut));
		assert_false(kv_msgpack_well_formed(sb.data, sb.size - 1));
		msgpack_sbuffer_write(&sb, "\xc0", 1);
		assert_false(kv_msgpack_well_formed(sb.data, sb.size));
	}
	/* random bytes: whenever the scan says yes, msgpack-c must agree */
	unsigned char junk[64];
	size_t accepted = 0;
	for (int round = 0; round < 200000; round++) {
		size_t n = 1 + next() % sizeof(junk);
		for (size_t i = 0; i < n; i++)
			junk[i] = (unsigned char)next();
		if (!kv_msgpack_well_formed(junk, n))
			continue;
		accepted++;
		msgpack_object o;
		size_t off = 0;
		msgpack_zone_clear(&zone);
		assert_int_equal(msgpack_unpack((const char *)junk, n, &off, &zone, &o), MSGPACK_UNPACK_SUCCESS);
	}
	assert_true(accepted > 100);
	msgpack_zone_destroy(&zone);
	msgpack_sbuffer_destroy(&sb);
}

struct hostile {
	const char *name;
	const char *bytes;
	size_t len;
	bool ok;
};
#define H(n, s, ok)                     \
	{                               \
		n, s, sizeof(s) - 1, ok \
	}

static const struct hostile hostile[] = {
	H("empty", "", false),
	H("reserved 0xc1", "\xc1", false),
	H("array32 of 2^32-1, no bytes", "\xdd\xff\xff\xff\xff", false),
	H("array16 of 3, 2 bytes", "\xdc\x00\x03\x01\x02", false),
	H("array16 of 3, 3 bytes", "\xdc\x00\x03\x01\x02\x03", true),
	H("map of 2 needs 4 objects", "\x82\x01\x02\x03", false),
	H("map16 of 1", "\xde\x00\x01\xa1\x61\xc0", true),
	H("map32 claiming 2^31", "\xdf\x80\x00\x00\x00\x01\x01", false),
	H("str32 longer than buffer", "\xdb\x00\x00\x00\x05\x61", false),
	H("str8 exact", "\xd9\x02\x61\x62", true),
	H("bin16 short", "\xc5\x00\x02\x61", false),
	H("ext8 needs its type byte", "\xc7\x01\x05", false),
	H("ext8 complete", "\xc7\x01\x05\x61", true),
	H("fixext16 short",
	  "\xd8\x01"
	  "0123456789abcde",
	  false),
	H("uint64 short", "\xcf\x00\x00", false),
	H("length field cut", "\xda\x00", false),
	H("nested arrays", "\x91\x91\x91\x91\xc0", true),
	H("two objects", "\xc0\xc0", false),
};

static void test_hostile_headers(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		print_message("case: %s\n", hostile[i].name);
		assert_int_equal(kv_msgpack_well_formed(hostile[i].bytes, hostile[i].len), hostile[i].ok);
	}
	/* deep nesting costs the scan nothing */
	static unsigned char deep[100001];
	memset(deep, 0x91, 100000);
	deep[100000] = 0xc0;
	assert_true(kv_msgpack_well_formed(deep, sizeof(deep)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agrees_with_msgpack_c),
		cmocka_unit_test(test_hostile_headers),
	};
	return cmocka_run_group_tests_name("mpcheck", tests, NULL, NULL);
}
