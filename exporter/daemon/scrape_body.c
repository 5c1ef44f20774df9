/* SPDX-License-Identifier: Apache-2.0 */
#include <pthread.h>
#include <stdbool.h>
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

/* A deflate stream into one allocation that grows when the compressed
 * text outgrows it (it starts at zlib's bound for the text), after `head`
 * bytes kept for the gzip header. */
typedef struct gz_out {
	z_stream z;
	char *out;
	size_t cap, head;
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
	g->z.next_out = (Bytef *)out + g->head + g->z.total_out;
	g->z.avail_out = (uInt)(cap - g->head - g->z.total_out);
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

/* One part of the text as raw deflate at level 1 into a buffer of its own,
 * `head` bytes left free at its start, and the part's CRC-32.  Level 1 by
 * measurement: on a scrape of 10,000 tenants it is 34 times smaller than
 * the text and the fastest of zlib's choices (Huffman-only and Z_RLE are
 * 1.7 times smaller and five times slower; docs/performance.md).  A part
 * that is not the last ends with a sync flush, which ends its last block
 * on a byte without ending the stream, so the next part's blocks follow it
 * as they are. */
typedef struct gz_job {
	const char *in;
	size_t len, head;
	bool last;
	char *out;
	size_t out_len; /* head included */
	uLong crc;
	bool ok;
} gz_job;

static void *gz_part(void *arg)
{
	gz_job *j = arg;
	gz_out g = {.z = {0}, .head = j->head};
	j->ok = false;
	j->out = NULL;
	j->crc = crc32_z(0, Z_NULL, 0);
	if (deflateInit2(&g.z, Z_BEST_SPEED, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	g.cap = j->head + deflateBound(&g.z, j->len) + 8; /* + a sync flush's 5 */
	g.out = malloc(g.cap);
	bool ok = g.out != NULL;
	if (ok) {
		want_huge_pages(g.out, g.cap); /* only what the compressed text touches is backed */
		g.z.next_out = (Bytef *)g.out + j->head;
		g.z.avail_out = (uInt)(g.cap - j->head);
	}
	const char *p = j->in, *end = j->in + j->len;
	for (; ok && (size_t)(end - p) > PIECE; p += PIECE)
		ok = gz_put(&g, p, PIECE, Z_NO_FLUSH);
	ok = ok && gz_put(&g, p, (size_t)(end - p), j->last ? Z_FINISH : Z_SYNC_FLUSH);
	j->out_len = j->head + g.z.total_out;
	deflateEnd(&g.z);
	if (!ok) {
		free(g.out);
		return NULL;
	}
	j->crc = crc32_z(j->crc, (const Bytef *)j->in, j->len);
	j->out = g.out;
	j->ok = true;
	return NULL;
}

/* A text this long or longer is compressed in two halves at once, on two
 * threads, into one gzip member (as pigz does): the first half's deflate
 * blocks, then the second's, which refer to nothing before their own
 * start, the CRC-32s combined.  Every gzip reader takes it, curl's too,
 * which reads only the first of several members.  Below it, a thread's
 * start costs more than half the work saves. */
#define SPLIT_MIN ((size_t)64 << 10)
#define GZ_HEAD   10

static void put_le32(unsigned char *p, uLong v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

char *kvd_gzip_text(const char *in, size_t len, size_t *out_len)
{
	gz_job j[2] = {{.in = in, .len = len, .head = GZ_HEAD, .last = true}};
	if (len >= SPLIT_MIN) {
		j[0].len = len / 2;
		j[0].last = false;
		j[1] = (gz_job){.in = in + j[0].len, .len = len - j[0].len, .last = true};
	}
	pthread_t second;
	bool threaded = j[1].len && pthread_create(&second, NULL, gz_part, &j[1]) == 0;
	gz_part(&j[0]);
	if (threaded)
		pthread_join(second, NULL);
	else if (j[1].len) /* no thread to be had: one after the other */
		gz_part(&j[1]);
	char *out = NULL;
	size_t n = j[0].out_len;
	uLong crc = j[0].crc;
	if (j[0].ok && (!j[1].len || j[1].ok)) {
		/* the whole member in the first part's buffer, cut to its size */
		out = realloc(j[0].out, n + j[1].out_len + 8);
		if (out && j[1].len) {
			memcpy(out + n, j[1].out, j[1].out_len);
			n += j[1].out_len;
			crc = crc32_combine(crc, j[1].crc, (z_off_t)j[1].len);
		}
	}
	if (!out) {
		free(j[0].out);
		free(j[1].out);
		*out_len = 0;
		return NULL;
	}
	free(j[1].out);
	/* RFC 1952: deflate, no name, no time, the fastest level, Unix; then
	 * the CRC-32 and the length modulo 2^32 of the whole text */
	static const unsigned char head[GZ_HEAD] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 3};
	memcpy(out, head, GZ_HEAD);
	put_le32((unsigned char *)out + n, crc);
	put_le32((unsigned char *)out + n + 4, (uLong)(len & 0xffffffffu));
	*out_len = n + 8;
	return out;
}
