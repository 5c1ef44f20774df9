/* SPDX-License-Identifier: Apache-2.0 */
/* --state.peer (kv_bootstrap.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mooncake_kv/handover.h>

#include "kv_bootstrap.h"
#include "kv_clock.h"
#include "kv_config.h"
#include "kv_fetch.h"
#include "kv_log.h"
#include "kv_source.h"

/* The longest wait for the subscriptions before asking a peer: past it the
 * peer is asked all the same (a member that connects later cannot prove
 * continuity, and says so). */
#define CONNECT_WAIT_S 5.0

struct transfer {
	kvd_fetch *f;
	mkv_handover *h;
	enum mkv_boot_result result; /* the reader's, while it reads */
	bool http_bad;
};

static bool on_bytes(const void *p, size_t n, void *arg)
{
	struct transfer *t = arg;
	long http = 0;
	curl_easy_getinfo(t->f->h, CURLINFO_RESPONSE_CODE, &http);
	if (http != 200) {
		t->http_bad = true;
		return false;
	}
	t->result = mkv_handover_feed(t->h, p, n);
	return t->result == MKV_BOOT_TAKEN;
}

/* URL/state, unless the URL names it already. */
static char *state_url(const char *base)
{
	size_t n = strlen(base);
	while (n && base[n - 1] == '/')
		n--;
	bool named = n >= 6 && !strncmp(base + n - 6, "/state", 6);
	char *url = malloc(n + 7);
	if (url)
		snprintf(url, n + 7, "%.*s%s", (int)n, base, named ? "" : "/state");
	return url;
}

/* The URL as logged: without the credentials it may hold
 * (https://user:password@host/...). */
static void redacted(const char *url, char *out, size_t len)
{
	const char *host = strstr(url, "://");
	host = host ? host + 3 : url;
	const char *at = strchr(host, '@'), *slash = strchr(host, '/');
	if (at && (!slash || at < slash))
		snprintf(out, len, "%.*s***@%s", (int)(host - url), url, at + 1);
	else
		snprintf(out, len, "%s", url);
}

/* One peer: its stream read for every store.  Returns its result; *h holds
 * the reader when the stream was whole. */
static enum mkv_boot_result ask(const char *peer, mkv_store **stores, size_t n, const kvd_config *cfg,
				mkv_handover **out)
{
	*out = NULL;
	kvd_fetch f;
	mkv_handover *h = mkv_handover_new(stores, n, cfg->state_peer_max_bytes);
	char *url = state_url(peer);
	if (!h || !url || kvd_fetch_init(&f, cfg->state_peer_timeout, 0) != MKV_OK) {
		mkv_handover_free(h);
		free(url);
		return MKV_BOOT_OUT_OF_MEMORY;
	}
	struct transfer t = {.f = &f, .h = h, .result = MKV_BOOT_TAKEN};
	f.sink = on_bytes;
	f.sink_ctx = &t;
	long http = 0;
	enum mkv_poll_error err = kvd_fetch_get(&f, url, &http);
	enum mkv_boot_result r;
	if (t.http_bad || (err == MKV_POLL_HTTP_STATUS))
		r = MKV_BOOT_HTTP_STATUS;
	else if (t.result != MKV_BOOT_TAKEN) /* the reader refused it */
		r = t.result;
	else if (err == MKV_POLL_TIMEOUT)
		r = MKV_BOOT_TIMEOUT;
	else if (err != MKV_POLL_OK)
		r = MKV_BOOT_UNREACHABLE;
	else
		r = mkv_handover_end(h);
	kvd_fetch_free(&f);
	free(url);
	if (r == MKV_BOOT_TAKEN)
		*out = h;
	else
		mkv_handover_free(h);
	return r;
}

void kvd_bootstrap_run(kvd_source *sources, size_t n, const kvd_config *cfg)
{
	if (!cfg->n_state_peers || !n)
		return;
	double t0 = kvd_mono();
	for (size_t i = 0; i < n; i++)
		kvd_source_await_connected(&sources[i], t0 + CONNECT_WAIT_S);
	mkv_store **stores = calloc(n, sizeof(*stores));
	bool *done = calloc(n, sizeof(*done));
	if (!stores || !done) {
		free(stores);
		free(done);
		return;
	}
	for (size_t i = 0; i < n; i++)
		stores[i] = sources[i].store;
	/* peer by peer, until every source has its state: a peer may watch some only */
	size_t left = n;
	for (size_t p = 0; p < cfg->n_state_peers && left; p++) {
		char peer[512];
		redacted(cfg->state_peers[p], peer, sizeof(peer));
		mkv_handover *h;
		double start = kvd_mono();
		enum mkv_boot_result r = ask(cfg->state_peers[p], stores, n, cfg, &h);
		char secs[32];
		snprintf(secs, sizeof(secs), "%.3f", kvd_mono() - start);
		if (r != MKV_BOOT_TAKEN) {
			for (size_t i = 0; i < n; i++) {
				if (done[i])
					continue;
				pthread_mutex_lock(&sources[i].lock);
				mkv_store_boot_note(stores[i], r);
				pthread_mutex_unlock(&sources[i].lock);
			}
			kvd_log(KVD_LOG_WARN, "peer's state refused", "peer", peer, "result", mkv_boot_result_name(r),
				"seconds", secs, NULL);
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			if (done[i])
				continue;
			pthread_mutex_lock(&sources[i].lock);
			enum mkv_boot_result took = mkv_handover_take(h, i);
			pthread_mutex_unlock(&sources[i].lock);
			if (took == MKV_BOOT_TAKEN) {
				done[i] = true;
				left--;
			}
			kvd_log(took == MKV_BOOT_TAKEN ? KVD_LOG_INFO : KVD_LOG_WARN,
				took == MKV_BOOT_TAKEN ? "state taken from a peer: exact where its stream continues"
						       : "peer's state not taken for this source",
				"source", sources[i].cfg->name, "peer", peer, "result", mkv_boot_result_name(took),
				"seconds", secs, NULL);
		}
		mkv_handover_free(h);
	}
	free(done);
	free(stores);
}
