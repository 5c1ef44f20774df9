/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake_kv/common.h: the types every part of the core's public
 * interface shares (include/mooncake_kv/, docs/design.md "The core's
 * interface").
 *
 * Error convention, used everywhere: a function that can fail returns
 * enum mkv_err, MKV_OK (0) on success and a negative MKV_E* code on failure.
 * Constructors return a pointer, NULL on failure.  A function whose outcome
 * is more than success or failure returns that outcome's own enum (a
 * handover's enum mkv_boot_result, a reconciliation's enum mkv_recon_result),
 * and a field or argument that carries a master's answer's outcome is an
 * enum mkv_poll_error.  What the wire says (a malformed message, an unknown
 * medium) is never a failure of the function: it is data, reported through
 * the output structure and counted by reason.  A bool answers a question
 * (is it ready, are there more) and never means failure, but for one:
 * mkv_recon_listing_drain says whether a reconciliation's attempt goes on,
 * and why it stopped (a limit, the master, memory) is in the attempt's
 * summary.
 *
 * What these headers declare is the library's whole interface: the library
 * exports each function marked MKV_EXTERN and nothing else
 * (tests/check_interface.py holds the two equal). */
#ifndef MOONCAKE_KV_COMMON_H
#define MOONCAKE_KV_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mooncake_kv/version.h>

/* Marks what the library exports: it is built with every other symbol
 * hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define MKV_EXTERN __attribute__((visibility("default")))
#else
#define MKV_EXTERN
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum mkv_err {
	MKV_OK = 0,
	MKV_ENOMEM = -1, /* allocation failed */
	MKV_EINVAL = -2, /* bad argument */
	MKV_ELIMIT = -3, /* a configured limit refused the operation */
};

/* A byte range that is not NUL-terminated and not owned. */
typedef struct mkv_str {
	const char *ptr;
	uint32_t len;
} mkv_str;

/* One ZMQ frame as received: borrowed bytes. */
typedef struct mkv_frame {
	const void *data;
	size_t len;
} mkv_frame;

enum mkv_event_type { MKV_EV_STORED = 0, MKV_EV_REMOVED = 1, MKV_EV_CLEARED = 2, MKV_EV__COUNT };

/* Media are bits so that an object's placement is one small mask. */
enum mkv_medium {
	MKV_MEDIUM_CPU = 1,
	MKV_MEDIUM_DISK = 2,
};

/* What a `removed` means, which depends on the master that publishes it
 * (docs/upstream.md): in the subscriber guide's `media` dialect it retracts
 * the event's medium only; in the `object` dialect of Mooncake main, whose
 * master publishes one `removed` per erased object with a guessed medium,
 * the whole object is gone, whatever the medium says. */
enum mkv_dialect {
	MKV_DIALECT_AUTO = -1, /* in a member's configuration only: decided from its status answer */
	MKV_DIALECT_MEDIA = 0,
	MKV_DIALECT_OBJECT = 1,
	MKV_DIALECT__COUNT
};

#define MKV_MEDIA_ALL (MKV_MEDIUM_CPU | MKV_MEDIUM_DISK)

enum mkv_placement { MKV_PLACE_CPU_ONLY = 0, MKV_PLACE_DISK_ONLY = 1, MKV_PLACE_CPU_AND_DISK = 2, MKV_PLACE__COUNT };

/* Why a message or an event was rejected.  The names (mkv_reason_name) are
 * the `reason` label values of mooncake_kv_decode_errors_total. */
enum mkv_reason {
	MKV_R_OK = 0,
	/* whole message */
	MKV_R_FRAME_COUNT,
	MKV_R_SEQUENCE_LENGTH,
	MKV_R_MSGPACK_PARSE,
	MKV_R_PAYLOAD_SHAPE,
	/* one event inside a good batch */
	MKV_R_EVENT_SHAPE,
	MKV_R_MISSING_FIELD,
	MKV_R_FIELD_TYPE,
	MKV_R_UNKNOWN_EVENT_TYPE,
	MKV_R_UNKNOWN_MEDIUM,
	MKV_R__COUNT
};

/* The outcome of asking the master anything (its status, HA, metrics,
 * quotas, keys): the transfer's, then the parser's.  Every parser of a
 * master's answer returns one.  The names (mkv_poll_error_name) are the
 * `reason` label values of the *_poll_errors_total families. */
enum mkv_poll_error {
	MKV_POLL_OK = 0,
	MKV_POLL_CONNECT,
	MKV_POLL_TIMEOUT,
	MKV_POLL_HTTP_STATUS,
	MKV_POLL_BODY_TOO_LARGE,
	MKV_POLL_PARSE,
	MKV_POLL_FIELD,
	MKV_POLL_NO_MEMORY, /* our failure, not the master's: also logged as an error */
	MKV_POLL__COUNT
};

/* One answer of the master as the shell fetched it: the transfer's outcome
 * (MKV_POLL_OK, or why it failed), the HTTP status (0: none), and the body,
 * borrowed.  The core reads it; parsing is the core's. */
typedef struct mkv_answer {
	enum mkv_poll_error err;
	long http;
	const char *body;
	size_t len;
} mkv_answer;

MKV_EXTERN const char *mkv_poll_error_name(enum mkv_poll_error e);
MKV_EXTERN const char *mkv_reason_name(enum mkv_reason r);
MKV_EXTERN const char *mkv_event_type_name(enum mkv_event_type t);
MKV_EXTERN const char *mkv_placement_name(enum mkv_placement p);
MKV_EXTERN const char *mkv_medium_name(enum mkv_medium m);
MKV_EXTERN const char *mkv_dialect_name(enum mkv_dialect d);

/* Placement of a non-empty media mask. */
static inline enum mkv_placement mkv_placement_of(unsigned media)
{
	return media == MKV_MEDIUM_CPU    ? MKV_PLACE_CPU_ONLY
	       : media == MKV_MEDIUM_DISK ? MKV_PLACE_DISK_ONLY
					  : MKV_PLACE_CPU_AND_DISK;
}

/* True when s[0..n) is well-formed UTF-8 (no overlongs, no surrogates,
 * nothing above U+10FFFF) without NUL bytes: a label value, a credential. */
MKV_EXTERN bool mkv_label_value_clean(const char *s, size_t n);

#ifdef __cplusplus
}
#endif

#endif
