/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "kv_http_strict.h"

bool kvd_http_path_bad(const char *uri)
{
	const char *end = uri + strcspn(uri, "?#");
	for (const char *p = uri; p < end; p++) {
		if (*p != '%')
			continue;
		if (end - p < 3 || !isxdigit((unsigned char)p[1]) || !isxdigit((unsigned char)p[2]) ||
		    (p[1] == '0' && p[2] == '0'))
			return true;
		p += 2;
	}
	return false;
}

typedef struct framing {
	unsigned lengths; /* Content-Length headers */
	const char *length;
	bool conflict;
	const char *coding; /* Transfer-Encoding */
} framing;

static enum MHD_Result framing_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	framing *f = cls;
	(void)kind;
	if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
		f->conflict |= f->lengths++ && strcmp(f->length, value ? value : "");
		f->length = value ? value : "";
	} else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
		f->conflict |= f->coding != NULL;
		f->coding = value ? value : "";
	}
	return MHD_YES;
}

const char *kvd_http_request_problem(struct MHD_Connection *c, const char *version, bool bad_path, unsigned *status)
{
	*status = MHD_HTTP_BAD_REQUEST;
	if (bad_path)
		return "invalid escape in the path (%00, or % without two hex digits)";
	if (!strcmp(version, MHD_HTTP_VERSION_1_1) &&
	    !MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST))
		return "HTTP/1.1 request without Host";
	framing f = {0};
	MHD_get_connection_values(c, MHD_HEADER_KIND, framing_header, &f);
	if (f.conflict || (f.coding && f.lengths))
		return "conflicting Content-Length or Transfer-Encoding headers";
	if (f.coding && strcasecmp(f.coding, "chunked")) {
		*status = MHD_HTTP_NOT_IMPLEMENTED;
		return "unsupported Transfer-Encoding";
	}
	return NULL;
}
