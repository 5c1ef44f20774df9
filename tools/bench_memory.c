/* SPDX-License-Identifier: Apache-2.0 */
/* Memory and insert cost of the object state.
 *
 *   build/tools/bench-memory [objects=10000000] [tenants=16] [key_bytes=100] [residency=on|off]
 *
 * Loads N distinct objects (keys of key_bytes, half on both media) into T
 * tenants through kv_state_apply, each event a millisecond after the one
 * before, then prints resident memory per object, table bytes per object,
 * the mean insert time and the slowest single insert (growth is
 * incremental, so no insert pays for a whole resize).  The tenants are made
 * exact first (a cleared each), so that with residency on every object
 * holds a birth.  Memory is read twice: right after the last insert (a
 * growth's old array may still be draining) and once the tables settled,
 * as the exporter lets them when its socket goes quiet (kv_state_settle).
 * The tenants' own memory is read before the first object.  Numbers are
 * printed, never asserted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kv_state.h"

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
	size_t tenants = argc > 2 ? strtoull(argv[2], NULL, 10) : 16;
	size_t key_bytes = argc > 3 ? strtoull(argv[3], NULL, 10) : 100;
	bool residency = argc <= 4 || strcmp(argv[4], "off") != 0;
	if (key_bytes < 24 || key_bytes > 4096 || tenants == 0 || tenants > 100000) {
		fprintf(stderr, "usage: %s [objects] [tenants 1..100000] [key_bytes 24..4096] [on|off]\n", argv[0]);
		return 2;
	}

	mkv_budget budget;
	mkv_budget_init(&budget, tenants, n);
	kv_state *s = kv_state_new(&budget, 0x1234);
	kv_state_set_residency(s, residency);
	char *key = malloc(key_bytes);
	char tname[32];
	memset(key, 'k', key_bytes);
	memcpy(key, "model-llama-70b/layer", 21);

	kv_event ev = {.type = MKV_EV_CLEARED, .timestamp_ms = 1800000000000};
	ev.backend_id = (mkv_str){"mooncake-master-1", 17};
	long rss_empty = rss_kib(); /* the tenants' own memory, before any object */
	for (size_t i = 0; i < tenants; i++) {
		int tl = snprintf(tname, sizeof(tname), "tenant-%zu", i);
		ev.tenant_id = (mkv_str){tname, (uint32_t)tl};
		kv_state_apply(s, &ev, MKV_DIALECT_MEDIA);
	}
	ev.type = MKV_EV_STORED;
	ev.has_key = true;

	long rss0 = rss_kib();
	double worst = 0, t0 = now_s();
	for (size_t i = 0; i < n; i++) {
		ev.timestamp_ms++;
		/* a distinct key: the index written into the tail of the key */
		snprintf(key + key_bytes - 21, 21, "%020zu", i);
		int tl = snprintf(tname, sizeof(tname), "tenant-%zu", i % tenants);
		ev.tenant_id = (mkv_str){tname, (uint32_t)tl};
		ev.object_key = (mkv_str){key, (uint32_t)key_bytes};
		ev.medium = MKV_MEDIUM_CPU;
		double a = now_s();
		if (kv_state_apply(s, &ev, MKV_DIALECT_MEDIA) != MKV_OK) {
			fprintf(stderr, "apply failed at %zu\n", i);
			return 1;
		}
		if (i % 2 == 0) {
			ev.medium = MKV_MEDIUM_DISK;
			kv_state_apply(s, &ev, MKV_DIALECT_MEDIA);
		}
		double d = now_s() - a;
		if (d > worst)
			worst = d;
	}
	double elapsed = now_s() - t0;
	long rss1 = rss_kib();
	size_t bytes1 = kv_state_table_bytes(s);
	kv_state_settle(s, SIZE_MAX);
	long rss2 = rss_kib();

	size_t live = 0, born = 0;
	for (size_t i = 0; i < kv_state_tenant_count(s); i++) {
		live += kv_tenant_objects(kv_state_tenant_at(s, i));
		born += kv_state_tenant_at(s, i)->objects.births_n;
	}
	printf("objects            %zu in %zu tenants (keys of %zu bytes), residency %s: %zu births held\n", live,
	       tenants, key_bytes, residency ? "on" : "off", born);
	printf("tenants            %.1f MiB  = %.0f bytes/tenant, with no object\n", (double)(rss0 - rss_empty) / 1024,
	       (double)(rss0 - rss_empty) * 1024 / (double)tenants);
	printf("rss growth         %.1f MiB  = %.1f bytes/object settled (%.1f at the last insert)\n",
	       (double)(rss2 - rss0) / 1024, (double)(rss2 - rss0) * 1024 / (double)live,
	       (double)(rss1 - rss0) * 1024 / (double)live);
	printf("table bytes        %.1f MiB  = %.1f bytes/object settled (%.1f at the last insert)\n",
	       (double)kv_state_table_bytes(s) / 1048576, (double)kv_state_table_bytes(s) / (double)live,
	       (double)bytes1 / (double)live);
	printf("insert             %.0f ns/object mean (%.1f M objects/s), slowest one %.1f us\n",
	       elapsed * 1e9 / (double)n, (double)n / elapsed / 1e6, worst * 1e6);
	kv_state_free(s);
	free(key);
	return 0;
}
