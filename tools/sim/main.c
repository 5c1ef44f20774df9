/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake-kv-sim: a Mooncake master's KV event publisher and status
 * endpoint, for demos and tests.  It plays one of three masters
 * (--mooncake, docs/upstream.md):
 *
 *   main       (the default) kvcache-ai/Mooncake main since PR #3818: the
 *              subscriber guide exactly.  Per-medium availability
 *              (PublishCommitted, SyncObjectState, PublishObjectRemoved):
 *              a put stores every medium the object is on, a Remove or
 *              BatchRemove removes each medium, a tier evicted while another
 *              stays is announced; RemoveAll publishes every object's
 *              removed, then cleared for each tenant it emptied that held
 *              objects, none when an object was skipped (leased=); the model
 *              context (--model-name ...) on every event; the status's five
 *              fields (skipped_keyless_events); event ids and sequence
 *              numbers from 1 per process, nothing naming the process.  As
 *              its source does (master_service.cpp at 00390e6e): a memory
 *              eviction or quota eviction that empties an object publishes
 *              nothing (phases evict, quota-evict; the mix evicts memory
 *              only from objects that keep a disk replica); with --oplog on
 *              no whole-object removal is ever published; a master restored
 *              from a snapshot (restore=) announces nothing of it, its
 *              cleanup neither.  Revokes and discards touch only replicas
 *              never announced (revoke, discard), quota-delete is refused
 *              for a tenant that holds objects.
 *   v0.3.12    release v0.3.12 = main at 3b5a594, the `object` dialect: one
 *              event per put and per erased object, the medium guessed;
 *              tier evictions, offloads, RemoveAll, BatchRemove and quota
 *              evictions silent, no cleared ever; no model context (nil,
 *              dp_rank too); status with skipped_unparsed_keys (every event
 *              whose key is not a number, all of the simulator's textual
 *              keys).  --dialect object says the same.
 *   conductor  dev/conductor at 19ffa6e: the guide, stateful: per-medium
 *              deltas, cleared from RemoveAll even for a tenant that held
 *              nothing, invalid_event_hashes in the status; --spec-extras on
 *              the guide's skipped_keyless_events instead.  --dialect media
 *              says the same.
 *
 * Every master: a standby binds no PUB port and its promotion starts a new
 * publisher at 1.
 *
 *   mooncake-kv-sim --pub tcp://127.0.0.1:5557 --status 127.0.0.1:9003 \
 *       --phase steady:rate=2000                      (the demo: until Ctrl-C)
 *   mooncake-kv-sim ... --phase ops:count=5000 --phase burst:events=3000 \
 *       --phase restart --phase ops:count=100 --truth truth.json
 *
 * Phases run in order:
 *   steady:rate=N[,seconds=S][,until=PATH]  random operations at N events/s (S=0: forever), or until
 *                              the file PATH exists (a test's go-ahead; 300 s at most)
 *   ops:count=N[,batch=B]      N random operations, sent as fast as allowed, B events a message (64)
 *   burst:events=N             N stored events enqueued before the sender runs:
 *                              whatever exceeds --queue is dropped oldest-first,
 *                              each drop reserving one sequence number
 *   clear:all[,leased=N]       RemoveAll (media dialect: each object's removal, then cleared where it held
 *                              objects); leased=N: N objects of each tenant still leased, skipped (no force):
 *                              no cleared for it
 *   clear:tenant=T[,leased=N]  RemoveAll of tenant T (media dialect: each object's removal, then its cleared:
 *                              main only when it held objects, conductor even when it held nothing);
 *                              with --oplog on (main) the cleared at once, the objects' removals never
 *   durable                    the op log's durable callbacks erase the held entries (REMOVED replicas of whole
 *                              objects removed under --oplog on): nothing published
 *   reput:count=N[,tenant=T]   N held keys put again after put_start_discard_timeout: the old entry's removed,
 *                              then the new object's stored (before it, the mix's puts of a held key are refused)
 *   evict:count=N[,tenant=T]   BatchEvict for space of N random objects' memory: an object left on disk
 *                              loses cpu (published); one emptied: nothing on main, removed cpu on
 *                              v0.3.12, the delta on conductor
 *   batch-remove:count=N[,tenant=T]  BatchRemove of N random objects (of tenant T): no event on v0.3.12 (and
 *                              conductor, as played so far), each removal on main
 *   quota-reject:count=N       N puts refused for their tenant's quota (a tenant over it, else any):
 *                              no event, counted in the master's mooncake_tenant_quota_reject_total
 *   gate:PATH                  waits until the file PATH exists (a test's go-ahead), 300 s at most
 *   quota-evict:count=N[,tenant=T]  EvictTenantMemoryForQuota on N random objects (of tenant T): an object
 *                              emptied silent on v0.3.12 and main, published on conductor; one left on
 *                              disk loses cpu (main, conductor); counted in mooncake_tenant_evict_bytes_total
 *   revoke:count=N[,tenant=T]  N copy/move revokes: their processing targets (never announced) erased, silent
 *   discard:count=N[,tenant=T] N processing replicas (never announced) discarded: silent
 *   quota-delete:tenant=T      T's quota policy deleted (refused unless T is empty): no event, no cleared
 *   snapshot                   the master's model now is the snapshot a restored master starts from
 *   upgrade                    the master is upgraded in place: a new process that speaks the other dialect
 *                              (v0.3.12 becomes main; main and conductor become v0.3.12)
 *   restart                    new publisher process: sequence, event ids and
 *                              counters back to their start, socket re-bound
 *   standby:seconds=S[,restore=M]  the master stands by for S seconds: status 503, no PUB port;
 *                              then it is promoted (view_version + 1) and starts a new publisher (at 1)
 *   failover[:to=I][,restore=M]  a cluster (--pub and --status once per member): the leader stands
 *                              by and closes its publisher; member I (the next one) is promoted,
 *                              view_version + 1, and starts its publisher at 1 on its own endpoint
 *                              restore=M: the promoted master holds the snapshot's objects (no stored for
 *                              them) and its cleanup (ApplySnapshotState) erases M of them, with no event
 *   split-brain:seconds=S[,member=I]  member I serves as well as the leader for S seconds
 *   standby-publish:count=N[,member=I]  member I, standing by, publishes N operations on its own
 *                              endpoint (numbered from 1): real mutations from a master that does not serve
 *   rebind[:lose=N]            the PUB socket is closed and bound again, numbering goes on
 *                              (a connection reset that loses nothing, or N messages sent meanwhile)
 *   outage:seconds=S[,member=I]  member I's admin endpoints are gone (connection refused) for S seconds
 *   admin-off, admin-on        the leader's admin endpoints go, and come back, while it publishes
 *   poison:count=N             N messages each with one event of an unknown event_type, its event_id
 *                              alternately 2^63 and the next valid id (a subscriber must not read it)
 *   failover and crash take after=S: the new publisher waits for no subscriber and publishes after
 *                              S seconds (0: at once), as a real master does
 *   crash:seconds=S            the leading master's process dies for S seconds (publisher and admin
 *                              endpoints gone) and comes back as a new process (a restart)
 *   garbage:count=N            N messages with a valid sequence and a bad payload
 *   sleep:seconds=S
 *   truth                      write the ground truth now (and again at exit)
 *   wait                       until SIGINT/SIGTERM
 *
 * Files: base.c (die, random numbers, clock), master.c (the master's
 * model and operations), later.c (what main since #3818 leaves unsaid: the
 * op log's durable callbacks and re-puts, snapshot restore, revokes),
 * publisher.c (queue, wire, PUB socket), cluster.c (members, promotion,
 * failover, crash), admin.c (the admin HTTP endpoints), truth.c (the
 * ground truth), phases.c (the phase table), and this file (flags,
 * set-up).  Calls go one way, never back: main -> phases -> cluster ->
 * admin -> later -> master -> publisher -> base, and truth -> master.
 *
 * The ground truth (--truth FILE, written at exit) holds what a subscriber
 * that received every message must show, per tenant and per stream, and
 * what the master holds (including what the queue dropped), per member
 * what its stream carried, and with --quotas on the tenants' quotas.  With
 * --oplog on the truth's subscriber follows docs/design.md's rule
 * ("RemoveAll and the op log"): a removal that takes away what it held when
 * its tenant's cleared came, or stored after a cleared that came while it
 * was not exact, marks the tenant (removed_after_cleared) and not exact. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "sim.h"

static const char usage[] =
	"usage: mooncake-kv-sim --pub ENDPOINT [--status HOST:PORT] [--phase SPEC]... [options]\n"
	"  --pub and --status once per member of a cluster of masters (up to 4; member 0 leads first)\n"
	"  --quotas on|off (off)  the leader answers /api/v1/tenant_quotas (off: 409, as a master without them)\n"
	"  --lists-tenants no|yes|ignores (no)  the per-tenant listing (tools/upstream/tenant-listing.patch):\n"
	"                 no: 404, as upstream; yes: every tenant listed, named in X-Mooncake-Tenant-Id;\n"
	"                 ignores: the paths answered with tenant default's keys, no tenant named\n"
	"  --quota-bytes N (1048576)  tenant t asks for (t + 1) * N bytes; each object is charged 4096\n"
	"  --seed N (1)  --tenants N (4)  --keys N (2000)  --queue N (65536)  --backend ID  --sndhwm N (10000)\n"
	"  --preload N    random objects the master holds before any subscriber (no event for them)\n"
	"  --foreign-keys N (1)  keys of a tenant no event ever names, held since before any subscriber: a\n"
	"                 master a subscriber joins is not empty (0: started empty, with the exporter watching)\n"
	"  --key-style plain|vllm|lmcache|sglang (plain)  --models N (3; 1..4): keys shaped like an integration's,\n"
	"                 over N models; the truth gives each tenant's figures per model (\"groups\")\n"
	"  --legacy on|off (on)  --object-key on|off (on)\n"
	"  --mooncake main|v0.3.12|conductor (main)  the master played (docs/upstream.md):\n"
	"                 main: Mooncake main since PR #3818, the subscriber guide (per-medium availability,\n"
	"                 an eviction that empties an object silent, RemoveAll's cleared only for a tenant it\n"
	"                 emptied, the model context on every event, the guide's five status fields);\n"
	"                 v0.3.12: release v0.3.12 = main at 3b5a594 (one event per put and per erased object,\n"
	"                 the medium guessed; tier changes, RemoveAll, BatchRemove silent; no cleared);\n"
	"                 conductor: dev/conductor at 19ffa6e (the guide, stateful; cleared even for an empty\n"
	"                 tenant; invalid_event_hashes in the status)\n"
	"  --dialect object|media  the same as --mooncake v0.3.12 (object) or --mooncake conductor (media)\n"
	"  --spec-extras on|off (off)  on: the guide's status field skipped_keyless_events (implies conductor)\n"
	"  --model-name S (main: " SIM_MODEL ")  --lora-name S  --additional-salt S\n"
	"                 --block-size N (main: 16; 0: nil)  --dp-rank N (0): the model context main and conductor\n"
	"                 stamp on every event (empty: nil; conductor's defaults are upstream's, nil; v0.3.12\n"
	"                 stamps none)\n"
	"  --oplog on|off (off)  main with HA and the op log (needs two --pub at least): no whole-object removal\n"
	"                 published (Remove, BatchRemove, RemoveAll's objects, evictions), RemoveAll's cleared at "
	"once\n"
	"  --truth FILE   write the ground truth at exit\n"
	"phases: steady:rate=N[,seconds=S][,until=PATH] ops:count=N[,batch=B] burst:events=N clear:all|tenant=T\n"
	"        batch-remove:count=N truth restart rebind[:lose=N] standby:seconds=S outage:seconds=S[,member=I]\n"
	"        crash:seconds=S garbage:count=N failover[:to=I] split-brain:seconds=S[,member=I] "
	"standby-publish:count=N[,member=I]\n"
	"        quota-evict:count=N quota-reject:count=N upgrade admin-off admin-on poison:count=N (failover, crash: "
	"after=S)\n"
	"        clear:...,leased=N durable reput:count=N[,tenant=T] snapshot (failover, standby: restore=M)\n"
	"        revoke:count=N[,tenant=T] discard:count=N[,tenant=T] quota-delete:tenant=T evict:count=N[,tenant=T]\n"
	"        "
	"sleep:seconds=S "
	"clock:ms=N (the publisher's clock steps) known:tenant=T (a reconciliation made T exact) known:all (watched "
	"from empty) gate:PATH (waits for PATH to exist) wait\n";

static void on_signal(int sig)
{
	(void)sig;
	sim_stopping = 1;
}

static bool onoff(const char *v, const char *flag)
{
	if (!strcmp(v, "on"))
		return true;
	if (!strcmp(v, "off"))
		return false;
	die("%s takes on or off", flag);
	return false;
}

int main(int argc, char **argv)
{
	struct sim sim = {0};
	struct sim *s = &sim;
	struct opts *o = &s->o;
	*o = (struct opts){.backend = "mooncake-master-1",
			   .tenants = 4,
			   .keys = 2000,
			   .queue_cap = 65536,
			   .sndhwm = 10000,
			   .foreign = 1,
			   .models = 3,
			   .quota_unit = 1 << 20,
			   .seed = 1,
			   .legacy = true,
			   .object_key = true,
			   .block_size = -1,
			   .dp_rank = -1};
	o->phases = calloc((size_t)argc, sizeof(char *));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help")) {
			fputs(usage, stdout);
			return 0;
		}
		if (i + 1 >= argc)
			die("%s needs a value\n%s", a, usage);
		const char *v = argv[++i];
		if (!strcmp(a, "--pub") && o->n_pubs < MAX_MEMBERS)
			o->pubs[o->n_pubs++] = v;
		else if (!strcmp(a, "--status") && o->n_status < MAX_MEMBERS)
			o->status_addrs[o->n_status++] = v;
		else if (!strcmp(a, "--quotas"))
			o->quotas = onoff(v, a);
		else if (!strcmp(a, "--lists-tenants")) {
			static const char *const kinds[] = {"no", "yes", "ignores"};
			o->lists_tenants = -1;
			for (int k = 0; k < 3; k++)
				if (!strcmp(v, kinds[k]))
					o->lists_tenants = k;
			if (o->lists_tenants < 0)
				die("--lists-tenants is no, yes or ignores");
		} else if (!strcmp(a, "--quota-bytes"))
			o->quota_unit = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--truth"))
			o->truth = v;
		else if (!strcmp(a, "--backend"))
			o->backend = v;
		else if (!strcmp(a, "--seed"))
			o->seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--tenants"))
			o->tenants = (unsigned)atoi(v);
		else if (!strcmp(a, "--keys"))
			o->keys = (unsigned)atoi(v);
		else if (!strcmp(a, "--queue"))
			o->queue_cap = (unsigned)atoi(v);
		else if (!strcmp(a, "--legacy"))
			o->legacy = onoff(v, a);
		else if (!strcmp(a, "--object-key"))
			o->object_key = onoff(v, a);
		else if (!strcmp(a, "--key-style")) {
			static const char *const styles[] = {"plain", "vllm", "lmcache", "sglang"};
			o->key_style = -1;
			for (int k = 0; k < 4; k++)
				if (!strcmp(v, styles[k]))
					o->key_style = k;
			if (o->key_style < 0)
				die("--key-style is plain, vllm, lmcache or sglang");
		} else if (!strcmp(a, "--models"))
			o->models = (unsigned)atoi(v);
		else if (!strcmp(a, "--preload"))
			o->preload = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--foreign-keys"))
			o->foreign = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--sndhwm"))
			o->sndhwm = (unsigned)atoi(v);
		else if (!strcmp(a, "--spec-extras"))
			o->spec_extras = onoff(v, a);
		else if (!strcmp(a, "--dialect")) {
			/* the old names: object is the release, media dev/conductor */
			if (strcmp(v, "object") && strcmp(v, "media"))
				die("--dialect is object or media");
			o->mooncake = strcmp(v, "object") ? MC_CONDUCTOR : MC_V0312;
		} else if (!strcmp(a, "--mooncake")) {
			o->mooncake = -1;
			for (int k = 0; k < 3; k++)
				if (!strcmp(v, mooncake_names[k]))
					o->mooncake = k;
			if (o->mooncake < 0)
				die("--mooncake is main, v0.3.12 or conductor");
		} else if (!strcmp(a, "--oplog"))
			o->oplog = onoff(v, a);
		else if (!strcmp(a, "--model-name"))
			o->model_name = v;
		else if (!strcmp(a, "--lora-name"))
			o->lora_name = v;
		else if (!strcmp(a, "--additional-salt"))
			o->additional_salt = v;
		else if (!strcmp(a, "--block-size"))
			o->block_size = strtol(v, NULL, 0);
		else if (!strcmp(a, "--dp-rank"))
			o->dp_rank = strtol(v, NULL, 0);
		else if (!strcmp(a, "--phase"))
			o->phases[o->n_phases++] = (char *)v;
		else
			die("unknown flag %s\n%s", a, usage);
	}
	if (!o->n_pubs)
		die("--pub is required\n%s", usage);
	if (o->n_status && o->n_status != o->n_pubs)
		die("--status once per --pub, or not at all");
	if (o->models < 1 || o->models > 4)
		die("--models 1..4");
	if (o->tenants < 1 || o->tenants > 100000 || o->keys < 1 || o->keys > 10000000 || o->queue_cap < 1)
		die("--tenants 1..100000, --keys 1..10000000, --queue >= 1");
	if (!o->n_phases)
		o->phases[o->n_phases++] = "wait";
	if (o->spec_extras) /* the guide's status fields go with the guide's events */
		o->mooncake = MC_CONDUCTOR;
	o->dialect = mooncake_dialect(o->mooncake);
	if (o->oplog && (o->mooncake != MC_MAIN || o->n_pubs < 2))
		die("--oplog on plays main with HA: --mooncake main and two --pub at least");
	if (o->block_size > UINT32_MAX || o->dp_rank > UINT32_MAX)
		die("--block-size and --dp-rank are u32");

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	s->rng = o->seed;
	s->batch = MAX_BATCH;
	s->next_seq = s->next_event_id = 1;
	s->queue = calloc(o->queue_cap, sizeof(*s->queue));
	s->master = calloc((size_t)o->tenants * o->keys, 1);
	s->wire = calloc((size_t)o->tenants * o->keys, 1);
	s->wire_since = calloc((size_t)o->tenants * o->keys, 1);
	s->wire_birth = malloc((size_t)o->tenants * o->keys * sizeof(*s->wire_birth));
	s->truth = calloc(o->tenants, sizeof(*s->truth));
	s->quota_rejects = calloc(o->tenants, sizeof(*s->quota_rejects));
	s->evicted_bytes = calloc(o->tenants, sizeof(*s->evicted_bytes));
	s->policy_deleted = calloc(o->tenants, sizeof(*s->policy_deleted));
	s->wire_pending = calloc((size_t)o->tenants * o->keys, 1);
	s->held = calloc((size_t)o->tenants * o->keys, 1);
	if (!s->queue || !s->master || !s->wire || !s->wire_since || !s->wire_birth || !s->truth || !s->quota_rejects ||
	    !s->evicted_bytes || !s->policy_deleted || !s->wire_pending || !s->held)
		die("out of memory");
	for (size_t i = 0; i < (size_t)o->tenants * o->keys; i++)
		s->wire_birth[i] = -1;
	s->zctx = zmq_ctx_new();
	pthread_mutex_init(&s->model_lock, NULL);
	preload(s, o->preload);
	s->n_members = o->n_pubs;
	atomic_store(&s->view, 1);
	for (unsigned i = 0; i < s->n_members; i++) {
		struct member *m = &s->members[i];
		m->s = s;
		m->index = i;
		atomic_store(&m->serving, i == 0);
		cluster_admin(m, true);
	}
	s->members[0].publishers = 1;
	pub_open(s, -1);
	fprintf(stderr, "mooncake-kv-sim: publishing on %s%s%s (%u %s)\n", o->pubs[0],
		o->n_status ? ", status on " : "", o->n_status ? o->status_addrs[0] : "", s->n_members,
		s->n_members == 1 ? "member" : "members");
	for (size_t i = 0; i < o->n_phases && !sim_stopping; i++)
		run_phase(s, o->phases[i]);
	flush(s);
	if (o->truth)
		write_truth(s, o->truth);
	/* The story ended: the truth counts every message sent, so each one
	 * leaves before the process does (zmq_ctx_term waits for them, 10 s at
	 * most), not after a pause that a loaded machine outlasts.  Stopped by
	 * a signal, it gives them 0.2 s as before and goes (LINGER 0). */
	if (s->pub && !sim_stopping) {
		int linger_ms = 10000;
		zmq_setsockopt(s->pub, ZMQ_LINGER, &linger_ms, sizeof(linger_ms));
	} else {
		sleep_s(0.2);
	}
	pub_close(s);
	for (unsigned i = 0; i < s->n_members; i++)
		cluster_admin(&s->members[i], false);
	zmq_ctx_term(s->zctx);
	free(s->queue);
	free(s->master);
	free(s->wire);
	free(s->wire_since);
	free(s->wire_birth);
	for (unsigned t = 0; t < o->tenants; t++) {
		free(s->truth[t].lives.ms);
		for (unsigned g = 0; g < MAX_MODELS; g++)
			free(s->truth[t].model_lives[g].ms);
	}
	free(s->truth);
	free(s->quota_rejects);
	free(s->evicted_bytes);
	free(s->policy_deleted);
	free(s->wire_pending);
	free(s->held);
	free(s->snapshot);
	free(o->phases);
	return 0;
}
