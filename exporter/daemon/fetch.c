/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "kv_fetch.h"

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	kvd_fetch *f = arg;
	size_t len = size * n;
	if (f->sink) {
		f->sink_refused = !f->sink(p, len, f->sink_ctx);
		return f->sink_refused ? 0 : len;
	}
	if (f->body.len + len > f->limit) {
		f->too_large = true;
		return 0; /* a short count aborts the transfer */
	}
	mkv_buf_add(&f->body, p, len);
	return mkv_buf_ok(&f->body) ? len : 0;
}

void kvd_fetch_setopts(CURL *h, double timeout_s)
{
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_s * 1000));
	curl_easy_setopt(h, CURLOPT_USERAGENT, "mooncake-kv-exporter");
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
}

int kvd_fetch_init(kvd_fetch *f, double timeout_s, size_t limit)
{
	memset(f, 0, sizeof(*f));
	mkv_buf_init(&f->body);
	f->limit = limit;
	f->timeout_s = timeout_s;
	if (!(f->h = curl_easy_init()))
		return MKV_ENOMEM;
	kvd_fetch_setopts(f->h, timeout_s);
	curl_easy_setopt(f->h, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
	curl_easy_setopt(f->h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(f->h, CURLOPT_WRITEDATA, f);
	return MKV_OK;
}

void kvd_fetch_free(kvd_fetch *f)
{
	if (f->h)
		curl_easy_cleanup(f->h);
	mkv_buf_free(&f->body);
	memset(f, 0, sizeof(*f));
}

enum mkv_poll_error kvd_fetch_classify(CURLcode rc, bool too_large)
{
	if (too_large)
		return MKV_POLL_BODY_TOO_LARGE;
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return MKV_POLL_TIMEOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
		return MKV_POLL_CONNECT;
	default:
		/* the peer spoke something other than HTTP, or cut the body
		 * short: what came back cannot be read */
		return MKV_POLL_PARSE;
	}
}

enum mkv_poll_error kvd_fetch_stream(kvd_fetch *f, const char *url, kvd_fetch_sink sink, void *ctx, long *http)
{
	f->sink = sink;
	f->sink_ctx = ctx;
	f->sink_refused = false;
	double total = f->timeout_s * 10 > 30 ? f->timeout_s * 10 : 30;
	curl_easy_setopt(f->h, CURLOPT_TIMEOUT_MS, (long)(total * 1000));
	curl_easy_setopt(f->h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	curl_easy_setopt(f->h, CURLOPT_LOW_SPEED_TIME, (long)(f->timeout_s < 1 ? 1 : f->timeout_s + 0.5));
	enum mkv_poll_error err = kvd_fetch_get(f, url, http);
	if (f->sink_refused)
		err = MKV_POLL_NO_MEMORY;
	curl_easy_setopt(f->h, CURLOPT_TIMEOUT_MS, (long)(f->timeout_s * 1000));
	curl_easy_setopt(f->h, CURLOPT_LOW_SPEED_LIMIT, 0L);
	curl_easy_setopt(f->h, CURLOPT_LOW_SPEED_TIME, 0L);
	f->sink = NULL;
	f->sink_ctx = NULL;
	return err;
}

enum mkv_poll_error kvd_fetch_get(kvd_fetch *f, const char *url, long *http)
{
	mkv_buf_reset(&f->body);
	f->too_large = false;
	curl_easy_setopt(f->h, CURLOPT_URL, url);
	CURLcode rc = curl_easy_perform(f->h);
	*http = 0;
	if (rc != CURLE_OK)
		return kvd_fetch_classify(rc, f->too_large);
	curl_easy_getinfo(f->h, CURLINFO_RESPONSE_CODE, http);
	return *http == 200 ? MKV_POLL_OK : MKV_POLL_HTTP_STATUS;
}
