/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake_kv/handover.h: a running exporter's state, handed to the next
 * one (docs/design.md, "Handing over the state").
 *
 * The stream is the core's own format (version KV_HANDOVER_VERSION):
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
 * join, enum kv_join in mooncake_kv/store.h): a member that cannot turns
 * every tenant stale (reason bootstrap) and starts afresh.  What a store
 * counts of it (enum kv_boot_result, kv_store_boot_note) is the store's, in
 * mooncake_kv/store.h. */
#ifndef MOONCAKE_KV_HANDOVER_H
#define MOONCAKE_KV_HANDOVER_H

#include <stddef.h>
#include <stdint.h>

#include <mooncake_kv/store.h>

#define KV_HANDOVER_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/* Writes every store's state to sink, which returns 0 to go on.  Nothing
 * may change the stores meanwhile (the daemon writes from a child process
 * it forked with every store's lock held).  taken_ms: the writer's clock.
 * Returns KV_OK, or KV_EINVAL (the sink stopped it), KV_ENOMEM, KV_ELIMIT
 * (a record beyond the format's bound: a bug). */
KV_EXTERN enum kv_err kv_handover_write(kv_store *const *stores, size_t n, int64_t taken_ms,
					int (*sink)(void *arg, const void *p, size_t n), void *arg);

/* Reading a peer's stream for these stores (which must outlive it). */
typedef struct kv_handover kv_handover;
KV_EXTERN kv_handover *kv_handover_new(kv_store *const *stores, size_t n, uint64_t max_bytes);
KV_EXTERN void kv_handover_free(kv_handover *h);
/* Takes the next bytes.  Returns KV_BOOT_TAKEN to go on, or why the stream
 * is refused (everything after is ignored). */
KV_EXTERN enum kv_boot_result kv_handover_feed(kv_handover *h, const void *p, size_t n);
/* The stream ended: KV_BOOT_TAKEN when it is whole and its checksum matched. */
KV_EXTERN enum kv_boot_result kv_handover_end(kv_handover *h);
/* The peer's clock when it wrote the stream (after a whole stream). */
KV_EXTERN int64_t kv_handover_taken_ms(const kv_handover *h);
/* Store i takes its state from what was read (after kv_handover_end said
 * TAKEN; under its lock, before any of its frames were ingested): TAKEN,
 * ABSENT, MISMATCH or LIMIT (what the reader refused of that store alone).
 * The result is counted by the store. */
KV_EXTERN enum kv_boot_result kv_handover_take(kv_handover *h, size_t i);

#ifdef __cplusplus
}
#endif

#endif
