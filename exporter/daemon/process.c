/* SPDX-License-Identifier: Apache-2.0 */
/* process_* metrics, the same figures the official client libraries give. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kv_process.h"

static double open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	double n = 0;
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

void kvd_process_collect(mkv_process_snap *p, double start_time)
{
	memset(p, 0, sizeof(*p));
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return;
	p->cpu_seconds = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
			 (double)ru.ru_stime.tv_usec / 1e6;
	long pages_total = 0, pages_rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return;
	int got = fscanf(f, "%ld %ld", &pages_total, &pages_rss);
	fclose(f);
	if (got != 2)
		return;
	double page = (double)sysconf(_SC_PAGESIZE);
	p->resident_bytes = (double)pages_rss * page;
	p->virtual_bytes = (double)pages_total * page;
	p->open_fds = open_fds();
	struct rlimit rl;
	p->max_fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (double)rl.rlim_cur : -1;
	p->start_time = start_time;
	p->ok = true;
}
