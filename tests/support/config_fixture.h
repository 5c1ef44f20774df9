/* SPDX-License-Identifier: Apache-2.0 */
/* For the tests of the flag parser: a command line parsed as main() would
 * parse it, and the one source most cases need. */
#ifndef CONFIG_FIXTURE_H
#define CONFIG_FIXTURE_H

#include <stdarg.h>
#include <stdio.h>

#include "kv_config.h"

#define MAX_ARGS 40

/* Parses the NULL-terminated flags; returns the result, with err filled. */
static int parse(kvd_config *c, char *err, size_t errlen, ...)
{
	char *argv[MAX_ARGS] = {"mooncake-kv-exporter"};
	int argc = 1;
	va_list ap;
	va_start(ap, errlen);
	for (char *a; (a = va_arg(ap, char *)) && argc < MAX_ARGS;)
		argv[argc++] = a;
	va_end(ap);
	FILE *out = fopen("/dev/null", "w");
	err[0] = '\0';
	int rc = kvd_config_parse(c, argc, argv, out, err, errlen);
	fclose(out);
	return rc;
}

#define EP "--zmq.endpoint=tcp://127.0.0.1:5557"

#endif
