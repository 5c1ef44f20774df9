/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "zmqcap.h"

struct zmqcap {
	gzFile f;
	unsigned char *buf;
	size_t cap;
};

zmqcap *zmqcap_open(const char *path)
{
	zmqcap *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->f = gzopen(path, "rb");
	if (!c->f) {
		free(c);
		return NULL;
	}
	return c;
}

void zmqcap_close(zmqcap *c)
{
	if (!c)
		return;
	gzclose(c->f);
	free(c->buf);
	free(c);
}

static int read_u32(gzFile f, uint32_t *v)
{
	unsigned char b[4];
	int n = gzread(f, b, 4);
	if (n == 0)
		return 0;
	if (n != 4)
		return MKV_EINVAL;
	*v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	return 1;
}

int zmqcap_next(zmqcap *c, mkv_frame *frames, size_t *n_frames)
{
	uint32_t n, len[ZMQCAP_MAX_FRAMES];
	int rc = read_u32(c->f, &n);
	if (rc <= 0)
		return rc;
	if (n > ZMQCAP_MAX_FRAMES)
		return MKV_EINVAL;
	/* Frames are read into one buffer, then pointed at: a realloc for a
	 * later frame must not leave earlier pointers dangling. */
	size_t used = 0;
	size_t off[ZMQCAP_MAX_FRAMES];
	for (uint32_t i = 0; i < n; i++) {
		if (read_u32(c->f, &len[i]) != 1)
			return MKV_EINVAL;
		if (used + len[i] > c->cap) {
			size_t ncap = (used + len[i]) * 2;
			unsigned char *b = realloc(c->buf, ncap);
			if (!b)
				return MKV_ENOMEM;
			c->buf = b;
			c->cap = ncap;
		}
		if (len[i] && gzread(c->f, c->buf + used, len[i]) != (int)len[i])
			return MKV_EINVAL;
		off[i] = used;
		used += len[i];
	}
	for (uint32_t i = 0; i < n; i++)
		frames[i] = (mkv_frame){c->buf + off[i], len[i]};
	*n_frames = n;
	return 1;
}
