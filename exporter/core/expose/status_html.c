/* SPDX-License-Identifier: Apache-2.0 */
/* The status page's HTML (kv_status_page.h): text escaped for HTML, the
 * figures with their family and labels as data- attributes, times and
 * durations for a person. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kv_fmt.h"
#include "kv_status_page.h"
#include "kv_utf8.h"

typedef struct mkv_buf B;

/* The code point of a valid sequence of l bytes. */
static uint32_t code_point(const unsigned char *p, size_t l)
{
	if (l == 1)
		return p[0];
	if (l == 2)
		return (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
	if (l == 3)
		return (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
	return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 | (uint32_t)(p[2] & 0x3f) << 6 |
	       (p[3] & 0x3f);
}

/* What HTML does not allow raw in a document (controls but white space,
 * noncharacters: parse errors), and CR, which the parser would turn into a
 * newline. */
static bool html_forbids(uint32_t c)
{
	if (c < 0x20)
		return c != '\t' && c != '\n';
	return (c >= 0x7f && c <= 0x9f) || (c >= 0xfdd0 && c <= 0xfdef) || (c & 0xfffe) == 0xfffe;
}

void kv_html_esc(B *b, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0; /* bytes [run, i) are copied as they are */
	while (i < n) {
		unsigned char c = p[i];
		if (c >= 0x20 && c < 0x7f && c != '&' && c != '<' && c != '>' && c != '"' && c != '\'') {
			i++;
			continue;
		}
		size_t l = c < 0x80 ? 1 : kv_utf8_seq_len(p + i, n - i);
		const char *esc = NULL;
		if (c == '&')
			esc = "&amp;";
		else if (c == '<')
			esc = "&lt;";
		else if (c == '>')
			esc = "&gt;";
		else if (c == '"')
			esc = "&quot;";
		else if (c == '\'')
			esc = "&#39;";
		else if (l == 0 || html_forbids(code_point(p + i, l)))
			esc = "\xef\xbf\xbd", l = l ? l : 1;
		if (!esc) { /* a valid character HTML takes as it is */
			i += l;
			continue;
		}
		mkv_buf_add(b, s + run, i - run);
		mkv_buf_adds(b, esc);
		i += l;
		run = i;
	}
	mkv_buf_add(b, s + run, i - run);
}

void kv_html_escs(B *b, const char *s)
{
	kv_html_esc(b, s, strlen(s));
}

void kv_html_fig_open(B *b, const char *tag, const char *cls, const char *family, const char *ln, const char *lv,
		      const char *v)
{
	/* without printf: a page of 2,000 tenants has 40,000 of these */
	mkv_buf_addc(b, '<');
	mkv_buf_adds(b, tag);
	mkv_buf_adds(b, " class=\"");
	mkv_buf_adds(b, cls);
	mkv_buf_adds(b, "\" data-m=\"");
	mkv_buf_adds(b, family);
	mkv_buf_addc(b, '"');
	if (ln) {
		mkv_buf_adds(b, " data-l=\"");
		mkv_buf_adds(b, ln);
		mkv_buf_addc(b, '=');
		kv_html_escs(b, lv);
		mkv_buf_addc(b, '"');
	}
	mkv_buf_adds(b, " data-v=\"");
	mkv_buf_adds(b, v);
	mkv_buf_adds(b, "\">");
}

/* The digits of t, in groups of three from 10,000 on, apart by U+202F
 * (narrow no-break space): 12 345 678. */
static void grouped(B *b, const char *t)
{
	size_t n = strlen(t);
	if (n < 5) {
		mkv_buf_add(b, t, n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			mkv_buf_adds(b, "\xe2\x80\xaf");
		mkv_buf_addc(b, t[i]);
	}
}

static void u64_fig(B *b, const char *tag, const char *cls, const char *family, const char *ln, const char *lv,
		    uint64_t v)
{
	char t[KV_FMT_MAX + 1];
	*kv_fmt_u64(t, v) = '\0';
	kv_html_fig_open(b, tag, cls, family, ln, lv, t);
	grouped(b, t);
	mkv_buf_adds(b, "</");
	mkv_buf_adds(b, tag);
	mkv_buf_addc(b, '>');
}

void kv_html_u64(B *b, const char *tag, const char *family, const char *ln, const char *lv, uint64_t v)
{
	u64_fig(b, tag, "n", family, ln, lv, v);
}

void kv_html_u64_as(B *b, const char *tag, const char *cls, const char *family, uint64_t v)
{
	u64_fig(b, tag, cls, family, NULL, NULL, v);
}

/* A chip: its word (escaped: a label value; or the program's own text),
 * then the count in bold. */
static void chip(B *b, const char *family, const char *ln, const char *lv, const char *text, uint64_t v)
{
	char t[KV_FMT_MAX + 1];
	*kv_fmt_u64(t, v) = '\0';
	kv_html_fig_open(b, "span", "chip", family, ln, lv, t);
	if (text)
		mkv_buf_adds(b, text);
	else
		kv_html_escs(b, lv);
	mkv_buf_adds(b, " <b>");
	grouped(b, t);
	mkv_buf_adds(b, "</b></span> ");
}

void kv_html_chip(B *b, const char *family, const char *ln, const char *lv, uint64_t v)
{
	chip(b, family, ln, lv, NULL, v);
}

void kv_html_chip_named(B *b, const char *family, const char *text, uint64_t v)
{
	chip(b, family, NULL, NULL, text, v);
}

void kv_html_duration(B *b, double ms)
{
	double s = ms / 1000;
	if (!(ms >= 0)) /* NaN, or the future: a skewed clock */
		ms = s = 0;
	if (ms < 1000)
		mkv_buf_printf(b, "%.0f ms", ms);
	else if (s < 10)
		mkv_buf_printf(b, "%.1f s", s);
	else if (s < 60)
		mkv_buf_printf(b, "%.0f s", floor(s));
	else if (s < 3600)
		mkv_buf_printf(b, "%.0f m %.0f s", floor(s / 60), floor(fmod(s, 60)));
	else if (s < 86400)
		mkv_buf_printf(b, "%.0f h %.0f m", floor(s / 3600), floor(fmod(s, 3600) / 60));
	else
		mkv_buf_printf(b, "%.0f d %.0f h", floor(s / 86400), floor(fmod(s, 86400) / 3600));
}

/* A time in UTC: the whole of it in the datetime attribute, the time of
 * day only when it is the day of now_ms. */
void kv_html_utc(B *b, int64_t ms, int64_t now_ms)
{
	time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000), now = (time_t)(now_ms / 1000);
	struct tm tm, today;
	if (!gmtime_r(&t, &tm) || !gmtime_r(&now, &today)) {
		mkv_buf_adds(b, "?");
		return;
	}
	char day[32], hms[16];
	strftime(day, sizeof(day), "%Y-%m-%d", &tm);
	strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
	mkv_buf_printf(b, "<time datetime=\"%sT%s.%03dZ\">", day, hms, (int)(ms - (int64_t)t * 1000));
	if (!now_ms || tm.tm_year != today.tm_year || tm.tm_yday != today.tm_yday)
		mkv_buf_printf(b, "%s ", day);
	mkv_buf_printf(b, "%s%s</time>", hms, now_ms ? "" : " UTC");
}

void kv_html_time(B *b, const char *family, int64_t ms, int64_t now_ms, bool two_lines)
{
	char v[KV_FMT_MAX + 1];
	*kv_fmt_ms_as_s(v, ms) = '\0';
	kv_html_fig_open(b, "td", "t", family, NULL, NULL, v);
	kv_html_utc(b, ms, now_ms);
	if (now_ms) {
		mkv_buf_adds(b, two_lines ? "<br><small>" : " <small>");
		kv_html_duration(b, (double)(now_ms - ms));
		mkv_buf_adds(b, " ago</small>");
	}
	mkv_buf_adds(b, "</td>");
}

void kv_html_attr(B *b, const char *name, const char *value)
{
	mkv_buf_printf(b, " %s=\"", name);
	kv_html_escs(b, value);
	mkv_buf_addc(b, '"');
}
