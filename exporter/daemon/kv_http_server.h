/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP shell: /metrics (gzip when asked), /, /-/healthy, /-/ready. */
#ifndef KV_HTTP_SERVER_H
#define KV_HTTP_SERVER_H

#include <stddef.h>

/* What it serves from, owned by main (declared where they are defined). */
typedef struct kv_config kv_config;
typedef struct kv_source kv_source;
typedef struct mkv_budget mkv_budget;
typedef struct kv_webconfig kv_webconfig;
typedef struct kv_http kv_http;

typedef struct kv_exporter {
	const kv_config *config;
	kv_source *sources;
	size_t n_sources;
	mkv_budget *budget;
	const kv_webconfig *web;
	double start_time;
} kv_exporter;

/* Starts serving.  Returns NULL with a reason logged when the address cannot
 * be bound. */
kv_http *kv_http_start(const kv_exporter *x);
/* The port actually bound (useful with port 0). */
unsigned kv_http_port(const kv_http *h);
void kv_http_stop(kv_http *h);

#endif
