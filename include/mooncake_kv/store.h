/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake_kv/store.h: one watched store, as the core holds it.
 *
 * A store is what one `--source` watches: one master, or several highly
 * available ones (members), each with its own publisher stream, all
 * describing the same objects.  The store keeps the tenants, every member's
 * stream numbering and master figures, the leadership judgement, the
 * quotas, the drift and the reconciliation plan; it decides everything
 * those imply (loss, restarts, failovers, dialects, stale tenants).
 *
 * The shell moves bytes into it and holds the lock: the store does no I/O,
 * takes no lock and keeps no clock (every time is the caller's).  Unless a
 * function says otherwise, calls on one store must be serialised by the
 * caller (the daemon's per-source mutex).  Errors follow mooncake_kv/common.h:
 * enum kv_err, KV_OK or a negative KV_E*; constructors return NULL. */
#ifndef MOONCAKE_KV_STORE_H
#define MOONCAKE_KV_STORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mooncake_kv/common.h>
#include <mooncake_kv/keygroups.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most key groups kept unless set after kv_budget_init. */
#define KV_MAX_KEY_GROUPS_DEFAULT 200

/* Limits shared by every store of a process: one memory bound however many
 * masters are watched.  The counts are atomic because each stream is fed by
 * its own thread; a race can overshoot by one entry per thread. */
typedef struct kv_budget {
	size_t max_tenants;
	size_t max_objects;
	size_t max_key_groups; /* KV_MAX_KEY_GROUPS_DEFAULT unless set after kv_budget_init */
	atomic_size_t tenants;
	atomic_size_t objects;
	atomic_size_t key_groups;
} kv_budget;

KV_EXTERN void kv_budget_init(kv_budget *b, size_t max_tenants, size_t max_objects);

/* One member as configured: copied by kv_store_new, but its strings are
 * borrowed and must outlive the store. */
typedef struct kv_store_member {
	const char *label; /* the `member` label (admin host:port), or NULL */
	bool has_status;   /* it has an admin URL: its answers will be fed */
	int dialect;       /* an enum kv_dialect, or -1: auto (from its status answer) */
} kv_store_member;

typedef struct kv_store_cfg {
	const char *name;          /* the `source` label */
	bool ha;                   /* given as several masters: per-member families carry `member` */
	bool polled;               /* every member has an admin URL */
	bool reconcile;            /* reconciliation runs (mooncake_kv/reconcile.h) */
	double reconcile_interval; /* seconds: never more often than this */
	const char *backend;       /* the backend_id to reconcile, or NULL: the one the stream shows */
	const kv_store_member *members;
	size_t n_members;
	const kv_keygroup_re *key_groups; /* NULL: none; must outlive the store */
	bool residency;                   /* object lifetimes */
	kv_budget *budget;                /* must outlive the store */
	uint64_t seed;                    /* keys the object hash: pick it at random */
	size_t max_tenants;               /* bounds what the master's answers may hold */
	bool never_handed_over;           /* no --state.serve: streams keep no digest for it */
} kv_store_cfg;

typedef struct kv_store kv_store;

KV_EXTERN kv_store *kv_store_new(const kv_store_cfg *cfg);
KV_EXTERN void kv_store_free(kv_store *s);

/* --- feeding frames --- */

/* What one message did: enough for the shell to log it.  Its number
 * against the one before: */
enum kv_seq_verdict {
	KV_SEQ_FIRST,     /* first message: sets the baseline */
	KV_SEQ_NEXT,      /* last + 1 (or a late message of a tail already counted) */
	KV_SEQ_GAP,       /* a jump forward: messages were lost */
	KV_SEQ_DUPLICATE, /* the last number again */
	KV_SEQ_RESET,     /* a new publisher process: the number or the event id went back */
};

/* A stream that took a peer's state (mooncake_kv/handover.h) and waits
 * for its proof of continuity. */
enum kv_join {
	KV_JOIN_NONE,      /* nothing taken from a peer, or nothing to prove */
	KV_JOIN_WAITING,   /* the next messages must prove the stream continues the peer's */
	KV_JOIN_CONTINUED, /* proven: exact where the peer was */
	KV_JOIN_BROKEN,    /* not: the tenants are stale (bootstrap), the stream started afresh */
};

typedef struct kv_ingest_report {
	enum kv_seq_verdict verdict; /* KV_SEQ_NEXT when frame 1 was unusable */
	uint64_t seq;                /* this message's number (when frame 1 was usable) */
	uint64_t prev_seq;           /* the number before it (GAP, RESET) */
	uint64_t missing;            /* numbers this message showed to be missing */
	enum kv_reason reject;       /* the message's rejection, else its first event's; KV_R_OK if none */
	size_t events;               /* events of the message applied or looked at (not a duplicate's) */
	enum kv_join join;           /* what this message decided of a join: CONTINUED, BROKEN, else NONE */
} kv_ingest_report;

/* Ingests one multipart message of a member received at now_ms (wall
 * clock) and fills *rep (which may be NULL).  Returns KV_OK, or KV_ENOMEM when
 * memory ran out: the message or some of its events were lost (counted)
 * and the caller should log it. */
KV_EXTERN enum kv_err kv_store_ingest(kv_store *s, size_t member, const kv_frame *frames, size_t n_frames,
				      int64_t now_ms, kv_ingest_report *rep);
/* A member's connection to its publisher, as the shell's subscriber saw
 * it (a handshake done at now_ms, the connection dropped).  The store keeps
 * whether it is up and whether it ever was: mooncake_kv_subscriber_connected,
 * readiness and reconnects are read from there.  kv_store_connected returns
 * true when the member had connected before: a reconnect, counted, whose
 * next message tells whether anything was lost. */
KV_EXTERN bool kv_store_connected(kv_store *s, size_t member, int64_t now_ms);
KV_EXTERN void kv_store_disconnected(kv_store *s, size_t member);
KV_EXTERN bool kv_store_is_connected(const kv_store *s, size_t member);
/* An idle moment: drains up to `slots` slots of the object tables' old
 * arrays left by growth.  Returns whether some remain. */
KV_EXTERN bool kv_store_settle(kv_store *s, size_t slots);
/* Forgets the tenants that hold no object and had no event for idle_ms.
 * Returns how many went. */
KV_EXTERN size_t kv_store_expire(kv_store *s, int64_t now_ms, int64_t idle_ms);

/* --- the dialect a member's stream is read in --- */

enum kv_dialect_news {
	KV_DIALECT_SAME,    /* nothing changed */
	KV_DIALECT_DECIDED, /* first decision: ingest may start, nothing was read yet */
	KV_DIALECT_SWITCHED /* another dialect than the one events were read in: tenants stale */
};

typedef struct kv_dialect_info {
	bool decided;      /* ingest may start */
	bool from_start;   /* decided by the configuration, before any answer */
	const char *name;  /* "media", "object" */
	const char *basis; /* why: "flag", "status", "no_status", "no_answer" */
} kv_dialect_info;

KV_EXTERN void kv_store_dialect(const kv_store *s, size_t member, kv_dialect_info *out);
/* Ingest cannot wait longer for the member's status answer: the guide's
 * dialect for now (a later answer may still switch it). */
KV_EXTERN enum kv_dialect_news kv_store_dialect_give_up(kv_store *s, size_t member, kv_dialect_info *out);

/* --- feeding the master's answers --- */

/* A member's poll begins: the store notes where its stream stands, to
 * compare the answers with. */
KV_EXTERN void kv_store_poll_begin(kv_store *s, size_t member);

/* One poll of a member: GET /kv_events/status (asked from t0 to t1, unix
 * seconds), then, when it answered (200 or 503), /ha_status, and when that
 * answered 200, /leader.  An answer not asked has err KV_POLL_CONNECT and
 * http 0. */
typedef struct kv_poll_answers {
	double t0, t1;
	double interval; /* seconds between polls (--master.poll-interval) */
	kv_answer status, ha, leader;
} kv_poll_answers;

/* What changed, for the shell's log. */
enum kv_poll_change {
	KV_POLL_SAME,
	KV_POLL_BECAME_STANDBY, /* it answers 503 */
	KV_POLL_FAILED,         /* it stopped answering (or never did) */
	KV_POLL_RECOVERED,      /* it serves again */
};

enum kv_leadership_news {
	KV_LEAD_FAILOVER = 1, /* leadership moved: the tenants are stale */
	KV_LEAD_SPLIT = 2,    /* a split brain began */
	KV_LEAD_DROPPED = 4,  /* a one-master source's master stands by: its state was dropped */
	KV_LEAD_RESUMED = 8,  /* ... and serves again: its figures start afresh */
};

typedef struct kv_poll_news {
	enum kv_poll_change change;
	enum kv_poll_error err; /* the status poll's */
	long http;
	uint64_t restarts;                       /* publisher restarts this poll found */
	uint64_t tail;                           /* sequence numbers counted lost as a tail */
	uint64_t last_sequence;                  /* the master's */
	uint64_t queue, transport, unattributed; /* missing numbers attributed now */
	unsigned leadership;                     /* kv_leadership_news bits */
	int leader;                              /* the member that serves, -1: none */
	uint64_t view;                           /* the highest view version any member reported */
	enum kv_dialect_news dialect_news;
	kv_dialect_info dialect;
	bool leads;         /* this member serves: ask it for /metrics and the quotas next */
	bool failover_told; /* a failover (this poll's or an earlier one's) to tell now: leader is the new one */
	int failover_from;  /* ... and the one before it, -1: none */
	bool proved_empty;  /* the store was proven empty before its publisher's first message: every tenant exact */
} kv_poll_news;

KV_EXTERN void kv_store_poll_answers(kv_store *s, size_t member, const kv_poll_answers *a, kv_poll_news *news);

/* The leader's /metrics (its key count and the puts refused for a quota)
 * and /api/v1/tenant_quotas, read as they arrive.  _reset and _feed touch
 * only the member's own reader: call them without the store's lock, from
 * the one thread that polls that member; _end applies the answer (under the
 * lock), with the transfer's outcome.  _feed returns KV_OK, or KV_ENOMEM:
 * stop the transfer, and end with KV_POLL_NO_MEMORY. */
KV_EXTERN void kv_store_metrics_reset(kv_store *s, size_t member);
KV_EXTERN enum kv_err kv_store_metrics_feed(kv_store *s, size_t member, const void *p, size_t n);
/* What one read of the leader's /metrics or quotas changed, for the shell's
 * log: a read that fails is counted every time, told once when reads of that
 * answer start failing and once when one succeeds again. */
typedef struct kv_read_news {
	enum kv_poll_change change; /* KV_POLL_SAME, KV_POLL_FAILED or KV_POLL_RECOVERED */
	enum kv_poll_error err;     /* the read's, its transfer's or its parse's */
	/* /metrics: tenants turned stale because the master's quota eviction
	 * erased objects of theirs without an event */
	size_t evicted;
	/* quotas: this answer said quotas are off on the master (409), the last did not */
	bool quotas_off;
} kv_read_news;
KV_EXTERN void kv_store_metrics_end(kv_store *s, size_t member, enum kv_poll_error transfer_err, kv_read_news *news);
KV_EXTERN void kv_store_quotas_reset(kv_store *s, size_t member);
KV_EXTERN enum kv_err kv_store_quotas_feed(kv_store *s, size_t member, const void *p, size_t n);
/* http 503 (the member stood down) is no failure and says nothing. */
KV_EXTERN void kv_store_quotas_end(kv_store *s, size_t member, enum kv_poll_error transfer_err, long http,
				   kv_read_news *news);

/* --- taking a peer's state (mooncake_kv/handover.h reads and writes it) --- */

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
KV_EXTERN const char *kv_boot_result_name(enum kv_boot_result r);

/* A bootstrap that ended for every store alike (unreachable, timeout, ...):
 * counted by the store. */
KV_EXTERN void kv_store_boot_note(kv_store *s, enum kv_boot_result r);
/* Members of the store still waiting for their proof (KV_JOIN_WAITING). */
KV_EXTERN size_t kv_store_joins_waiting(const kv_store *s);

/* --- what the shell asks --- */

/* The serving member (for a one-master source: its master unless it stands
 * by), -1 when none serves. */
KV_EXTERN int kv_store_leader(const kv_store *s);
/* Every member with an admin URL was polled, every member that serves has
 * connected at least once, and one member connected or answered as a
 * standby. */
KV_EXTERN bool kv_store_ready(const kv_store *s);
/* Gaps and restarts of all members' streams: anything that can have lost
 * an event. */
KV_EXTERN uint64_t kv_store_breaks(const kv_store *s);

#ifdef __cplusplus
}
#endif

#endif
