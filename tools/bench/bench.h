/* SPDX-License-Identifier: Apache-2.0 */
/* What the parts of mooncake-kv-bench share. */
#ifndef BENCH_H
#define BENCH_H

/* CLOCK_MONOTONIC, in seconds. */
double bench_mono(void);
/* qsort's order of doubles, ascending. */
int bench_cmp_double(const void *a, const void *b);

/* mooncake-kv-bench render (bench_render.c). */
int bench_render(void);

#endif
