/* SPDX-License-Identifier: Apache-2.0 */
/* A program that embeds the core, built against the installed library and
 * its public headers alone (pkg-config mooncake-kv; docs/design.md,
 * "Embedding the core"): it feeds a capture of a publisher's stream to one
 * store, message by message, as a program that received them from a ZMQ
 * socket would, and prints the store's exposition.
 *
 *   scrape_capture CAPTURE.zmqcap
 *
 * A capture (tests/fixtures/upstream/README.md) is a sequence of records,
 * one per ZMQ multipart message in receive order: the number of frames
 * (u32, big-endian), then each frame as its length (u32, big-endian) and its
 * bytes.  No header, no trailer. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mooncake_kv/buf.h>
#include <mooncake_kv/scrape.h>
#include <mooncake_kv/store.h>

#define MAX_FRAMES 16 /* upstream sends 3; more is still a message to judge */

#if MKV_VERSION_NUM < 0x000400
#error "this example needs mooncake-kv 0.4.0 or later"
#endif

/* 1: *v read; 0: the file ended cleanly here; -1: it ended inside a number. */
static int read_u32(FILE *f, uint32_t *v)
{
	unsigned char b[4];
	size_t n = fread(b, 1, sizeof(b), f);
	if (n == 0 && feof(f))
		return 0;
	if (n != sizeof(b))
		return -1;
	*v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	return 1;
}

/* The next message: its frames point into *buf, valid until the next call.
 * 1: a message; 0: the end; -1: a broken capture (why in *why). */
static int next_message(FILE *f, unsigned char **buf, size_t *cap, mkv_frame *frames, size_t *n, const char **why)
{
	uint32_t count, len[MAX_FRAMES];
	size_t off[MAX_FRAMES], used = 0;
	int rc = read_u32(f, &count);
	if (rc <= 0) {
		*why = "it ends inside a record's frame count";
		return rc;
	}
	if (count > MAX_FRAMES) {
		*why = "a record has more frames than any message the publisher sends";
		return -1;
	}
	for (uint32_t i = 0; i < count; i++) {
		if (read_u32(f, &len[i]) != 1) {
			*why = "it ends inside a frame's length";
			return -1;
		}
		if (used + len[i] > *cap) { /* one buffer for all frames: pointed at once all are read */
			size_t ncap = (used + len[i]) * 2;
			unsigned char *b = realloc(*buf, ncap);
			if (!b) {
				*why = "out of memory";
				return -1;
			}
			*buf = b;
			*cap = ncap;
		}
		if (len[i] && fread(*buf + used, 1, len[i], f) != len[i]) {
			*why = "it ends inside a frame";
			return -1;
		}
		off[i] = used;
		used += len[i];
	}
	for (uint32_t i = 0; i < count; i++)
		frames[i] = (mkv_frame){*buf + off[i], len[i]};
	*n = count;
	return 1;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CAPTURE.zmqcap\n", argv[0]);
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		fprintf(stderr, "scrape_capture: cannot open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	/* one store of one master, not polled: its stream alone; the capture's
	 * publisher is Mooncake main's, whose `removed` erases the object */
	mkv_budget budget;
	mkv_budget_init(&budget, 1000, 1000000);
	mkv_store_member member = {.label = NULL, .has_status = false, .dialect = MKV_DIALECT_OBJECT};
	mkv_store_cfg cfg = {.name = "capture", .members = &member, .n_members = 1, .budget = &budget, .seed = 1};
	mkv_store *store = mkv_store_new(&cfg);
	mkv_scrape *scrape = mkv_scrape_new(1);
	if (!store || !scrape) {
		fprintf(stderr, "scrape_capture: out of memory\n");
		return 1;
	}

	unsigned char *buf = NULL;
	size_t cap = 0, n;
	mkv_frame frames[MAX_FRAMES];
	const char *why = NULL;
	int rc;
	mkv_store_note_connect(store, 0, now_ms()); /* the capture's subscriber was connected throughout */
	while ((rc = next_message(f, &buf, &cap, frames, &n, &why)) == 1)
		if (mkv_store_ingest(store, 0, frames, n, now_ms(), NULL) != MKV_OK) {
			fprintf(stderr, "scrape_capture: out of memory: a message's events were lost (counted)\n");
			break;
		}
	fclose(f);
	free(buf);
	if (rc < 0) {
		fprintf(stderr, "scrape_capture: %s is not a whole capture: %s\n", argv[1], why);
		return 1;
	}

	/* a scrape: the copy (under the store's lock, were there threads), then
	 * the text */
	mkv_member_live live = {.backlog = 0};
	mkv_exporter_info info = {
		.version = MKV_VERSION_STRING, .revision = "example", .budget = &budget, .now_ms = now_ms()};
	mkv_buf out;
	mkv_buf_init(&out);
	if (mkv_scrape_store(scrape, 0, store, &live) != MKV_OK || mkv_scrape_render(scrape, &info, &out) != MKV_OK) {
		fprintf(stderr, "scrape_capture: out of memory while rendering\n");
		return 1;
	}
	fwrite(mkv_buf_str(&out), 1, out.len, stdout);
	mkv_buf_free(&out);
	mkv_scrape_free(scrape);
	mkv_store_free(store);
	return 0;
}
