/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake-kv-exporter: parse flags, start one ingest thread (and one status
 * poller) per source and the HTTP server, wait for SIGTERM/SIGINT, stop. */
#include <ctype.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <curl/curl.h>
#include <jansson.h>
#include <zmq.h>

#include "kv_bootstrap.h"
#include "kv_clock.h"
#include "kv_config.h"
#include "kv_http_listen.h"
#include "kv_http_server.h"
#include "kv_log.h"
#include "kv_source.h"
#include "kv_webconfig.h"
#include "version.h"

static uint64_t random_seed(void)
{
	uint64_t seed = 0;
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)kvd_now() ^ (uint64_t)getpid() << 32;
	return seed;
}

/* Root is only ever needed to bind a low port: after that, become `user`
 * (every thread: glibc applies set*id to the whole process). */
static int drop_privileges(const char *user)
{
	struct passwd *pw = getpwnam(user);
	if (!pw) {
		kvd_log(KVD_LOG_ERROR, "--run-as-user: no such user", "user", user, NULL);
		return MKV_EINVAL;
	}
	if (geteuid() != 0) {
		kvd_log(KVD_LOG_ERROR, "--run-as-user needs to be started as root", "user", user, NULL);
		return MKV_EINVAL;
	}
	if (initgroups(pw->pw_name, pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0 ||
	    setuid(0) == 0) {
		kvd_log(KVD_LOG_ERROR, "--run-as-user: cannot switch user", "user", user, NULL);
		return MKV_EINVAL;
	}
	return MKV_OK;
}

/* glibc hands the free top of an arena back once it passes 128 KiB: under a
 * steady stream of 25 KB messages, allocated by ZMQ's I/O thread and freed
 * by the ingest thread, that gave back and faulted in again 3,000-9,000
 * pages a second at 1.5M events/s, each a trap on a paravirtual guest
 * (docs/performance.md, "The allocator keeps its pages"); from 1 MiB on, none.  glibc
 * raises that threshold itself, to twice a freed mapping's size (mallopt(3),
 * the dynamic mmap threshold): an exporter's first scrape of many tenants
 * does.  One mapping of 512 KiB freed at start does it for every exporter,
 * and leaves the thresholds dynamic (fixing them with mallopt made scrapes
 * of 10,000 tenants map and fault in what they had reused); what the
 * environment sets (GLIBC_TUNABLES) stands.  What is freed after a backlog
 * the ingest thread hands back itself (malloc_trim). */
#define FIRST_MAPPING_BYTES (512 << 10)

static void raise_malloc_thresholds(void)
{
	void *volatile p = malloc(FIRST_MAPPING_BYTES); /* volatile: not elided with its free */
	free(p);
}

/* Descriptors up to the hard limit, as Go's runtime does for the
 * exporter-toolkit's exporters: systemd and most shells give a soft limit
 * of 1,024, fewer than --web.max-connections may need beside the sockets
 * of the sources.  Where the hard limit is lower than that need, the
 * connections beyond it are refused by accept(2), as the kernel does. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl); /* refused is fine: the soft limit stands */
	}
}

/* What the receive queues can hold at the worst: every subscriber's ZMQ
 * queue (one per master of every source) full of messages of the largest
 * size accepted. */
static void log_queue_bound(const kvd_config *c)
{
	char hwm[24], size[24], worst[32];
	snprintf(hwm, sizeof(hwm), "%d", c->zmq_rcvhwm);
	snprintf(size, sizeof(size), "%lld", c->zmq_max_message_size);
	size_t subscribers = 0;
	for (size_t i = 0; i < c->n_sources; i++)
		subscribers += c->sources[i].n_members;
	if (c->zmq_rcvhwm) /* 0 is ZMQ's "no limit" */
		snprintf(worst, sizeof(worst), "%.0f",
			 (double)c->zmq_rcvhwm * (double)c->zmq_max_message_size * (double)subscribers);
	else
		snprintf(worst, sizeof(worst), "unbounded");
	kvd_log(KVD_LOG_INFO, "receive queues bounded", "rcvhwm_messages", hwm, "max_message_bytes", size,
		"worst_case_bytes", worst, NULL);
}

int main(int argc, char **argv)
{
	kvd_config cfg;
	char err[512];
	int rc = kvd_config_parse(&cfg, argc, argv, stdout, err, sizeof(err));
	if (rc == KVD_CONFIG_EXIT) {
		kvd_config_free(&cfg);
		return 0;
	}
	if (rc != KVD_CONFIG_RUN) {
		fprintf(stderr, "mooncake-kv-exporter: %s\n", err);
		kvd_config_free(&cfg);
		return 2;
	}
	kvd_log_setup(cfg.log_level, cfg.log_format);
	kvd_webconfig web = {0};
	if (cfg.web_config_file && kvd_webconfig_load(cfg.web_config_file, &web, err, sizeof(err)) != MKV_OK) {
		fprintf(stderr, "mooncake-kv-exporter: %s\n", err);
		kvd_config_free(&cfg);
		return 2;
	}
	/* the port before anything is logged: one line, and the OS's reason (the
	 * server binds it only after the bootstrap; should another process take
	 * it meanwhile, the log says why then) */
	int busy = kvd_http_listen_check(cfg.listen_address);
	if (busy) {
		char why[128];
		snprintf(why, sizeof(why), "%s", busy > 0 ? strerror(busy) : "its host does not resolve");
		why[0] = (char)tolower((unsigned char)why[0]);
		fprintf(stderr, "mooncake-kv-exporter: --web.listen-address %s: cannot listen: %s\n",
			cfg.listen_address, why);
		kvd_webconfig_free(&web);
		kvd_config_free(&cfg);
		return 2;
	}

	/* Before any thread: signals are taken by sigwait here, SIGPIPE never
	 * kills us (curl with NOSIGNAL does not mask it), and the libraries'
	 * global state is set up once. */
	sigset_t stop_signals;
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
	signal(SIGPIPE, SIG_IGN);
	raise_malloc_thresholds();
	raise_fd_limit();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	json_object_seed(0);

	atomic_bool stop;
	atomic_init(&stop, false);
	mkv_budget budget;
	mkv_budget_init(&budget, cfg.max_tenants, cfg.max_objects);
	budget.max_key_groups = cfg.max_key_groups;
	void *zctx = zmq_ctx_new();
	kvd_source *sources = calloc(cfg.n_sources, sizeof(*sources));
	kvd_exporter x = {.config = &cfg,
			  .sources = sources,
			  .n_sources = cfg.n_sources,
			  .budget = &budget,
			  .web = cfg.web_config_file ? &web : NULL,
			  .start_time = kvd_now()};
	size_t inited = 0;
	kvd_http *http = NULL;
	int exit_code = 1;
	uint64_t seed = random_seed();

	if (!zctx || !sources) {
		kvd_log(KVD_LOG_ERROR, "out of memory at start-up", NULL);
		goto out;
	}
	/* every source's sockets first: a bad endpoint is a bad flag value, and
	 * exits 2 before anything runs */
	for (; inited < cfg.n_sources; inited++) {
		if (kvd_source_init(&sources[inited], &cfg, &cfg.sources[inited], zctx, &budget, seed, &stop, err,
				    sizeof(err)) != MKV_OK) {
			fprintf(stderr, "mooncake-kv-exporter: %s\n", err);
			exit_code = 2;
			goto out;
		}
	}
	log_queue_bound(&cfg); /* after the checks: a bad value's one line stays alone */
	/* with --state.peer, the sockets are connected and nothing reads them yet:
	 * what the peer's copy lacks queues meanwhile */
	kvd_bootstrap_run(sources, cfg.n_sources, &cfg);
	for (size_t i = 0; i < cfg.n_sources; i++) {
		kvd_source *s = &sources[i];
		if (kvd_source_start(s) != MKV_OK) {
			kvd_log(KVD_LOG_ERROR, "cannot start a thread", "source", s->cfg->name, NULL);
			goto out;
		}
		for (size_t j = 0; j < s->n_members; j++)
			kvd_log(KVD_LOG_INFO, "watching", "source", s->cfg->name, "zmq", s->cfg->members[j].zmq,
				"status", s->cfg->members[j].status ? s->cfg->members[j].status : "", "reconcile",
				s->cfg->reconcile ? "true" : "false", NULL);
	}
	http = kvd_http_start(&x);
	if (!http) {
		exit_code = 2;
		goto out;
	}
	if (cfg.run_as_user && drop_privileges(cfg.run_as_user) != MKV_OK) {
		exit_code = 2;
		goto out;
	}
	char port[16];
	snprintf(port, sizeof(port), "%u", kvd_http_port(http));
	kvd_log(KVD_LOG_INFO, "listening", "address", cfg.listen_address, "port", port, "path", cfg.telemetry_path,
		"tls", web.tls ? "true" : "false", "basic_auth", web.n_users ? "true" : "false", "user",
		getpwuid(geteuid()) ? getpwuid(geteuid())->pw_name : "?", "version", KVD_VERSION, "revision",
		KVD_REVISION, NULL);

	int sig = 0;
	sigwait(&stop_signals, &sig);
	kvd_log(KVD_LOG_INFO, "stopping", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
	exit_code = 0;
out:
	atomic_store(&stop, true);
	kvd_http_stop(http);
	for (size_t i = 0; i < inited; i++)
		kvd_source_destroy(&sources[i]);
	free(sources);
	if (zctx)
		zmq_ctx_term(zctx);
	curl_global_cleanup();
	kvd_webconfig_free(&web);
	kvd_config_free(&cfg);
	return exit_code;
}
