/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake_kv/handover.h: a running exporter's state, handed to the next
 * one (docs/design.md, "Handing over the state").
 *
 * The stream is the core's own format (version MKV_HANDOVER_VERSION):
 * records of bounded size, closed by a checksum of everything before it.
 * It holds, per store: its members' numbering (the publisher process as the
 * stream knows it, the last sequence number and event id, the digest of the
 * message that carried the last number), their dialects and loss books,
 * whether each one's master lists tenants (in the store's annex, which an
 * exporter older than it skips), who led, and the state: every tenant with its figures, stale reasons and since
 * when, key groups, reconciliation times, objects with their media and
 * births.  It is written with bounded memory through a sink and read in
 * pieces of any size; nothing read is used before the checksum matched.
 *
 * A store that takes a peer's state does not trust it for a member until
 * that member's own stream proves it continues the peer's (kv_stream's
 * join, enum mkv_join in mooncake_kv/store.h): a member that cannot turns
 * every tenant stale (reason bootstrap) and starts afresh.  What a store
 * counts of it (enum mkv_boot_result, mkv_store_boot_note) is the store's, in
 * mooncake_kv/store.h. */
#ifndef MOONCAKE_KV_HANDOVER_H
#define MOONCAKE_KV_HANDOVER_H

#include <stddef.h>
#include <stdint.h>

#include <mooncake_kv/store.h>

#define MKV_HANDOVER_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/* Writes every store's state to sink, which returns 0 to go on.  Nothing
 * may change the stores meanwhile (hold every store's lock, or write from
 * a child process forked while they were held).  taken_ms: the writer's clock.
 * Returns MKV_OK, or MKV_EINVAL (the sink stopped it), MKV_ENOMEM, MKV_ELIMIT
 * (a record beyond the format's bound: a bug). */
MKV_EXTERN enum mkv_err mkv_handover_write(mkv_store *const *stores, size_t n, int64_t taken_ms,
					   int (*sink)(void *arg, const void *p, size_t n), void *arg);

/* Reading a peer's stream for these stores (which must outlive it). */
typedef struct mkv_handover mkv_handover;
MKV_EXTERN mkv_handover *mkv_handover_new(mkv_store *const *stores, size_t n, uint64_t max_bytes);
MKV_EXTERN void mkv_handover_free(mkv_handover *h);
/* Takes the next bytes.  Returns MKV_BOOT_TAKEN to go on, or why the stream
 * is refused (everything after is ignored). */
MKV_EXTERN enum mkv_boot_result mkv_handover_feed(mkv_handover *h, const void *p, size_t n);
/* The stream ended: MKV_BOOT_TAKEN when it is whole and its checksum matched. */
MKV_EXTERN enum mkv_boot_result mkv_handover_end(mkv_handover *h);
/* The peer's clock when it wrote the stream (after a whole stream). */
MKV_EXTERN int64_t mkv_handover_taken_ms(const mkv_handover *h);
/* Store i takes its state from what was read (after mkv_handover_end said
 * TAKEN; under its lock, before any of its frames were ingested): TAKEN,
 * ABSENT, MISMATCH or LIMIT (what the reader refused of that store alone).
 * The result is counted by the store. */
MKV_EXTERN enum mkv_boot_result mkv_handover_take(mkv_handover *h, size_t i);

#ifdef __cplusplus
}
#endif

#endif
