/* SPDX-License-Identifier: Apache-2.0 */
/* Every label value the exporter gives a fixed name: one table each, all
 * here, so a name can never drift between the decoder, the state, the
 * master tracking and the metrics. */
#include <mooncake_kv/scrape.h>

#include "kv_common.h"
#include "kv_master_status.h"
#include "kv_reconcile_replay.h"
#include "kv_state.h"

static const char *const reason_names[KV_R__COUNT] = {
	[KV_R_OK] = "ok",
	[KV_R_FRAME_COUNT] = "frame_count",
	[KV_R_SEQUENCE_LENGTH] = "sequence_length",
	[KV_R_MSGPACK_PARSE] = "msgpack_parse",
	[KV_R_PAYLOAD_SHAPE] = "payload_shape",
	[KV_R_EVENT_SHAPE] = "event_shape",
	[KV_R_MISSING_FIELD] = "missing_field",
	[KV_R_FIELD_TYPE] = "field_type",
	[KV_R_UNKNOWN_EVENT_TYPE] = "unknown_event_type",
	[KV_R_UNKNOWN_MEDIUM] = "unknown_medium",
};

static const char *const event_type_names[KV_EV__COUNT] = {
	[KV_EV_STORED] = "stored",
	[KV_EV_REMOVED] = "removed",
	[KV_EV_CLEARED] = "cleared",
};

static const char *const placement_names[KV_PLACE__COUNT] = {
	[KV_PLACE_CPU_ONLY] = "cpu_only",
	[KV_PLACE_DISK_ONLY] = "disk_only",
	[KV_PLACE_CPU_AND_DISK] = "cpu_and_disk",
};

const char *kv_reason_name(enum kv_reason r)
{
	return (unsigned)r < KV_R__COUNT ? reason_names[r] : "invalid";
}

const char *kv_event_type_name(enum kv_event_type t)
{
	return (unsigned)t < KV_EV__COUNT ? event_type_names[t] : "invalid";
}

const char *kv_placement_name(enum kv_placement p)
{
	return (unsigned)p < KV_PLACE__COUNT ? placement_names[p] : "invalid";
}

static const char *const poll_error_names[KV_POLL__COUNT] = {
	[KV_POLL_OK] = "ok",
	[KV_POLL_CONNECT] = "connect",
	[KV_POLL_TIMEOUT] = "timeout",
	[KV_POLL_HTTP_STATUS] = "http_status",
	[KV_POLL_BODY_TOO_LARGE] = "body_too_large",
	[KV_POLL_PARSE] = "parse",
	[KV_POLL_FIELD] = "field",
	[KV_POLL_NO_MEMORY] = "out_of_memory",
};

const char *kv_poll_error_name(enum kv_poll_error e)
{
	return (unsigned)e < KV_POLL__COUNT ? poll_error_names[e] : "invalid";
}

/* By bit index: KV_STALE_STARTUP is bit 0. */
static const char *const stale_reason_names[KV_STALE__BITS] = {
	"startup",  "gap",     "reset",          "reconnect", "overflow",  "reconcile_incomplete",
	"failover", "dialect", "quota_eviction", "drift",     "bootstrap", "removed_after_cleared",
};

static const char *const exact_cause_names[KV_EXACT__CAUSES] = {
	[KV_EXACT_CLEARED] = "cleared",
	[KV_EXACT_RECONCILED] = "reconciled",
	[KV_EXACT_EMPTY_STORE] = "empty_store",
};

const char *kv_exact_cause_name(enum kv_exact_cause c)
{
	return (unsigned)c < KV_EXACT__CAUSES ? exact_cause_names[c] : "invalid";
}

const char *kv_stale_reason_name(unsigned bit)
{
	return bit < KV_STALE__BITS ? stale_reason_names[bit] : "invalid";
}

static const char *const recon_result_names[KV_RECON__RESULTS] = {
	[KV_RECON_OK] = "ok",
	[KV_RECON_FAILED] = "failed",
	[KV_RECON_ABORTED] = "aborted",
	[KV_RECON_SUPERSEDED] = "superseded",
};

const char *kv_recon_result_name(enum kv_recon_result r)
{
	return (unsigned)r < KV_RECON__RESULTS ? recon_result_names[r] : "invalid";
}

static const char *const recon_correction_names[KV_CORR__KINDS] = {
	[KV_CORR_ADDED] = "added",
	[KV_CORR_REMOVED] = "removed",
	[KV_CORR_MEDIUM] = "medium",
};

const char *kv_recon_correction_name(enum kv_recon_correction k)
{
	return (unsigned)k < KV_CORR__KINDS ? recon_correction_names[k] : "invalid";
}

const char *kv_medium_name(enum kv_medium m)
{
	return m == KV_MEDIUM_CPU ? "cpu" : m == KV_MEDIUM_DISK ? "disk" : "invalid";
}

static const char *const dialect_names[KV_DIALECT__COUNT] = {
	[KV_DIALECT_MEDIA] = "media",
	[KV_DIALECT_OBJECT] = "object",
};

const char *kv_dialect_name(enum kv_dialect d)
{
	return (unsigned)d < KV_DIALECT__COUNT ? dialect_names[d] : "invalid";
}

static const char *const http_reject_names[KV_HTTP_REJECT__COUNT] = {
	[KV_HTTP_REJECT_LIMIT] = "limit",
	[KV_HTTP_REJECT_ADDRESS_LIMIT] = "address_limit",
	[KV_HTTP_REJECT_HEADER_TIMEOUT] = "header_timeout",
	[KV_HTTP_REJECT_REQUEST_TIMEOUT] = "request_timeout",
	[KV_HTTP_REJECT_MALFORMED] = "malformed",
};

const char *kv_http_reject_name(enum kv_http_reject r)
{
	return (unsigned)r < KV_HTTP_REJECT__COUNT ? http_reject_names[r] : "invalid";
}

static const char *const login_failure_names[KV_LOGIN__COUNT] = {
	[KV_LOGIN_MISSING] = "missing",           [KV_LOGIN_MALFORMED] = "malformed",
	[KV_LOGIN_UNKNOWN_USER] = "unknown_user", [KV_LOGIN_WRONG_PASSWORD] = "wrong_password",
	[KV_LOGIN_THROTTLED] = "throttled",
};

const char *kv_login_failure_name(enum kv_login_failure f)
{
	return (unsigned)f < KV_LOGIN__COUNT ? login_failure_names[f] : "invalid";
}
