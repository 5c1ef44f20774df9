/* SPDX-License-Identifier: Apache-2.0 */
/* The leader's /metrics (Prometheus text), read as it arrives and never held
 * whole: upstream's /metrics grows by some 450 bytes per tenant (its
 * per-tenant quota gauges, master_admin_service.cpp), so a body cap would be
 * outgrown by tenants.  Only what the exporter uses is kept:
 * master_key_count (summed over its series: the drift of the stream's view)
 * and, bounded, mooncake_tenant_quota_reject_total{tenant_id,reason} (puts
 * refused for a tenant's quota) and mooncake_tenant_evict_bytes_total
 * {tenant_id} (bytes its quota eviction freed: master_metric_manager.cpp
 * L407-409 and L1223-1225 at 3b5a594).
 * Pure: the poller hands the bytes here as libcurl delivers them. */
#ifndef KV_MASTER_METRICS_H
#define KV_MASTER_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mooncake_kv/buf.h>

#include "kv_common.h"

#define KV_METRICS_MAX_LINE (64 * 1024) /* a longer line is skipped, and makes the answer bad */

/* One series of a per-tenant counter of the master: (tenant, reason) of the
 * reject counter, (tenant) of the eviction counter (reason empty). */
typedef struct kv_quota_reject {
	size_t tenant_at, reason_at; /* in names, each followed by a NUL */
	uint32_t tenant_len, reason_len;
	double count;
} kv_quota_reject;

typedef struct kv_quota_rejects {
	kv_quota_reject *v;
	size_t n, cap;
	mkv_buf names;
	uint64_t overflow; /* series left out: beyond the limit */
} kv_quota_rejects;

/* Copies src into dst, reusing dst's memory.  Returns 0 or MKV_ENOMEM (dst
 * then holds none). */
enum mkv_err kv_quota_rejects_copy(kv_quota_rejects *dst, const kv_quota_rejects *src);
void kv_quota_rejects_free(kv_quota_rejects *r);

typedef struct kv_metrics_reader {
	mkv_buf line;  /* the line being received */
	bool skipping; /* inside an overlong line */
	bool bad;      /* a sample we read was not a number, or a line too long */
	bool no_memory;
	bool has_keys;
	double keys; /* master_key_count, summed */
	kv_quota_rejects rejects;
	kv_quota_rejects evictions; /* reason empty */
	size_t max_rejects;
} kv_metrics_reader;

/* The value of tenant[0..len) in a table of the eviction counter, through
 * an index built for it (kv_tenant_index_build): false when absent. */
typedef struct kv_tenant_index {
	uint32_t *slot; /* entry + 1, 0 empty */
	size_t mask;
} kv_tenant_index;
enum mkv_err kv_tenant_index_build(kv_tenant_index *ix, const kv_quota_rejects *t);
bool kv_tenant_index_get(const kv_tenant_index *ix, const kv_quota_rejects *t, const char *tenant, size_t len,
			 double *value);
void kv_tenant_index_free(kv_tenant_index *ix);

/* max_rejects: series kept of each per-tenant counter (the rest counted in
 * overflow). */
void kv_metrics_reader_init(kv_metrics_reader *r, size_t max_rejects);
/* Forgets what was read: for the next answer. */
void kv_metrics_reader_reset(kv_metrics_reader *r);
void kv_metrics_reader_free(kv_metrics_reader *r);
/* Bytes of the answer, in order.  Returns 0 or MKV_ENOMEM. */
enum mkv_err kv_metrics_reader_feed(kv_metrics_reader *r, const void *p, size_t n);
/* The answer is complete.  Returns MKV_POLL_OK; MKV_POLL_FIELD when it has no
 * master_key_count, or a sample we use is not a number (or a counter below
 * 0), or a line is longer than KV_METRICS_MAX_LINE; MKV_POLL_NO_MEMORY. */
enum mkv_poll_error kv_metrics_reader_end(kv_metrics_reader *r);

#endif
