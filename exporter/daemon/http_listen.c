/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mooncake_kv/common.h>

#include "kv_http_listen.h"

int kvd_http_resolve(const char *addr, struct sockaddr_storage *ss, bool *any)
{
	const char *colon = strrchr(addr, ':');
	char host[256];
	size_t hl = (size_t)(colon - addr);
	if (hl >= sizeof(host))
		return MKV_EINVAL;
	memcpy(host, addr, hl);
	host[hl] = '\0';
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end || port < 0 || port > 65535 || colon[1] == '\0')
		return MKV_EINVAL;
	*any = host[0] == '\0';
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
	if (*any) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
		memset(ss, 0, sizeof(*ss));
		a6->sin6_family = AF_INET6;
		a6->sin6_addr = in6addr_any;
		a6->sin6_port = htons((uint16_t)port);
		return MKV_OK;
	}
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return MKV_EINVAL;
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
	return MKV_OK;
}

void kvd_http_ipv4_any(struct sockaddr_storage *ss)
{
	uint16_t port = ((struct sockaddr_in6 *)ss)->sin6_port;
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	memset(ss, 0, sizeof(*ss));
	a4->sin_family = AF_INET;
	a4->sin_addr.s_addr = htonl(INADDR_ANY);
	a4->sin_port = port;
}

/* Binds and listens on ss as MHD does (SO_REUSEADDR; IPV6_V6ONLY unless
 * dual), then closes: 0, or the OS's errno. */
static int try_listen(const struct sockaddr_storage *ss, bool dual)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	int on = 1, v6only = !dual;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (ss->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
	socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	int rc = bind(fd, (const struct sockaddr *)ss, len) == 0 && listen(fd, 1) == 0 ? 0 : errno;
	close(fd);
	return rc;
}

int kvd_http_listen_check(const char *address)
{
	struct sockaddr_storage ss;
	bool any;
	if (kvd_http_resolve(address, &ss, &any) != MKV_OK)
		return -1;
	int rc = try_listen(&ss, any);
	if (rc && any) { /* kvd_http_start's fallback: all IPv4 addresses */
		kvd_http_ipv4_any(&ss);
		rc = try_listen(&ss, false);
	}
	return rc;
}
