/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP shell: /metrics (gzip when asked), /, /-/healthy, /-/ready. */
#ifndef KV_HTTP_SERVER_H
#define KV_HTTP_SERVER_H

#include <stddef.h>

/* What it serves from, owned by main (declared where they are defined). */
typedef struct kvd_config kvd_config;
typedef struct kvd_source kvd_source;
typedef struct mkv_budget mkv_budget;
typedef struct kvd_webconfig kvd_webconfig;
typedef struct kvd_http kvd_http;

typedef struct kvd_exporter {
	const kvd_config *config;
	kvd_source *sources;
	size_t n_sources;
	mkv_budget *budget;
	const kvd_webconfig *web;
	double start_time;
} kvd_exporter;

/* Starts serving.  Returns NULL with a reason logged when the address cannot
 * be bound. */
kvd_http *kvd_http_start(const kvd_exporter *x);
/* The port actually bound (useful with port 0). */
unsigned kvd_http_port(const kvd_http *h);
void kvd_http_stop(kvd_http *h);

#endif
