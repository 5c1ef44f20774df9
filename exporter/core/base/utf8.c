/* SPDX-License-Identifier: Apache-2.0 */
#include "kv_utf8.h"

size_t kv_utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	if (c == 0)
		return 0;
	if (c < 0x80)
		return 1;
	size_t len;
	unsigned min;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	unsigned cp = c & (0x3f >> (len - 1));
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

bool mkv_label_value_clean(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t l = kv_utf8_seq_len(p + i, n - i);
		if (!l)
			return false;
		i += l;
	}
	return true;
}
