/* SPDX-License-Identifier: Apache-2.0 */
/* Prints the exposition for a replayed capture, so that tests can hand
 * real output to promtool:
 *   render_dump [--openmetrics|--protobuf] [--exclude REGEX] [--tenant-summary] [--all-series] CAPTURE [CAPTURE...]
 * (one source per capture, the first with a master that reported some
 * drops), in the format and with the families a scrape with those flags
 * would serve (--metrics.exclude, --metrics.tenant-summary, --metrics.all-series; OpenMetrics
 * with every counter that started with the exporter created at
 * DUMP_CREATED; --protobuf: the protobuf exposition's bytes; --lives
 * MS,MS,...: every tenant and key group with those lives ended, in ms).
 *   render_dump --families
 * prints every family of the tables instead, one a line, from its row: its
 * name, type, label names (kv_family_label_names) and help (and whether only
 * --metrics.all-series serves it), tab-separated
 * (what tools/gen/gen_reference.py writes docs/reference.md from). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mooncake_kv/scrape.h>

#include "kv_family.h"
#include "kv_render.h"
#include "support/zmqcap.h"

#define DUMP_CREATED 1795982000.25

static int families_list(void)
{
	mkv_buf labels;
	mkv_buf_init(&labels);
	for (size_t t = 0; t < kv_family_tables_n; t++)
		for (size_t i = 0; i < kv_family_tables[t]->n; i++) {
			const kv_family *f = &kv_family_tables[t]->v[i];
			kv_family_label_names(f, &labels);
			printf("%s\t%s\t%.*s\t%s%s\n", f->name, kv_kind_name(f->kind), (int)labels.len,
			       labels.len ? labels.data : "", f->help,
			       f->flags & KV_FAM_ALL_SERIES ? " Served only with --metrics.all-series." : "");
		}
	bool ok = mkv_buf_ok(&labels);
	mkv_buf_free(&labels);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--families"))
		return families_list();
	bool openmetrics = false, protobuf = false, summary = false, all_series = false;
	const char *exclude = NULL, *lives = NULL;
	int first = 1;
	for (; first < argc && !strncmp(argv[first], "--", 2); first++)
		if (!strcmp(argv[first], "--openmetrics"))
			openmetrics = true;
		else if (!strcmp(argv[first], "--protobuf"))
			protobuf = true;
		else if (!strcmp(argv[first], "--tenant-summary"))
			summary = true;
		else if (!strcmp(argv[first], "--all-series"))
			all_series = true;
		else if (!strcmp(argv[first], "--exclude") && first + 1 < argc)
			exclude = argv[++first];
		else if (!strcmp(argv[first], "--lives") && first + 1 < argc)
			lives = argv[++first];
		else
			break;
	if (first >= argc || !strncmp(argv[first], "--", 2)) {
		fprintf(stderr,
			"usage: %s [--openmetrics|--protobuf] [--exclude REGEX] [--tenant-summary] [--all-series] "
			"[--lives MS,...] CAPTURE...\n",
			argv[0]);
		return 2;
	}
	argv += first - 1;
	argc -= first - 1;
	size_t n = (size_t)argc - 1;
	mkv_budget budget;
	char err[128];
	mkv_keygroup_re *re = mkv_keygroup_compile("^(?<p>[^/]+)/", err, sizeof(err)); /* every family shows */
	mkv_budget_init(&budget, 1000, 1000000);
	kv_stream **st = calloc(n, sizeof(*st));
	kv_source_snap *src = calloc(n, sizeof(*src));
	char(*names)[24] = calloc(n, sizeof(*names));
	for (size_t i = 0; i < n; i++) {
		zmqcap *c = zmqcap_open(argv[i + 1]);
		if (!c || !(st[i] = kv_stream_new(&budget, 1)) || kv_stream_set_keygroups(st[i], re) != MKV_OK) {
			fprintf(stderr, "cannot read %s\n", argv[i + 1]);
			return 1;
		}
		mkv_frame f[ZMQCAP_MAX_FRAMES];
		size_t nf;
		while (zmqcap_next(c, f, &nf) == 1)
			kv_stream_ingest(st[i], f, nf, 1795982104700, NULL);
		zmqcap_close(c);
		snprintf(names[i], sizeof(names[i]), "m%zu", i);
		src[i].name = names[i];
		kv_snapshot_stream(&src[i], st[i]);
		src[i].members[0].connected = true;
	}
	kv_master_status ms = {.enabled = true,
			       .published_batches = 18,
			       .published_events = 32,
			       .dropped_events = 3083,
			       .has_unparsed = true};
	kv_stream_pos pos;
	kv_stream_position(st[0], &pos);
	src[0].members[0].has_master = true;
	src[0].members[0].lists_tenants = KV_LISTS_DEFAULT_ONLY;
	/* highly available masters with quotas, so that those families show */
	static const char quotas[] =
		"{\"success\":true,\"data\":[{\"tenant_id\":\"default\",\"requested_quota_bytes\":1000,"
		"\"effective_quota_bytes\":900,\"charged_bytes\":950,\"admission_closed\":true,"
		"\"over_quota\":true,\"has_explicit_policy\":false}]}";
	src[0].polled = true;
	src[0].members[0].label = "127.0.0.1:9003";
	src[0].members[0].ha = (kv_ha_obs){.answered = true, .serving = true, .state = KV_HA_SERVING};
	kv_leadership_init(&src[0].leadership);
	kv_leadership_judge(&src[0].leadership, &src[0].members[0].ha, 1);
	kv_quotas_parse(&src[0].quotas, quotas, sizeof(quotas) - 1, 10);
	/* a source that reconciles, so that every family shows */
	src[0].recon = (kv_recon_stats){.enabled = true,
					.results = {3, 1, 0, 1},
					.corrections = {120, 7, 2},
					.has_duration = true,
					.last_duration = 0.25,
					.has_success = true,
					.last_success = 1795982100.0,
					.last_keys = 4000};
	/* and that took its state from a peer */
	src[0].boot = (kv_boot_stats){.results = {[MKV_BOOT_UNREACHABLE] = 1, [MKV_BOOT_TAKEN] = 1}, .continued = 1};
	kv_master_record(&src[0].members[0].master, 1795982105.0, 0.003, MKV_POLL_OK, 200, &ms, &pos);
	kv_exporter_snap x = {.info = {.version = "test",
				       .revision = "none",
				       .process = {.ok = true,
						   .cpu_seconds = 0.5,
						   .start_time = 1795982000,
						   .resident_bytes = 1e7,
						   .virtual_bytes = 1e8,
						   .open_fds = 9,
						   .max_fds = 1024},
				       /* and a front door that turned some away */
				       .http = {.ok = true,
						.connections = 3,
						.rejected = {.address_limit = 4},
						.login_failures = {.wrong_password = 2}}},
			      .sources = src,
			      .n_sources = n,
			      .tracked_objects = atomic_load(&budget.objects),
			      .max_objects = 1000000,
			      .max_tenants = 1000};
	for (size_t i = 0; lives && i < n; i++)
		for (size_t t = 0; t < src[i].n_tenants; t++)
			for (const char *p = lives; *p; p += *p == ',') {
				char *end;
				uint64_t ms = strtoull(p, &end, 10);
				p = end;
				kv_life_observe(&src[i].tenants[t].counts.life, ms);
				for (size_t g = 0; g < src[i].tenants[t].n_groups; g++)
					kv_life_observe(&src[i].group_pool[src[i].tenants[t].group_at + g].life, ms);
			}
	mkv_family_filter *families = NULL;
	if (exclude || summary) {
		families = mkv_family_filter_new(exclude, summary, err, sizeof(err));
		if (!families) {
			fprintf(stderr, "--exclude: %s\n", err);
			return 2;
		}
	}
	mkv_expo_opts eo = {.openmetrics = openmetrics,
			    .created = DUMP_CREATED,
			    .families = families,
			    .all_series = all_series,
			    .protobuf = protobuf};
	mkv_buf out;
	mkv_buf_init(&out);
	int rc = kv_render(&out, &x, &eo);
	fwrite(out.data, 1, out.len, stdout);
	mkv_family_filter_free(families);
	mkv_buf_free(&out);
	for (size_t i = 0; i < n; i++) {
		kv_source_snap_release(&src[i]);
		kv_stream_free(st[i]);
	}
	free(st);
	mkv_keygroup_free(re);
	free(src);
	free(names);
	return rc == MKV_OK ? 0 : 1;
}
