/* SPDX-License-Identifier: Apache-2.0 */
/* The cluster of masters (--pub and --status once per member): who serves,
 * promotions (a new view, a new publisher from 1 on the new leader's own
 * endpoint), standbys, split brains, a standby that publishes, crashes and
 * admin outages. */
#include <string.h>
#include <microhttpd.h>

#include "sim.h"

/* Member m wins an election: a new view, its publisher from 1.  A
 * subscriber of that member alone sees the wire from here on. */
void cluster_promote(struct sim *s, unsigned m, double after)
{
	cluster_promote_restored(s, m, after, -1);
}

/* A promoted master restored from a snapshot takes over with the
 * snapshot's objects, and its first events are its cleanup's removals. */
void cluster_promote_restored(struct sim *s, unsigned m, double after, double cleanup)
{
	atomic_fetch_add(&s->view, 1);
	s->publishing = m;
	new_publisher(s);
	memset(s->wire_since, 0, (size_t)s->o.tenants * s->o.keys);
	/* the service plane, publisher included, is built before it is
	 * declared available */
	pub_open(s, after);
	if (cleanup >= 0)
		op_restore(s, (uint64_t)cleanup);
	atomic_store(&s->members[m].serving, true);
}
/* The member= of a phase, or the one after the publishing member. */
unsigned cluster_member(struct sim *s, double v)
{
	unsigned m = v < 0 ? (s->publishing + 1) % s->n_members : (unsigned)v;
	if (m >= s->n_members)
		die("member %u: the cluster has %u (give --pub once per member)", m, s->n_members);
	return m;
}

/* upstream builds the publisher only on promotion: a standby has no PUB
 * port, and the next leader's publisher numbers from 1 */
void cluster_standby(struct sim *s, double seconds, double cleanup)
{
	unsigned m = s->publishing;
	pub_stop(s);
	atomic_store(&s->members[m].serving, false);
	sleep_s(seconds);
	cluster_promote_restored(s, m, -1, cleanup);
}

void cluster_failover(struct sim *s, unsigned to, double after, double cleanup)
{
	if (to == s->publishing)
		die("failover: member %u leads already", to);
	pub_stop(s);
	atomic_store(&s->members[s->publishing].serving, false);
	sleep_s(0.2);
	cluster_promote_restored(s, to, after, cleanup);
}

void cluster_split_brain(struct sim *s, unsigned m, double seconds)
{
	atomic_store(&s->members[m].serving, true);
	s->split_brains++;
	sleep_s(seconds);
	atomic_store(&s->members[m].serving, m == s->publishing);
}

void cluster_standby_publish(struct sim *s, unsigned m, uint64_t count)
{
	if (atomic_load(&s->members[m].serving))
		die("standby-publish: member %u serves", m);
	flush(s);
	struct pubstate leader = pub_save(s);
	s->publishing = m;
	new_publisher(s);
	pub_open(s, -1);
	for (uint64_t i = 0; i < count && !sim_stopping; i++) {
		random_op(s);
		if (s->q_len >= s->batch)
			send_batch(s);
	}
	pub_stop(s);
	pub_restore(s, &leader);
}

/* the master process dies: publisher and admin endpoints go; it comes back
 * as a new process (a restart: the view does not move), its publisher up
 * before its admin port */
void cluster_crash(struct sim *s, double seconds, double after)
{
	struct member *m = &s->members[s->publishing];
	pub_stop(s);
	cluster_admin(m, false);
	sleep_s(seconds);
	new_publisher(s);
	pub_open(s, after);
	cluster_admin(m, true);
}

void cluster_admin(struct member *m, bool on)
{
	const char *addr = m->s->o.status_addrs[m->index];
	if (m->admin && !on) {
		MHD_stop_daemon(m->admin);
		m->admin = NULL;
	} else if (!m->admin && on && addr) {
		m->admin = admin_start(m, addr);
	}
}
