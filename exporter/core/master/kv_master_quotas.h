/* SPDX-License-Identifier: Apache-2.0 */
/* Tenant quotas, as the leader's GET /api/v1/tenant_quotas reports them:
 * {"success":true,"data":[{"tenant_id","requested_quota_bytes",
 * "effective_quota_bytes","charged_bytes","admission_closed","over_quota",
 * "has_explicit_policy"}]}.  Pure: the poller fetches, this parses and
 * keeps the list; a snapshot copies it. */
#ifndef KV_MASTER_QUOTAS_H
#define KV_MASTER_QUOTAS_H

#include <stdbool.h>
#include <stdint.h>

#include <mooncake_kv/buf.h>

#include "kv_common.h"

typedef struct kv_quota {
	size_t name_at; /* tenant_id: names.data[name_at .. + name_len) */
	uint32_t name_len;
	uint64_t requested, effective, charged; /* bytes */
	bool admission_closed, over_quota, explicit_policy;
} kv_quota;

enum kv_quota_mode {
	KV_QUOTAS_UNKNOWN = 0, /* not asked yet, or the last answer was not understood */
	KV_QUOTAS_ON,          /* the leader enforces quotas: v holds them */
	KV_QUOTAS_OFF,         /* 409: quotas are not enabled on that master */
};

typedef struct kv_quotas {
	enum kv_quota_mode mode;
	kv_quota *v;
	size_t n, cap;
	mkv_buf names;
	uint64_t overflow; /* tenants left out of the last answer: beyond the tenant limit */
} kv_quotas;

/* The answer read as it arrives, never held whole: it grows by some 190
 * bytes per tenant, so a body cap would be outgrown by tenants.  Only the
 * top level is scanned here; each element of data[] (at most
 * KV_QUOTAS_MAX_ELEMENT bytes) is parsed whole by jansson and kept while
 * there is room (at most max tenants, the rest counted in overflow). */
#define KV_QUOTAS_MAX_ELEMENT (64 * 1024)

typedef struct kv_quotas_reader {
	kv_quotas q; /* what this answer holds so far */
	size_t max;
	mkv_buf buf; /* the element being received */
	struct kv_quotas_scan {
		enum mkv_poll_error err;
		int top, depth;
		bool fed, in_string, escape, capture, any_key;
		bool in_data, in_success, data_array, seen_data, seen_success, success;
		char key[8], literal[8];
		size_t key_len, literal_len;
	} st; /* where the scan of this answer stands */
} kv_quotas_reader;

void kv_quotas_reader_init(kv_quotas_reader *r, size_t max);
/* For the next answer (its memory kept). */
void kv_quotas_reader_reset(kv_quotas_reader *r);
void kv_quotas_reader_free(kv_quotas_reader *r);
/* Bytes of a 200 answer, in order.  Returns 0 or MKV_ENOMEM. */
enum mkv_err kv_quotas_reader_feed(kv_quotas_reader *r, const void *p, size_t n);
/* The answer is complete: on MKV_POLL_OK it replaces what q held (whole or
 * not at all: on MKV_POLL_PARSE, MKV_POLL_FIELD or MKV_POLL_NO_MEMORY q is
 * unchanged). */
enum mkv_poll_error kv_quotas_reader_end(kv_quotas_reader *r, kv_quotas *q);

/* The same for a body held whole. */
enum mkv_poll_error kv_quotas_parse(kv_quotas *q, const char *body, size_t len, size_t max);
/* Copies src into dst, reusing dst's memory.  Returns 0 or MKV_ENOMEM (dst
 * then holds no tenants). */
enum mkv_err kv_quotas_copy(kv_quotas *dst, const kv_quotas *src);
void kv_quotas_free(kv_quotas *q);

#endif
