/* SPDX-License-Identifier: Apache-2.0 */
/* The process_* metrics of the official client libraries, from /proc. */
#ifndef KV_PROCESS_H
#define KV_PROCESS_H

#include <mooncake_kv/scrape.h>

/* Fills *p; p->ok is false where /proc cannot be read. */
void kvd_process_collect(mkv_process_snap *p, double start_time);

#endif
