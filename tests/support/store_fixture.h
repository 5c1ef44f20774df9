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
	mkv_budget budget;
	mkv_store_member members[2];
	mkv_store *s;
	char body[512];
} fixture;

static inline mkv_store *make(fixture *f, size_t n, bool reconcile)
{
	mkv_budget_init(&f->budget, 100, 100000);
	for (size_t i = 0; i < n; i++)
		f->members[i] = (mkv_store_member){
			.label = i ? "127.0.0.1:2" : "127.0.0.1:1", .has_status = true, .dialect = -1};
	mkv_store_cfg cfg = {.name = "m",
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
	return f->s = mkv_store_new(&cfg);
}

/* One message of n stored events of a tenant for keys k<first>..k<first+n-1> on cpu. */
static inline int put_in(mkv_store *s, size_t member, uint64_t seq, const char *tenant, unsigned first, unsigned n,
			 mkv_ingest_report *rep)
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
	int rc = mkv_store_ingest(s, member, m.frames, 3, (int64_t)(T0 * 1000), rep);
	msg_destroy(&m);
	return rc;
}

static inline int put(mkv_store *s, size_t member, uint64_t seq, unsigned first, unsigned n, mkv_ingest_report *rep)
{
	return put_in(s, member, seq, "default", first, n, rep);
}

static inline mkv_answer ok(const char *body)
{
	return (mkv_answer){.err = MKV_POLL_OK, .http = 200, .body = body, .len = strlen(body)};
}

/* One poll of a member whose publisher sent `batches` messages; ha: its
 * /ha_status (NULL: it has none, 404), with the leader view it knows. */
static inline void poll_view(fixture *f, size_t member, unsigned batches, const char *ha, unsigned view,
			     mkv_poll_news *news)
{
	snprintf(f->body, sizeof(f->body), STATUS_MAIN, batches, batches);
	char leader[64];
	snprintf(leader, sizeof(leader), "{\"present\":true,\"view_version\":%u}", view);
	mkv_poll_answers a = {.t0 = T0, .t1 = T0 + 0.01, .interval = 5, .status = ok(f->body)};
	a.ha = ha ? ok(ha) : (mkv_answer){.err = MKV_POLL_HTTP_STATUS, .http = 404};
	a.leader = ha ? ok(leader) : (mkv_answer){.err = MKV_POLL_CONNECT};
	mkv_store_poll_begin(f->s, member);
	mkv_store_poll_answers(f->s, member, &a, news);
}

static inline void poll(fixture *f, size_t member, unsigned batches, const char *ha, mkv_poll_news *news)
{
	poll_view(f, member, batches, ha, 3, news);
}

/* A member's /metrics read: its key count (and more lines, NULL: none).
 * Returns what the store made of it. */
static inline mkv_read_news keys_read(mkv_store *s, size_t member, unsigned keys, const char *more)
{
	char body[512];
	snprintf(body, sizeof(body), "master_key_count %u\n%s", keys, more ? more : "");
	mkv_store_metrics_reset(s, member);
	assert_int_equal(mkv_store_metrics_feed(s, member, body, strlen(body)), MKV_OK);
	mkv_read_news rn;
	mkv_store_metrics_end(s, member, MKV_POLL_OK, &rn);
	return rn;
}

/* The scrape's text (free it with mkv_buf_free: the core allocated it). */
static inline mkv_buf render(mkv_store *s)
{
	mkv_scrape *sc = mkv_scrape_new(1);
	assert_non_null(sc);
	assert_int_equal(mkv_scrape_store(sc, 0, s, NULL), MKV_OK);
	mkv_buf out;
	mkv_buf_init(&out);
	mkv_exporter_info x = {.version = "t", .revision = "t"};
	assert_int_equal(mkv_scrape_render(sc, &x, &out), MKV_OK);
	mkv_scrape_free(sc);
	mkv_buf_addc(&out, '\0');
	return out;
}

#endif
