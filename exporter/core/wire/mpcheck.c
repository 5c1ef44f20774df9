/* SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>

#include "kv_mpcheck.h"

static uint32_t be(const unsigned char *p, int n)
{
	uint32_t v = 0;
	for (int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

bool kv_msgpack_well_formed(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t i = 0;
	size_t pending = 1; /* objects still to read; never above len - i + 1 */

	while (pending) {
		if (i >= len)
			return false;
		unsigned b = p[i++];
		pending--;
		size_t lenbytes = 0; /* bytes of a length field that follows */
		size_t fixed = 0;    /* bytes of value that follow */
		size_t elems = 0;    /* container: objects that follow */
		bool is_map = false, has_ext_type = false;

		if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
			continue; /* fixint, nil, bool */
		if (b <= 0x8f) {
			elems = b & 0x0f;
			is_map = true;
		} else if (b <= 0x9f) {
			elems = b & 0x0f;
		} else if (b <= 0xbf) {
			fixed = b & 0x1f;
		} else {
			switch (b) {
			case 0xc4:
			case 0xd9:
				lenbytes = 1;
				break; /* bin8, str8 */
			case 0xc5:
			case 0xda:
				lenbytes = 2;
				break;
			case 0xc6:
			case 0xdb:
				lenbytes = 4;
				break;
			case 0xc7:
				lenbytes = 1;
				has_ext_type = true;
				break; /* ext8 */
			case 0xc8:
				lenbytes = 2;
				has_ext_type = true;
				break;
			case 0xc9:
				lenbytes = 4;
				has_ext_type = true;
				break;
			case 0xca:
				fixed = 4;
				break; /* float32 */
			case 0xcb:
				fixed = 8;
				break;
			case 0xcc:
			case 0xd0:
				fixed = 1;
				break; /* (u)int8 */
			case 0xcd:
			case 0xd1:
				fixed = 2;
				break;
			case 0xce:
			case 0xd2:
				fixed = 4;
				break;
			case 0xcf:
			case 0xd3:
				fixed = 8;
				break;
			case 0xd4:
				fixed = 2;
				break; /* fixext1..16 */
			case 0xd5:
				fixed = 3;
				break;
			case 0xd6:
				fixed = 5;
				break;
			case 0xd7:
				fixed = 9;
				break;
			case 0xd8:
				fixed = 17;
				break;
			case 0xdc:
				lenbytes = 2;
				break; /* array16/32 */
			case 0xdd:
				lenbytes = 4;
				break;
			case 0xde:
				lenbytes = 2;
				is_map = true;
				break; /* map16/32 */
			case 0xdf:
				lenbytes = 4;
				is_map = true;
				break;
			default:
				return false; /* 0xc1 */
			}
			if (lenbytes) {
				if (len - i < lenbytes)
					return false;
				size_t n = be(p + i, (int)lenbytes);
				i += lenbytes;
				if (b >= 0xdc)
					elems = n;
				else
					fixed = n + has_ext_type;
			}
		}
		if (elems) {
			/* a map holds two objects per element */
			if (is_map && elems > (len - i) / 2)
				return false;
			if (elems > len - i)
				return false;
			pending += is_map ? elems * 2 : elems;
		}
		if (fixed > len - i)
			return false;
		i += fixed;
	}
	return i == len;
}
