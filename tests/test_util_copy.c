/* SPDX-License-Identifier: MIT */
/*
 * util/copy.h: the payload copy equals memcpy at every size around its
 * loop's bounds and chunk (2 KiB, 256 KiB, multiples of 64 and one
 * byte either side), from and to every alignment of a cache line, and
 * writes nothing outside the destination -- on each of its paths (AVX2
 * where the CPU has it, SSE2, memcpy); and it takes its loop for a copy
 * of any size whose destination lies 1-63 bytes past its source in a
 * page, where memcpy's `rep movsb` crawls.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vdtest.h"
#include "util/copy.h"

#define GUARD 64
#define MAXN (VD_COPY_LOOP_MAX + 256)

static uint8_t *src, *dst;

typedef void copy_fn(void *d, const void *s, size_t n);

static void copy_any(void *d, const void *s, size_t n)
{
	vd_copy(d, s, n);
}

#if defined(__x86_64__) && defined(__GNUC__)
static void copy_sse2(void *d, const void *s, size_t n)
{
	vd_copy_sse2(d, s, n);
}

static void copy_avx2(void *d, const void *s, size_t n)
{
	vd_copy_avx2(d, s, n);
}
#endif

/* One copy of n bytes at the given offsets; 0 if exact. */
static int one(copy_fn *f, size_t n, size_t so, size_t doff)
{
	uint8_t *d = dst + GUARD + doff;

	memset(dst, 0xee, GUARD + doff + n + GUARD);     /* all that is checked */
	f(d, src + so, n);
	if (memcmp(d, src + so, n))
		return 1;
	for (size_t i = 0; i < GUARD + doff; i++)
		if (dst[i] != 0xee)
			return 2;
	for (size_t i = 0; i < GUARD; i++)
		if (d[n + i] != 0xee)
			return 2;
	return 0;
}

static void sizes(copy_fn *f, const char *name)
{
	static const size_t base[] = { 0, 1, 63, 64, 65, 2047, 2048, 2049, 4096, 8191, 8192,
				       16384 + 64, 32728, VD_COPY_LOOP_MAX - 64,
				       VD_COPY_LOOP_MAX, VD_COPY_LOOP_MAX + 1 };
	int bad = 0;

	for (size_t b = 0; b < sizeof(base) / sizeof(base[0]); b++)
		for (size_t so = 0; so < 64; so += 7)
			for (size_t doff = 0; doff < 64; doff += 5) {
				int r = one(f, base[b], so, doff);
				if (r && bad++ < 5)
					fprintf(stderr, "%s: %zu bytes, offsets %zu/%zu: %s\n", name,
						base[b], so, doff,
						r == 1 ? "wrong bytes" : "wrote outside");
			}
	/* every size up to and past where memcpy's own small cases end */
	for (size_t n = 0; n <= 130; n++)
		for (size_t so = 0; so < 64; so += 7)
			for (size_t doff = 0; doff < 64; doff += 5) {
				int r = one(f, n, so, doff);
				if (r && bad++ < 5)
					fprintf(stderr, "%s: %zu bytes, offsets %zu/%zu: %s\n", name,
						n, so, doff, r == 1 ? "wrong bytes" : "wrote outside");
			}
	VDT_CHECK_EQ(bad, 0);
	printf("ok: %s\n", name);
}

/* Copies whose destination lies 1-63 bytes past the source in its page
 * take the loop at any size (rep movsb's 4 KiB aliasing): which ones
 * count, and that those beyond the loop's usual range still copy right. */
static void aliasing(void)
{
	size_t big = 2 * VD_COPY_LOOP_MAX + 4096;
	uint8_t *s = aligned_alloc(4096, big + 8192), *d = aligned_alloc(4096, big + 8192);
	static const size_t dist[] = { 0, 1, 16, 63, 64, 2048, 4095 };
	const size_t len[] = { VD_COPY_LOOP_MAX + 1, 300000, big };

	VDT_CHECK(s && d);
	for (size_t i = 0; i < big + 8192; i++)
		s[i] = (uint8_t)(i * 7 + (i >> 9));
	for (size_t k = 0; k < sizeof(dist) / sizeof(dist[0]); k++) {
		bool want = dist[k] >= 1 && dist[k] < 64;

		VDT_CHECK_EQ(vd_copy_aliases(d + 4096 + dist[k], s + 4096), want);
		VDT_CHECK_EQ(vd_copy_aliases(d + dist[k], s), want);
		for (size_t l = 0; l < sizeof(len) / sizeof(len[0]); l++) {
			memset(d, 0xee, big + 8192);
			vd_copy(d + dist[k], s, len[l]);
			VDT_CHECK(memcmp(d + dist[k], s, len[l]) == 0);
			VDT_CHECK(dist[k] == 0 || d[dist[k] - 1] == 0xee);
			VDT_CHECK(d[dist[k] + len[l]] == 0xee);
		}
	}
	free(s);
	free(d);
	printf("ok: copies 1-63 bytes past their source's page offset\n");
}

int main(void)
{
	src = malloc(MAXN + 64);
	dst = malloc(MAXN + 3 * GUARD);
	VDT_CHECK(src && dst);
	for (size_t i = 0; i < MAXN + 64; i++)
		src[i] = (uint8_t)(i * 131 + (i >> 8));
	sizes(copy_any, "vd_copy");
	aliasing();
#if defined(__x86_64__) && defined(__GNUC__)
	sizes(copy_sse2, "the SSE2 loop");
	if (vd_copy_avx2_ok())
		sizes(copy_avx2, "the AVX2 loop");
	else
		printf("skip: no AVX2 on this CPU\n");
#endif
	free(src);
	free(dst);
	return 0;
}
