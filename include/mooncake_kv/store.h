/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake_kv/store.h: one watched store, as the core holds it.
 *
 * A store is one watched Mooncake Store: one master, or several highly
 * available ones (members), each with its own publisher stream, all
 * describing the same objects.  The store keeps the tenants, every member's
 * stream numbering and master figures, the leadership judgement, the
 * quotas, the drift and the reconciliation plan; it decides everything
 * those imply (loss, restarts, failovers, dialects, stale tenants).
 *
 * The shell moves bytes into it and holds the lock: the store does no I/O,
 * takes no lock and keeps no clock (every time is the caller's).  Unless a
 * function says otherwise, calls on one store must be serialised by the
 * caller (a lock per store).  Errors follow mooncake_kv/common.h:
 * enum mkv_err, MKV_OK or a negative MKV_E*; constructors return NULL. */
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

/* The most key groups kept unless set after mkv_budget_init. */
#define MKV_MAX_KEY_GROUPS_DEFAULT 200

/* Limits shared by every store of a process: one memory bound however many
 * masters are watched.  The counts are atomic because each stream is fed by
 * its own thread; a race can overshoot by one entry per thread. */
typedef struct mkv_budget {
	size_t max_tenants;
	size_t max_objects;
	size_t max_key_groups; /* MKV_MAX_KEY_GROUPS_DEFAULT unless set after mkv_budget_init */
	atomic_size_t tenants;
	atomic_size_t objects;
	atomic_size_t key_groups;
} mkv_budget;

MKV_EXTERN void mkv_budget_init(mkv_budget *b, size_t max_tenants, size_t max_objects);

/* One member as configured: copied by mkv_store_new, but its strings are
 * borrowed and must outlive the store. */
typedef struct mkv_store_member {
	const char *label;        /* the `member` label (admin host:port), or NULL */
	bool has_status;          /* it has an admin URL: its answers will be fed */
	enum mkv_dialect dialect; /* what its stream is read in; MKV_DIALECT_AUTO: from its status answer */
} mkv_store_member;

typedef struct mkv_store_cfg {
	const char *name;          /* the `source` label */
	bool ha;                   /* given as several masters: per-member families carry `member` */
	bool polled;               /* every member has an admin URL */
	bool reconcile;            /* reconciliation runs (mooncake_kv/reconcile.h) */
	double reconcile_interval; /* seconds: never more often than this */
	const char *backend;       /* the backend_id to reconcile, or NULL: the one the stream shows */
	const mkv_store_member *members;
	size_t n_members;
	const mkv_keygroup_re *key_groups; /* NULL: none; must outlive the store */
	bool residency;                    /* object lifetimes */
	mkv_budget *budget;                /* must outlive the store */
	uint64_t seed;                     /* keys the object hash: pick it at random */
	size_t max_tenants;                /* bounds what the master's answers may hold */
	bool never_handed_over;            /* no mkv_handover_write will be asked: streams keep no digest for it */
} mkv_store_cfg;

typedef struct mkv_store mkv_store;

MKV_EXTERN mkv_store *mkv_store_new(const mkv_store_cfg *cfg);
MKV_EXTERN void mkv_store_free(mkv_store *s);

/* --- feeding frames --- */

/* What one message did: enough for the shell to log it.  Its number
 * against the one before: */
enum mkv_seq_verdict {
	MKV_SEQ_FIRST,     /* first message: sets the baseline */
	MKV_SEQ_NEXT,      /* last + 1 (or a late message of a tail already counted) */
	MKV_SEQ_GAP,       /* a jump forward: messages were lost */
	MKV_SEQ_DUPLICATE, /* the last number again */
	MKV_SEQ_RESET,     /* a new publisher process: the number or the event id went back */
};

/* A stream that took a peer's state (mooncake_kv/handover.h) and waits
 * for its proof of continuity. */
enum mkv_join {
	MKV_JOIN_NONE,      /* nothing taken from a peer, or nothing to prove */
	MKV_JOIN_WAITING,   /* the next messages must prove the stream continues the peer's */
	MKV_JOIN_CONTINUED, /* proven: exact where the peer was */
	MKV_JOIN_BROKEN,    /* not: the tenants are stale (bootstrap), the stream started afresh */
};

typedef struct mkv_ingest_report {
	enum mkv_seq_verdict verdict; /* MKV_SEQ_NEXT when frame 1 was unusable */
	uint64_t seq;                 /* this message's number (when frame 1 was usable) */
	uint64_t prev_seq;            /* the number before it (GAP, RESET) */
	uint64_t missing;             /* numbers this message showed to be missing */
	enum mkv_reason reject;       /* the message's rejection, else its first event's; MKV_R_OK if none */
	size_t events;                /* events of the message applied or looked at (not a duplicate's) */
	enum mkv_join join;           /* what this message decided of a join: CONTINUED, BROKEN, else NONE */
} mkv_ingest_report;

/* Ingests one multipart message of a member received at now_ms (wall
 * clock) and fills *rep (which may be NULL).  Returns MKV_OK, or MKV_ENOMEM when
 * memory ran out: the message or some of its events were lost (counted)
 * and the caller should log it. */
MKV_EXTERN enum mkv_err mkv_store_ingest(mkv_store *s, size_t member, const mkv_frame *frames, size_t n_frames,
					 int64_t now_ms, mkv_ingest_report *rep);
/* Events: a member's connection to its publisher, as the caller's
 * subscriber saw it (a handshake done at now_ms, the connection dropped).
 * The store keeps whether it is up and whether it ever was:
 * mooncake_kv_subscriber_connected, readiness and reconnects are read from
 * there.  mkv_store_note_connect returns true when the member had connected
 * before: a reconnect, counted, whose next message tells whether anything
 * was lost. */
MKV_EXTERN bool mkv_store_note_connect(mkv_store *s, size_t member, int64_t now_ms);
MKV_EXTERN void mkv_store_note_disconnect(mkv_store *s, size_t member);
/* A question, which changes nothing: whether the member is connected now
 * (the last event noted a connection). */
MKV_EXTERN bool mkv_store_is_connected(const mkv_store *s, size_t member);
/* An idle moment: drains up to `slots` slots of the object tables' old
 * arrays left by growth.  Returns whether some remain. */
MKV_EXTERN bool mkv_store_settle(mkv_store *s, size_t slots);
/* Forgets the tenants that hold no object and had no event for idle_ms.
 * Returns how many went. */
MKV_EXTERN size_t mkv_store_expire(mkv_store *s, int64_t now_ms, int64_t idle_ms);

/* --- the dialect a member's stream is read in --- */

enum mkv_dialect_news {
	MKV_DIALECT_SAME,    /* nothing changed */
	MKV_DIALECT_DECIDED, /* first decision: ingest may start, nothing was read yet */
	MKV_DIALECT_SWITCHED /* another dialect than the one events were read in: tenants stale */
};

typedef struct mkv_dialect_info {
	bool decided;      /* ingest may start */
	bool from_start;   /* decided by the configuration, before any answer */
	const char *name;  /* "media", "object" */
	const char *basis; /* why: "flag" (mkv_store_member.dialect), "status", "no_status", "no_answer" */
} mkv_dialect_info;

MKV_EXTERN void mkv_store_dialect(const mkv_store *s, size_t member, mkv_dialect_info *out);
/* Ingest cannot wait longer for the member's status answer: the guide's
 * dialect for now (a later answer may still switch it). */
MKV_EXTERN enum mkv_dialect_news mkv_store_dialect_give_up(mkv_store *s, size_t member, mkv_dialect_info *out);

/* --- feeding the master's answers --- */

/* A member's poll begins: the store notes where its stream stands, to
 * compare the answers with. */
MKV_EXTERN void mkv_store_poll_begin(mkv_store *s, size_t member);

/* One poll of a member: GET /kv_events/status (asked from t0 to t1, unix
 * seconds), then, when it answered (200 or 503), /ha_status, and when that
 * answered 200, /leader.  An answer not asked has err MKV_POLL_CONNECT and
 * http 0. */
typedef struct mkv_poll_answers {
	double t0, t1;
	double interval; /* seconds between this member's polls */
	mkv_answer status, ha, leader;
} mkv_poll_answers;

/* What changed, for the shell's log. */
enum mkv_poll_change {
	MKV_POLL_SAME,
	MKV_POLL_BECAME_STANDBY, /* it answers 503 */
	MKV_POLL_FAILED,         /* it stopped answering (or never did) */
	MKV_POLL_RECOVERED,      /* it serves again */
};

enum mkv_leadership_news {
	MKV_LEAD_FAILOVER = 1, /* leadership moved: the tenants are stale */
	MKV_LEAD_SPLIT = 2,    /* a split brain began */
	MKV_LEAD_DROPPED = 4,  /* a one-master source's master stands by: its state was dropped */
	MKV_LEAD_RESUMED = 8,  /* ... and serves again: its figures start afresh */
};

typedef struct mkv_poll_news {
	enum mkv_poll_change change;
	enum mkv_poll_error err; /* the status poll's */
	long http;
	uint64_t restarts;                       /* publisher restarts this poll found */
	uint64_t tail;                           /* sequence numbers counted lost as a tail */
	uint64_t last_sequence;                  /* the master's */
	uint64_t queue, transport, unattributed; /* missing numbers attributed now */
	unsigned leadership;                     /* mkv_leadership_news bits */
	int leader;                              /* the member that serves, -1: none */
	uint64_t view;                           /* the highest view version any member reported */
	enum mkv_dialect_news dialect_news;
	mkv_dialect_info dialect;
	bool leads;         /* this member serves: ask it for /metrics and the quotas next */
	bool failover_told; /* a failover (this poll's or an earlier one's) to tell now: leader is the new one */
	int failover_from;  /* ... and the one before it, -1: none */
	bool proved_empty;  /* the store was proven empty before its publisher's first message: every tenant exact */
	/* /ha_status and /leader, asked when the status answered: MKV_POLL_FAILED
	 * when a read fails after none did, MKV_POLL_RECOVERED at the first good
	 * one after, MKV_POLL_SAME between (each failure is counted whatever);
	 * a master without HA (404) does not fail.  ha_err: the read's error. */
	enum mkv_poll_change ha_change;
	enum mkv_poll_error ha_err;
} mkv_poll_news;

MKV_EXTERN void mkv_store_poll_answers(mkv_store *s, size_t member, const mkv_poll_answers *a, mkv_poll_news *news);

/* The leader's /metrics (its key count and the puts refused for a quota)
 * and /api/v1/tenant_quotas, read as they arrive.  _reset and _feed touch
 * only the member's own reader: call them without the store's lock, from
 * the one thread that polls that member; _end applies the answer (under the
 * lock), with the transfer's outcome.  _feed returns MKV_OK, or MKV_ENOMEM:
 * stop the transfer, and end with MKV_POLL_NO_MEMORY. */
MKV_EXTERN void mkv_store_metrics_reset(mkv_store *s, size_t member);
MKV_EXTERN enum mkv_err mkv_store_metrics_feed(mkv_store *s, size_t member, const void *p, size_t n);
/* What one read of the leader's /metrics or quotas changed, for the shell's
 * log: a read that fails is counted every time, told once when reads of that
 * answer start failing and once when one succeeds again. */
typedef struct mkv_read_news {
	enum mkv_poll_change change; /* MKV_POLL_SAME, MKV_POLL_FAILED or MKV_POLL_RECOVERED */
	enum mkv_poll_error err;     /* the read's, its transfer's or its parse's */
	/* /metrics: tenants turned stale because the master's quota eviction
	 * erased objects of theirs without an event */
	size_t evicted;
	/* quotas: this answer said quotas are off on the master (409), the last did not */
	bool quotas_off;
} mkv_read_news;
MKV_EXTERN void mkv_store_metrics_end(mkv_store *s, size_t member, enum mkv_poll_error transfer_err,
				      mkv_read_news *news);
MKV_EXTERN void mkv_store_quotas_reset(mkv_store *s, size_t member);
MKV_EXTERN enum mkv_err mkv_store_quotas_feed(mkv_store *s, size_t member, const void *p, size_t n);
/* http 503 (the member stood down) is no failure and says nothing. */
MKV_EXTERN void mkv_store_quotas_end(mkv_store *s, size_t member, enum mkv_poll_error transfer_err, long http,
				     mkv_read_news *news);

/* --- taking a peer's state (mooncake_kv/handover.h reads and writes it) --- */

/* How a bootstrap from a peer ended, per store (the `result` label of
 * mooncake_kv_bootstrap_total). */
enum mkv_boot_result {
	MKV_BOOT_TAKEN,       /* the peer's state was taken */
	MKV_BOOT_UNREACHABLE, /* no connection, or the transfer failed */
	MKV_BOOT_TIMEOUT,     /* the peer took longer than the caller allows */
	MKV_BOOT_HTTP_STATUS, /* it answered, but not 200 (serving off, auth) */
	MKV_BOOT_TOO_LARGE,   /* more than mkv_handover_new's max_bytes */
	MKV_BOOT_TRUNCATED,   /* it ended before its checksum */
	MKV_BOOT_CHECKSUM,    /* the checksum did not match: corrupted */
	MKV_BOOT_MALFORMED,   /* records that are not a state */
	MKV_BOOT_VERSION,     /* another format version */
	MKV_BOOT_ABSENT,      /* the peer watches no source of this name */
	MKV_BOOT_MISMATCH,    /* of another store: other members, key groups or dialects */
	MKV_BOOT_LIMIT,       /* more tenants, objects or key groups than this exporter's limits */
	MKV_BOOT_OUT_OF_MEMORY,
	MKV_BOOT__COUNT
};
MKV_EXTERN const char *mkv_boot_result_name(enum mkv_boot_result r);

/* A bootstrap that ended for every store alike (unreachable, timeout, ...):
 * counted by the store. */
MKV_EXTERN void mkv_store_boot_note(mkv_store *s, enum mkv_boot_result r);
/* Members of the store still waiting for their proof (MKV_JOIN_WAITING). */
MKV_EXTERN size_t mkv_store_joins_waiting(const mkv_store *s);

/* --- what the shell asks --- */

/* The serving member (for a one-master source: its master unless it stands
 * by), -1 when none serves. */
MKV_EXTERN int mkv_store_leader(const mkv_store *s);
/* Every member with an admin URL was polled, every member that serves has
 * connected at least once, and one member connected or answered as a
 * standby. */
MKV_EXTERN bool mkv_store_ready(const mkv_store *s);
/* Gaps and restarts of all members' streams: anything that can have lost
 * an event. */
MKV_EXTERN uint64_t mkv_store_breaks(const mkv_store *s);

#ifdef __cplusplus
}
#endif

#endif
