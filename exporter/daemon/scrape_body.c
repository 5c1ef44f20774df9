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
#ifdef KVD_HAVE_ISAL
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#endif

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
 * and ISA-L count their input in 32 bits. */
#define PIECE ((size_t)1 << 30)

/* One part of the text as raw deflate at the fastest level into a buffer
 * of its own, `head` bytes left free at its start, and the part's CRC-32.
 * A part that is not the last ends with a sync flush, which ends its last
 * block on a byte without ending the stream, so the next part's blocks
 * follow it as they are. */
typedef struct gz_job {
	const char *in;
	size_t len, head;
	bool last;
	enum kvd_deflater with;
	char *out;
	size_t out_len; /* head included */
	uLong crc;
	bool ok;
} gz_job;

/* zlib at level 1, by measurement: on a scrape of 10,000 tenants it is 12
 * (protobuf) to 22 (text) times smaller than the text and the fastest of
 * zlib's choices (Huffman-only and Z_RLE write 7 to 13 times more bytes
 * in 2.5 to 3.5 times the time; docs/performance.md). */
static void part_zlib(gz_job *j)
{
	gz_out g = {.z = {0}, .head = j->head};
	if (deflateInit2(&g.z, Z_BEST_SPEED, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return;
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
		return;
	}
	j->crc = crc32_z(crc32_z(0, Z_NULL, 0), (const Bytef *)j->in, j->len);
	j->out = g.out;
	j->ok = true;
}

#ifdef KVD_HAVE_ISAL
/* ISA-L's igzip at level 1: on a scrape of 10,000 tenants 4 to 5 times
 * zlib's speed, for 6 % more bytes in protobuf and 3 % fewer in text
 * (docs/performance.md).  Its stream (~360 KiB with the level's buffer)
 * is allocated, not on the stack of the thread that serves the scrape. */
typedef struct isal_part {
	struct isal_zstream s;
	size_t used; /* bytes of the output written, head included */
	uint8_t level_buf[ISAL_DEF_LVL1_DEFAULT];
} isal_part;

/* Compresses in[0..len) (all of it) with the stream's flush, ending the
 * stream when `end`; the output grows as zlib's does.  False when memory
 * runs out or ISA-L fails. */
static bool isal_put(isal_part *z, char **out, size_t *cap, const char *in, size_t len, bool end)
{
	struct isal_zstream *s = &z->s;
	s->next_in = (uint8_t *)(uintptr_t)in; /* ISA-L never writes the input */
	s->avail_in = (uint32_t)len;
	s->end_of_stream = end;
	for (;;) {
		if (s->avail_out == 0) {
			char *grown = realloc(*out, *cap * 2);
			if (!grown)
				return false;
			*cap *= 2;
			want_huge_pages(grown, *cap);
			*out = grown;
			size_t room = *cap - z->used;
			s->next_out = (uint8_t *)grown + z->used;
			s->avail_out = room > UINT32_MAX ? UINT32_MAX : (uint32_t)room;
		}
		uint32_t in_before = s->avail_in, out_before = s->avail_out;
		if (isal_deflate(s) != COMP_OK)
			return false;
		z->used += out_before - s->avail_out;
		/* all taken and room left, the stream ended when asked, a
		 * sync flush written whole (its stream waits for a new block) */
		enum isal_zstate_state want = end ? ZSTATE_END : ZSTATE_NEW_HDR;
		if (s->avail_in == 0 && s->avail_out > 0 &&
		    ((s->flush == NO_FLUSH && !end) || s->internal_state.state == want))
			return true;
		if (s->avail_out > 0 && s->avail_in == in_before && s->avail_out == out_before)
			return false; /* no progress with room to write: never loop */
	}
}

/* ISA-L's AVX2 and AVX-512 code (deflate and CRC-32 both) returns with the
 * upper halves of the vector registers in use, and every SSE instruction
 * after it on this thread pays for that: zlib's level 1 of the protobuf
 * scrape took 60 ms after isal_deflate against 25 ms before (this
 * machine, an AMD EPYC guest), and the renderer and the rest of the
 * daemon are SSE code.  VZEROUPPER ends it (an AVX instruction: only
 * where the CPU has AVX, as ISA-L's AVX code does). */
static void vector_upper_clear(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (__builtin_cpu_supports("avx"))
		__asm__ volatile("vzeroupper" ::: "memory");
#endif
}

static void part_isal(gz_job *j)
{
	isal_part *z = malloc(sizeof *z);
	if (!z)
		return;
	isal_deflate_init(&z->s);
	z->s.level = 1;
	z->s.level_buf = z->level_buf;
	z->s.level_buf_size = sizeof z->level_buf;
	z->s.gzip_flag = IGZIP_DEFLATE; /* raw deflate: the header and trailer are ours */
	/* a quarter of the text: a scrape compresses 12 to 34 times; what
	 * does not compress grows it (the tests' random bytes) */
	size_t cap = j->head + j->len / 4 + 4096;
	char *out = malloc(cap);
	bool ok = out != NULL;
	if (ok) {
		want_huge_pages(out, cap);
		size_t room = cap - j->head;
		z->used = j->head;
		z->s.next_out = (uint8_t *)out + j->head;
		z->s.avail_out = room > UINT32_MAX ? UINT32_MAX : (uint32_t)room;
	}
	const char *p = j->in, *end = j->in + j->len;
	z->s.flush = NO_FLUSH;
	for (; ok && (size_t)(end - p) > PIECE; p += PIECE)
		ok = isal_put(z, &out, &cap, p, PIECE, false);
	z->s.flush = j->last ? NO_FLUSH : SYNC_FLUSH;
	ok = ok && isal_put(z, &out, &cap, p, (size_t)(end - p), j->last);
	if (ok) {
		j->out_len = z->used;
		j->crc = crc32_gzip_refl(0, (const unsigned char *)j->in, j->len);
		j->out = out;
		j->ok = true;
	} else {
		free(out);
	}
	free(z);
	vector_upper_clear();
}
#endif

bool kvd_deflater_built(enum kvd_deflater with)
{
#ifdef KVD_HAVE_ISAL
	return with == KVD_DEFLATE_ZLIB || with == KVD_DEFLATE_ISAL;
#else
	return with == KVD_DEFLATE_ZLIB;
#endif
}

static void *gz_part(void *arg)
{
	gz_job *j = arg;
	j->ok = false;
	j->out = NULL;
	j->out_len = 0;
	j->crc = 0;
#ifdef KVD_HAVE_ISAL
	if (j->with == KVD_DEFLATE_ISAL) {
		part_isal(j);
		return NULL;
	}
#endif
	part_zlib(j);
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
#ifdef KVD_HAVE_ISAL
	return kvd_gzip_text_with(in, len, out_len, KVD_DEFLATE_ISAL);
#else
	return kvd_gzip_text_with(in, len, out_len, KVD_DEFLATE_ZLIB);
#endif
}

char *kvd_gzip_text_with(const char *in, size_t len, size_t *out_len, enum kvd_deflater with)
{
	*out_len = 0;
	if (!kvd_deflater_built(with))
		return NULL;
	gz_job j[2] = {{.in = in, .len = len, .head = GZ_HEAD, .last = true, .with = with}};
	if (len >= SPLIT_MIN) {
		j[0].len = len / 2;
		j[0].last = false;
		j[1] = (gz_job){.in = in + j[0].len, .len = len - j[0].len, .last = true, .with = with};
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
