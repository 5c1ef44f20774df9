/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake_kv/handover.h: a running exporter's state, handed to the next
 * one (docs/design.md, "Handing over the state").
 *
 * The stream is the core's own format (version KV_HANDOVER_VERSION):
 * records of bounded size, closed by a checksum of everything before it.
 * It holds, per store: its members' numbering (the publisher process as the
 * stream knows it, the last sequence number and event id, the digest of the
 * message that carried the last number), their dialects and loss books, who
 * led, and the state: every tenant with its figures, stale reasons and since
 * when, key groups, reconciliation times, objects with their media and
 * births.  It is written with bounded memory through a sink and read in
 * pieces of any size; nothing read is used before the checksum matched.
 *
 * A store that takes a peer's state does not trust it for a member until
 * that member's own stream proves it continues the peer's (kv_stream's
 * join, enum kv_join in mooncake_kv/store.h): a member that cannot turns
 * every tenant stale (reason bootstrap) and starts afresh. */
#ifndef MOONCAKE_KV_HANDOVER_H
#define MOONCAKE_KV_HANDOVER_H

#include <stddef.h>
#include <stdint.h>

#include <mooncake_kv/store.h>

#define KV_HANDOVER_VERSION 1

/* How a bootstrap from a peer ended, per store (the `result` label of
 * mooncake_kv_bootstrap_total). */
enum kv_boot_result {
	KV_BOOT_TAKEN,       /* the peer's state was taken */
	KV_BOOT_UNREACHABLE, /* no connection, or the transfer failed */
	KV_BOOT_TIMEOUT,     /* the peer took longer than --state.peer-timeout */
	KV_BOOT_HTTP_STATUS, /* it answered, but not 200 (serving off, auth) */
	KV_BOOT_TOO_LARGE,   /* more than --state.peer-max-bytes */
	KV_BOOT_TRUNCATED,   /* it ended before its checksum */
	KV_BOOT_CHECKSUM,    /* the checksum did not match: corrupted */
	KV_BOOT_MALFORMED,   /* records that are not a state */
	KV_BOOT_VERSION,     /* another format version */
	KV_BOOT_ABSENT,      /* the peer watches no source of this name */
	KV_BOOT_MISMATCH,    /* of another store: other members, key groups or dialects */
	KV_BOOT_LIMIT,       /* more tenants, objects or key groups than this exporter's limits */
	KV_BOOT_OUT_OF_MEMORY,
	KV_BOOT__COUNT
};
const char *kv_boot_result_name(enum kv_boot_result r);

/* Writes every store's state to sink, which returns 0 to go on.  Nothing
 * may change the stores meanwhile (the daemon writes from a child process
 * it forked with every store's lock held).  taken_ms: the writer's clock.
 * Returns 0, or KV_EINVAL (the sink stopped it), KV_ENOMEM, KV_ELIMIT (a
 * record beyond the format's bound: a bug). */
int kv_handover_write(kv_store *const *stores, size_t n, int64_t taken_ms,
		      int (*sink)(void *arg, const void *p, size_t n), void *arg);

/* Reading a peer's stream for these stores (which must outlive it). */
typedef struct kv_handover kv_handover;
kv_handover *kv_handover_new(kv_store *const *stores, size_t n, uint64_t max_bytes);
void kv_handover_free(kv_handover *h);
/* Takes the next bytes.  Returns KV_BOOT_TAKEN to go on, or why the stream
 * is refused (everything after is ignored). */
enum kv_boot_result kv_handover_feed(kv_handover *h, const void *p, size_t n);
/* The stream ended: KV_BOOT_TAKEN when it is whole and its checksum matched. */
enum kv_boot_result kv_handover_end(kv_handover *h);
/* The peer's clock when it wrote the stream (after a whole stream). */
int64_t kv_handover_taken_ms(const kv_handover *h);
/* Store i takes its state from what was read (after kv_handover_end said
 * TAKEN; under its lock, before any of its frames were ingested): TAKEN,
 * ABSENT, MISMATCH or LIMIT (what the reader refused of that store alone).
 * The result is counted by the store. */
enum kv_boot_result kv_handover_take(kv_handover *h, size_t i);

/* A bootstrap that ended for every store alike (unreachable, timeout, ...):
 * counted by the store. */
void kv_store_boot_note(kv_store *s, enum kv_boot_result r);
/* Members of the store still waiting for their proof (KV_JOIN_WAITING). */
size_t kv_store_joins_waiting(const kv_store *s);

#endif
