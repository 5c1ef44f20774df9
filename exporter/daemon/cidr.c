/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <string.h>

#include "kv_cidr.h"

const char *kvd_cidr_parse(const char *text, kvd_cidr *out)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(text, '/');
	size_t hlen = slash ? (size_t)(slash - text) : strlen(text);
	if (hlen == 0 || hlen >= sizeof(host))
		return "is not an IPv4 or IPv6 address or network (like 10.0.0.0/8, fd00::/8, 192.0.2.7)";
	memcpy(host, text, hlen);
	host[hlen] = '\0';
	memset(out, 0, sizeof(*out));
	unsigned max;
	if (inet_pton(AF_INET, host, out->addr + 12) == 1) {
		out->addr[10] = out->addr[11] = 0xff;
		max = 32;
	} else if (inet_pton(AF_INET6, host, out->addr) == 1) {
		max = 128;
	} else {
		return "is not an IPv4 or IPv6 address or network (like 10.0.0.0/8, fd00::/8, 192.0.2.7)";
	}
	unsigned bits = max;
	if (slash) {
		const char *d = slash + 1;
		bits = 0;
		if (!*d || strlen(d) > 3 || (d[0] == '0' && d[1]))
			return max == 32 ? "has a prefix length that is not a number from 0 to 32"
					 : "has a prefix length that is not a number from 0 to 128";
		for (; *d; d++) {
			if (*d < '0' || *d > '9')
				return max == 32 ? "has a prefix length that is not a number from 0 to 32"
						 : "has a prefix length that is not a number from 0 to 128";
			bits = bits * 10 + (unsigned)(*d - '0');
		}
		if (bits > max)
			return max == 32 ? "has a prefix length that is not a number from 0 to 32"
					 : "has a prefix length that is not a number from 0 to 128";
	}
	out->bits = bits + (128 - max);
	for (unsigned b = out->bits; b < 128; b++)
		if (out->addr[b / 8] & (0x80u >> (b % 8)))
			return "has bits set beyond its prefix length (write the network's first address)";
	return NULL;
}

bool kvd_cidr_match(const kvd_cidr *list, size_t n, const unsigned char addr[16])
{
	for (size_t i = 0; i < n; i++) {
		unsigned whole = list[i].bits / 8, rest = list[i].bits % 8;
		if (memcmp(list[i].addr, addr, whole))
			continue;
		if (rest && ((list[i].addr[whole] ^ addr[whole]) & (unsigned char)(0xffu << (8 - rest))))
			continue;
		return true;
	}
	return false;
}
