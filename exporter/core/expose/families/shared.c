/* SPDX-License-Identifier: Apache-2.0 */
/* What several features' families share: the whens of the features a
 * source may have, and the samples of a poll's errors. */
#include "kv_family.h"

void kv_sample_poll_errors(kv_emit *e, const uint64_t n[MKV_POLL__COUNT])
{
	for (int r = MKV_POLL_OK + 1; r < MKV_POLL__COUNT; r++)
		kv_sample_u64(e, (kv_label){"reason", mkv_poll_error_name((enum mkv_poll_error)r)}, n[r]);
}

bool kv_any_source(const kv_exporter_snap *x, bool (*has)(const kv_source_snap *s))
{
	for (size_t i = 0; i < x->n_sources; i++)
		if (has(&x->sources[i]))
			return true;
	return false;
}

static bool polled(const kv_source_snap *s)
{
	return s->polled;
}

static bool residency(const kv_source_snap *s)
{
	return s->residency;
}

static bool groups(const kv_source_snap *s)
{
	return s->has_groups;
}

bool kv_any_polled(const kv_exporter_snap *x)
{
	return kv_any_source(x, polled);
}

bool kv_any_residency(const kv_exporter_snap *x)
{
	return kv_any_source(x, residency);
}

bool kv_any_groups(const kv_exporter_snap *x)
{
	return kv_any_source(x, groups);
}
