/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: an answer of the master, read by every reader the
 * exporter has for it: the tenant quotas and /metrics (both read as they
 * arrive, so also in pieces of a size the first byte picks: the pieces
 * must never change what is read), the listing splitter, the batch-query
 * answer, /leader and /ha_status.  Nothing may crash, and the limits hold. */
#include <stddef.h>
#include <string.h>

#include "kv_leadership.h"
#include "kv_master_keys.h"
#include "kv_master_metrics.h"
#include "kv_master_quotas.h"

static enum mkv_poll_error quotas(const unsigned char *p, size_t n, size_t step, kv_quotas *q)
{
	kv_quotas_reader r;
	kv_quotas_reader_init(&r, 8);
	for (size_t at = 0; at < n; at += step)
		kv_quotas_reader_feed(&r, p + at, n - at < step ? n - at : step);
	enum mkv_poll_error rc = kv_quotas_reader_end(&r, q);
	kv_quotas_reader_free(&r);
	return rc;
}

/* Every series of a per-tenant table is found again through its index
 * (the store compares the eviction counter's answers so). */
static void check_index(const kv_quota_rejects *t)
{
	kv_tenant_index ix;
	if (kv_tenant_index_build(&ix, t) != MKV_OK)
		return;
	for (size_t i = 0; i < t->n; i++) {
		double v;
		if (!kv_tenant_index_get(&ix, t, t->names.data + t->v[i].tenant_at, t->v[i].tenant_len, &v) || v < 0)
			__builtin_trap();
	}
	kv_tenant_index_free(&ix);
}

static enum mkv_poll_error metrics(const unsigned char *p, size_t n, size_t step, double *keys, size_t *rejects,
				   size_t *evictions)
{
	kv_metrics_reader r;
	kv_metrics_reader_init(&r, 8);
	for (size_t at = 0; at < n; at += step)
		kv_metrics_reader_feed(&r, p + at, n - at < step ? n - at : step);
	enum mkv_poll_error rc = kv_metrics_reader_end(&r);
	*keys = r.keys;
	*rejects = r.rejects.n;
	*evictions = r.evictions.n;
	if (r.rejects.n > 8 || r.evictions.n > 8)
		__builtin_trap();
	check_index(&r.evictions);
	kv_metrics_reader_free(&r);
	return rc;
}

static bool count_key(const char *key, size_t len, void *ctx)
{
	(void)key;
	if (!len || len > KV_KEYS_MAX_KEY_BYTES)
		__builtin_trap();
	++*(size_t *)ctx;
	return true;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = 1 + data[0] % 64;
	data++, size--;

	kv_quotas whole = {0}, pieces = {0};
	enum mkv_poll_error a = quotas(data, size, size ? size : 1, &whole), b = quotas(data, size, step, &pieces);
	if (a != b || whole.n != pieces.n || whole.n > 8 || (a == MKV_POLL_OK && whole.overflow != pieces.overflow))
		__builtin_trap();
	kv_quotas_free(&whole);
	kv_quotas_free(&pieces);

	double k1, k2;
	size_t r1, r2, e1, e2;
	enum mkv_poll_error c = metrics(data, size, size ? size : 1, &k1, &r1, &e1),
			    d = metrics(data, size, step, &k2, &r2, &e2);
	if (c != d || (c == MKV_POLL_OK && (k1 != k2 || r1 != r2 || e1 != e2)))
		__builtin_trap();

	kv_listing l;
	kv_listing_init(&l, 100);
	size_t keys = 0;
	bool go = true; /* as the reconciler: once refused, the listing is abandoned */
	for (size_t at = 0; go && at < size; at += step) {
		kv_listing_feed(&l, data + at, size - at < step ? size - at : step);
		go = kv_listing_split(&l, false, count_key, &keys);
	}
	if (go)
		kv_listing_split(&l, true, count_key, &keys);
	if (l.listed > 101 || keys > l.listed || (l.too_long && l.listed != 101))
		__builtin_trap();
	kv_listing_free(&l);

	/* the batch answer, of tenant default and of another (which it must name) */
	static const mkv_str tenants[] = {{"default", 7}, {"t1", 2}};
	for (size_t t = 0; t < 2; t++) {
		kv_keys_at at;
		kv_keys_at_init(&at);
		kv_key_batch batch;
		kv_key_batch_init(&batch);
		kv_keys_at_set(&at, "http://m", tenants[t]);
		kv_key_batch_add(&batch, &at, "a", 1);
		kv_key_batch_add(&batch, &at, "key 2", 5);
		unsigned media[2];
		uint64_t unknown = 0;
		if (kv_key_batch_parse(&batch, &at, (const char *)data, size, media, &unknown) == MKV_POLL_OK &&
		    (media[0] > MKV_MEDIA_ALL || media[1] > MKV_MEDIA_ALL || unknown > 2))
			__builtin_trap();
		kv_key_batch_free(&batch);
		kv_keys_at_free(&at);
	}

	bool has_view;
	uint64_t view;
	kv_ha_parse_leader((const char *)data, size, &has_view, &view);
	enum kv_ha_state st;
	kv_ha_parse_state((const char *)data, size, &st);
	if ((unsigned)st >= KV_HA__STATES)
		__builtin_trap();
	return 0;
}
