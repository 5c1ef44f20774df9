/* SPDX-License-Identifier: Apache-2.0 */
/* mooncake-kv-bench: the in-process measurements of docs/performance.md.
 *
 *   mooncake-kv-bench decode [off]      decode alone (one pass, and msgpack-c's tree), and decode +
 *                                       state, over memory (residency off)
 *   mooncake-kv-bench groups [RE]       decode + state with and without a key-group regex
 *   mooncake-kv-bench recv EP N [own]   ZMQ receive + decode (msgpack-c, or own: the exporter's), no state
 *   mooncake-kv-bench paced KEYS [GAP_US [exact] [settled]]
 *                                       decode alone against decode + state, message by
 *                                       message, each after a sleep (200 us), in process
 *   mooncake-kv-bench render            snapshot + render at 10, 1,000, 10,000 tenants
 *                                       (and, at 10,000, the modes of docs/sizing.md)
 *   mooncake-kv-bench handover [N]      a store of N objects (10M) handed over: bytes, write,
 *                                       the fork's pause as the daemon serves it, read and take
 *
 * Prints one JSON object per measurement.  Numbers are printed, never asserted. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include <mooncake_kv/handover.h>
#include <mooncake_kv/scrape.h>

#include "bench.h"
#include "kv_key_group_regex.h"
#include "kv_store_impl.h"
#include "kv_stream.h"
#include "ref_decode.h"
#include "workload.h"

double bench_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

/* Residency on (the default) or off: `mooncake-kv-bench decode off`. */
static bool residency = true;
static uint64_t lives_observed; /* by the last ingest_rate */

/* Makes the workload's tenants exact (a cleared each), so that with
 * residency on every life is observed: the most work residency can do. */
static void make_exact(kv_stream *st, const wl_params *wp)
{
	kv_state *s = (kv_state *)kv_stream_state(st);
	char name[32];
	kv_event ev = {.type = MKV_EV_CLEARED, .backend_id = {"mooncake-master-1", 17}};
	kv_state_set_residency(s, residency);
	for (unsigned t = 0; t < wp->tenants; t++) {
		ev.tenant_id = (mkv_str){name, (uint32_t)snprintf(name, sizeof(name), "tenant-%u", t)};
		kv_state_apply(s, &ev, MKV_DIALECT_MEDIA);
	}
}

/* Stores every key of the workload once (its live set): the messages
 * numbered on from *sq, their events from *eid. */
static void load_live_set(kv_stream *st, const wl_params *wp, uint64_t *sq, uint64_t *eid)
{
	unsigned char seq[8];
	mkv_frame f[3] = {{"", 0}, {seq, 8}, {NULL, 0}};
	size_t n;
	wl_msg *load = wl_encode_load(wp, &n);
	for (size_t i = 0; load && i < n; i++) {
		be64(seq, ++*sq);
		wl_stamp(&load[i], *eid + 1, (int64_t)*sq);
		*eid += WL_BATCH;
		f[2] = (mkv_frame){load[i].payload, load[i].len};
		kv_stream_ingest(st, f, 3, 0, NULL);
	}
	wl_free(load, n);
}

/* decode + state: the exporter's whole per-message work, without ZMQ, on a
 * live set of 1M keys loaded first; key groups on when re is not NULL.
 * Each message is a millisecond after the one before (its events' own
 * timestamps too).  Returns events/s over two seconds. */
static double ingest_rate(const wl_params *wp, wl_msg *m, size_t n, const mkv_keygroup_re *re, size_t *live)
{
	unsigned char seq[8] = {0};
	mkv_frame f[3] = {{"", 0}, {seq, 8}, {NULL, 0}};
	mkv_budget budget;
	mkv_budget_init(&budget, 1000, 20000000);
	kv_stream *st = kv_stream_new(&budget, 1);
	if (re && kv_stream_set_keygroups(st, re) != MKV_OK) {
		kv_stream_free(st);
		return 0;
	}
	make_exact(st, wp);
	uint64_t s = 0, eid = 0, events = 0;
	load_live_set(st, wp, &s, &eid);
	double t0 = bench_mono();
	while (bench_mono() - t0 < 2.0) {
		for (size_t i = 0; i < n; i++) {
			be64(seq, ++s);
			wl_stamp(&m[i], eid + 1, (int64_t)s);
			eid += WL_BATCH;
			f[2] = (mkv_frame){m[i].payload, m[i].len};
			kv_stream_ingest(st, f, 3, (int64_t)s, NULL);
			events += WL_BATCH;
		}
	}
	double dt = bench_mono() - t0;
	*live = atomic_load(&budget.objects);
	const kv_state *state = kv_stream_state(st);
	lives_observed = 0;
	for (size_t i = 0; i < kv_state_tenant_count(state); i++)
		lives_observed += kv_state_tenant_at(state, i)->counts.life.count;
	kv_stream_free(st);
	return (double)events / dt;
}

static int bench_decode(void)
{
	wl_params wp = {.keys = 1000000, .tenants = 16, .key_bytes = 100, .stored_pct = 60, .seed = 7};
	enum { N = 2048 };
	wl_msg *m = wl_encode_mix(&wp, N);
	unsigned char seq[8] = {0};
	mkv_frame f[3] = {{"", 0}, {seq, 8}, {NULL, 0}};
	kv_decoder *d = kv_decoder_new();
	ref_decoder *rd = ref_decoder_new();
	kv_batch b;
	for (int own = 1; own >= 0; own--) {
		uint64_t events = 0;
		double t0 = bench_mono();
		while (bench_mono() - t0 < 2.0) {
			for (size_t i = 0; i < N; i++) {
				f[2] = (mkv_frame){m[i].payload, m[i].len};
				own ? kv_decode(d, f, 3, &b) : ref_decode(rd, f, 3, &b);
				events += b.n_events;
			}
		}
		double dt = bench_mono() - t0;
		printf("{\"what\":\"decode alone, in memory\",\"decoder\":\"%s\",\"events_per_s\":%.0f,"
		       "\"ns_per_event\":%.1f,\"message_bytes\":%zu}\n",
		       own ? "one pass" : "msgpack-c tree", (double)events / dt, dt * 1e9 / (double)events, m[0].len);
	}
	ref_decoder_free(rd);

	size_t live;
	double rate = ingest_rate(&wp, m, N, NULL, &live);
	printf("{\"what\":\"decode + state, in memory, 1M keys\",\"residency\":\"%s\",\"events_per_s\":%.0f,"
	       "\"live_objects\":%zu,\"lives_observed\":%llu}\n",
	       residency ? "on" : "off", rate, live, (unsigned long long)lives_observed);
	kv_decoder_free(d);
	wl_free(m, N);
	return 0;
}

/* The floor: receive and decode, no state.  Its decode is msgpack-c's tree
 * (issue 31's "ZMQ receive plus msgpack-c decode"), or with own the
 * exporter's one-pass decoder. */
static int bench_recv(const char *ep, uint64_t want, bool own)
{
	void *ctx = zmq_ctx_new(), *sub = zmq_socket(ctx, ZMQ_SUB);
	int hwm = 0, timeout = 2000;
	zmq_setsockopt(sub, ZMQ_RCVHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(sub, ZMQ_RCVTIMEO, &timeout, sizeof(timeout));
	zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
	zmq_connect(sub, ep);
	kv_decoder *d = kv_decoder_new();
	ref_decoder *rd = ref_decoder_new();
	zmq_msg_t parts[3];
	uint64_t events = 0, messages = 0;
	double t0 = 0, t1 = 0;
	while (events < want) {
		size_t n = 0;
		int more = 1;
		while (more && n < 3) {
			zmq_msg_init(&parts[n]);
			if (zmq_msg_recv(&parts[n], sub, 0) < 0)
				goto done;
			more = zmq_msg_more(&parts[n]);
			n++;
		}
		if (!t0)
			t0 = bench_mono();
		mkv_frame f[3];
		for (size_t i = 0; i < n; i++)
			f[i] = (mkv_frame){zmq_msg_data(&parts[i]), zmq_msg_size(&parts[i])};
		kv_batch b;
		own ? kv_decode(d, f, n, &b) : ref_decode(rd, f, n, &b);
		events += b.n_events;
		messages++;
		for (size_t i = 0; i < n; i++)
			zmq_msg_close(&parts[i]);
		t1 = bench_mono();
	}
done:
	printf("{\"what\":\"ZMQ receive + decode, no "
	       "state\",\"decoder\":\"%s\",\"events_per_s\":%.0f,\"events\":%llu,\"messages\":%llu}\n",
	       own ? "one pass" : "msgpack-c tree", t1 > t0 ? (double)events / (t1 - t0) : 0.0,
	       (unsigned long long)events, (unsigned long long)messages);
	kv_decoder_free(d);
	ref_decoder_free(rd);
	zmq_close(sub);
	zmq_ctx_term(ctx);
	return 0;
}

static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A paced stream's wake-ups, in one process: each message is decoded alone
 * (the floor's work) and then decoded and applied (the ingest thread's),
 * each after its own sleep of gap_us, message by message, so that both see
 * the same cold start and the same phases of a noisy machine.  What it
 * prints is the state's cost an event over the floor's decode; ZMQ's cost,
 * the same in both, is not in it.  keys 64-byte keys over 16 tenants,
 * loaded first; exact: the tenants made exact first (births kept, as in a
 * deployment where the master can be asked), else stale, as the ZMQ
 * benchmark's exporter has them. */
static int bench_paced(uint64_t keys, long gap_us, bool exact, bool settled)
{
	wl_params wp = {.keys = keys, .tenants = 16, .key_bytes = 64, .stored_pct = 60, .seed = 7};
	enum { N = 16384 }; /* 1M events: more cache lines than the last-level cache holds */
	wl_msg *m = wl_encode_mix(&wp, N);
	unsigned char seq[8] = {0};
	mkv_frame f[3] = {{"", 0}, {seq, 8}, {NULL, 0}};
	mkv_budget budget;
	mkv_budget_init(&budget, 1000, 40000000);
	kv_state *state = kv_state_new(&budget, 1);
	kv_stream *st = state ? kv_stream_attach(state) : NULL;
	kv_decoder *d = kv_decoder_new();
	if (!m || !st || !d)
		return 1;
	if (exact)
		make_exact(st, &wp);
	uint64_t sq = 0, eid = 0;
	load_live_set(st, &wp, &sq, &eid);
	/* the load leaves a growth being drained, as a stream that has just
	 * grown has it; settled: gone first, as a quiet exporter's tables are */
	while (settled && kv_state_settle(state, SIZE_MAX))
		;
	struct timespec gap = {gap_us / 1000000, gap_us % 1000000 * 1000};
	double floor_s = 0, state_s = 0;
	kv_batch b;
	for (size_t i = 0; i < N; i++) {
		be64(seq, ++sq);
		wl_stamp(&m[i], eid + 1, (int64_t)sq);
		eid += WL_BATCH;
		f[2] = (mkv_frame){m[i].payload, m[i].len};
		nanosleep(&gap, NULL);
		double t0 = thread_cpu();
		kv_decode(d, f, 3, &b);
		double t1 = thread_cpu();
		nanosleep(&gap, NULL);
		double t2 = thread_cpu();
		kv_stream_ingest(st, f, 3, (int64_t)sq, NULL);
		double t3 = thread_cpu();
		floor_s += t1 - t0;
		state_s += t3 - t2;
	}
	double per = 1e9 / ((double)N * WL_BATCH);
	printf("{\"what\":\"paced in process: decode alone, then decode + state, each after a sleep\","
	       "\"keys\":%llu,\"live_objects\":%zu,\"tenants\":\"%s\",\"settled\":%s,\"gap_us\":%ld,"
	       "\"decode_ns_per_event\":%.0f,\"decode_and_state_ns_per_event\":%.0f,"
	       "\"state_ns_per_event\":%.0f}\n",
	       (unsigned long long)keys, (size_t)atomic_load(&budget.objects), exact ? "exact" : "stale",
	       settled ? "true" : "false", gap_us, floor_s * per, state_s * per, (state_s - floor_s) * per);
	kv_decoder_free(d);
	kv_stream_free(st);
	kv_state_free(state);
	wl_free(m, N);
	return 0;
}

static bool has_arg(int argc, char **argv, int from, const char *word)
{
	for (int i = from; i < argc; i++)
		if (!strcmp(argv[i], word))
			return true;
	return false;
}

int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int bench_groups(const char *pattern)
{
	wl_params wp = {.keys = 1000000, .tenants = 16, .key_bytes = 100, .stored_pct = 60, .seed = 7};
	enum { N = 2048, ROUNDS = 5 };
	char err[256];
	mkv_keygroup_re *re = mkv_keygroup_compile(pattern, err, sizeof(err));
	if (!re) {
		fprintf(stderr, "bench: %s\n", err);
		return 2;
	}
	wl_msg *m = wl_encode_mix(&wp, N);
	double plain[ROUNDS], grouped[ROUNDS];
	size_t live;
	for (int r = 0; r < ROUNDS; r++) {
		plain[r] = ingest_rate(&wp, m, N, NULL, &live);
		grouped[r] = ingest_rate(&wp, m, N, re, &live);
	}
	qsort(plain, ROUNDS, sizeof(double), bench_cmp_double);
	qsort(grouped, ROUNDS, sizeof(double), bench_cmp_double);
	double a = plain[ROUNDS / 2], b = grouped[ROUNDS / 2];
	printf("{\"what\":\"decode + state, in memory, 1M keys, key groups\",\"regex\":\"%s\",\"rounds\":%d,"
	       "\"events_per_s_no_regex\":%.0f,\"events_per_s_regex\":%.0f,\"cost_percent\":%.1f,"
	       "\"ns_per_event_no_regex\":%.0f,\"ns_per_event_regex\":%.0f}\n",
	       pattern, ROUNDS, a, b, (a - b) / a * 100, 1e9 / a, 1e9 / b);
	wl_free(m, N);
	mkv_keygroup_free(re);
	return 0;
}

struct sink_count {
	unsigned char *p;
	size_t n, cap; /* p NULL: only counted */
};

static int sink_count(void *arg, const void *p, size_t n)
{
	struct sink_count *c = arg;
	if (c->p) {
		if (c->n + n > c->cap) {
			c->cap = (c->n + n) * 2;
			if (!(c->p = realloc(c->p, c->cap)))
				return -1;
		}
		memcpy(c->p + c->n, p, n);
	}
	c->n += n;
	return 0;
}

static int sink_pipe(void *arg, const void *p, size_t n)
{
	int fd = *(int *)arg;
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static mkv_store *handover_store(mkv_budget *b, mkv_store_member *m, uint64_t seed)
{
	mkv_budget_init(b, 1000, 100000000);
	m[0] = (mkv_store_member){.label = "127.0.0.1:1", .has_status = true, .dialect = MKV_DIALECT_MEDIA};
	mkv_store_cfg cfg = {.name = "m0",
			     .polled = true,
			     .members = m,
			     .n_members = 1,
			     .residency = true,
			     .budget = b,
			     .seed = seed,
			     .max_tenants = 1000};
	return mkv_store_new(&cfg);
}

/* The state handover of a store of n objects over 16 exact tenants (their
 * births kept): what --state.serve writes and --state.peer reads. */
static int bench_handover(uint64_t n)
{
	mkv_budget ba, bb;
	mkv_store_member ma[1], mb[1];
	mkv_store *a = handover_store(&ba, ma, 1), *b = handover_store(&bb, mb, 2);
	wl_params wp = {.keys = n, .tenants = 16, .key_bytes = 64, .stored_pct = 100, .seed = 3};
	size_t n_load;
	wl_msg *load = wl_encode_load(&wp, &n_load);
	residency = true;
	kv_state *s = a->state;
	char name[32];
	kv_event clr = {.type = MKV_EV_CLEARED, .backend_id = {"mooncake-master-1", 17}};
	for (unsigned t = 0; t < wp.tenants; t++) { /* exact: births kept */
		clr.tenant_id = (mkv_str){name, (uint32_t)snprintf(name, sizeof(name), "tenant-%u", t)};
		kv_state_apply(s, &clr, MKV_DIALECT_MEDIA);
	}
	unsigned char seq[8];
	mkv_frame f[3] = {{"", 0}, {seq, 8}, {NULL, 0}};
	uint64_t eid = 0;
	for (size_t i = 0; i < n_load; i++) {
		be64(seq, i + 1);
		wl_stamp(&load[i], eid + 1, 1795982104000LL + (int64_t)i);
		eid += WL_BATCH;
		f[2] = (mkv_frame){load[i].payload, load[i].len};
		mkv_store_ingest(a, 0, f, 3, 1795982104000LL + (int64_t)i, NULL);
	}
	wl_free(load, n_load);
	uint64_t objects = atomic_load(&ba.objects);
	mkv_store *stores[] = {a};

	/* written in memory, only counted: the encoder's own speed */
	struct sink_count c = {0};
	double t0 = bench_mono();
	mkv_handover_write(stores, 1, 0, sink_count, &c);
	double write_s = bench_mono() - t0;

	/* as the daemon serves it: a fork (the pause), the child writing into
	 * a pipe, the parent reading it */
	int p[2];
	if (pipe(p) != 0)
		return 1;
	malloc_trim(0); /* the workload's buffers went back, as the daemon's do after a burst */
	long rss_kb = 0, huge_kb = 0;
	FILE *st = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	while (st && fgets(line, sizeof(line), st)) {
		sscanf(line, "Rss: %ld kB", &rss_kb);
		sscanf(line, "AnonHugePages: %ld kB", &huge_kb);
	}
	if (st)
		fclose(st);
	t0 = bench_mono();
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		int fd = p[1];
		int rc = mkv_handover_write(stores, 1, 0, sink_pipe, &fd);
		_exit(rc ? 1 : 0);
	}
	double pause_s = bench_mono() - t0;
	close(p[1]);
	struct sink_count got = {.cap = c.n + 1};
	got.p = malloc(got.cap);
	static unsigned char buf[1 << 16];
	ssize_t r;
	while ((r = read(p[0], buf, sizeof(buf))) > 0)
		sink_count(&got, buf, (size_t)r);
	close(p[0]);
	waitpid(pid, NULL, 0);
	double serve_s = bench_mono() - t0;

	/* read in 64 KiB pieces, and taken */
	t0 = bench_mono();
	mkv_store *bs[] = {b};
	mkv_handover *h = mkv_handover_new(bs, 1, 1ull << 40);
	enum mkv_boot_result res = MKV_BOOT_TAKEN;
	for (size_t at = 0; at < got.n && res == MKV_BOOT_TAKEN; at += sizeof(buf))
		res = mkv_handover_feed(h, got.p + at, got.n - at < sizeof(buf) ? got.n - at : sizeof(buf));
	if (res == MKV_BOOT_TAKEN)
		res = mkv_handover_end(h);
	if (res == MKV_BOOT_TAKEN)
		res = mkv_handover_take(h, 0);
	mkv_handover_free(h);
	double read_s = bench_mono() - t0;
	printf("{\"what\":\"state handover\",\"objects\":%llu,\"tenants\":%u,\"bytes\":%zu,"
	       "\"bytes_per_object\":%.2f,\"write_ms\":%.1f,\"fork_pause_ms\":%.2f,\"serve_ms\":%.1f,"
	       "\"read_and_take_ms\":%.1f,\"ns_per_object_write\":%.1f,\"ns_per_object_read\":%.1f,"
	       "\"result\":\"%s\",\"taken_objects\":%zu,\"messages_queued_at_1M_events_per_s\":%.0f,"
	       "\"rss_mib_at_fork\":%.0f,\"huge_pages_mib\":%.0f}\n",
	       (unsigned long long)objects, wp.tenants, c.n, (double)c.n / (double)objects, write_s * 1e3,
	       pause_s * 1e3, serve_s * 1e3, read_s * 1e3, write_s * 1e9 / (double)objects,
	       read_s * 1e9 / (double)objects, mkv_boot_result_name(res), (size_t)atomic_load(&bb.objects),
	       pause_s * 1e6 / WL_BATCH, rss_kb / 1024.0, huge_kb / 1024.0);
	free(got.p);
	mkv_store_free(a);
	mkv_store_free(b);
	return res == MKV_BOOT_TAKEN && got.n == c.n ? 0 : 1;
}

int main(int argc, char **argv)
{
	residency = !(argc >= 3 && !strcmp(argv[2], "off"));
	if (argc >= 2 && !strcmp(argv[1], "decode"))
		return bench_decode();
	if (argc >= 4 && !strcmp(argv[1], "recv"))
		return bench_recv(argv[2], strtoull(argv[3], NULL, 10), argc >= 5 && !strcmp(argv[4], "own"));
	if (argc >= 2 && !strcmp(argv[1], "groups"))
		return bench_groups(argc >= 3 ? argv[2] : "^(?<model>[^/]+)/(?<tp>[^/]+)/");
	if (argc >= 3 && !strcmp(argv[1], "paced"))
		return bench_paced(strtoull(argv[2], NULL, 10), argc >= 4 ? atol(argv[3]) : 200,
				   has_arg(argc, argv, 4, "exact"), has_arg(argc, argv, 4, "settled"));
	if (argc >= 2 && !strcmp(argv[1], "render"))
		return bench_render();
	if (argc >= 2 && !strcmp(argv[1], "handover"))
		return bench_handover(argc >= 3 ? strtoull(argv[2], NULL, 10) : 10000000);
	fprintf(stderr,
		"usage: %s decode [off] | groups [REGEX] | recv ENDPOINT EVENTS [own] | paced KEYS [GAP_US [exact] "
		"[settled]] | render "
		"| "
		"handover [OBJECTS]\n",
		argv[0]);
	return 2;
}
