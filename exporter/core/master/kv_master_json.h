/* SPDX-License-Identifier: Apache-2.0 */
/* The first step of every JSON parser of the master's answers: the
 * document, or why not (MKV_POLL_PARSE, or MKV_POLL_NO_MEMORY: our failure,
 * not the master's).  Duplicate keys are refused: a master's answer never
 * has them, and reading the first or the last would be a guess. */
#ifndef KV_MASTER_JSON_H
#define KV_MASTER_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "kv_common.h"

static inline json_t *kv_master_json(const char *body, size_t len, enum mkv_poll_error *rc)
{
	json_error_t err;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
	if (!root)
		*rc = json_error_code(&err) == json_error_out_of_memory ? MKV_POLL_NO_MEMORY : MKV_POLL_PARSE;
	return root;
}

/* A member that is a whole number from 0 up; false when missing or not one. */
static inline bool kv_json_u64(const json_t *o, const char *name, uint64_t *v)
{
	const json_t *j = json_object_get(o, name);
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return false;
	*v = (uint64_t)json_integer_value(j);
	return true;
}

#endif
