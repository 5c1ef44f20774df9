/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: a peer's state stream (mooncake_kv/handover.h), read
 * in pieces of a size the first byte picks, into a store.  The input's
 * records come with the trailer they need (their checksum and count are
 * computed here), so that what the checksum would refuse at the end is
 * still read, checked, taken and rendered: nothing may crash, the limits
 * hold, and a refused stream leaves the store and the budget as they were.
 * Inputs as they are (with or without a trailer of their own) go through
 * too. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include <mooncake_kv/handover.h>
#include <mooncake_kv/scrape.h>

static mkv_store *store(mkv_budget *b, mkv_store_member *m, mkv_keygroup_re *re)
{
	mkv_budget_init(b, 16, 4096);
	m[0] = (mkv_store_member){.label = "127.0.0.1:1", .has_status = true, .dialect = -1};
	mkv_store_cfg cfg = {.name = "m",
			     .polled = true,
			     .members = m,
			     .n_members = 1,
			     .key_groups = re,
			     .residency = true,
			     .budget = b,
			     .seed = 7,
			     .max_tenants = 16};
	return mkv_store_new(&cfg);
}

static void run(const unsigned char *p, size_t n, size_t step, mkv_keygroup_re *re)
{
	mkv_budget b;
	mkv_store_member m[1];
	mkv_store *s = store(&b, m, re);
	if (!s)
		return;
	mkv_handover *h = mkv_handover_new(&s, 1, 1 << 20);
	enum mkv_boot_result r = MKV_BOOT_TAKEN;
	for (size_t at = 0; h && at < n && r == MKV_BOOT_TAKEN; at += step)
		r = mkv_handover_feed(h, p + at, n - at < step ? n - at : step);
	bool taken = h && r == MKV_BOOT_TAKEN && mkv_handover_end(h) == MKV_BOOT_TAKEN &&
		     mkv_handover_take(h, 0) == MKV_BOOT_TAKEN;
	mkv_handover_free(h);
	if (!taken && (atomic_load(&b.tenants) || atomic_load(&b.objects)))
		__builtin_trap(); /* a refused stream left something behind */
	if (taken) {
		mkv_scrape *sc = mkv_scrape_new(1);
		mkv_store_note_connect(s, 0, 0);
		mkv_buf out;
		mkv_buf_init(&out);
		mkv_exporter_info x = {.version = "f", .revision = "f"};
		if (sc && mkv_scrape_store(sc, 0, s, NULL) == MKV_OK)
			mkv_scrape_render(sc, &x, &out);
		mkv_buf_free(&out);
		mkv_scrape_free(sc);
	}
	mkv_store_free(s);
	if (atomic_load(&b.tenants) || atomic_load(&b.objects))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static mkv_keygroup_re *re;
	if (!re) {
		char err[64];
		re = mkv_keygroup_compile("^(?<model>[^/]+)/", err, sizeof(err));
	}
	if (size < 1)
		return 0;
	size_t step = 1 + data[0] * 37u;
	mkv_keygroup_re *groups = data[0] & 1 ? re : NULL;
	data++, size--;
	run(data, size, step, groups);
	/* the whole records of the input, and their trailer */
	size_t whole = 0, records = 0;
	while (size - whole >= 5) {
		uint32_t len = data[whole + 1] | (uint32_t)data[whole + 2] << 8 | (uint32_t)data[whole + 3] << 16 |
			       (uint32_t)data[whole + 4] << 24;
		if (data[whole] == 0xff || len > size - whole - 5)
			break;
		whole += 5 + len;
		records++;
	}
	unsigned char *p = malloc(whole + 21);
	if (!p)
		return 0;
	memcpy(p, data, whole);
	uint64_t sum = XXH3_64bits(data, whole);
	unsigned char *t = p + whole;
	t[0] = 0xff;
	t[1] = 16, t[2] = t[3] = t[4] = 0;
	for (int i = 0; i < 8; i++) {
		t[5 + i] = (unsigned char)(sum >> (8 * i));
		t[13 + i] = (unsigned char)(records >> (8 * i));
	}
	run(p, whole + 21, step, groups);
	free(p);
	return 0;
}
