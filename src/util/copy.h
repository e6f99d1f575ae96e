/* SPDX-License-Identifier: MIT */
/*
 * Copies of message payloads (into and out of message rings, into an
 * eager receive, through a collective's shared segment): 2-256 KiB,
 * from lines another core just wrote or will read next.  glibc copies
 * these sizes with `rep movsb` where the CPU reports it fast (ERMS); in
 * the VMs measured here a plain vector loop was faster: MPI half round
 * trips at 4 and 8 KiB 0.57 -> 0.52 and 0.99 -> 0.86 us, windowed
 * bandwidth at 4 KiB 10.2 -> 11.7 GB/s (docs/bench-mpi.md).  Outside
 * that range memcpy is as good (small copies) or better (non-temporal
 * stores for large ones) -- except where the destination lies 1-63
 * bytes past the source in its page: there `rep movsb` took each load
 * for a read of a store just made (4 KiB aliasing) and copied 32 KiB at
 * 1.8 against 43 GB/s and 300 KB at 1.8 against 34 on an AMD EPYC,
 * where the loop keeps 37.  A buffer from malloc lies 16 bytes past a
 * page boundary from 128 KiB up, so that happens on every copy from a
 * page-aligned buffer into such a one.  The loop takes those at every
 * size: above glibc's non-temporal threshold (which grows with the
 * cache; here about 512 KiB) memcpy would not crawl and was about 10%
 * faster, but where that threshold lies is the machine's.
 *
 * Header-only, so that the MPI library, which sees libviaduct only
 * through its public API, uses the same copy.
 */
#ifndef VIADUCT_UTIL_COPY_H
#define VIADUCT_UTIL_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define VD_COPY_LOOP_MIN 2048u
#define VD_COPY_LOOP_MAX (256u * 1024u)

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("avx2"))) static inline void vd_copy_avx2(char *d, const char *s,
								  size_t n)
{
	size_t i = 0;

	for (; i + 64 <= n; i += 64) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(s + i));
		__m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(s + i + 32));

		_mm256_storeu_si256((__m256i *)(void *)(d + i), a);
		_mm256_storeu_si256((__m256i *)(void *)(d + i + 32), b);
	}
	memcpy(d + i, s + i, n - i);
}

static inline void vd_copy_sse2(char *d, const char *s, size_t n)
{
	size_t i = 0;

	for (; i + 64 <= n; i += 64)
		for (size_t k = 0; k < 64; k += 16)
			_mm_storeu_si128((__m128i *)(void *)(d + i + k),
					 _mm_loadu_si128((const __m128i *)(const void *)(s + i + k)));
	memcpy(d + i, s + i, n - i);
}

static inline bool vd_copy_avx2_ok(void)
{
	/* -1 unknown; relaxed: every thread computes the same answer. */
	static _Atomic int known = -1;
	int v = __atomic_load_n(&known, __ATOMIC_RELAXED);

	if (v < 0) {
		__builtin_cpu_init();
		v = __builtin_cpu_supports("avx2") ? 1 : 0;
		__atomic_store_n(&known, v, __ATOMIC_RELAXED);
	}
	return v;
}
#endif

/* Whether d lies 1-63 bytes past s in its page (see above). */
static inline bool vd_copy_aliases(const void *d, const void *s)
{
	size_t dist = ((size_t)(const char *)d - (size_t)(const char *)s) & 4095u;

	return dist >= 1 && dist < 64;
}

/* memcpy for payloads: d and s do not overlap. */
static inline void vd_copy(void *d, const void *s, size_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
	if (n >= VD_COPY_LOOP_MIN && (n <= VD_COPY_LOOP_MAX || vd_copy_aliases(d, s))) {
		if (vd_copy_avx2_ok())
			vd_copy_avx2(d, s, n);
		else
			vd_copy_sse2(d, s, n);
		return;
	}
#endif
	memcpy(d, s, n);
}

#endif /* VIADUCT_UTIL_COPY_H */
