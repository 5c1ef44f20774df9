/* SPDX-License-Identifier: Apache-2.0 */
/* The first step of every JSON parser of the master's answers: the
 * document, or why not (KV_POLL_PARSE, or KV_POLL_NO_MEMORY: our failure,
 * not the master's).  Duplicate keys are refused: a master's answer never
 * has them, and reading the first or the last would be a guess. */
#ifndef KV_MASTER_JSON_H
#define KV_MASTER_JSON_H

#include <jansson.h>

#include "kv_common.h"

static inline json_t *kv_master_json(const char *body, size_t len, enum kv_poll_error *rc)
{
	json_error_t err;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
	if (!root)
		*rc = json_error_code(&err) == json_error_out_of_memory ? KV_POLL_NO_MEMORY : KV_POLL_PARSE;
	return root;
}

#endif
