/* SPDX-License-Identifier: Apache-2.0 */
/* A source's life: its store and members set up (kvd_source_init, so that
 * a bad endpoint fails at start-up), its threads started, its readiness
 * asked, everything stopped and freed.  The members' sockets, monitor and
 * ingest loop are in source_sockets.c, source_monitor.c and
 * source_ingest.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_master_poller.h"
#include "kv_reconciler.h"
#include "kv_source_impl.h"

static void free_members(kvd_source *s)
{
	for (size_t i = 0; s->members && i < s->n_members; i++)
		kvd_member_close_sockets(&s->members[i]);
	free(s->members);
	mkv_store_free(s->store);
}

int kvd_source_init(kvd_source *s, const kvd_config *cfg, const kvd_source_cfg *src, void *zctx, mkv_budget *budget,
		    uint64_t seed, const atomic_bool *stop, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	s->cfg = src;
	s->config = cfg;
	s->stop = stop;
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		snprintf(err, errlen, "source \"%s\": cannot create a mutex", src->name);
		return MKV_ENOMEM;
	}
	if (kvd_cond_init_mono(&s->decided) != 0) {
		snprintf(err, errlen, "source \"%s\": cannot create a condition variable", src->name);
		pthread_mutex_destroy(&s->lock);
		return MKV_ENOMEM;
	}
	if (kvd_cond_init_mono(&s->wake) != 0) {
		snprintf(err, errlen, "source \"%s\": cannot create a condition variable", src->name);
		pthread_cond_destroy(&s->decided);
		pthread_mutex_destroy(&s->lock);
		return MKV_ENOMEM;
	}
	int rc = MKV_ENOMEM;
	s->n_members = src->n_members;
	mkv_store_member *sm = calloc(src->n_members, sizeof(*sm)); /* copied by mkv_store_new */
	if (!(s->members = calloc(src->n_members, sizeof(*s->members))) || !sm) {
		free(sm);
		snprintf(err, errlen, "source \"%s\": out of memory", src->name);
		goto fail;
	}
	for (size_t i = 0; i < s->n_members; i++)
		sm[i] = (mkv_store_member){.label = src->members[i].label,
					   .has_status = src->members[i].status != NULL,
					   .dialect = kvd_config_dialect(cfg, src)};
	/* the flags in the library's terms: without --state.serve no handover
	 * is ever written */
	mkv_store_cfg sc = {.name = src->name,
			    .ha = src->ha,
			    .polled = src->polled,
			    .reconcile = src->reconcile,
			    .reconcile_interval = cfg->reconcile_interval,
			    .backend = src->backend,
			    .members = sm,
			    .n_members = s->n_members,
			    .key_groups = kvd_config_keygroups(cfg, src),
			    .residency = cfg->residency,
			    .budget = budget,
			    .seed = seed,
			    .max_tenants = cfg->max_tenants,
			    .never_handed_over = !cfg->state_serve};
	s->store = mkv_store_new(&sc);
	free(sm);
	if (!s->store) {
		snprintf(err, errlen, "source \"%s\": out of memory", src->name);
		goto fail;
	}
	for (size_t i = 0; i < s->n_members; i++) {
		kvd_member *m = &s->members[i];
		m->src = s;
		m->cfg = &src->members[i];
		m->index = i;
		atomic_init(&m->backlog, 0);
		atomic_init(&m->poll_now, false);
		if ((rc = kvd_member_open_sockets(m, i, zctx, err, errlen)) != MKV_OK)
			goto fail;
	}
	return MKV_OK;
fail:
	free_members(s);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->decided);
	pthread_mutex_destroy(&s->lock);
	memset(s, 0, sizeof(*s));
	return rc;
}

int kvd_source_start(kvd_source *s)
{
	for (size_t i = 0; i < s->n_members; i++) {
		kvd_member *m = &s->members[i];
		/* the sockets move to the ingest thread: pthread_create is the
		 * full memory barrier ZMQ asks for when a socket changes threads */
		if (pthread_create(&m->ingest_thread, NULL, kvd_member_ingest_main, m) != 0)
			return MKV_ENOMEM;
		m->ingest_started = true;
		/* named so that top, perf and the benchmark can find it */
		char name[16];
		if (s->n_members > 1)
			snprintf(name, sizeof(name), "kvx-in%c:%s", (char)('0' + i % 10), s->cfg->name);
		else
			snprintf(name, sizeof(name), "kvx-in:%s", s->cfg->name);
		pthread_setname_np(m->ingest_thread, name);
		if (m->cfg->status) {
			if (pthread_create(&m->poll_thread, NULL, kvd_master_poller_main, m) != 0)
				return MKV_ENOMEM;
			m->poll_started = true;
		}
	}
	if (s->cfg->reconcile) {
		if (pthread_create(&s->recon_thread, NULL, kvd_reconciler_main, s) != 0)
			return MKV_ENOMEM;
		s->recon_started = true;
	}
	return MKV_OK;
}

void kvd_source_destroy(kvd_source *s)
{
	pthread_mutex_lock(&s->lock); /* whoever waits, for a dialect or a round, stops waiting */
	pthread_cond_broadcast(&s->decided);
	pthread_cond_broadcast(&s->wake);
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < s->n_members; i++) {
		kvd_member *m = &s->members[i];
		if (m->ingest_started)
			pthread_join(m->ingest_thread, NULL); /* it closed its sockets */
		if (m->poll_started)
			pthread_join(m->poll_thread, NULL);
	}
	if (s->recon_started)
		pthread_join(s->recon_thread, NULL);
	free_members(s);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->decided);
	pthread_mutex_destroy(&s->lock);
}

bool kvd_source_ready(kvd_source *s)
{
	pthread_mutex_lock(&s->lock);
	bool ready = mkv_store_ready(s->store);
	pthread_mutex_unlock(&s->lock);
	return ready;
}
