/* SPDX-License-Identifier: Apache-2.0 */
/* The master's keys, as reconciliation reads them: GET /get_all_keys (one
 * key a line, of any length, streamed: split here as its bytes arrive) and
 * GET /batch_query_keys?keys=a,b,... (a URL of bounded length built here,
 * and its JSON answer parsed here into each key's media); for a tenant
 * other than `default`, the same at the per-tenant endpoints of
 * tools/upstream/tenant-listing.patch, whose answers name the tenant they
 * describe.  Pure: the reconciler moves the bytes. */
#ifndef KV_MASTER_KEYS_H
#define KV_MASTER_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mooncake_kv/buf.h>

#include "kv_common.h"

#define KV_KEYS_MAX_KEY_BYTES 16384               /* a longer line is no key we can ask about */
#define KV_KEYS_QUERY_BYTES   8192                /* encoded keys in one batch query's URL */
#define KV_KEYS_BATCH_MAX     KV_KEYS_QUERY_BYTES /* keys in one batch, at most */

/* Where a tenant's keys are read.  Tenant `default`: upstream's
 * /get_all_keys and /batch_query_keys, which every master serves.  Any
 * other: /api/v1/tenant_keys?tenant_id=T and
 * /api/v1/tenant_batch_query_keys?tenant_id=T&keys=..., paths an old
 * master answers 404: a master that does not list tenants can never hand
 * tenant default's keys over as another's (it ignores a parameter it does
 * not know, so /get_all_keys?tenant_id=T would answer with default's). */
typedef struct kv_keys_at {
	mkv_buf listing; /* the listing's URL */
	mkv_buf query;   /* a batch query's URL up to its first key */
	mkv_str tenant;  /* borrowed: the tenant the answers must name; {NULL, 0} for default */
} kv_keys_at;

#define KV_TENANT_ID_HEADER "X-Mooncake-Tenant-Id" /* names the tenant a per-tenant answer describes */

void kv_keys_at_init(kv_keys_at *k);
void kv_keys_at_free(kv_keys_at *k);
/* The URLs of tenant's keys at the master's admin URL base.  Returns 0,
 * MKV_EINVAL for a tenant no endpoint can name (empty, or with a byte below
 * 0x20 or DEL, or beginning with '_': upstream's TenantId::IsValid), or
 * MKV_ENOMEM. */
enum mkv_err kv_keys_at_set(kv_keys_at *k, const char *base, mkv_str tenant);
/* Whether a request can name the tenant (the rule above). */
bool kv_keys_tenant_nameable(mkv_str tenant);

/* What the answer to a listing request is, from its status and the tenant
 * its KV_TENANT_ID_HEADER names (NULL: none). */
enum kv_listed {
	KV_LISTED_TAKE,         /* the tenant's listing: read its body */
	KV_LISTED_STANDBY,      /* 503: the master stands by */
	KV_LISTED_DEFAULT_ONLY, /* per tenant: no such endpoint (404, 405, 501), or an answer for
				   another tenant (multi-tenancy off: it lists default) */
	KV_LISTED_REFUSED,      /* any other status: the attempt failed */
};

enum kv_listed kv_keys_listed(const kv_keys_at *k, long http, const char *tenant_header);

/* The listing, split into keys as it arrives. */
typedef struct kv_listing {
	mkv_buf carry;      /* bytes not yet split */
	bool skipping;      /* inside an overlong line */
	uint64_t listed;    /* non-empty lines split so far */
	uint64_t unaskable; /* of them, keys no batch query can ask about */
	uint64_t max_keys;  /* more lines than this: the listing is refused */
	bool too_long;      /* ... and it had more */
} kv_listing;

/* Called for each key that can be asked about; returns false to stop. */
typedef bool (*kv_listing_key_fn)(const char *key, size_t len, void *ctx);

/* max_keys: --master.reconcile-max-keys */
void kv_listing_init(kv_listing *l, uint64_t max_keys);
void kv_listing_reset(kv_listing *l);
void kv_listing_free(kv_listing *l);
/* Appends bytes of the listing.  Returns 0 or MKV_ENOMEM. */
enum mkv_err kv_listing_feed(kv_listing *l, const void *p, size_t n);
/* Splits the complete lines held (at_end: the last, unterminated one too)
 * and hands each key on; a line longer than KV_KEYS_MAX_KEY_BYTES is
 * skipped to its end without being held whole.  A key with a comma (the
 * master splits the query on commas) or that is not valid UTF-8 (its JSON
 * answer cannot hold it) is counted unaskable.  Returns false when fn
 * stopped, or when there were more than max_keys lines (too_long). */
bool kv_listing_split(kv_listing *l, bool at_end, kv_listing_key_fn fn, void *ctx);

/* One batch query: the URL and the keys it asks about. */
typedef struct kv_key_batch {
	mkv_buf url;
	mkv_buf keys; /* each NUL-terminated */
	size_t n;
	uint32_t key_at[KV_KEYS_BATCH_MAX];
} kv_key_batch;

void kv_key_batch_init(kv_key_batch *b);
void kv_key_batch_reset(kv_key_batch *b);
void kv_key_batch_free(kv_key_batch *b);
/* Whether a key of len bytes no longer fits (the batch must be asked first). */
bool kv_key_batch_full(const kv_key_batch *b, const kv_keys_at *at, size_t len);
/* Adds a key to the batch, asked at `at`.  Returns 0 or MKV_ENOMEM. */
enum mkv_err kv_key_batch_add(kv_key_batch *b, const kv_keys_at *at, const char *key, size_t len);
static inline const char *kv_key_batch_key(const kv_key_batch *b, size_t i)
{
	return b->keys.data + b->key_at[i];
}

/* The answer to the batch: media[i] the media of key i (memory replicas are
 * cpu; disk, local disk and NVMe-oF replicas disk: upstream's
 * MasterService::MediumForReplicaType), 0 when the master does not hold it
 * (OBJECT_NOT_FOUND: removed since the listing, as the replay will say) or
 * cannot tell; *unknown += the keys it could not tell (a failed lookup, or
 * no answer).  Asked per tenant, the answer must name at->tenant in its
 * "tenant_id".  Returns MKV_POLL_OK, MKV_POLL_PARSE (not {"success":true,
 * "data":{...}}), MKV_POLL_FIELD (another tenant's answer) or
 * MKV_POLL_NO_MEMORY. */
enum mkv_poll_error kv_key_batch_parse(const kv_key_batch *b, const kv_keys_at *at, const char *body, size_t len,
				       unsigned *media, uint64_t *unknown);

#endif
