/* SPDX-License-Identifier: Apache-2.0 */
/* What the flag parser (config.c) and the source parser (config_source.c)
 * share, the value checks of config_values.c among it; nothing outside them
 * uses it. */
#ifndef KV_CONFIG_PARSE_H
#define KV_CONFIG_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "kv_config.h"

/* What one parse carries between flags besides the configuration. */
struct parse {
	kvd_config *c;
	char *zmq_endpoint, *master_url;
	bool timeout_given;
	char *err;
	size_t errlen;
};

/* Writes the reason into p->err; returns MKV_EINVAL. */
int kvd_parse_err(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A whole number from min to max, digits only.  Returns 0 or MKV_EINVAL. */
int kvd_parse_size(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out);
/* http:// or https:// */
bool kvd_url_ok(const char *u);
/* What an admin URL lacks: NULL when nothing, else why, written into
 * why[0..n) and led by the URL (scheme, host, a port from 1 to 65535, at
 * most KVD_URL_MAX characters). */
const char *kvd_url_problem(const char *u, char *why, size_t n);
/* Replaces *dst with a copy of v.  Returns 0 or MKV_ENOMEM (*dst unchanged). */
int kvd_dup_into(char **dst, const char *v);
/* The index of word in a NULL-terminated list, or -1. */
int kvd_choice_index(const char *const *choices, const char *word);
/* The words of a NULL-terminated list, ", "-separated, into out[0..n). */
void kvd_choice_list(const char *const *choices, char *out, size_t n);
/* A port given as digits only: its number if from min to 65535, else -1. */
int kvd_port_number(const char *s, int min);
/* What a ZMQ endpoint lacks for the exporter to connect to it: NULL when
 * nothing, else why, written into why[0..n) ("tcp://h has no port:
 * tcp://HOST:PORT"), led by the endpoint. */
const char *kvd_endpoint_problem(const char *ep, char *why, size_t n);
/* --stream.dialect's and dialect='s words, in KVD_DIALECT_MODE_* order. */
extern const char *const kvd_dialect_modes[];

/* Adds a source from its parts (config_source.c); masters: n_masters
 * NUL-separated master= values. */
int kvd_add_source(struct parse *p, const char *name, const char *zmq, const char *status, const char *masters,
		   size_t n_masters, bool reconcile, const char *backend, const char *dialect, const char *group_regex);
/* --source's value. */
int kvd_parse_source(struct parse *p, const char *val);
void kvd_source_cfg_free(kvd_source_cfg *s);

#endif
