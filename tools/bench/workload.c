/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <msgpack.h>

#include "workload.h"

static uint64_t mix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void str(msgpack_packer *pk, const char *s, size_t n)
{
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}
#define LIT(pk, s) str(pk, s, sizeof(s) - 1)

/* 0xcf + 8 bytes, whatever the value: patchable in place. */
static size_t u64_fixed(msgpack_sbuffer *sb, uint64_t v)
{
	unsigned char b[9] = {0xcf};
	for (int i = 8; i >= 1; i--, v >>= 8)
		b[i] = (unsigned char)v;
	size_t off = sb->size + 1;
	msgpack_sbuffer_write(sb, (const char *)b, 9);
	return off;
}

static void put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

void wl_stamp(wl_msg *m, uint64_t first_eid, int64_t ts_ms)
{
	for (int i = 0; i <= WL_BATCH; i++)
		put_be64(m->payload + m->ts_off[i], (uint64_t)ts_ms);
	for (int i = 0; i < WL_BATCH; i++)
		put_be64(m->payload + m->eid_off[i], first_eid + (uint64_t)i);
}

static void encode(wl_msg *out, const wl_params *p, const uint64_t *keys, const unsigned *tenants, const int *stored,
		   const int *medium)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 3);
	out->ts_off[0] = u64_fixed(&sb, 0);
	msgpack_pack_array(&pk, WL_BATCH);
	char key[4096], tenant[32], backend[40];
	for (int i = 0; i < WL_BATCH; i++) {
		/* a realistic key: model / layer / content hash, padded to key_bytes */
		/* four models, two parallelisms: eight key groups for `bench groups` */
		static const char *const model[] = {"llama-70b", "qwen2-72b", "mixtr-8x7", "gemma-27b"};
		int n = snprintf(key, sizeof(key), "model-%s/tp%u/layer%02u/%016llx", model[keys[i] / 80 % 4],
				 keys[i] / 320 % 2 ? 4u : 8u, (unsigned)(keys[i] % 80),
				 (unsigned long long)(keys[i] * 0x9e3779b97f4a7c15ull));
		for (; (unsigned)n < p->key_bytes && n < (int)sizeof(key) - 1; n++)
			key[n] = (char)('a' + (keys[i] + (uint64_t)n) % 26);
		int tl = snprintf(tenant, sizeof(tenant), "tenant-%u", tenants[i]);
		int bl = p->backends > 1 ? snprintf(backend, sizeof(backend), "mooncake-master-%u",
						    (unsigned)(keys[i] % p->backends))
					 : snprintf(backend, sizeof(backend), "mooncake-master-1");
		bool st = stored[i];
		msgpack_pack_map(&pk, st ? 20 : 17);
		LIT(&pk, "event_id");
		out->eid_off[i] = u64_fixed(&sb, 0);
		LIT(&pk, "timestamp");
		out->ts_off[i + 1] = u64_fixed(&sb, 0);
		LIT(&pk, "event_type");
		if (st)
			LIT(&pk, "stored");
		else
			LIT(&pk, "removed");
		LIT(&pk, "type");
		if (st)
			LIT(&pk, "BlockStored");
		else
			LIT(&pk, "BlockRemoved");
		LIT(&pk, "model_name"), msgpack_pack_nil(&pk);
		LIT(&pk, "block_size"), msgpack_pack_nil(&pk);
		LIT(&pk, "additional_salt"), msgpack_pack_nil(&pk);
		LIT(&pk, "lora_name"), msgpack_pack_nil(&pk);
		LIT(&pk, "tenant_id"), str(&pk, tenant, (size_t)tl);
		LIT(&pk, "backend_id"), str(&pk, backend, (size_t)bl);
		LIT(&pk, "group_id"), msgpack_pack_nil(&pk);
		LIT(&pk, "medium");
		if (medium[i])
			LIT(&pk, "disk");
		else
			LIT(&pk, "cpu");
		LIT(&pk, "dp_rank"), msgpack_pack_uint32(&pk, 0);
		LIT(&pk, "object_key"), str(&pk, key, (size_t)n);
		LIT(&pk, "seq_hashes"), msgpack_pack_array(&pk, 0);
		LIT(&pk, "block_hashes"), msgpack_pack_array(&pk, 0);
		LIT(&pk, "base_block_idx"), msgpack_pack_nil(&pk);
		if (st) {
			LIT(&pk, "parent_hash"), msgpack_pack_nil(&pk);
			LIT(&pk, "token_ids"), msgpack_pack_nil(&pk);
			LIT(&pk, "parent_block_hash"), msgpack_pack_nil(&pk);
		}
	}
	msgpack_pack_uint32(&pk, 0);
	out->payload = (unsigned char *)sb.data; /* taken over from the sbuffer */
	out->len = sb.size;
}

wl_msg *wl_encode_mix(const wl_params *p, size_t n)
{
	wl_msg *m = calloc(n, sizeof(*m));
	uint64_t x = p->seed, keys[WL_BATCH];
	unsigned tenants[WL_BATCH];
	int stored[WL_BATCH], medium[WL_BATCH];
	for (size_t j = 0; m && j < n; j++) {
		for (int i = 0; i < WL_BATCH; i++) {
			keys[i] = mix64(&x) % p->keys;
			tenants[i] = (unsigned)(keys[i] % p->tenants); /* a key lives in one tenant */
			stored[i] = mix64(&x) % 100 < p->stored_pct;
			medium[i] = (int)(mix64(&x) & 1);
		}
		encode(&m[j], p, keys, tenants, stored, medium);
	}
	return m;
}

wl_msg *wl_encode_load(const wl_params *p, size_t *n_out)
{
	size_t n = (size_t)((p->keys + WL_BATCH - 1) / WL_BATCH);
	wl_msg *m = calloc(n, sizeof(*m));
	uint64_t keys[WL_BATCH];
	unsigned tenants[WL_BATCH];
	int stored[WL_BATCH], medium[WL_BATCH];
	for (size_t j = 0; m && j < n; j++) {
		for (int i = 0; i < WL_BATCH; i++) {
			keys[i] = (j * WL_BATCH + (size_t)i) % p->keys;
			tenants[i] = (unsigned)(keys[i] % p->tenants);
			stored[i] = 1;
			medium[i] = (int)(keys[i] & 1);
		}
		encode(&m[j], p, keys, tenants, stored, medium);
	}
	*n_out = n;
	return m;
}

void wl_free(wl_msg *m, size_t n)
{
	for (size_t i = 0; m && i < n; i++)
		free(m[i].payload);
	free(m);
}
