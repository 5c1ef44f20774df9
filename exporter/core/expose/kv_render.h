/* SPDX-License-Identifier: Apache-2.0 */
/* The exposition of a snapshot, as a scrape serves it: the text format
 * 0.0.4 or OpenMetrics 1.0, without the families an operator left out,
 * each decided per family as it is written.  Pure. */
#ifndef KV_RENDER_H
#define KV_RENDER_H

#include <mooncake_kv/buf.h>
#include <mooncake_kv/scrape.h>

#include "kv_family.h"
#include "kv_snapshot.h"

/* MKV_CONTENT_TYPE, MKV_CONTENT_TYPE_OPENMETRICS: mooncake_kv/scrape.h */

/* Appends the whole exposition to out as o asks (NULL: the text format,
 * every family).  Returns MKV_OK or MKV_ENOMEM. */
enum mkv_err kv_render(mkv_buf *out, const kv_exporter_snap *snap, const mkv_expo_opts *o);

/* Appends s[0..n) as the inside of a quoted label value: \ " and newline
 * escaped; with sanitize, every byte that does not start a valid UTF-8
 * character (and NUL) becomes U+FFFD. */
void kv_render_label_value(mkv_buf *out, const char *s, size_t n, bool sanitize);
/* The same, written at w, which has room for KV_ESCAPED_MAX(n) bytes;
 * returns its end. */
char *kv_label_escape(char *w, const char *s, size_t n, bool sanitize);
#define KV_ESCAPED_MAX(n) (3 * (n)) /* at most 3 bytes a byte: U+FFFD for one */

/* What the format decides of a family (exposition.c). */
/* Its HELP and TYPE lines (and in OpenMetrics its UNIT, for a name with a
 * unit's suffix). */
void kv_expo_family_header(mkv_buf *out, const kv_family *f, bool openmetrics);
/* The length of its name in the format's HELP and TYPE lines: in
 * OpenMetrics a counter's drops _total. */
size_t kv_expo_family_name_len(const kv_family *f, bool openmetrics);
/* Each of its samples is followed by a _created one (OpenMetrics): a
 * counter that started with the exporter, not mirrored from the master (it
 * started with the master's process) nor a tenant's (it started when the
 * tenant was first seen). */
bool kv_expo_created(const kv_family *f, const mkv_expo_opts *o);
/* Whether the filter leaves out the family of that number (kv_family.h);
 * NULL leaves none out. */
bool kv_family_filter_drops_at(const mkv_family_filter *f, size_t index);
/* Whether a scrape as o asks serves family f (number k) at all: its
 * feature is on, the operator did not leave it out, and it is no family
 * others determine unless o asks for every series. */
bool kv_expo_serves(const kv_family *f, size_t k, const kv_exporter_snap *x, const mkv_expo_opts *o);

#endif
