/* SPDX-License-Identifier: Apache-2.0 */
/* Requests held to HTTP/1.1 (RFC 9112, RFC 3986) where libmicrohttpd is
 * lenient: it decodes %00 in a path and hands on the text before it (so
 * /state%00x was served as /state, past a proxy's rule for exactly
 * /state), takes an HTTP/1.1 request without Host, two different
 * Content-Lengths, and waits for the body of a transfer coding it does not
 * know.  Each is refused here, with the answer the RFC gives. */
#ifndef KV_HTTP_STRICT_H
#define KV_HTTP_STRICT_H

#include <stdbool.h>

#include <microhttpd.h>

/* The request target as it came (before MHD decodes it) has %00, or a %
 * without two hex digits, before its query. */
bool kvd_http_path_bad(const char *uri);

/* Why a request's line and headers are refused, with *status the answer
 * (400, or 501 for a transfer coding other than chunked), or NULL. */
const char *kvd_http_request_problem(struct MHD_Connection *c, const char *version, bool bad_path, unsigned *status);

#endif
