/* SPDX-License-Identifier: Apache-2.0 */
/* A store for the tests that drive the core through its public interface
 * (test_store.c, test_reconcile_run.c, ...): one or two members polled as
 * upstream main answers, stored events of a tenant, one poll, and the
 * scrape's text.  Include after <cmocka.h>. */
#ifndef STORE_FIXTURE_H
#define STORE_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include <mooncake_kv/scrape.h>
#include <mooncake_kv/store.h>

#include "msgbuild.h"

#define B  "mooncake-master-1"
#define T0 1795982104.0

/* upstream main's status answer: skipped_unparsed_keys says the object dialect */
static const char STATUS_MAIN[] = "{\"enabled\":true,\"published_batches\":%u,\"published_events\":%u,"
				  "\"dropped_events\":0,\"skipped_unparsed_keys\":0}";

typedef struct fixture {
	kv_budget budget;
	kv_store_member members[2];
	kv_store *s;
	char body[512];
} fixture;

static inline kv_store *make(fixture *f, size_t n, bool reconcile)
{
	kv_budget_init(&f->budget, 100, 100000);
	for (size_t i = 0; i < n; i++)
		f->members[i] = (kv_store_member){
			.label = i ? "127.0.0.1:2" : "127.0.0.1:1", .has_status = true, .dialect = -1};
	kv_store_cfg cfg = {.name = "m",
			    .ha = n > 1,
			    .polled = true,
			    .reconcile = reconcile,
			    .reconcile_interval = 60,
			    .members = f->members,
			    .n_members = n,
			    .residency = true,
			    .budget = &f->budget,
			    .seed = 7,
			    .max_tenants = 100};
	return f->s = kv_store_new(&cfg);
}

/* One message of n stored events of a tenant for keys k<first>..k<first+n-1> on cpu. */
static inline int put_in(kv_store *s, size_t member, uint64_t seq, const char *tenant, unsigned first, unsigned n,
			 kv_ingest_report *rep)
{
	ev_spec e[8];
	char keys[8][16];
	for (unsigned i = 0; i < n; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%u", first + i);
		ev_init(&e[i], EV_UPSTREAM, "stored", seq * 8 + i, B, tenant, "cpu", keys[i]);
	}
	msg m;
	msg_init(&m);
	msg_build(&m, seq, (int64_t)(T0 * 1000), e, n);
	int rc = kv_store_ingest(s, member, m.frames, 3, (int64_t)(T0 * 1000), rep);
	msg_destroy(&m);
	return rc;
}

static inline int put(kv_store *s, size_t member, uint64_t seq, unsigned first, unsigned n, kv_ingest_report *rep)
{
	return put_in(s, member, seq, "default", first, n, rep);
}

static inline kv_answer ok(const char *body)
{
	return (kv_answer){.err = KV_POLL_OK, .http = 200, .body = body, .len = strlen(body)};
}

/* One poll of a member whose publisher sent `batches` messages; ha: its
 * /ha_status (NULL: it has none, 404), with the leader view it knows. */
static inline void poll_view(fixture *f, size_t member, unsigned batches, const char *ha, unsigned view,
			     kv_poll_news *news)
{
	snprintf(f->body, sizeof(f->body), STATUS_MAIN, batches, batches);
	char leader[64];
	snprintf(leader, sizeof(leader), "{\"present\":true,\"view_version\":%u}", view);
	kv_poll_answers a = {.t0 = T0, .t1 = T0 + 0.01, .interval = 5, .status = ok(f->body)};
	a.ha = ha ? ok(ha) : (kv_answer){.err = KV_POLL_HTTP_STATUS, .http = 404};
	a.leader = ha ? ok(leader) : (kv_answer){.err = KV_POLL_CONNECT};
	kv_store_poll_begin(f->s, member);
	kv_store_poll_answers(f->s, member, &a, news);
}

static inline void poll(fixture *f, size_t member, unsigned batches, const char *ha, kv_poll_news *news)
{
	poll_view(f, member, batches, ha, 3, news);
}

/* A member's /metrics read: its key count (and more lines, NULL: none).
 * Returns what the store made of it. */
static inline kv_read_news keys_read(kv_store *s, size_t member, unsigned keys, const char *more)
{
	char body[512];
	snprintf(body, sizeof(body), "master_key_count %u\n%s", keys, more ? more : "");
	kv_store_metrics_reset(s, member);
	assert_int_equal(kv_store_metrics_feed(s, member, body, strlen(body)), KV_OK);
	kv_read_news rn;
	kv_store_metrics_end(s, member, KV_POLL_OK, &rn);
	return rn;
}

/* The scrape's text (free it with kv_buf_free: the core allocated it). */
static inline kv_buf render(kv_store *s)
{
	kv_scrape *sc = kv_scrape_new(1);
	assert_non_null(sc);
	assert_int_equal(kv_scrape_store(sc, 0, s, NULL), KV_OK);
	kv_buf out;
	kv_buf_init(&out);
	kv_exporter_info x = {.version = "t", .revision = "t"};
	assert_int_equal(kv_scrape_render(sc, &x, &out), KV_OK);
	kv_scrape_free(sc);
	kv_buf_addc(&out, '\0');
	return out;
}

#endif
