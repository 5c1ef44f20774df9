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

#include "kv_buf.h"
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
	kv_buf names;
	uint64_t overflow; /* tenants left out of the last answer: beyond the tenant limit */
} kv_quotas;

/* Parses a 200 body into q (replacing what it held), keeping at most max
 * tenants.  Returns KV_POLL_OK, KV_POLL_PARSE or KV_POLL_FIELD (q is then
 * unchanged), or KV_POLL_NO_MEMORY. */
enum kv_poll_error kv_quotas_parse(kv_quotas *q, const char *body, size_t len, size_t max);
/* Copies src into dst, reusing dst's memory.  Returns 0 or KV_ENOMEM (dst
 * then holds no tenants). */
int kv_quotas_copy(kv_quotas *dst, const kv_quotas *src);
void kv_quotas_free(kv_quotas *q);

#endif
