/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP server's front door: connections open, those it refused or cut
 * off and why, failed logins and why.  Every reason is written from the
 * start, at 0, so that a rate over it needs no absent series. */
#include "kv_family.h"

static bool served(const kv_exporter_snap *x)
{
	return x->info.http.ok;
}

static void http_connections(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->x->info.http.connections);
}

static void http_connections_rejected_total(kv_emit *e, const kv_at *a)
{
	const mkv_http_rejects *r = &a->x->info.http.rejected;
	kv_sample_u64(e, (kv_label){"reason", "limit"}, r->limit);
	kv_sample_u64(e, (kv_label){"reason", "address_limit"}, r->address_limit);
	kv_sample_u64(e, (kv_label){"reason", "header_timeout"}, r->header_timeout);
	kv_sample_u64(e, (kv_label){"reason", "request_timeout"}, r->request_timeout);
	kv_sample_u64(e, (kv_label){"reason", "malformed"}, r->malformed);
}

static void http_login_failures_total(kv_emit *e, const kv_at *a)
{
	const mkv_login_failures *f = &a->x->info.http.login_failures;
	kv_sample_u64(e, (kv_label){"reason", "missing"}, f->missing);
	kv_sample_u64(e, (kv_label){"reason", "malformed"}, f->malformed);
	kv_sample_u64(e, (kv_label){"reason", "unknown_user"}, f->unknown_user);
	kv_sample_u64(e, (kv_label){"reason", "wrong_password"}, f->wrong_password);
	kv_sample_u64(e, (kv_label){"reason", "throttled"}, f->throttled);
}

static void http_password_checks_total(kv_emit *e, const kv_at *a)
{
	kv_sample_u64(e, KV_NO_LABEL, a->x->info.http.password_checks);
}

static const kv_family families[] = {
	{.name = "mooncake_kv_http_connections",
	 .kind = KV_GAUGE,
	 .help = "HTTP connections open now.",
	 .scope = KV_SCOPE_EXPORTER,
	 .shown = served,
	 .samples = http_connections},
	{.name = "mooncake_kv_http_connections_rejected_total",
	 .kind = KV_COUNTER,
	 .help = "HTTP connections refused or closed by the exporter, by reason: limit, address_limit (over "
		 "--web.max-connections or --web.max-connections-per-address), header_timeout, request_timeout "
		 "(the request did not arrive in time), malformed (answered 400 or 501).",
	 .scope = KV_SCOPE_EXPORTER,
	 .labels = "reason",
	 .shown = served,
	 .samples = http_connections_rejected_total},
	{.name = "mooncake_kv_http_login_failures_total",
	 .kind = KV_COUNTER,
	 .help = "Requests refused by basic auth, by reason: missing, malformed, unknown_user, wrong_password, "
		 "throttled (refused unchecked: the peer failed too often lately, or too many checks were running); "
		 "0 without --web.config.file users.",
	 .scope = KV_SCOPE_EXPORTER,
	 .labels = "reason",
	 .shown = served,
	 .samples = http_login_failures_total},
	{.name = "mooncake_kv_http_password_checks_total",
	 .kind = KV_COUNTER,
	 .help = "Passwords checked against their bcrypt hash (each costs the hash's cost in CPU); a credential "
		 "verified in the last minute is not checked again.",
	 .scope = KV_SCOPE_EXPORTER,
	 .shown = served,
	 .samples = http_password_checks_total},
};

KV_FAMILY_TABLE(kv_http_families, families);
