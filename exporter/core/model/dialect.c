/* SPDX-License-Identifier: Apache-2.0 */
#include "kv_dialect.h"

static const char *const basis_names[KV_DIALECT__BASES] = {
	[KV_DIALECT_BY_FLAG] = "flag",
	[KV_DIALECT_BY_STATUS] = "status_fields",
	[KV_DIALECT_BY_NO_STATUS] = "no_status_url",
	[KV_DIALECT_BY_NO_ANSWER] = "no_status_answer",
};

const char *kv_dialect_basis_name(enum kv_dialect_basis b)
{
	return (unsigned)b < KV_DIALECT__BASES ? basis_names[b] : "invalid";
}

void kv_dialect_init(kv_dialect_choice *c, enum mkv_dialect mode, bool has_status_url)
{
	*c = (kv_dialect_choice){.dialect = MKV_DIALECT_MEDIA};
	if (mode == MKV_DIALECT_MEDIA || mode == MKV_DIALECT_OBJECT) {
		c->fixed = c->decided = true;
		c->dialect = mode;
		c->basis = KV_DIALECT_BY_FLAG;
	} else if (!has_status_url) { /* nothing will ever tell: the guide */
		c->decided = true;
		c->basis = KV_DIALECT_BY_NO_STATUS;
	}
}

enum mkv_dialect_news kv_dialect_observe(kv_dialect_choice *c, enum mkv_dialect seen, bool read_any)
{
	if (c->fixed)
		return MKV_DIALECT_SAME;
	/* the master's first word, or its first after a guess nothing was read in */
	bool first = !c->decided || (c->basis != KV_DIALECT_BY_STATUS && !read_any);
	bool same = c->decided && c->dialect == seen;
	c->decided = true;
	c->dialect = seen;
	c->basis = KV_DIALECT_BY_STATUS;
	if (same)
		return MKV_DIALECT_SAME;
	if (first)
		return MKV_DIALECT_DECIDED;
	c->switches++;
	return MKV_DIALECT_SWITCHED;
}

enum mkv_dialect_news kv_dialect_give_up(kv_dialect_choice *c)
{
	if (c->decided)
		return MKV_DIALECT_SAME;
	c->decided = true;
	c->dialect = MKV_DIALECT_MEDIA;
	c->basis = KV_DIALECT_BY_NO_ANSWER;
	return MKV_DIALECT_DECIDED;
}
