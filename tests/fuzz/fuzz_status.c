/* libFuzzer target: a /kv_events/status body -> kv_master_parse, then what
 * the poller does with the outcome.  The first byte picks the HTTP status
 * and the stream's missing count, so the tracker sees many histories. */
#include <stddef.h>

#include "kv_master.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static kv_master m; /* keeps its history across inputs, as a poller does */
	static double now = 1e9;
	if (size == 0)
		return 0;
	long http = data[0] % 7 == 0 ? 503 : 200;
	kv_master_status st;
	enum kv_poll_error err = kv_master_parse((const char *)data + 1, size - 1, &st);
	now += 1 + data[0] % 5;
	kv_master_record(&m, now, 0.01, http == 503 ? KV_POLL_HTTP_STATUS : err, http, err == KV_POLL_OK ? &st : NULL,
			 (uint64_t)data[0] * 1000);
	if (m.drop_ratio < 0 || m.drop_ratio > 1 || m.win_n > KV_DROP_WINDOW_SAMPLES)
		__builtin_trap();
	return 0;
}
