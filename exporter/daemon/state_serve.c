/* SPDX-License-Identifier: Apache-2.0 */
/* GET /state (kv_state_serve.h). */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mooncake_kv/handover.h>

#include "kv_clock.h"
#include "kv_source.h"
#include "kv_state_serve.h"

static pthread_mutex_t children_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t children[KVD_STATE_SERVE_MAX];

static int to_pipe(void *arg, const void *p, size_t n)
{
	int fd = *(int *)arg;
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1; /* the reader went away */
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

void kvd_state_serve_reap(int wait)
{
	pthread_mutex_lock(&children_lock);
	for (int i = 0; i < KVD_STATE_SERVE_MAX; i++)
		if (children[i] && waitpid(children[i], NULL, wait ? 0 : WNOHANG) != 0)
			children[i] = 0;
	pthread_mutex_unlock(&children_lock);
}

int kvd_state_serve_open(kvd_source *sources, size_t n, int *fd, double *pause_s)
{
	kvd_state_serve_reap(0);
	pthread_mutex_lock(&children_lock);
	int slot = -1;
	for (int i = 0; i < KVD_STATE_SERVE_MAX && slot < 0; i++)
		if (!children[i])
			slot = i;
	if (slot < 0) {
		pthread_mutex_unlock(&children_lock);
		return MKV_ELIMIT;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		pthread_mutex_unlock(&children_lock);
		return MKV_ENOMEM;
	}
	mkv_store **stores = calloc(n ? n : 1, sizeof(*stores));
	if (!stores) {
		close(p[0]);
		close(p[1]);
		pthread_mutex_unlock(&children_lock);
		return MKV_ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		stores[i] = sources[i].store;
	/* pages freed since the last burst would be page-table entries the
	 * fork copies while ingestion waits: handed back first */
	malloc_trim(0);
	/* every lock, in source order (nothing else takes two), then the fork:
	 * the child's copy of memory is of this instant */
	double t0 = kvd_mono();
	for (size_t i = 0; i < n; i++)
		pthread_mutex_lock(&sources[i].lock);
	int64_t now_ms = (int64_t)(kvd_now() * 1000);
	pid_t pid = fork();
	if (pid == 0) {
		/* The child: one thread, its memory a copy.  It writes and goes,
		 * touching nothing but the stores and the pipe (no lock, no log:
		 * other threads' locks are copied as they were). */
		close(p[0]);
		signal(SIGPIPE, SIG_IGN);
		int rc = mkv_handover_write(stores, n, now_ms, to_pipe, &p[1]);
		_exit(rc == MKV_OK ? 0 : 1);
	}
	for (size_t i = n; i-- > 0;)
		pthread_mutex_unlock(&sources[i].lock);
	*pause_s = kvd_mono() - t0;
	free(stores);
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		pthread_mutex_unlock(&children_lock);
		return MKV_ENOMEM;
	}
	children[slot] = pid;
	pthread_mutex_unlock(&children_lock);
	*fd = p[0];
	return MKV_OK;
}
