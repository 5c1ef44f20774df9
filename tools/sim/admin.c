/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated master's admin HTTP endpoints, in upstream's formats
 * (mooncake-store/src/master_admin_service.cpp,
 * docs/source/api-reference/http/http-service.md):
 *   GET /kv_events/status   the publisher's counters (503 on a standby)
 *   GET /get_all_keys       keys of tenant default, one a line, streamed
 *   GET /batch_query_keys?keys=k1,k2   replicas of tenant default's keys
 *   GET /metrics            master_key_count: keys of all tenants
 *   GET /api/v1/tenant_quotas  the tenants' quotas (409 without --quotas on)
 *   GET /api/v1/tenant_keys?tenant_id=T, /api/v1/tenant_batch_query_keys?tenant_id=T&keys=...
 *                           as tools/upstream/tenant-listing.patch, with
 *                           --lists-tenants yes (or ignores: default's); 404 without
 * A member that does not serve answers 503 on every one of them.  And, on
 * every member (include/ha/ha_types.h):
 *   GET /ha_status          serving or standby (text/plain)
 *   GET /role               leader or standby (text/plain)
 *   GET /leader             {"present":true,"leader_address":...,"view_version":N} */
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>

#include "sim.h"

#define LIST_BLOCK (64 * 1024)

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *type, char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", type);
	enum MHD_Result rc = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned code, json_t *j)
{
	char *body = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return reply(c, code, "application/json; charset=utf-8", body, strlen(body));
}

static enum MHD_Result reply_text(struct MHD_Connection *c, const char *text)
{
	return reply(c, MHD_HTTP_OK, "text/plain; charset=utf-8", strdup(text), strlen(text));
}

static enum MHD_Result status(struct member *m, struct MHD_Connection *c)
{
	struct sim *s = m->s;
	bool own = m->index == atomic_load(&s->publishing); /* serving in a split brain: no publisher of its own */
	json_t *j = json_pack("{s:b,s:I,s:I,s:I}", "enabled", own, "published_batches",
			      (json_int_t)(own ? atomic_load(&s->published_batches) : 0), "published_events",
			      (json_int_t)(own ? atomic_load(&s->published_events) : 0), "dropped_events",
			      (json_int_t)(own ? atomic_load(&s->dropped_events) : 0));
	status_skipped(s, j, own ? atomic_load(&s->skipped) : 0);
	return reply_json(c, MHD_HTTP_OK, j);
}

/* The listing streams in blocks: the next key index is its cursor. */
struct listing {
	struct sim *s;
	unsigned tenant; /* its index; s->o.tenants: none (an unknown tenant holds nothing) */
	unsigned next;
};

static ssize_t list_block(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct listing *l = cls;
	struct sim *s = l->s;
	size_t n = 0;
	pthread_mutex_lock(&s->model_lock);
	for (; l->tenant < s->o.tenants && l->next < s->o.keys && max - n > 64; l->next++) {
		if (!*cell(s, s->master, l->tenant, l->next))
			continue;
		n += (size_t)key_name(s, l->next, buf + n, max - n);
		buf[n++] = '\n';
	}
	pthread_mutex_unlock(&s->model_lock);
	return n ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
}

/* Streams tenant t's keys; named: the tenant the answer names, or NULL. */
static enum MHD_Result list_keys(struct sim *s, struct MHD_Connection *c, unsigned t, const char *named)
{
	struct listing *l = calloc(1, sizeof(*l));
	if (!l)
		return MHD_NO;
	l->s = s;
	l->tenant = t;
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, LIST_BLOCK, list_block, l, free);
	MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
	if (named)
		MHD_add_response_header(r, "X-Mooncake-Tenant-Id", named);
	enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result get_all_keys(struct member *m, struct MHD_Connection *c)
{
	return list_keys(m->s, c, 0, NULL); /* tenant default's, whatever the query says */
}

/* The tenant of ?tenant_id= as the simulator names them ("default",
 * "tenant-N"): its index, s->o.tenants for one it does not hold, -1 when
 * the parameter is missing or invalid (upstream's ParseAdminTenantId). */
static long tenant_arg(const struct sim *s, struct MHD_Connection *c)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "tenant_id");
	if (!v || !*v || *v == '_')
		return -1;
	for (unsigned t = 0; t < s->o.tenants; t++) {
		char name[32];
		tenant_name(t, name, sizeof(name));
		if (!strcmp(name, v))
			return t;
	}
	return s->o.tenants;
}

static enum MHD_Result bad_tenant(struct MHD_Connection *c)
{
	return reply_json(c, MHD_HTTP_BAD_REQUEST,
			  json_pack("{s:b,s:i,s:s}", "success", 0, "error_code", -600, "error_message",
				    "Missing or invalid tenant_id"));
}

static enum MHD_Result tenant_keys(struct member *m, struct MHD_Connection *c)
{
	struct sim *s = m->s;
	atomic_fetch_add(&s->tenant_listings, 1);
	if (s->o.lists_tenants == LISTS_IGNORES)
		return list_keys(s, c, 0, NULL);
	long t = tenant_arg(s, c);
	if (t < 0)
		return bad_tenant(c);
	return list_keys(s, c, (unsigned)t, MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "tenant_id"));
}

/* 0x9e3779b97f4a7c15 times this is 1 modulo 2^64: the key's hex part
 * gives its index back. */
static uint64_t golden_inverse(void)
{
	uint64_t g = 0x9e3779b97f4a7c15ull, x = g; /* Newton: x = x (2 - g x) */
	for (int i = 0; i < 6; i++)
		x *= 2 - g * x;
	return x;
}

/* The key's index, or -1 when the simulator has no such key. */
static long key_index(const struct sim *s, const char *key)
{
	size_t n = strlen(key);
	if (n < 16)
		return -1;
	char *end;
	uint64_t h = strtoull(key + n - 16, &end, 16);
	uint64_t k = h * golden_inverse();
	char want[128];
	if (*end || k >= s->o.keys)
		return -1;
	key_name(s, (unsigned)k, want, sizeof(want));
	return strcmp(want, key) ? -1 : (long)k;
}

static json_t *replicas(unsigned n)
{
	json_t *a = json_array();
	for (unsigned i = 0; i < n; i++)
		json_array_append_new(a,
				      json_pack("{s:s,s:I}", "transport_endpoint_", "127.0.0.1:12345", "size_", 4096));
	return a;
}

/* Replicas of tenant t's keys; named: the tenant the answer names, or NULL. */
static enum MHD_Result query_keys(struct sim *s, struct MHD_Connection *c, unsigned t, const char *named)
{
	/* libmicrohttpd has URL-decoded the argument */
	const char *arg = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "keys");
	char *keys = strdup(arg ? arg : ""), *save = NULL;
	json_t *data = json_object();
	for (char *k = strtok_r(keys, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
		long i = t < s->o.tenants ? key_index(s, k) : -1;
		pthread_mutex_lock(&s->model_lock);
		unsigned m = i >= 0 ? *cell(s, s->master, t, (unsigned)i) : 0;
		pthread_mutex_unlock(&s->model_lock);
		/* every field there, null where upstream's std::optional is empty
		 * (yalantinglibs writes it so: tests/fixtures/upstream/tenant-listing) */
		static const char *const disk[] = {"disk_values", "local_disk_values", "nof_values"};
		json_t *e = json_pack("{s:b,s:n,s:n,s:n,s:n,s:n}", "ok", m != 0, "error", "values", disk[0], disk[1],
				      disk[2]);
		if (!m) {
			json_object_set_new(e, "error", json_string("OBJECT_NOT_FOUND"));
		} else {
			/* memory replicas always as "values"; disk ones under one of the
			 * three names upstream uses, by key */
			json_object_set_new(e, "values", replicas(m & 1));
			if (m & 2)
				json_object_set_new(e, disk[i % 3], replicas(1));
		}
		json_object_set_new(data, k, e);
	}
	free(keys);
	json_t *j = json_pack("{s:b,s:o}", "success", 1, "data", data);
	if (named)
		json_object_set_new(j, "tenant_id", json_string(named));
	char *body = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json; charset=utf-8");
	if (named)
		MHD_add_response_header(r, "X-Mooncake-Tenant-Id", named);
	enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result batch_query_keys(struct member *m, struct MHD_Connection *c)
{
	return query_keys(m->s, c, 0, NULL);
}

static enum MHD_Result tenant_batch_query_keys(struct member *m, struct MHD_Connection *c)
{
	struct sim *s = m->s;
	if (s->o.lists_tenants == LISTS_IGNORES)
		return query_keys(s, c, 0, NULL);
	long t = tenant_arg(s, c);
	if (t < 0)
		return bad_tenant(c);
	return query_keys(s, c, (unsigned)t, MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "tenant_id"));
}

static enum MHD_Result metrics(struct member *m, struct MHD_Connection *c)
{
	size_t n;
	char *body = metrics_text(m->s, &n);
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4", body, n);
}

static enum MHD_Result tenant_quotas(struct member *m, struct MHD_Connection *c)
{
	if (!m->s->o.quotas)
		return reply_json(c, MHD_HTTP_CONFLICT,
				  json_pack("{s:b,s:i,s:s}", "success", 0, "error_code", -1, "error_message",
					    "tenant quotas are not enabled"));
	return reply_json(c, MHD_HTTP_OK, json_pack("{s:b,s:o}", "success", 1, "data", quotas_json(m->s)));
}

static enum MHD_Result ha_status(struct member *m, struct MHD_Connection *c)
{
	return reply_text(c, atomic_load(&m->serving) ? "serving" : "standby");
}

static enum MHD_Result role(struct member *m, struct MHD_Connection *c)
{
	return reply_text(c, atomic_load(&m->serving) ? "leader" : "standby");
}

static enum MHD_Result leader(struct member *m, struct MHD_Connection *c)
{
	struct sim *s = m->s;
	const char *addr = s->o.status_addrs[atomic_load(&s->publishing)];
	return reply_json(c, MHD_HTTP_OK,
			  json_pack("{s:b,s:s,s:I}", "present", 1, "leader_address", addr ? addr : "", "view_version",
				    (json_int_t)atomic_load(&s->view)));
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			       const char *version, const char *upload, size_t *upload_size, void **ctx)
{
	(void)method, (void)version, (void)upload, (void)upload_size, (void)ctx;
	struct member *m = cls;
	static const struct {
		const char *path;
		enum MHD_Result (*fn)(struct member *, struct MHD_Connection *);
		bool service;       /* 503 unless the member serves */
		bool lists_tenants; /* 404 unless --lists-tenants yes or ignores */
	} routes[] = {{"/kv_events/status", status, true, false},
		      {"/api/v1/tenant_keys", tenant_keys, true, true},
		      {"/api/v1/tenant_batch_query_keys", tenant_batch_query_keys, true, true},
		      {"/get_all_keys", get_all_keys, true, false},
		      {"/batch_query_keys", batch_query_keys, true, false},
		      {"/metrics", metrics, true, false},
		      {"/api/v1/tenant_quotas", tenant_quotas, true, false},
		      {"/ha_status", ha_status, false, false},
		      {"/role", role, false, false},
		      {"/leader", leader, false, false}};
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (strcmp(url, routes[i].path) || (routes[i].lists_tenants && m->s->o.lists_tenants == LISTS_NO))
			continue;
		if (routes[i].service && !atomic_load(&m->serving))
			return reply_json(c, MHD_HTTP_SERVICE_UNAVAILABLE,
					  json_pack("{s:b,s:i,s:s}", "success", 0, "error_code", -1011, "error_message",
						    "service plane is not active"));
		return routes[i].fn(m, c);
	}
	return reply(c, MHD_HTTP_NOT_FOUND, "text/plain", strdup("not found\n"), 10);
}

struct MHD_Daemon *admin_start(struct member *m, const char *addr)
{
	const char *colon = strrchr(addr, ':');
	if (!colon)
		die("--status must be HOST:PORT");
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
	char host[64];
	snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
	if (inet_pton(AF_INET, host[0] ? host : "127.0.0.1", &sa.sin_addr) != 1)
		die("--status host must be an IPv4 address");
	struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, handler, m,
						MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_END);
	if (!d)
		die("cannot listen on %s", addr);
	return d;
}
