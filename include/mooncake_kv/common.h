/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake_kv/common.h: the types every part of the core's public
 * interface shares (include/mooncake_kv/, docs/design.md "The core's
 * interface").
 *
 * Error convention, used everywhere: a function that can fail returns
 * enum kv_err, KV_OK (0) on success and a negative KV_E* code on failure.
 * Constructors return a pointer, NULL on failure.  A function whose outcome
 * is more than success or failure returns that outcome's own enum (a
 * handover's enum kv_boot_result, a reconciliation's enum kv_recon_result),
 * and a field or argument that carries a master's answer's outcome is an
 * enum kv_poll_error.  What the wire says (a malformed message, an unknown
 * medium) is never a failure of the function: it is data, reported through
 * the output structure and counted by reason.  A bool answers a question
 * (is it ready, are there more) and never means failure, but for one:
 * kv_recon_listing_drain says whether a reconciliation's attempt goes on,
 * and why it stopped (a limit, the master, memory) is in the attempt's
 * summary.
 *
 * What these headers declare is the library's whole interface: the library
 * exports each function marked KV_EXTERN and nothing else
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
#define KV_EXTERN __attribute__((visibility("default")))
#else
#define KV_EXTERN
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum kv_err {
	KV_OK = 0,
	KV_ENOMEM = -1, /* allocation failed */
	KV_EINVAL = -2, /* bad argument */
	KV_ELIMIT = -3, /* a configured limit refused the operation */
};

/* A byte range that is not NUL-terminated and not owned. */
typedef struct kv_str {
	const char *ptr;
	uint32_t len;
} kv_str;

/* One ZMQ frame as received: borrowed bytes. */
typedef struct kv_frame {
	const void *data;
	size_t len;
} kv_frame;

enum kv_event_type { KV_EV_STORED = 0, KV_EV_REMOVED = 1, KV_EV_CLEARED = 2, KV_EV__COUNT };

/* Media are bits so that an object's placement is one small mask. */
enum kv_medium {
	KV_MEDIUM_CPU = 1,
	KV_MEDIUM_DISK = 2,
};

/* What a `removed` means, which depends on the master that publishes it
 * (docs/upstream.md): in the subscriber guide's `media` dialect it retracts
 * the event's medium only; in the `object` dialect of Mooncake main, whose
 * master publishes one `removed` per erased object with a guessed medium,
 * the whole object is gone, whatever the medium says. */
enum kv_dialect { KV_DIALECT_MEDIA = 0, KV_DIALECT_OBJECT = 1, KV_DIALECT__COUNT };

#define KV_MEDIA_ALL (KV_MEDIUM_CPU | KV_MEDIUM_DISK)

enum kv_placement { KV_PLACE_CPU_ONLY = 0, KV_PLACE_DISK_ONLY = 1, KV_PLACE_CPU_AND_DISK = 2, KV_PLACE__COUNT };

/* Why a message or an event was rejected.  The names (kv_reason_name) are
 * the `reason` label values of mooncake_kv_decode_errors_total. */
enum kv_reason {
	KV_R_OK = 0,
	/* whole message */
	KV_R_FRAME_COUNT,
	KV_R_SEQUENCE_LENGTH,
	KV_R_MSGPACK_PARSE,
	KV_R_PAYLOAD_SHAPE,
	/* one event inside a good batch */
	KV_R_EVENT_SHAPE,
	KV_R_MISSING_FIELD,
	KV_R_FIELD_TYPE,
	KV_R_UNKNOWN_EVENT_TYPE,
	KV_R_UNKNOWN_MEDIUM,
	KV_R__COUNT
};

/* The outcome of asking the master anything (its status, HA, metrics,
 * quotas, keys): the transfer's, then the parser's.  Every parser of a
 * master's answer returns one.  The names (kv_poll_error_name) are the
 * `reason` label values of the *_poll_errors_total families. */
enum kv_poll_error {
	KV_POLL_OK = 0,
	KV_POLL_CONNECT,
	KV_POLL_TIMEOUT,
	KV_POLL_HTTP_STATUS,
	KV_POLL_BODY_TOO_LARGE,
	KV_POLL_PARSE,
	KV_POLL_FIELD,
	KV_POLL_NO_MEMORY, /* our failure, not the master's: also logged as an error */
	KV_POLL__COUNT
};

/* One answer of the master as the shell fetched it: the transfer's outcome
 * (KV_POLL_OK, or why it failed), the HTTP status (0: none), and the body,
 * borrowed.  The core reads it; parsing is the core's. */
typedef struct kv_answer {
	enum kv_poll_error err;
	long http;
	const char *body;
	size_t len;
} kv_answer;

KV_EXTERN const char *kv_poll_error_name(enum kv_poll_error e);
KV_EXTERN const char *kv_reason_name(enum kv_reason r);
KV_EXTERN const char *kv_event_type_name(enum kv_event_type t);
KV_EXTERN const char *kv_placement_name(enum kv_placement p);
KV_EXTERN const char *kv_medium_name(enum kv_medium m);
KV_EXTERN const char *kv_dialect_name(enum kv_dialect d);

/* Placement of a non-empty media mask. */
static inline enum kv_placement kv_placement_of(unsigned media)
{
	return media == KV_MEDIUM_CPU    ? KV_PLACE_CPU_ONLY
	       : media == KV_MEDIUM_DISK ? KV_PLACE_DISK_ONLY
					 : KV_PLACE_CPU_AND_DISK;
}

/* True when s[0..n) is well-formed UTF-8 (no overlongs, no surrogates,
 * nothing above U+10FFFF) without NUL bytes: a label value, a credential. */
KV_EXTERN bool kv_label_value_clean(const char *s, size_t n);

#ifdef __cplusplus
}
#endif

#endif
