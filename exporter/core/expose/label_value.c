/* SPDX-License-Identifier: Apache-2.0 */
/* A label value as the exposition quotes it: backslash, " and newline
 * escaped, and with sanitize every byte that does not start a valid UTF-8
 * character replaced by U+FFFD (kv_render.h). */
#include <string.h>

#include "kv_render.h"
#include "kv_utf8.h"

typedef struct mkv_buf B;

char *kv_label_escape(char *w, const char *s, size_t n, bool sanitize)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		unsigned char c = p[i];
		if (c >= 0x20 && c < 0x80 && c != '\\' && c != '"') { /* the usual byte: copied */
			*w++ = (char)c;
			i++;
			continue;
		}
		const char *esc = c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : NULL;
		size_t l = 1;
		if (!esc && sanitize && (l = kv_utf8_seq_len(p + i, n - i)) == 0)
			esc = "\xef\xbf\xbd", l = 1;
		if (esc) {
			size_t e = strlen(esc);
			memcpy(w, esc, e);
			w += e;
		} else {
			memcpy(w, s + i, l);
			w += l;
		}
		i += l;
	}
	return w;
}

void kv_render_label_value(B *b, const char *s, size_t n, bool sanitize)
{
	char *w = mkv_buf_room(b, KV_ESCAPED_MAX(n));
	if (w)
		mkv_buf_used(b, (size_t)(kv_label_escape(w, s, n, sanitize) - w));
}
