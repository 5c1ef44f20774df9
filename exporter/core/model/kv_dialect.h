/* SPDX-License-Identifier: Apache-2.0 */
/* Which dialect a member's publisher speaks (kv_common.h, enum mkv_dialect),
 * and when the exporter may start reading its stream.  Pure: the poller
 * hands each valid /kv_events/status answer here, the ingest thread asks
 * whether it may start, and both act on what comes back.
 *
 * --stream.dialect (or dialect= in --source) fixes it; `auto` decides from
 * the shape of the master's status answer (kv_master_status.dialect).
 * Ingest waits for the first answer, at most --master.timeout; without a
 * status URL, or without an answer by then, the guide's media dialect is
 * used, and a later answer that says otherwise switches it: the tenants'
 * figures were read by the wrong rule and turn stale (reason dialect). */
#ifndef KV_DIALECT_H
#define KV_DIALECT_H

#include <stdbool.h>
#include <stdint.h>

#include <mooncake_kv/store.h> /* enum mkv_dialect_news */

#include "kv_common.h"

/* How the dialect in force was chosen: the `reason` of the start-up log. */
enum kv_dialect_basis {
	KV_DIALECT_BY_FLAG,      /* --stream.dialect or dialect= */
	KV_DIALECT_BY_STATUS,    /* the fields of the master's status answer */
	KV_DIALECT_BY_NO_STATUS, /* auto without a status URL: the guide's */
	KV_DIALECT_BY_NO_ANSWER, /* auto, no status answer in time: the guide's for now */
	KV_DIALECT__BASES
};

const char *kv_dialect_basis_name(enum kv_dialect_basis b);

typedef struct kv_dialect_choice {
	bool fixed;               /* given by a flag: nothing changes it */
	bool decided;             /* ingest may start */
	enum mkv_dialect dialect; /* in force (meaningful once decided) */
	enum kv_dialect_basis basis;
	uint64_t switches; /* changes after the first decision */
} kv_dialect_choice;

/* mode: a mkv_dialect, or -1 for auto. */
void kv_dialect_init(kv_dialect_choice *c, enum mkv_dialect mode, bool has_status_url);

/* What a decision did (enum mkv_dialect_news) is for the caller to act on. */

/* A valid status answer whose fields say `seen`; read_any: the stream has
 * received a message in the dialect in force (a change before that is a
 * first decision, not a switch: nothing was read by the wrong rule). */
enum mkv_dialect_news kv_dialect_observe(kv_dialect_choice *c, enum mkv_dialect seen, bool read_any);
/* Ingest waited --master.timeout for an answer: the guide's dialect, for
 * now (MKV_DIALECT_DECIDED, or SAME when already decided). */
enum mkv_dialect_news kv_dialect_give_up(kv_dialect_choice *c);

#endif
