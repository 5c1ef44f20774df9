/* SPDX-License-Identifier: Apache-2.0 */
/* --help: it lists every flag, and every default it shows is the flag's
 * value when not given (the flag table writes both; here they are held
 * to each other from the outside, through the parser). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kv_common.h"
#include "kv_config.h"
#include "kv_scrape_body.h"

#include "support/config_fixture.h"

/* Two configurations hold the same settings: every field equal, the
 * strings compared as text.  A new pointer field fails here until it is
 * named below. */
static void assert_same_config(const kvd_config *a, const kvd_config *b)
{
	kvd_config x = *a, y = *b;
	char **strings[][2] = {
		{&x.listen_address, &y.listen_address},   {&x.telemetry_path, &y.telemetry_path},
		{&x.web_config_file, &y.web_config_file}, {&x.run_as_user, &y.run_as_user},
		{&x.metrics_exclude, &y.metrics_exclude}, {&x.key_group_regex, &y.key_group_regex},
	};
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		char *s = *strings[i][0], *t = *strings[i][1];
		if (s != t && (!s || !t || strcmp(s, t)))
			fail_msg("string %zu: \"%s\" != \"%s\"", i, s ? s : "(null)", t ? t : "(null)");
		*strings[i][0] = *strings[i][1] = NULL;
	}
	assert_int_equal(x.n_sources, y.n_sources); /* the same EP in both */
	x.sources = y.sources = NULL;
	assert_true(!x.key_groups && !y.key_groups && !x.families && !y.families && !x.state_peers && !y.state_peers);
	assert_memory_equal(&x, &y, sizeof(x));
}

/* Every default --help shows is the flag's value when it is not given:
 * `--flag=DEFAULT` leaves the configuration as no flag does, so the help
 * cannot drift from the code. */
static void test_help_defaults_are_the_defaults(void **state)
{
	(void)state;
	char buf[65536] = {0};
	FILE *out = fmemopen(buf, sizeof(buf) - 1, "w");
	char *argv[] = {"x", "--help"};
	kvd_config c, d;
	char err[256];
	assert_int_equal(kvd_config_parse(&c, 2, argv, out, err, sizeof(err)), KVD_CONFIG_EXIT);
	fclose(out);
	kvd_config_free(&c);
	assert_int_equal(parse(&c, err, sizeof(err), EP, NULL), KVD_CONFIG_RUN);
	size_t shown = 0;
	/* a flag's entry: its line ("  --name=...") and the lines indented
	 * under it, joined */
	char entry[2048] = "";
	for (char *line = strtok(buf, "\n");; line = strtok(NULL, "\n")) {
		if (line && line[0] == ' ' && line[2] != '-') {
			strncat(entry, line, sizeof(entry) - strlen(entry) - 1);
			continue;
		}
		char *def = strstr(entry, "(default "), name[64], flag[128];
		bool is_flag = def && sscanf(entry, " %63[^= ]", name) == 1;
		snprintf(entry, sizeof(entry), "%s", line ? line : "");
		if (!is_flag) {
			if (!line)
				break;
			continue;
		}
		def += strlen("(default ");
		snprintf(flag, sizeof(flag), "%s=%.*s", name, (int)strcspn(def, ")"), def);
		if (parse(&d, err, sizeof(err), EP, flag, NULL) != KVD_CONFIG_RUN)
			fail_msg("%s refused: %s", flag, err);
		assert_same_config(&c, &d);
		kvd_config_free(&d);
		shown++;
		if (!line)
			break;
	}
	kvd_config_free(&c);
	assert_true(shown >= 25); /* every flag with a value of its own says its default */
}

/* Every line of --help fits a terminal of 80 columns. */
static void test_help_fits_80_columns(void **state)
{
	(void)state;
	char buf[65536] = {0};
	FILE *out = fmemopen(buf, sizeof(buf) - 1, "w");
	char *argv[] = {"x", "--help"};
	kvd_config c;
	char err[256];
	assert_int_equal(kvd_config_parse(&c, 2, argv, out, err, sizeof(err)), KVD_CONFIG_EXIT);
	fclose(out);
	kvd_config_free(&c);
	size_t lines = 0;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"), lines++) {
		if (strlen(line) > 80)
			fail_msg("%zu columns: %s", strlen(line), line);
	}
	assert_true(lines > 40);
}

static void test_help_lists_every_flag(void **state)
{
	(void)state;
	static const char *const names[] = {
		"--source",
		"--zmq.endpoint",
		"--master.url",
		"--stream.dialect",
		"--master.poll-interval",
		"--master.timeout",
		"--master.max-body-bytes",
		"--master.reconcile",
		"--master.reconcile-interval",
		"--master.reconcile-max-keys",
		"--master.reconcile-max-replay",
		"--web.listen-address",
		"--web.telemetry-path",
		"--web.max-connections",
		"--web.max-connections-per-address",
		"--web.read-header-timeout",
		"--web.read-timeout",
		"--web.idle-timeout",
		"--web.config.file",
		"--web.login-penalty-exempt",
		"--run-as-user",
		"--limits.max-tenants",
		"--limits.max-objects",
		"--zmq.rcvhwm",
		"--zmq.max-message-size",
		"--metrics.exclude",
		"--metrics.tenant-summary",
		"--log.level",
		"--log.format",
		"--help",
		"--version",
	};
	static char buf[65536];
	FILE *out = fmemopen(buf, sizeof(buf) - 1, "w");
	char *argv[] = {"x", "--help"};
	kvd_config c;
	char err[64];
	assert_int_equal(kvd_config_parse(&c, 2, argv, out, err, sizeof(err)), KVD_CONFIG_EXIT);
	fclose(out);
	kvd_config_free(&c);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strstr(buf, names[i]))
			fail_msg("--help does not list %s", names[i]);

	memset(buf, 0, sizeof(buf));
	out = fmemopen(buf, sizeof(buf) - 1, "w");
	argv[1] = "--version";
	assert_int_equal(kvd_config_parse(&c, 2, argv, out, err, sizeof(err)), KVD_CONFIG_EXIT);
	fclose(out);
	kvd_config_free(&c);
	assert_true(strncmp(buf, "mooncake-kv-exporter ", 21) == 0);
	/* and which compressor gzips the scrapes, as the build made it */
	const char *gz = strstr(buf, "\ngzip: ");
	assert_non_null(gz);
	assert_string_equal(gz + 7, kvd_deflater_built(KVD_DEFLATE_ISAL) ? "ISA-L\n" : "zlib\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help_lists_every_flag),
		cmocka_unit_test(test_help_defaults_are_the_defaults),
		cmocka_unit_test(test_help_fits_80_columns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
