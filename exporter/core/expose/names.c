/* SPDX-License-Identifier: Apache-2.0 */
/* Every label value the exporter gives a fixed name: one table each, all
 * here, so a name can never drift between the decoder, the state, the
 * master tracking and the metrics. */
#include <mooncake_kv/scrape.h>

#include "kv_common.h"
#include "kv_master_status.h"
#include "kv_reconcile_replay.h"
#include "kv_state.h"

static const char *const reason_names[MKV_R__COUNT] = {
	[MKV_R_OK] = "ok",
	[MKV_R_FRAME_COUNT] = "frame_count",
	[MKV_R_SEQUENCE_LENGTH] = "sequence_length",
	[MKV_R_MSGPACK_PARSE] = "msgpack_parse",
	[MKV_R_PAYLOAD_SHAPE] = "payload_shape",
	[MKV_R_EVENT_SHAPE] = "event_shape",
	[MKV_R_MISSING_FIELD] = "missing_field",
	[MKV_R_FIELD_TYPE] = "field_type",
	[MKV_R_UNKNOWN_EVENT_TYPE] = "unknown_event_type",
	[MKV_R_UNKNOWN_MEDIUM] = "unknown_medium",
};

static const char *const event_type_names[MKV_EV__COUNT] = {
	[MKV_EV_STORED] = "stored",
	[MKV_EV_REMOVED] = "removed",
	[MKV_EV_CLEARED] = "cleared",
};

static const char *const placement_names[MKV_PLACE__COUNT] = {
	[MKV_PLACE_CPU_ONLY] = "cpu_only",
	[MKV_PLACE_DISK_ONLY] = "disk_only",
	[MKV_PLACE_CPU_AND_DISK] = "cpu_and_disk",
};

const char *mkv_reason_name(enum mkv_reason r)
{
	return (unsigned)r < MKV_R__COUNT ? reason_names[r] : "invalid";
}

const char *mkv_event_type_name(enum mkv_event_type t)
{
	return (unsigned)t < MKV_EV__COUNT ? event_type_names[t] : "invalid";
}

const char *mkv_placement_name(enum mkv_placement p)
{
	return (unsigned)p < MKV_PLACE__COUNT ? placement_names[p] : "invalid";
}

static const char *const poll_error_names[MKV_POLL__COUNT] = {
	[MKV_POLL_OK] = "ok",
	[MKV_POLL_CONNECT] = "connect",
	[MKV_POLL_TIMEOUT] = "timeout",
	[MKV_POLL_HTTP_STATUS] = "http_status",
	[MKV_POLL_BODY_TOO_LARGE] = "body_too_large",
	[MKV_POLL_PARSE] = "parse",
	[MKV_POLL_FIELD] = "field",
	[MKV_POLL_NO_MEMORY] = "out_of_memory",
};

const char *mkv_poll_error_name(enum mkv_poll_error e)
{
	return (unsigned)e < MKV_POLL__COUNT ? poll_error_names[e] : "invalid";
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

static const char *const recon_result_names[MKV_RECON__RESULTS] = {
	[MKV_RECON_OK] = "ok",
	[MKV_RECON_FAILED] = "failed",
	[MKV_RECON_ABORTED] = "aborted",
	[MKV_RECON_SUPERSEDED] = "superseded",
};

const char *mkv_recon_result_name(enum mkv_recon_result r)
{
	return (unsigned)r < MKV_RECON__RESULTS ? recon_result_names[r] : "invalid";
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

const char *mkv_medium_name(enum mkv_medium m)
{
	return m == MKV_MEDIUM_CPU ? "cpu" : m == MKV_MEDIUM_DISK ? "disk" : "invalid";
}

static const char *const dialect_names[MKV_DIALECT__COUNT] = {
	[MKV_DIALECT_MEDIA] = "media",
	[MKV_DIALECT_OBJECT] = "object",
};

const char *mkv_dialect_name(enum mkv_dialect d)
{
	return d == MKV_DIALECT_AUTO ? "auto" : (unsigned)d < MKV_DIALECT__COUNT ? dialect_names[d] : "invalid";
}
