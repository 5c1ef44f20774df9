/* SPDX-License-Identifier: Apache-2.0 */
/* The status page (mooncake_kv/scrape.h, mkv_scrape_status_html) of a
 * snapshot: status_page.c writes the page, its sources and members;
 * status_tenants.c picks the tenants shown and writes their table; both
 * write text and figures with status_html.c's helpers below.  Pure.
 *
 * Every figure the page shows that /metrics also gives is one element
 * with its family and labels as data- attributes and the metric's own
 * text of the value, so that a reader (a test, a script) can find the
 * sample it shows:
 *   <td class="n" data-m="mooncake_kv_objects" data-v="12">12</td>
 *   <span class="chip" data-m="mooncake_kv_state_stale_reason" data-l="reason=gap" data-v="1">gap</span>
 * data-l is the figure's extra label (name=value), if any; the scope's
 * labels are on an ancestor: data-source on a source's section, a member's
 * and a tenant's row; data-member on a member's row; data-backend and
 * data-tenant on a tenant's row. */
#ifndef KV_STATUS_PAGE_H
#define KV_STATUS_PAGE_H

#include <stdint.h>

#include <mooncake_kv/buf.h>
#include <mooncake_kv/scrape.h>

#include "kv_snapshot.h"

/* Appends the page to out.  Returns 0 or MKV_ENOMEM. */
enum mkv_err kv_status_render(mkv_buf *out, const kv_exporter_snap *x, const mkv_status_opts *o);

/* The tenants' part: the filter form, how many match and were left out,
 * and the table of those shown (status_tenants.c). */
enum mkv_err kv_status_tenants(mkv_buf *out, const kv_exporter_snap *x, const mkv_status_opts *o);

/* s[0..n) as HTML text or an attribute's value: & < > " ' as references;
 * a byte that starts no valid UTF-8 character, NUL, and the characters
 * HTML forbids raw (controls but tab and newline, noncharacters) as
 * U+FFFD. */
void kv_html_esc(mkv_buf *b, const char *s, size_t n);
void kv_html_escs(mkv_buf *b, const char *s);

/* Opens <tag class="cls" data-m="family" data-l="ln=lv" data-v="v"> (no
 * data-l when ln is NULL). */
void kv_html_fig_open(mkv_buf *b, const char *tag, const char *cls, const char *family, const char *ln, const char *lv,
		      const char *v);
/* A whole figure whose text is its value: <tag class="n" ...>v</tag>. */
void kv_html_u64(mkv_buf *b, const char *tag, const char *family, const char *ln, const char *lv, uint64_t v);
/* The same, unlabelled, of class cls (which holds "n"). */
void kv_html_u64_as(mkv_buf *b, const char *tag, const char *cls, const char *family, uint64_t v);
/* A labelled count: <span class="chip" ...>lv <b>v</b></span>. */
void kv_html_chip(mkv_buf *b, const char *family, const char *ln, const char *lv, uint64_t v);
/* An unlabelled count by its words: <span class="chip" ...>text <b>v</b></span>. */
void kv_html_chip_named(mkv_buf *b, const char *family, const char *text, uint64_t v);
/* A timestamp figure (unix ms; family's value in seconds) in a cell: the
 * time in UTC, and how long before now_ms (when not 0), below it with
 * two_lines. */
void kv_html_time(mkv_buf *b, const char *family, int64_t ms, int64_t now_ms, bool two_lines);
/* A time in UTC (unix ms) in a <time> element: the date only when it is
 * not the day of now_ms (0: always, with "UTC"). */
void kv_html_utc(mkv_buf *b, int64_t ms, int64_t now_ms);
/* An attribute, its value escaped: ` name="value"`. */
void kv_html_attr(mkv_buf *b, const char *name, const char *value);
/* A duration of ms milliseconds for a person: 850 ms, 12 s, 3 m 12 s,
 * 2 h 5 m, 3 d 4 h. */
void kv_html_duration(mkv_buf *b, double ms);

#endif
