/* SPDX-License-Identifier: Apache-2.0 */
/* Reads a protobuf exposition (length-delimited io.prometheus.client.
 * MetricFamily messages) on stdin with protobuf-c's code generated from
 * Prometheus's metrics.proto, and prints what it holds as the text format
 * would give it: HELP and TYPE, each sample a line (labels as sent, values
 * %.17g), a histogram's classic buckets as _bucket lines (with +Inf from its
 * count), _sum and _count; then its native buckets on a line of their own:
 *   #native NAME{LABELS} SCHEMA ZERO_THRESHOLD ZERO_COUNT INDEX:COUNT,...
 * (each bucket's absolute count, from the spans and deltas).  Exit 1 on
 * anything it cannot decode.  tests/check_proto.py compares. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.pb-c.h"

static void text(const char *s)
{
	for (; *s; s++)
		if (*s == '\\')
			fputs("\\\\", stdout);
		else if (*s == '"')
			fputs("\\\"", stdout);
		else if (*s == '\n')
			fputs("\\n", stdout);
		else
			putchar(*s);
}

static void labels(const Io__Prometheus__Client__Metric *m, const char *le)
{
	if (!m->n_label && !le)
		return;
	putchar('{');
	for (size_t i = 0; i < m->n_label; i++) {
		printf("%s%s=\"", i ? "," : "", m->label[i]->name);
		text(m->label[i]->value);
		putchar('"');
	}
	if (le)
		printf("%sle=\"%s\"", m->n_label ? "," : "", le);
	putchar('}');
}

static void histogram(const char *name, const Io__Prometheus__Client__Metric *m)
{
	const Io__Prometheus__Client__Histogram *h = m->histogram;
	char le[64];
	for (size_t i = 0; i < h->n_bucket; i++) {
		snprintf(le, sizeof(le), "%.17g", h->bucket[i]->upper_bound);
		printf("%s_bucket", name);
		labels(m, le);
		printf(" %llu\n", (unsigned long long)h->bucket[i]->cumulative_count);
	}
	printf("%s_bucket", name);
	labels(m, "+Inf");
	printf(" %llu\n%s_sum", (unsigned long long)h->sample_count, name);
	labels(m, NULL);
	printf(" %.17g\n%s_count", h->sample_sum, name);
	labels(m, NULL);
	printf(" %llu\n", (unsigned long long)h->sample_count);
	if (!h->has_schema)
		return;
	printf("#native %s", name);
	labels(m, NULL);
	printf(" %d %.17g %llu ", h->schema, h->zero_threshold, (unsigned long long)h->zero_count);
	int64_t idx = 0, count = 0;
	size_t d = 0;
	for (size_t s = 0; s < h->n_positive_span; s++) {
		idx += h->positive_span[s]->offset;
		for (uint32_t k = 0; k < h->positive_span[s]->length; k++, idx++) {
			if (d >= h->n_positive_delta) {
				fprintf(stderr, "%s: fewer deltas than the spans hold\n", name);
				exit(1);
			}
			count += h->positive_delta[d++];
			printf("%s%lld:%lld", d > 1 ? "," : "", (long long)idx, (long long)count);
		}
	}
	if (d != h->n_positive_delta || h->n_negative_span || h->n_negative_delta) {
		fprintf(stderr, "%s: deltas and spans disagree\n", name);
		exit(1);
	}
	putchar('\n');
}

int main(void)
{
	size_t cap = 1 << 20, len = 0, got;
	uint8_t *in = malloc(cap);
	while (in && (got = fread(in + len, 1, cap - len, stdin)) > 0)
		if ((len += got) == cap)
			in = realloc(in, cap *= 2);
	if (!in)
		return 1;
	static const char *const types[] = {"counter", "gauge", "summary", "untyped", "histogram", "gaugehistogram"};
	for (size_t at = 0; at < len;) {
		uint64_t n = 0;
		for (int shift = 0; at < len; shift += 7) {
			n |= (uint64_t)(in[at] & 0x7f) << shift;
			if (!(in[at++] & 0x80))
				break;
		}
		if (n > len - at) {
			fprintf(stderr, "a message of %llu bytes, %zu left\n", (unsigned long long)n, len - at);
			return 1;
		}
		Io__Prometheus__Client__MetricFamily *f = io__prometheus__client__metric_family__unpack(NULL, n,
													in + at);
		if (!f) {
			fprintf(stderr, "a message protobuf-c cannot decode at byte %zu\n", at);
			return 1;
		}
		at += n;
		printf("# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, types[f->type]);
		for (size_t i = 0; i < f->n_metric; i++) {
			const Io__Prometheus__Client__Metric *m = f->metric[i];
			if (f->type == IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM && m->histogram) {
				histogram(f->name, m);
				continue;
			}
			double v = m->counter ? m->counter->value : m->gauge ? m->gauge->value : 0;
			if (!(f->type == IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER ? m->counter != NULL
										      : m->gauge != NULL)) {
				fprintf(stderr, "%s: a sample without its type's value\n", f->name);
				return 1;
			}
			printf("%s", f->name);
			labels(m, NULL);
			printf(" %.17g\n", v);
		}
		io__prometheus__client__metric_family__free_unpacked(f, NULL);
	}
	free(in);
	return 0;
}
