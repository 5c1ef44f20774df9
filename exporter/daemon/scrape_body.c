/* SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
/* next_in as const: zlib never writes the input */
#define ZLIB_CONST
#include <zlib.h>

#include "kv_scrape_body.h"

/* A scrape's text is written into fresh memory (41 MB at 10,000 tenants),
 * and each first touch of a 4 KiB page is a fault: ~23 ms on this guest for
 * 41 MB, against 4-11 ms in huge pages, and 6 ms to render it
 * (docs/performance.md, "A scrape's own memory").  So the text and its gzip
 * ask for huge pages over their whole 2 MiB runs before they are written.
 * (The renderer writes the text as served, OpenMetrics too: there is no
 * second copy of it; a second 41 MB of fresh huge pages once made scrapes
 * slower one time in three, a huge page the hypervisor must back first
 * costing up to ~5 ms here.)  glibc maps a block this large on its
 * own and unmaps it on free(); where it did not, the hint only changes the
 * page size of memory the text holds anyway. */
#define HUGE_PAGE ((uintptr_t)2 << 20)

static void want_huge_pages(void *p, size_t len)
{
#ifdef MADV_HUGEPAGE
	uintptr_t from = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	uintptr_t to = ((uintptr_t)p + len) & ~(HUGE_PAGE - 1);
	if (p && to > from)
		madvise((void *)from, to - from, MADV_HUGEPAGE); /* a hint: refused is fine */
#else
	(void)p, (void)len;
#endif
}

void kvd_scrape_room(mkv_buf *b, size_t bytes)
{
	if (bytes && mkv_buf_room(b, bytes))
		want_huge_pages(b->data, b->cap);
}

/* A gzip stream into one allocation that grows when the compressed text
 * outgrows it (it starts at zlib's bound for the text). */
typedef struct gz_out {
	z_stream z;
	char *out;
	size_t cap;
} gz_out;

static bool gz_room(gz_out *g)
{
	size_t cap = g->cap * 2;
	char *out = realloc(g->out, cap);
	if (!out)
		return false;
	want_huge_pages(out, cap);
	g->out = out;
	g->cap = cap;
	g->z.next_out = (Bytef *)out + g->z.total_out;
	g->z.avail_out = (uInt)(cap - g->z.total_out);
	return true;
}

/* Compresses in[0..len) (all of it); with Z_FINISH, ends the stream.
 * Returns false when memory runs out or zlib fails. */
static bool gz_put(gz_out *g, const char *in, size_t len, int flush)
{
	g->z.next_in = (const Bytef *)in;
	g->z.avail_in = (uInt)len;
	int rc;
	do { /* until deflate leaves room: then it has taken all the input */
		if (g->z.avail_out == 0 && !gz_room(g))
			return false;
		rc = deflate(&g->z, flush);
		if (rc == Z_STREAM_ERROR)
			return false;
	} while (g->z.avail_out == 0);
	return flush != Z_FINISH || rc == Z_STREAM_END;
}

/* The text goes to the compressor in pieces of at most this much: zlib
 * counts its input in 32 bits. */
#define PIECE ((size_t)1 << 30)

char *kvd_gzip_text(const char *in, size_t len, size_t *out_len)
{
	gz_out g = {.z = {0}};
	if (deflateInit2(&g.z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	g.cap = deflateBound(&g.z, len);
	g.out = malloc(g.cap);
	bool ok = g.out != NULL;
	if (ok) {
		want_huge_pages(g.out, g.cap); /* only what the compressed text touches is backed */
		g.z.next_out = (Bytef *)g.out;
		g.z.avail_out = (uInt)g.cap;
	}
	const char *p = in, *end = in + len;
	for (; ok && (size_t)(end - p) > PIECE; p += PIECE)
		ok = gz_put(&g, p, PIECE, Z_NO_FLUSH);
	ok = ok && gz_put(&g, p, (size_t)(end - p), Z_FINISH);
	*out_len = g.z.total_out;
	deflateEnd(&g.z);
	if (!ok) {
		free(g.out);
		return NULL;
	}
	return g.out;
}
