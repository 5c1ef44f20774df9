/* SPDX-License-Identifier: Apache-2.0 */
/* Flag parsing: every flag, its forms, its bounds and every way to get it
 * wrong.  The flag table is the code under test; the expectations here are
 * written from the flags' documentation (docs/guide.md, docs/reference.md),
 * not read back from the code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kv_common.h"
#include "kv_config.h"
#include "kv_key_group_regex.h"

#include "support/config_fixture.h"

static void test_defaults(void **state)
{
	(void)state;
	kvd_config c;
	char err[256];
	assert_int_equal(parse(&c, err, sizeof(err), EP, NULL), KVD_CONFIG_RUN);
	assert_int_equal(c.n_sources, 1);
	assert_string_equal(c.sources[0].name, "default");
	assert_string_equal(c.sources[0].members[0].zmq, "tcp://127.0.0.1:5557");
	assert_null(c.sources[0].members[0].status);
	assert_string_equal(c.listen_address, ":19557");
	assert_string_equal(c.telemetry_path, "/metrics");
	assert_null(c.web_config_file);
	assert_null(c.run_as_user);
	assert_true(c.poll_interval == 5.0 && c.poll_timeout == 2.0);
	assert_int_equal(c.max_status_bytes, 1 << 20);
	assert_int_equal(c.max_tenants, 10000);
	assert_int_equal(c.max_objects, 10000000);
	assert_int_equal(c.zmq_rcvhwm, 2000);
	assert_int_equal(c.zmq_max_message_size, 1 << 20);
	assert_int_equal(c.web_max_connections, 512);
	assert_int_equal(c.web_max_per_address, 16);
	assert_true(c.web_read_header_timeout == 5.0 && c.web_read_timeout == 10.0 && c.web_idle_timeout == 30.0);
	assert_int_equal(c.log_level, KVD_LOG_INFO);
	assert_int_equal(c.log_format, KVD_LOG_LOGFMT);
	assert_false(c.reconcile || c.sources[0].reconcile);
	assert_null(c.sources[0].backend);
	assert_true(c.reconcile_interval == 600);
	assert_int_equal(c.reconcile_max_keys, c.max_objects); /* follows the object limit */
	assert_int_equal(c.reconcile_max_replay, 1000000);
	kvd_config_free(&c);
}

static void test_reconcile_flags(void **state)
{
	(void)state;
	kvd_config c;
	char err[256];
	/* the switch alone, and the single source takes it */
	assert_int_equal(parse(&c, err, sizeof(err), EP, "--master.url=http://m:1", "--master.reconcile",
			       "--master.reconcile-interval=90s", "--master.reconcile-max-keys=5000",
			       "--master.reconcile-max-replay", "2000", "--limits.max-objects=9", NULL),
			 KVD_CONFIG_RUN);
	assert_true(c.sources[0].reconcile);
	assert_true(c.reconcile_interval == 90);
	assert_int_equal(c.reconcile_max_keys, 5000);
	assert_int_equal(c.reconcile_max_replay, 2000);
	kvd_config_free(&c);
	assert_int_equal(parse(&c, err, sizeof(err), EP, "--master.url=http://m:1", "--master.reconcile=false", NULL),
			 KVD_CONFIG_RUN);
	assert_false(c.sources[0].reconcile);
	kvd_config_free(&c);
	assert_int_equal(
		parse(&c, err, sizeof(err), EP, "--master.url=http://m:1", "--master.reconcile", "false", NULL),
		KVD_CONFIG_RUN);
	assert_false(c.sources[0].reconcile);
	kvd_config_free(&c);
	/* per source */
	assert_int_equal(parse(&c, err, sizeof(err),
			       "--source=name=a,zmq=tcp://a:1,status=http://a:2,reconcile=true,backend=b9",
			       "--source=name=b,zmq=tcp://b:1,status=http://b:2,reconcile=false", NULL),
			 KVD_CONFIG_RUN);
	assert_true(c.sources[0].reconcile);
	assert_string_equal(c.sources[0].backend, "b9");
	assert_false(c.sources[1].reconcile);
	assert_int_equal(c.reconcile_max_keys, 10000000);
	kvd_config_free(&c);
}

static void test_every_flag_both_forms(void **state)
{
	(void)state;
	kvd_config c;
	char err[256];
	/* --flag=value and --flag value are the same */
	assert_int_equal(parse(&c, err, sizeof(err), "--zmq.endpoint", "ipc:///tmp/x", "--master.url",
			       "https://m:9003/", "--master.poll-interval=1m30s", "--master.timeout", "250ms",
			       "--master.max-body-bytes=2048", "--web.listen-address", "[::1]:0",
			       "--web.telemetry-path=/m", "--web.max-connections", "7", "--web.config.file=w.yml",
			       "--web.max-connections-per-address=0", "--web.read-header-timeout", "2s",
			       "--web.read-timeout=3s", "--web.idle-timeout=1m", "--run-as-user", "nobody",
			       "--limits.max-tenants=3", "--limits.max-objects", "17179869184", "--zmq.rcvhwm=0", NULL),
			 KVD_CONFIG_RUN);
	assert_string_equal(c.sources[0].members[0].zmq, "ipc:///tmp/x");
	assert_string_equal(c.sources[0].members[0].status, "https://m:9003"); /* trailing slash dropped */
	assert_true(c.poll_interval == 90.0);
	assert_true(c.poll_timeout == 0.25);
	assert_int_equal(c.max_status_bytes, 2048);
	assert_string_equal(c.listen_address, "[::1]:0");
	assert_string_equal(c.telemetry_path, "/m");
	assert_int_equal(c.web_max_connections, 7);
	assert_int_equal(c.web_max_per_address, 0);
	assert_true(c.web_read_header_timeout == 2.0 && c.web_read_timeout == 3.0 && c.web_idle_timeout == 60.0);
	assert_string_equal(c.web_config_file, "w.yml");
	assert_string_equal(c.run_as_user, "nobody");
	assert_int_equal(c.max_tenants, 3);
	assert_int_equal(c.max_objects, 1ull << 34);
	assert_int_equal(c.zmq_rcvhwm, 0);
	kvd_config_free(&c);

	assert_int_equal(parse(&c, err, sizeof(err), EP, "--zmq.max-message-size", "2147483648", "--log.level=error",
			       "--log.format", "json", NULL),
			 KVD_CONFIG_RUN);
	assert_int_equal(c.zmq_max_message_size, 1ll << 31);
	assert_int_equal(c.log_level, KVD_LOG_ERROR);
	assert_int_equal(c.log_format, KVD_LOG_JSON);
	kvd_config_free(&c);

	/* the series an operator turns off: one filter built from both flags */
	assert_int_equal(
		parse(&c, err, sizeof(err), EP, "--metrics.exclude", "process_.*", "--metrics.tenant-summary", NULL),
		KVD_CONFIG_RUN);
	assert_true(c.tenant_summary);
	assert_non_null(c.families);
	assert_true(mkv_family_filter_drops("process_open_fds", 16, c.families));
	assert_true(mkv_family_filter_drops("mooncake_kv_objects_by_placement", 32, c.families));
	assert_false(mkv_family_filter_drops("mooncake_kv_objects", 19, c.families));
	/* the summary has no residency per tenant */
	assert_true(mkv_family_filter_drops("mooncake_kv_object_lifetime_seconds", 35, c.families));
	assert_true(mkv_family_filter_drops("mooncake_kv_object_age_mean_seconds", 35, c.families));
	kvd_config_free(&c);
	assert_int_equal(parse(&c, err, sizeof(err), EP, NULL), KVD_CONFIG_RUN);
	assert_null(c.families);    /* every family, no filter to run */
	assert_true(c.residency);   /* on by default */
	assert_false(c.all_series); /* news only by default (docs/guide.md, "Metrics") */
	kvd_config_free(&c);
	/* the old set, one switch away, in each of its forms */
	assert_int_equal(parse(&c, err, sizeof(err), EP, "--metrics.all-series", NULL), KVD_CONFIG_RUN);
	assert_true(c.all_series);
	assert_null(c.families); /* no filter: it adds series, it leaves none out */
	kvd_config_free(&c);
	assert_int_equal(parse(&c, err, sizeof(err), EP, "--metrics.all-series=true", NULL), KVD_CONFIG_RUN);
	assert_true(c.all_series);
	kvd_config_free(&c);
	assert_int_equal(parse(&c, err, sizeof(err), EP, "--metrics.all-series=false", NULL), KVD_CONFIG_RUN);
	assert_false(c.all_series);
	kvd_config_free(&c);
	assert_int_equal(parse(&c, err, sizeof(err), EP, "--residency.enabled=false", NULL), KVD_CONFIG_RUN);
	assert_false(c.residency);
	kvd_config_free(&c);
}

static void test_sources(void **state)
{
	(void)state;
	kvd_config c;
	char err[256];
	assert_int_equal(parse(&c, err, sizeof(err), "--source", "name=m0,zmq=tcp://a:1,status=http://a:2",
			       "--source=zmq=tcp://b:1,name=m-1.b_", EP, NULL),
			 KVD_CONFIG_RUN);
	assert_int_equal(c.n_sources, 3);
	assert_string_equal(c.sources[0].name, "m0");
	assert_string_equal(c.sources[0].members[0].status, "http://a:2");
	assert_string_equal(c.sources[1].name, "m-1.b_");
	assert_string_equal(c.sources[1].members[0].zmq, "tcp://b:1");
	assert_null(c.sources[1].members[0].status);
	assert_string_equal(c.sources[2].name, "default");
	kvd_config_free(&c);
}

/* --stream.dialect for every source, dialect= in --source for one. */
static void test_dialects(void **state)
{
	(void)state;
	kvd_config c;
	char err[256];
	assert_int_equal(parse(&c, err, sizeof(err), EP, NULL), KVD_CONFIG_RUN);
	assert_int_equal(kvd_config_dialect(&c, &c.sources[0]), MKV_DIALECT_AUTO);
	kvd_config_free(&c);
	assert_int_equal(parse(&c, err, sizeof(err), "--stream.dialect=object", "--source",
			       "name=a,zmq=tcp://a:1,dialect=media", "--source=name=b,zmq=tcp://b:1",
			       "--source=name=c,zmq=tcp://c:1,dialect=auto", NULL),
			 KVD_CONFIG_RUN);
	assert_int_equal(kvd_config_dialect(&c, &c.sources[0]), MKV_DIALECT_MEDIA);
	assert_int_equal(kvd_config_dialect(&c, &c.sources[1]), MKV_DIALECT_OBJECT);
	assert_int_equal(kvd_config_dialect(&c, &c.sources[2]), MKV_DIALECT_AUTO);
	kvd_config_free(&c);
}

/* master=, once per member of a group of highly available masters: the
 * `member` label is the admin URL's host:port, without user info. */
static void test_master_groups(void **state)
{
	(void)state;
	kvd_config c;
	char err[256];
	assert_int_equal(parse(&c, err, sizeof(err),
			       "--source=name=ha,master=tcp://10.0.0.1:5557@http://10.0.0.1:9003/,"
			       "master=ipc:///run/m@1@https://u:p@w@m2.example:9443/base,reconcile=true",
			       "--source=name=one,zmq=tcp://c:1,status=http://c:2/x", NULL),
			 KVD_CONFIG_RUN);
	assert_int_equal(c.n_sources, 2);
	const kvd_source_cfg *ha = &c.sources[0];
	assert_true(ha->ha);
	assert_true(ha->polled);
	assert_true(ha->reconcile);
	assert_int_equal(ha->n_members, 2);
	assert_string_equal(ha->members[0].zmq, "tcp://10.0.0.1:5557");
	assert_string_equal(ha->members[0].status, "http://10.0.0.1:9003");
	assert_string_equal(ha->members[0].label, "10.0.0.1:9003");
	assert_string_equal(ha->members[1].zmq, "ipc:///run/m@1");
	assert_string_equal(ha->members[1].status, "https://u:p@w@m2.example:9443/base");
	assert_string_equal(ha->members[1].label, "m2.example:9443");
	const kvd_source_cfg *one = &c.sources[1];
	assert_false(one->ha);
	assert_int_equal(one->n_members, 1);
	assert_string_equal(one->members[0].label, "c:2");
	kvd_config_free(&c);
}

/* Each bad command line fails with MKV_EINVAL and a reason naming the part. */
static const struct bad {
	const char *args[4];
	const char *reason;
} bad[] = {
	{{"--nope=1"}, "unknown flag --nope (see --help)"}, /* nothing near: no guess */
	{{EP, "--master.timout=1s"}, "unknown flag --master.timout: did you mean --master.timeout?"},
	{{EP, "--web.listen-adress=:1"}, "did you mean --web.listen-address?"},
	{{"positional"}, "unexpected argument"},
	{{EP, "--master.timeout"}, "--master.timeout needs a value"},
	{{NULL}, "no source"},
	{{"--master.url=http://m:1"}, "--master.url needs --zmq.endpoint"},
	{{EP, "--master.url=ftp://m"}, "must start with http"},
	{{EP, "--master.url=http://m:99999"}, "port \"99999\" is not a number from 1 to 65535"},
	{{EP, "--master.url=http://m:"}, "port \"\" is not a number"},
	{{EP, "--master.url=http://:80/"}, "has no host"},
	{{EP, "--master.url=http://[::1/x"}, "without its closing ]"},
	{{"--source=name=a,master=tcp://a:1@http://m:0"}, "status URL \"http://m:0\": port \"0\""},
	{{EP, "--state.peer=http://p:70000"}, "--state.peer \"http://p:70000\": port"},
	{{"--source=name=a"}, "needs zmq=ENDPOINT"},
	{{"--source=zmq=tcp://a:1"}, "needs name=NAME"},
	{{"--source=name=a,zmq=tcp://a:1,colour=red"}, "unknown key \"colour\""},
	{{"--source=name=a,zmq"}, "is not key=value"},
	{{"--source=name=a b,zmq=tcp://a:1"}, "must be 1-64 of"},
	{{"--source=name=a,zmq=a:1"}, "is not transport://address"},
	{{"--source=name=a,zmq=tcp://a:1,status=a:2"}, "status URL"},
	{{"--source=name=a,zmq=tcp://a:1", "--source=name=a,zmq=tcp://b:1"}, "given twice"},
	{{EP, "--limits.max-objects=-3"}, "--limits.max-objects \"-3\" must be a whole number from 1"},
	{{EP, "--limits.max-objects=0"}, "from 1 to"},
	{{EP, "--limits.max-tenants=10000001"}, "from 1 to 10000000"},
	{{EP, "--web.max-connections=1e3"}, "--web.max-connections"},
	{{EP, "--master.max-body-bytes=1023"}, "from 1024"},
	{{EP, "--zmq.rcvhwm=100000001"}, "--zmq.rcvhwm"},
	{{EP, "--zmq.max-message-size="}, "--zmq.max-message-size"},
	{{EP, "--master.poll-interval=5 s"}, "is not a duration"},
	{{EP, "--master.poll-interval=2h"}, "between 10ms and 1h"},
	{{EP, "--master.timeout=5ms"}, "between 10ms and 1h"},
	{{EP, "--master.timeout=3s", "--master.poll-interval=2s"}, "must not exceed"},
	{{EP, "--web.listen-address=19557"}, "must be [HOST]:PORT"},
	{{EP, "--web.telemetry-path=metrics"}, "must start with /"},
	{{EP, "--web.telemetry-path=/-/ready"}, "must start with /"},
	{{EP, "--log.level=loud"}, "--log.level \"loud\""},
	{{EP, "--log.format=xml"}, "--log.format \"xml\""},
	{{EP, "--run-as-user="}, "non-empty"},
	{{EP, "--web.max-connections=0"}, "from 1 to 10000"},
	{{EP, "--web.max-connections=10001"}, "from 1 to 10000"},
	{{EP, "--web.max-connections-per-address=10001"}, "from 0 to 10000"},
	{{EP, "--web.read-header-timeout=0"}, "is not a duration"},
	{{EP, "--web.read-header-timeout=20s"}, "must not be shorter than --web.read-header-timeout"},
	{{EP, "--web.idle-timeout=2h"}, "is not a duration"},
	{{EP, "--master.max-body-bytes=1073741825"}, "to 1073741824"},
	{{EP, "--limits.max-objects=17179869185"}, "to 17179869184"},
	{{EP, "--zmq.max-message-size=1023"}, "from 1024"},
	{{EP, "--zmq.max-message-size=2147483649"}, "to 2147483648"},
	{{EP, "--limits.max-tenants=x"}, "--limits.max-tenants"},
	{{EP, "--master.timeout=-1s"}, "is not a duration"},
	{{EP, "--master.poll-interval=1x"}, "is not a duration"},
	{{EP, "--web.config.file="}, "non-empty"},
	{{"--zmq.endpoint="}, "needs zmq=ENDPOINT"},
	{{EP, "--master.reconcile"}, "needs the master's admin URL"},
	{{EP, "--master.reconcile=yes"}, "must be true or false"},
	{{EP, "--residency.enabled=maybe"}, "must be true or false"},
	{{EP, "--metrics.all-series=1"}, "must be true or false"},
	{{"--source=name=a,zmq=tcp://a:1,status=http://a:2", "--master.reconcile"}, "is for the --zmq.endpoint"},
	{{"--source=name=a,zmq=tcp://a:1,status=http://a:2,reconcile=1"}, "true or false"},
	{{"--source=name=a,zmq=tcp://a:1,backend="}, "needs a backend_id"},
	{{EP, "--master.reconcile-interval=25h"}, "between 10ms and 24h"},
	{{EP, "--master.reconcile-max-keys=0"}, "--master.reconcile-max-keys"},
	{{EP, "--master.reconcile-max-replay=10"}, "from 1000"},
	{{"--source=name=a,master=tcp://a:1"}, "is not ZMQ_ENDPOINT@ADMIN_URL"},
	{{"--source=name=a,master=tcp://a:1@ftp://a:2"}, "is not ZMQ_ENDPOINT@ADMIN_URL"},
	{{"--source=name=a,master=@http://a:2"}, "needs zmq=ENDPOINT"},
	{{"--source=name=a,master=a:1@http://a:2"}, "is not transport://address"},
	{{"--source=name=a,master=tcp://a:1@http://a:2,master=tcp://b:1@http://a:2/"}, "two masters at a:2"},
	{{"--source=name=a,zmq=tcp://a:1,master=tcp://b:1@http://b:2"}, "not both"},
	{{EP, "--metrics.exclude=(mooncake"}, "--metrics.exclude: missing closing parenthesis"},
	{{EP, "--stream.dialect=guide"}, "--stream.dialect \"guide\" is not one of auto, media, object"},
	{{"--source=name=a,zmq=tcp://a:1,dialect=Object"}, "dialect=Object must be auto, media or object"},
};

static void test_bad_values(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		kvd_config c;
		char err[256];
		const char *const *a = bad[i].args;
		int rc = parse(&c, err, sizeof(err), a[0], a[0] ? a[1] : NULL, a[0] && a[1] ? a[2] : NULL, NULL);
		if (rc != MKV_EINVAL || !strstr(err, bad[i].reason))
			fail_msg("case %zu (%s): rc %d, err \"%s\"", i, a[0] ? a[0] : "", rc, err);
		kvd_config_free(&c);
	}
}

/* Every refusal says why, whole: the messages as an operator reads them. */
static const struct bad said[] = {
	/* an enumerated flag lists its words */
	{{EP, "--log.level=verbose"}, "--log.level \"verbose\" is not one of debug, info, warn, error"},
	{{EP, "--log.format=text"}, "--log.format \"text\" is not one of logfmt, json"},
	{{EP, "--stream.dialect=main"}, "--stream.dialect \"main\" is not one of auto, media, object"},
	/* a port out of range, or not a number, at flag time */
	{{EP, "--web.listen-address=:99999"},
	 "--web.listen-address \":99999\": port \"99999\" is not a number from 0 to 65535 ([HOST]:PORT)"},
	{{EP, "--web.listen-address=0.0.0.0:-1"},
	 "--web.listen-address \"0.0.0.0:-1\": port \"-1\" is not a number from 0 to 65535 ([HOST]:PORT)"},
	{{EP, "--web.listen-address=localhost:http"},
	 "--web.listen-address \"localhost:http\": port \"http\" is not a number from 0 to 65535 ([HOST]:PORT)"},
	{{EP, "--web.listen-address=[::1]:"},
	 "--web.listen-address \"[::1]:\": port \"\" is not a number from 0 to 65535 ([HOST]:PORT)"},
	{{EP, "--web.listen-address=:065536"},
	 "--web.listen-address \":065536\": port \"065536\" is not a number from 0 to 65535 ([HOST]:PORT)"},
	/* an exempt address or network that is none, or not one network */
	{{EP, "--web.login-penalty-exempt=10.0.0.0/33"},
	 "--web.login-penalty-exempt \"10.0.0.0/33\" has a prefix length that is not a number from 0 to 32"},
	{{EP, "--web.login-penalty-exempt=10.1.0.0/8"},
	 "--web.login-penalty-exempt \"10.1.0.0/8\" has bits set beyond its prefix length (write the network's "
	 "first address)"},
	{{EP, "--web.login-penalty-exempt=prometheus"},
	 "--web.login-penalty-exempt \"prometheus\" is not an IPv4 or IPv6 address or network (like 10.0.0.0/8, "
	 "fd00::/8, 192.0.2.7)"},
	/* an endpoint says what it lacks, in each of its three forms */
	{{"--zmq.endpoint=tcp://127.0.0.1"}, "--zmq.endpoint tcp://127.0.0.1 has no port: tcp://HOST:PORT"},
	{{"--zmq.endpoint", "tcp://127.0.0.1:"}, "--zmq.endpoint tcp://127.0.0.1: has no port: tcp://HOST:PORT"},
	{{"--zmq.endpoint=tcp://[::1]"}, "--zmq.endpoint tcp://[::1] has no port: tcp://HOST:PORT"},
	{{"--zmq.endpoint=tcp://:5557"}, "--zmq.endpoint tcp://:5557 has no host: tcp://HOST:PORT"},
	{{"--zmq.endpoint=tcp://*:5557"},
	 "--zmq.endpoint tcp://*:5557 has no host (* binds, the exporter connects): tcp://HOST:PORT"},
	{{"--zmq.endpoint=tcp://[::1:5557"}, "--zmq.endpoint tcp://[::1:5557 has no closing ]: tcp://[IPV6]:PORT"},
	{{"--zmq.endpoint=tcp://m:99999"},
	 "--zmq.endpoint tcp://m:99999: port \"99999\" is not a number from 1 to 65535"},
	{{"--zmq.endpoint=tcp://m:0"}, "--zmq.endpoint tcp://m:0: port \"0\" is not a number from 1 to 65535"},
	{{"--zmq.endpoint=tcp://m:pub"}, "--zmq.endpoint tcp://m:pub: port \"pub\" is not a number from 1 to 65535"},
	{{"--zmq.endpoint=tcp://10.0.0.2:5557;m"}, "--zmq.endpoint tcp://10.0.0.2:5557;m has no port: tcp://HOST:PORT"},
	{{"--zmq.endpoint=ipc://"}, "--zmq.endpoint ipc:// has no path: ipc://PATH"},
	{{"--source=name=a,zmq=tcp://127.0.0.1"},
	 "source \"a\": zmq endpoint tcp://127.0.0.1 has no port: tcp://HOST:PORT"},
	{{"--source=name=a,master=tcp://m@http://m:9003"},
	 "source \"a\": zmq endpoint tcp://m has no port: tcp://HOST:PORT"},
	{{"--source=name=a,master=tcp://m:1@http://m:9003,master=tcp://n:-5@http://n:9003"},
	 "source \"a\": zmq endpoint tcp://n:-5: port \"-5\" is not a number from 1 to 65535"},
};

/* An admin URL is taken up to KVD_URL_MAX (1024) characters and refused,
 * in one line, beyond: the poller's buffers hold it and its paths. */
static void test_admin_url_length(void **state)
{
	(void)state;
	char url[1100], flag[1200], err[256] = "";
	for (size_t len = 1024; len <= 1025; len++) {
		snprintf(url, sizeof(url), "http://m:1/");
		memset(url + strlen(url), 'p', len - strlen(url));
		url[len] = '\0';
		snprintf(flag, sizeof(flag), "--master.url=%s", url);
		kvd_config c;
		int rc = parse(&c, err, sizeof(err), EP, flag, NULL);
		if (len == 1024) {
			assert_int_equal(rc, KVD_CONFIG_RUN);
			kvd_config_free(&c);
		} else {
			assert_int_equal(rc, MKV_EINVAL);
			assert_non_null(strstr(err, "is longer than 1024 characters"));
			assert_null(strchr(err, '\n'));
			kvd_config_free(&c); /* what was set before the refusal */
		}
	}
}

/* Admin URLs a master really has pass: IPv6 literals, user info with a
 * colon, no port (the scheme's), a path. */
static void test_admin_urls_accepted(void **state)
{
	(void)state;
	static const char *const good[] = {"http://[::1]:8080/x", "https://u:p:w@h:443", "http://h", "http://h/p?q=1:2",
					   "https://[fe80::1]"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		kvd_config c;
		char err[256] = "", flag[64];
		snprintf(flag, sizeof(flag), "--master.url=%s", good[i]);
		int rc = parse(&c, err, sizeof(err), EP, flag, NULL);
		if (rc != KVD_CONFIG_RUN)
			fail_msg("%s refused: %s", good[i], err);
		kvd_config_free(&c);
	}
}

static void test_refusals_say_why(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++) {
		kvd_config c;
		char err[256];
		const char *const *a = said[i].args;
		int rc = parse(&c, err, sizeof(err), a[0], a[0] ? a[1] : NULL, a[0] && a[1] ? a[2] : NULL, NULL);
		if (rc != MKV_EINVAL || strcmp(err, said[i].reason) != 0)
			fail_msg("case %zu (%s): rc %d, err \"%s\"", i, a[0], rc, err);
		kvd_config_free(&c);
	}
	/* and what is right passes: every port, IPv6 in brackets, a source address */
	kvd_config c;
	char err[256];
	assert_int_equal(parse(&c, err, sizeof(err), "--zmq.endpoint=tcp://[::1]:5557", "--web.listen-address=:0",
			       "--source=name=a,zmq=tcp://eth0;10.0.0.1:65535",
			       "--source=name=b,master=tcp://m:1@http://m:9003,master=ipc:///run/n@http://n:9003",
			       NULL),
			 KVD_CONFIG_RUN);
	kvd_config_free(&c);
	assert_int_equal(parse(&c, err, sizeof(err), EP, "--web.listen-address=[::1]:65535", NULL), KVD_CONFIG_RUN);
	assert_string_equal(c.listen_address, "[::1]:65535");
	kvd_config_free(&c);
}

/* --web.login-penalty-exempt (docs/guide.md, "Securing the endpoint"):
 * repeatable, an address or a network, IPv4 or IPv6 (its refusals: said[]
 * above). */
static void test_login_penalty_exempt(void **state)
{
	(void)state;
	kvd_config c;
	char err[256];
	assert_int_equal(parse(&c, err, sizeof(err), EP, NULL), KVD_CONFIG_RUN);
	assert_int_equal(c.n_web_penalty_exempt, 0); /* by default nobody */
	kvd_config_free(&c);
	assert_int_equal(parse(&c, err, sizeof(err), EP, "--web.login-penalty-exempt=10.0.0.0/8",
			       "--web.login-penalty-exempt", "fd00::/8", "--web.login-penalty-exempt=192.0.2.7",
			       "--web.login-penalty-exempt=::1", "--web.login-penalty-exempt=0.0.0.0/0", NULL),
			 KVD_CONFIG_RUN);
	assert_int_equal(c.n_web_penalty_exempt, 5); /* in order; what each matches: test_cidr.c */
	static const unsigned char v4[16] = {[10] = 0xff, [11] = 0xff, [12] = 10, [13] = 200, [15] = 9};
	static const unsigned char v6[16] = {0xfd, 0x99, [15] = 1};
	assert_true(kvd_cidr_match(c.web_penalty_exempt, 1, v4) && !kvd_cidr_match(c.web_penalty_exempt, 1, v6));
	assert_true(kvd_cidr_match(c.web_penalty_exempt + 1, 1, v6));
	kvd_config_free(&c);
}

static void test_timeout_yields_to_short_interval(void **state)
{
	(void)state;
	kvd_config c;
	char err[256];
	assert_int_equal(parse(&c, err, sizeof(err), EP, "--master.poll-interval=500ms", NULL), KVD_CONFIG_RUN);
	assert_true(c.poll_timeout == 0.5);
	kvd_config_free(&c);
}

static void test_durations(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		double want; /* < 0: invalid */
	} cases[] = {{"5s", 5}, {"250ms", 0.25}, {"1m30s", 90}, {"1.5s", 1.5}, {"2h", 7200}, {"0s", 0},
		     {"", -1},  {"5", -1},       {"s", -1},     {"-1s", -1},   {"5 s", -1},  {"1d", -1}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double d = -99;
		int rc = kvd_parse_duration(cases[i].s, &d);
		if (cases[i].want < 0)
			assert_int_equal(rc, MKV_EINVAL);
		else if (rc != MKV_OK || d != cases[i].want)
			fail_msg("%s: rc %d, %g", cases[i].s, rc, d);
	}
}

/* group_regex= in --source: last, taking the rest (commas and all); a source
 * without it has --key.group-regex's; a bad one names the source. */
static void test_key_group_regexes(void **state)
{
	(void)state;
	kvd_config c;
	char err[256];
	assert_int_equal(parse(&c, err, sizeof(err), "--key.group-regex=^(?<model>[^/]+)/",
			       "--source=name=a,zmq=tcp://127.0.0.1:1,group_regex=^(?<tag>[^_]{1,8})_(?<m>[a,b]+),",
			       "--source=name=b,zmq=tcp://127.0.0.1:2", NULL),
			 KVD_CONFIG_RUN);
	assert_int_equal(c.n_sources, 2);
	assert_string_equal(c.sources[0].members[0].zmq, "tcp://127.0.0.1:1");
	const mkv_keygroup_re *a = kvd_config_keygroups(&c, &c.sources[0]),
			      *b = kvd_config_keygroups(&c, &c.sources[1]);
	assert_non_null(a);
	assert_ptr_equal(b, c.key_groups);
	assert_int_equal(mkv_keygroup_names(a), 2);
	assert_int_equal(mkv_keygroup_names(b), 1);
	kv_keygroup_matcher *m = kv_keygroup_matcher_new(a);
	char out[MKV_KEYGROUP_MAX_LEN];
	size_t n = kv_keygroup_of(m, "prod_b,a,", 9, out);
	assert_int_equal(n, 8); /* the comma at the end is the pattern's, outside the group */
	assert_memory_equal(out, "prod/b,a", 8);
	kv_keygroup_matcher_free(m);
	kvd_config_free(&c);

	assert_int_equal(parse(&c, err, sizeof(err), "--source=group_regex=(?<x>a),name=a,zmq=tcp://127.0.0.1:1", NULL),
			 MKV_EINVAL);
	assert_non_null(strstr(err, "needs name=NAME"));
	kvd_config_free(&c);
	assert_int_equal(parse(&c, err, sizeof(err), "--source=name=a,zmq=tcp://127.0.0.1:1,group_regex=(?<x>a", NULL),
			 MKV_EINVAL);
	assert_string_equal(err, "source \"a\": group_regex: missing closing parenthesis at offset 6"); /* the end */
	kvd_config_free(&c);
	assert_int_equal(parse(&c, err, sizeof(err), EP, "--key.group-regex=(a)", NULL), MKV_EINVAL);
	assert_non_null(strstr(err, "--key.group-regex: needs a named group"));
	kvd_config_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_flag_both_forms),
		cmocka_unit_test(test_sources),
		cmocka_unit_test(test_master_groups),
		cmocka_unit_test(test_reconcile_flags),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_refusals_say_why),
		cmocka_unit_test(test_admin_urls_accepted),
		cmocka_unit_test(test_admin_url_length),
		cmocka_unit_test(test_timeout_yields_to_short_interval),
		cmocka_unit_test(test_login_penalty_exempt),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_key_group_regexes),
		cmocka_unit_test(test_dialects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
