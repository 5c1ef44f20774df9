/* The label values the core hands to the renderer: one table each, so a
 * name can never drift between the decoder, the state and the metrics. */
#include "kv_common.h"

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
