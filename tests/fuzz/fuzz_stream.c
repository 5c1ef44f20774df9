/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: bytes -> multipart messages -> kv_stream_ingest.
 *
 * Input: records of [u8 frame count][per frame: u16 little-endian length,
 * bytes]; a truncated record ends the input.  Several messages per input,
 * so that sequence tracking, tenant state and the object tables see
 * histories, not single messages.  Key groups are on, with a budget small
 * enough to overflow.  After every input the state's own figures must agree
 * with its tables, and each tenant's groups must add up to its objects: a
 * violation aborts. */
#include <stdlib.h>
#include <string.h>

#include "kv_stream.h"

#define MAX_FRAMES 5

static void check(const kv_stream *st, const mkv_budget *b)
{
	size_t total = 0;
	for (size_t i = 0; i < kv_state_tenant_count(kv_stream_state(st)); i++) {
		const kv_tenant *t = kv_state_tenant_at(kv_stream_state(st), i);
		if (kv_tenant_objects(t) != kv_objtable_count(&t->objects))
			abort();
		total += kv_objtable_count(&t->objects);
		size_t in_groups = 0;
		for (uint32_t g = 0; g < t->groups.n; g++)
			in_groups += kv_group_objects(&t->groups.v[g]);
		if (in_groups != kv_objtable_count(&t->objects))
			abort();
	}
	if (total != atomic_load(&b->objects) || kv_state_tenant_count(kv_stream_state(st)) != atomic_load(&b->tenants))
		abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	mkv_budget budget;
	static mkv_keygroup_re *re;
	if (!re && !(re = mkv_keygroup_compile("^(?<a>[^@/]*)[@/](?<b>[^@]{0,3})", NULL, 0)))
		abort();
	mkv_budget_init(&budget, 64, 4096); /* small: limits get hit too */
	budget.max_key_groups = 4;
	kv_stream *st = kv_stream_new(&budget, 42);
	if (!st || kv_stream_set_keygroups(st, re) != MKV_OK) {
		kv_stream_free(st);
		return 0;
	}
	size_t off = 0;
	while (off < size) {
		size_t n = data[off++] % (MAX_FRAMES + 1);
		mkv_frame f[MAX_FRAMES];
		size_t k = 0;
		for (; k < n; k++) {
			if (size - off < 2)
				break;
			size_t len = (size_t)data[off] | (size_t)data[off + 1] << 8;
			off += 2;
			if (len > size - off)
				len = size - off;
			/* a private copy: nothing may read past the frame */
			f[k].data = len ? memcpy(malloc(len), data + off, len) : NULL;
			f[k].len = len;
			off += len;
		}
		if (k == n)
			kv_stream_ingest(st, f, n, 1795982104612, NULL);
		for (size_t i = 0; i < k; i++)
			free((void *)f[i].data);
		if (k < n)
			break;
	}
	check(st, &budget);
	kv_stream_free(st);
	if (atomic_load(&budget.objects) || atomic_load(&budget.tenants))
		abort();
	return 0;
}
