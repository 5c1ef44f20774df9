/* SPDX-License-Identifier: Apache-2.0 */
/* Addresses and networks, IPv4 and IPv6, as --web.login-penalty-exempt
 * takes them: "10.0.0.0/8", "fd00::/8", or one address ("192.0.2.7",
 * "::1").  An IPv4 network is kept IPv4-mapped (::ffff:a.b.c.d), as the
 * HTTP server gives a peer's address, so it matches an IPv4 peer whichever
 * socket family accepted it. */
#ifndef KV_CIDR_H
#define KV_CIDR_H

#include <stdbool.h>
#include <stddef.h>

typedef struct kvd_cidr {
	unsigned char addr[16]; /* IPv4: mapped */
	unsigned bits;          /* prefix length over the 16 bytes: IPv4's /N is 96 + N */
} kvd_cidr;

/* Parses text into out.  Returns NULL, or why not (a static sentence): not
 * an address, a prefix out of range, or bits set beyond the prefix. */
const char *kvd_cidr_parse(const char *text, kvd_cidr *out);
/* Whether addr (16 bytes, IPv4 mapped) is in one of list[0..n). */
bool kvd_cidr_match(const kvd_cidr *list, size_t n, const unsigned char addr[16]);

#endif
