/* SPDX-License-Identifier: Apache-2.0 */
/* The ground truth (--truth FILE): what a subscriber that received every
 * message must show, per tenant and per stream; what the master holds; per
 * member what its stream carried; the quotas.  The tests compare the
 * exporter with it, never with the exporter's own output. */
#include <stdio.h>
#include <jansson.h>

#include "sim.h"

static json_t *lives_json(const struct lives *l)
{
	json_t *a = json_array();
	for (size_t i = 0; i < l->n; i++)
		json_array_append_new(a, json_integer((json_int_t)l->ms[i]));
	return a;
}

/* A tenant's (or a group's) lifetimes: each observed one, and how many ended
 * unobserved. */
static void add_lives(json_t *j, const struct lives *l)
{
	json_object_set_new(j, "lifetimes_ms", lives_json(l));
	json_object_set_new(j, "lives_unobserved", json_integer((json_int_t)l->unobserved));
}

static json_t *tenant_json(struct sim *s, unsigned t, const unsigned char *model, const struct tenant_truth *tt)
{
	uint64_t place[3] = {0};
	for (unsigned k = 0; k < s->o.keys; k++) {
		unsigned m = model[(size_t)t * s->o.keys + k];
		if (m)
			place[m == 1 ? 0 : m == 2 ? 1 : 2]++;
	}
	char name[32];
	tenant_name(t, name, sizeof(name));
	json_t *j = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I}", "backend_id", s->o.backend, "tenant_id", name,
			      "objects", (json_int_t)(place[0] + place[1] + place[2]), "cpu",
			      (json_int_t)(place[0] + place[2]), "disk", (json_int_t)(place[1] + place[2]), "cpu_only",
			      (json_int_t)place[0], "disk_only", (json_int_t)place[1], "cpu_and_disk",
			      (json_int_t)place[2]);
	/* per model: what --key.group-regex should make of this tenant */
	json_t *groups = json_object();
	for (unsigned k = 0; k < s->o.keys; k++) {
		unsigned m = model[(size_t)t * s->o.keys + k];
		if (!m)
			continue;
		json_t *g = json_object_get(groups, key_model(s, k));
		if (!g) {
			g = json_pack("{s:I,s:I,s:I}", "objects", (json_int_t)0, "cpu", (json_int_t)0, "disk",
				      (json_int_t)0);
			json_object_set_new(groups, key_model(s, k), g);
		}
		json_object_set_new(g, "objects", json_integer(json_integer_value(json_object_get(g, "objects")) + 1));
		if (m & 1)
			json_object_set_new(g, "cpu", json_integer(json_integer_value(json_object_get(g, "cpu")) + 1));
		if (m & 2)
			json_object_set_new(g, "disk",
					    json_integer(json_integer_value(json_object_get(g, "disk")) + 1));
	}
	if (tt) /* every model that had a life, held objects or not */
		for (unsigned g = 0; g < n_models(s); g++) {
			const struct lives *l = &tt->model_lives[g];
			json_t *gj = json_object_get(groups, key_model_name(s, g));
			if (!gj && !l->n && !l->unobserved)
				continue;
			if (!gj) {
				gj = json_pack("{s:I,s:I,s:I}", "objects", (json_int_t)0, "cpu", (json_int_t)0, "disk",
					       (json_int_t)0);
				json_object_set_new(groups, key_model_name(s, g), gj);
			}
			add_lives(gj, l);
		}
	json_object_set_new(j, "groups", groups);
	if (tt) {
		add_lives(j, &tt->lives);
		/* the live objects whose birth a subscriber holds: the mean age's */
		uint64_t held = 0;
		double sum = 0;
		for (unsigned k = 0; k < s->o.keys; k++) {
			int64_t b = s->wire_birth[(size_t)t * s->o.keys + k];
			if (b >= 0) {
				held++;
				sum += (double)b;
			}
		}
		json_object_set_new(j, "births_held", json_integer((json_int_t)held));
		if (held)
			json_object_set_new(j, "birth_mean_ms", json_real(sum / (double)held));
		json_object_set_new(j, "stored", json_integer((json_int_t)tt->events[STORED]));
		json_object_set_new(j, "removed", json_integer((json_int_t)tt->events[REMOVED]));
		json_object_set_new(j, "cleared", json_integer((json_int_t)tt->events[CLEARED]));
		json_object_set_new(j, "stored_duplicates", json_integer((json_int_t)tt->dup));
		json_object_set_new(j, "removed_unknown", json_integer((json_int_t)tt->unknown));
		json_object_set_new(j, "stale", json_boolean(!tt->exact));
		/* a removal it could not place after its cleared (the op log's) */
		json_object_set_new(j, "removed_after_cleared", json_boolean(tt->removed_after_cleared));
	}
	return j;
}

/* {tenant name: count} of a per-tenant counter, for the tenants where it is
 * not 0 (as the master's per-tenant series appear). */
static json_t *per_tenant(const struct sim *s, const uint64_t *counts)
{
	json_t *j = json_object();
	for (unsigned t = 0; t < s->o.tenants; t++)
		if (counts[t]) {
			char name[32];
			tenant_name(t, name, sizeof(name));
			json_object_set_new(j, name, json_integer((json_int_t)counts[t]));
		}
	return j;
}

void write_truth(struct sim *s, const char *path)
{
	json_t *wire = json_array(), *master = json_array();
	for (unsigned t = 0; t < s->o.tenants; t++) {
		if (s->truth[t].seen)
			json_array_append_new(wire, tenant_json(s, t, s->wire, &s->truth[t]));
		json_array_append_new(master, tenant_json(s, t, s->master, NULL));
	}
	json_t *root = json_pack(
		"{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:{s:b,s:I,s:I,s:I},s:o,s:o}", "messages",
		(json_int_t)s->messages, "events_sent", (json_int_t)s->events_sent, "last_seq", (json_int_t)s->last_seq,
		"gaps", (json_int_t)s->gaps, "missing", (json_int_t)s->missing, "restarts", (json_int_t)s->restarts,
		"garbage_messages", (json_int_t)(s->garbage[0] + s->garbage[1]), "dropped_total",
		(json_int_t)s->dropped_total, "keyless_total", (json_int_t)s->keyless_total, "seed",
		(json_int_t)s->o.seed, "status", "enabled", 1, "published_batches",
		(json_int_t)atomic_load(&s->published_batches), "published_events",
		(json_int_t)atomic_load(&s->published_events), "dropped_events",
		(json_int_t)atomic_load(&s->dropped_events), "tenants", wire, "master_tenants", master);
	status_skipped(s, json_object_get(root, "status"), atomic_load(&s->skipped));
	/* "tenants" is what an ideal subscriber of this dialect knows from the
	 * wire; "master_tenants" what the master holds */
	json_object_set_new(root, "dialect", json_string(s->o.dialect == DIALECT_OBJECT ? "object" : "media"));
	json_object_set_new(root, "mooncake", json_string(mooncake_names[s->o.mooncake]));
	/* the model context every event carried (null: nil) */
	struct model_ctx c = model_context(s);
	json_t *ctx = json_object();
	json_object_set_new(ctx, "model_name", c.model_name ? json_string(c.model_name) : json_null());
	json_object_set_new(ctx, "lora_name", c.lora_name ? json_string(c.lora_name) : json_null());
	json_object_set_new(ctx, "additional_salt", c.additional_salt ? json_string(c.additional_salt) : json_null());
	json_object_set_new(ctx, "block_size", c.block_size ? json_integer(c.block_size) : json_null());
	json_object_set_new(ctx, "dp_rank", c.dp_nil ? json_null() : json_integer(c.dp_rank));
	json_object_set_new(root, "model_context", ctx);
	json_object_set_new(root, "oplog", json_boolean(s->o.oplog));
	/* what the operations of later.c did */
	/* --oplog on: entries still holding REMOVED replicas, and those the
	 * durable callbacks erased (neither published) */
	json_object_set_new(root, "held_entries", json_integer((json_int_t)s->n_late));
	json_object_set_new(root, "durable_erased", json_integer((json_int_t)s->durable_erased));
	json_object_set_new(root, "reputs", json_integer((json_int_t)s->reputs));
	json_object_set_new(root, "restored_cells", json_integer((json_int_t)s->restored));
	json_object_set_new(root, "cleanup_removals", json_integer((json_int_t)s->cleanup_removals));
	json_object_set_new(root, "revoked", json_integer((json_int_t)s->revoked));
	json_object_set_new(root, "discarded", json_integer((json_int_t)s->discarded));
	json_object_set_new(root, "silent_removals", json_integer((json_int_t)s->silent_removals));
	json_object_set_new(root, "timestamps_backwards", json_integer((json_int_t)s->ts_backwards));
	/* the publisher's clock is the host's plus this (phase clock) */
	json_object_set_new(root, "clock_offset_ms", json_integer((json_int_t)s->clock_offset_ms));
	/* what a subscriber of one member that forgets all when its master stands
	 * by shows: the wire since the last promotion */
	json_t *since = json_array();
	for (unsigned t = 0; t < s->o.tenants; t++)
		if (s->truth[t].seen)
			json_array_append_new(since, tenant_json(s, t, s->wire_since, NULL));
	json_object_set_new(root, "tenants_since_promotion", since);
	json_t *members = json_array();
	for (unsigned i = 0; i < s->n_members; i++) {
		const struct member *m = &s->members[i];
		json_array_append_new(members,
				      json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:b}", "status",
						s->o.status_addrs[i] ? s->o.status_addrs[i] : "", "messages",
						(json_int_t)m->messages, "events", (json_int_t)m->events, "last_seq",
						(json_int_t)m->last_seq, "restarts",
						(json_int_t)(m->publishers ? m->publishers - 1 : 0), "standby_events",
						(json_int_t)m->standby_events, "serving", atomic_load(&m->serving)));
	}
	json_object_set_new(root, "members", members);
	json_object_set_new(root, "leader", json_integer(s->publishing));
	json_object_set_new(root, "view_version", json_integer((json_int_t)atomic_load(&s->view)));
	/* every promotion moved the view: a failover */
	json_object_set_new(root, "failovers", json_integer((json_int_t)atomic_load(&s->view) - 1));
	json_object_set_new(root, "split_brains", json_integer((json_int_t)s->split_brains));
	if (s->o.quotas) /* as the leader answers /api/v1/tenant_quotas */
		json_object_set_new(root, "quotas", quotas_json(s));
	json_object_set_new(root, "quota_rejects", per_tenant(s, s->quota_rejects));
	/* mooncake_tenant_evict_bytes_total, where it rose */
	json_object_set_new(root, "evicted_bytes", per_tenant(s, s->evicted_bytes));
	/* as the master's /metrics counts them: the foreign keys too */
	json_object_set_new(root, "master_keys",
			    json_integer((json_int_t)(atomic_load(&s->master_keys) + s->o.foreign)));
	json_object_set_new(root, "tenant_listings", json_integer((json_int_t)atomic_load(&s->tenant_listings)));
	json_object_set_new(root, "lost_messages", json_integer((json_int_t)s->lost_messages));
	json_object_set_new(root, "lost_events", json_integer((json_int_t)s->lost_events));
	json_object_set_new(root, "spec_extras", json_boolean(s->o.spec_extras));
	json_t *dec = json_object();
	for (int r = 0; r < 2; r++)
		json_object_set_new(dec, garbage_reasons[r], json_integer((json_int_t)s->garbage[r]));
	json_object_set_new(dec, "unknown_event_type", json_integer((json_int_t)s->poisoned));
	json_object_set_new(root, "decode_errors", dec);
	/* whole or not at all: a reader may be waiting for the file */
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (json_dump_file(root, tmp, JSON_INDENT(1) | JSON_SORT_KEYS) != 0 || rename(tmp, path) != 0)
		fprintf(stderr, "mooncake-kv-sim: cannot write %s\n", path);
	json_decref(root);
}
