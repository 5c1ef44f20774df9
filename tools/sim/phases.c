/* SPDX-License-Identifier: Apache-2.0 */
/* The phases of a run (--phase NAME[:k=v,...]), in a table matched on the
 * exact name: what each does is in main.c's usage and the header comment
 * there. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

/* The value of name=... in a phase's spec, or dflt. */
static double param(const char *spec, const char *name, double dflt)
{
	const char *p = strstr(spec, name);
	size_t n = strlen(name);
	while (p && !((p == spec || p[-1] == ':' || p[-1] == ',') && p[n] == '='))
		p = strstr(p + 1, name);
	return p ? strtod(p + n + 1, NULL) : dflt;
}

/* Random operations until count ran (or the stop), batch events a message. */
static void operations(struct sim *s, uint64_t count, unsigned batch)
{
	s->batch = batch;
	for (uint64_t i = 0; i < count && !sim_stopping; i++) {
		random_op(s);
		if (s->q_len >= s->batch)
			send_batch(s);
	}
	flush(s);
	s->batch = MAX_BATCH;
}

/* steady:rate=R[,seconds=S][,until=PATH]: R operations a second for S
 * seconds, or (until=, last: the rest of the spec is the path) until the
 * file PATH exists (a test's go-ahead, 300 s at most), or for ever. */
static void steady(struct sim *s, const char *spec)
{
	double rate = param(spec, "rate", 1000), seconds = param(spec, "seconds", 0);
	const char *until = strstr(spec, "until=");
	if (until) {
		until += strlen("until=");
		if (seconds <= 0)
			seconds = 300;
	}
	double start = now_s(), tick = 0.01;
	uint64_t done = 0;
	while (!sim_stopping && (seconds <= 0 || now_s() - start < seconds) && !(until && access(until, F_OK) == 0)) {
		uint64_t due = (uint64_t)((now_s() - start) * rate);
		while (done < due && !sim_stopping) {
			random_op(s);
			done++;
			if (s->q_len >= MAX_BATCH)
				send_batch(s);
		}
		flush(s);
		sleep_s(tick);
	}
}

static void ops(struct sim *s, const char *spec)
{
	double b = param(spec, "batch", MAX_BATCH);
	operations(s, (uint64_t)param(spec, "count", 1000), b >= 1 && b <= MAX_BATCH ? (unsigned)b : MAX_BATCH);
}

/* one stored each: a PutEnd of one replica (main), a replica published
 * with PublishStored (the guide) */
static void burst(struct sim *s, const char *spec)
{
	uint64_t n = (uint64_t)param(spec, "events", 1000);
	for (uint64_t i = 0; i < n; i++) {
		unsigned t = (unsigned)(rnd(s) % s->o.tenants), k = (unsigned)(rnd(s) % s->o.keys);
		unsigned m = 1 + (unsigned)(rnd(s) & 1);
		master_set(s, t, k, (unsigned char)(*cell(s, s->master, t, k) | m));
		publish(s, STORED, t, k, m);
	}
	flush(s);
}

/* tenant=T of a phase, or a random tenant each time (-1) */
static int tenant_param(struct sim *s, const char *spec)
{
	double t = param(spec, "tenant", -1);
	if (t >= (double)s->o.tenants)
		die("tenant=T must be below --tenants");
	return (int)t;
}

static unsigned some_tenant(struct sim *s, int t)
{
	return t >= 0 ? (unsigned)t : (unsigned)(rnd(s) % s->o.tenants);
}

static void quota_evict(struct sim *s, const char *spec)
{
	uint64_t n = (uint64_t)param(spec, "count", 100);
	int t = tenant_param(s, spec);
	for (uint64_t i = 0; i < n; i++)
		op_quota_evict(s, some_tenant(s, t), (unsigned)(rnd(s) % s->o.keys));
	flush(s);
}

/* BatchEvict for space: N random objects' memory replicas */
static void evict(struct sim *s, const char *spec)
{
	uint64_t n = (uint64_t)param(spec, "count", 100);
	int t = tenant_param(s, spec);
	for (uint64_t i = 0; i < n; i++) {
		op_space_evict(s, some_tenant(s, t), (unsigned)(rnd(s) % s->o.keys));
		if (s->q_len >= MAX_BATCH)
			send_batch(s);
	}
	flush(s);
}

/* puts refused for a tenant's quota: one over it if any, else any tenant */
static void quota_reject(struct sim *s, const char *spec)
{
	uint64_t n = (uint64_t)param(spec, "count", 10);
	for (uint64_t i = 0; i < n; i++) {
		unsigned t = (unsigned)(rnd(s) % s->o.tenants);
		for (unsigned k = 0; k < s->o.tenants; k++) {
			pthread_mutex_lock(&s->model_lock);
			bool over = tenant_quota(s, (t + k) % s->o.tenants).over;
			pthread_mutex_unlock(&s->model_lock);
			if (over) {
				t = (t + k) % s->o.tenants;
				break;
			}
		}
		op_quota_reject(s, t);
	}
}

static void batch_remove(struct sim *s, const char *spec)
{
	uint64_t n = (uint64_t)param(spec, "count", 100);
	int t = tenant_param(s, spec);
	for (uint64_t i = 0; i < n; i++)
		op_silent_remove(s, some_tenant(s, t), (unsigned)(rnd(s) % s->o.keys));
}

/* clear:all[,leased=N], or clear:tenant=T[,leased=N] */
static void clear(struct sim *s, const char *spec)
{
	double t = param(spec, "tenant", -1);
	if (t < 0 ? strncmp(spec, "clear:all", 9) != 0 || (spec[9] && spec[9] != ',') : t >= (double)s->o.tenants)
		die("clear: say clear:all or clear:tenant=T, T below --tenants");
	op_remove_all(s, (int)t, (unsigned)param(spec, "leased", 0));
	flush(s);
}

/* the op log's durable callbacks: the held entries erased, silently */
static void durable(struct sim *s, const char *spec)
{
	(void)spec;
	flush(s);
	op_late_removals(s);
}

static void reput(struct sim *s, const char *spec)
{
	op_reput(s, (uint64_t)param(spec, "count", 1), tenant_param(s, spec));
}

static void snapshot(struct sim *s, const char *spec)
{
	(void)spec;
	flush(s);
	op_snapshot(s);
}

static void revoke_phase(struct sim *s, const char *spec)
{
	op_revoke(s, (uint64_t)param(spec, "count", 10), tenant_param(s, spec));
}

static void discard(struct sim *s, const char *spec)
{
	op_discard(s, (uint64_t)param(spec, "count", 10), tenant_param(s, spec));
}

static void quota_delete(struct sim *s, const char *spec)
{
	int t = tenant_param(s, spec);
	if (t < 0)
		die("quota-delete:tenant=T");
	op_quota_delete(s, (unsigned)t);
}

/* a new publisher process on the same endpoint */
static void restart(struct sim *s, const char *spec)
{
	(void)spec;
	pub_stop(s);
	new_publisher(s);
	sleep_s(0.3);
	pub_open(s, -1);
}

/* the master is upgraded in place: a new process, which speaks the other
 * dialect: v0.3.12 becomes main, main and conductor become v0.3.12 */
static void upgrade(struct sim *s, const char *spec)
{
	(void)spec;
	pub_stop(s); /* what the old process queued goes out in its dialect */
	s->o.mooncake = s->o.mooncake == MC_V0312 ? MC_MAIN : MC_V0312;
	s->o.dialect = mooncake_dialect(s->o.mooncake);
	s->o.oplog = s->o.spec_extras = false;
	new_publisher(s);
	sleep_s(0.3);
	pub_open(s, -1);
}

static void rebind(struct sim *s, const char *spec)
{
	pub_stop(s);
	/* lose=N: N random operations, one event a message, sent while the
	 * socket is gone: lost, with their numbers and event ids */
	uint64_t lose = (uint64_t)param(spec, "lose", 0), goal = s->lost_messages + lose;
	s->batch = 1;
	for (uint64_t i = 0; s->lost_messages < goal && i < 100 * lose; i++) { /* some ops publish nothing */
		random_op(s);
		flush(s);
	}
	s->batch = MAX_BATCH;
	sleep_s(0.3);
	pub_open(s, -1);
}

static void standby(struct sim *s, const char *spec)
{
	cluster_standby(s, param(spec, "seconds", 1), param(spec, "restore", -1));
}

static void failover(struct sim *s, const char *spec)
{
	cluster_failover(s, cluster_member(s, param(spec, "to", -1)), param(spec, "after", -1),
			 param(spec, "restore", -1));
}

static void split_brain(struct sim *s, const char *spec)
{
	cluster_split_brain(s, cluster_member(s, param(spec, "member", -1)), param(spec, "seconds", 1));
}

static void standby_publish(struct sim *s, const char *spec)
{
	cluster_standby_publish(s, cluster_member(s, param(spec, "member", -1)), (uint64_t)param(spec, "count", 100));
}

static void crash(struct sim *s, const char *spec)
{
	cluster_crash(s, param(spec, "seconds", 1), param(spec, "after", -1));
}

static void admin_off(struct sim *s, const char *spec)
{
	(void)spec;
	cluster_admin(&s->members[s->publishing], false);
}

static void admin_on(struct sim *s, const char *spec)
{
	(void)spec;
	cluster_admin(&s->members[s->publishing], true);
}

/* member I's admin endpoints are gone (connection refused) for a while */
static void outage(struct sim *s, const char *spec)
{
	double v = param(spec, "member", -1);
	struct member *m = &s->members[v < 0 ? s->publishing : cluster_member(s, v)];
	if (!m->admin)
		return;
	cluster_admin(m, false);
	sleep_s(param(spec, "seconds", 1));
	cluster_admin(m, true);
}

/* N messages of random operations, each with one event of an unknown
 * event_type among them */
static void poison(struct sim *s, const char *spec)
{
	s->poison_pending = (unsigned)param(spec, "count", 10);
	for (uint64_t i = 0; s->poison_pending && i < 100000 && !sim_stopping; i++) {
		random_op(s);
		if (s->q_len >= 4)
			send_batch(s);
	}
	flush(s);
}

static void garbage(struct sim *s, const char *spec)
{
	publish_garbage(s, (uint64_t)param(spec, "count", 100));
}

static void sleep_phase(struct sim *s, const char *spec)
{
	(void)s;
	sleep_s(param(spec, "seconds", 1));
}

static void truth(struct sim *s, const char *spec)
{
	(void)spec;
	flush(s);
	sleep_s(0.2); /* sent, before the truth says so */
	if (s->o.truth)
		write_truth(s, s->o.truth);
}

/* The publisher's clock steps by ms (a negative step: an NTP correction
 * backwards): its timestamps go back, not its order. */
static void clock_step(struct sim *s, const char *spec)
{
	flush(s);
	s->clock_offset_ms += (int64_t)param(spec, "ms", -5000);
}

/* The subscriber knows tenant t exactly from here (the exporter reconciled
 * it: the test makes sure it did, before this phase), or every tenant
 * (known:all: it watched the store from empty, which the test makes sure the
 * exporter proved): the objects it holds have no birth, lives that begin
 * from here are seen. */
static void known(struct sim *s, const char *spec)
{
	flush(s);
	bool all = strcmp(spec, "known:all") == 0;
	unsigned t = (unsigned)param(spec, "tenant", 0);
	for (unsigned i = 0; i < s->o.tenants; i++)
		if (all || i == t) {
			s->truth[i].exact = true;
			/* a reconciliation closes the op log's window (docs/design.md) */
			s->truth[i].removed_after_cleared = s->truth[i].pending_unseen = false;
			memset(cell(s, s->wire_pending, i, 0), 0, s->o.keys);
		}
}

/* gate:PATH waits until the file PATH exists, 300 s at most (then fails):
 * a test's go-ahead, so that the story goes on when the exporter is where
 * the test needs it, not after a guess of how long that takes. */
static void gate(struct sim *s, const char *spec)
{
	flush(s);
	const char *path = spec + strlen("gate:");
	for (int i = 0; i < 3000 && !sim_stopping; i++) {
		if (access(path, F_OK) == 0)
			return;
		sleep_s(0.1);
	}
	if (!sim_stopping)
		die("gate: %s did not appear in 300 s", path);
}

static void wait_phase(struct sim *s, const char *spec)
{
	(void)s;
	(void)spec;
	while (!sim_stopping)
		sleep_s(0.1);
}

static const struct {
	const char *name;
	void (*run)(struct sim *s, const char *spec);
} phases[] = {
	{"steady", steady},
	{"ops", ops},
	{"burst", burst},
	{"quota-evict", quota_evict},
	{"evict", evict},
	{"quota-reject", quota_reject},
	{"batch-remove", batch_remove},
	{"clear", clear},
	{"durable", durable},
	{"reput", reput},
	{"snapshot", snapshot},
	{"revoke", revoke_phase},
	{"discard", discard},
	{"quota-delete", quota_delete},
	{"restart", restart},
	{"upgrade", upgrade},
	{"rebind", rebind},
	{"standby", standby},
	{"failover", failover},
	{"split-brain", split_brain},
	{"standby-publish", standby_publish},
	{"crash", crash},
	{"admin-off", admin_off},
	{"admin-on", admin_on},
	{"outage", outage},
	{"poison", poison},
	{"garbage", garbage},
	{"sleep", sleep_phase},
	{"truth", truth},
	{"wait", wait_phase},
	{"clock", clock_step},
	{"known", known},
	{"gate", gate},
};

void run_phase(struct sim *s, const char *spec)
{
	size_t n = strcspn(spec, ":");
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
		if (strlen(phases[i].name) == n && !strncmp(spec, phases[i].name, n)) {
			phases[i].run(s, spec);
			return;
		}
	die("unknown phase \"%s\"", spec);
}
