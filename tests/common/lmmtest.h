/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the LMM cache, shm and limits tests: page-list checks
 * against the page tables (areas, blocks, virtual mode), VmLck against the
 * LMM's own count, iteration scaling and a hang watchdog.  Header only
 * (static inline), so a test needs no extra source file to link.
 */
#ifndef VIADUCT_TESTS_LMMTEST_H
#define VIADUCT_TESTS_LMMTEST_H

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vdtest.h"
#include "vdtest_scale.h"
#include "viaduct/lmm.h"

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24 /* Linux 5.18; <asm-generic/mman-common.h> */
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

#define LMMT_SANITIZED VDT_SANITIZED

/* Largest area (in pages) the check helpers handle. */
#define LMMT_MAX_PAGES 256u

/*
 * Iteration count: 'normal' in a plain build, normal / 5 under a sanitizer
 * but never below 'floor'; VDT_SCALE=<factor> scales either
 * (vdtest_scale.h).
 */
static inline unsigned lmmt_iterations(unsigned normal, unsigned floor)
{
	unsigned sanitized = normal / 5 > floor ? normal / 5 : floor;

	return (unsigned)vdt_iterations(normal, sanitized);
}

static inline void lmmt_on_alarm(int sig)
{
	static const char msg[] = "FAIL: watchdog expired: the test hangs\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(VDT_FAIL);
}

/* Fail (instead of hanging forever) after 'seconds'. */
static inline void lmmt_watchdog(unsigned seconds)
{
	signal(SIGALRM, lmmt_on_alarm);
	alarm(seconds);
}

/* One pagemap descriptor per process, opened on first use (make the first
 * call before starting threads). */
static inline int lmmt_pagemap_fd(void)
{
	static int fd = -1;
	static pid_t owner;
	int nfd;

	if (fd >= 0 && owner == getpid())
		return fd;
	nfd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (nfd < 0)
		return -1;
	fd = nfd;
	owner = getpid();
	return fd;
}

/* Raw pagemap entries of n pages from addr's page; 0 or -1. */
static inline int lmmt_pagemap_read(const void *addr, uint64_t *out, size_t n)
{
	size_t ps = vdt_page_size();
	int fd = lmmt_pagemap_fd();
	off_t off = (off_t)((uintptr_t)addr / ps * sizeof(uint64_t));

	if (fd < 0)
		return -1;
	return pread(fd, out, n * sizeof(uint64_t), off) ==
			       (ssize_t)(n * sizeof(uint64_t)) ? 0 : -1;
}

#define LMMT_PM_PRESENT (1ULL << 63)
#define LMMT_PM_PFN_MASK ((1ULL << 55) - 1)

/* Whether pagemap shows this process frame numbers (it decides at open).
 * Probes the caller's own stack page, which is present, so that threads
 * share no written state. */
static inline int lmmt_physical(void)
{
	volatile char probe = 1;
	uint64_t e = 0;

	if (lmmt_pagemap_read((const void *)&probe, &e, 1))
		return 0;
	return (e & LMMT_PM_PRESENT) && (e & LMMT_PM_PFN_MASK);
}

/* Bytes of memory this process has locked, according to the kernel. */
static inline long long lmmt_vmlck(void)
{
	return vdt_vmlck_bytes(0);
}

/*
 * VmLck must equal 'baseline' plus what the LMM says is locked.  The LMM is
 * asked first: a thread returning from munmap only knows the monitor has
 * *read* the event; it applies it (munlock included) under the LMM lock, so
 * any LMM call waits for that to finish.  Not for concurrent use.
 */
static inline int lmmt_check_vmlck(long long baseline, const char *where)
{
	struct lmm_stats st;
	long long v;

	if (lmm_get_stats(&st)) {
		fprintf(stderr, "%s: lmm_get_stats failed\n", where);
		return -1;
	}
	v = lmmt_vmlck();
	if (v != baseline + (long long)st.locked_bytes) {
		fprintf(stderr,
			"%s: VmLck %lld bytes, expected baseline %lld + LMM "
			"locked_bytes %llu\n",
			where, v, baseline, (unsigned long long)st.locked_bytes);
		return -1;
	}
	return 0;
}

/* The page list lmm_get_blocks reports must be the runs of 'pages'. */
static inline int lmmt_check_blocks(lmm_handle_t h, const uint64_t *pages,
				    size_t n, const char *where)
{
	struct lmm_block blocks[LMMT_MAX_PAGES];
	size_t nb = 0, i, b = 0, ps = vdt_page_size();
	unsigned flags = 0;
	int err = lmm_get_blocks(h, blocks, LMMT_MAX_PAGES, &nb, &flags);

	if (err) {
		fprintf(stderr, "%s: lmm_get_blocks: %d\n", where, err);
		return -1;
	}
	for (i = 0; i < n; b++) {
		uint64_t off;

		if (b >= nb || b >= LMMT_MAX_PAGES || !blocks[b].length ||
		    blocks[b].length % ps) {
			fprintf(stderr, "%s: block %zu of %zu is bad\n", where,
				b, nb);
			return -1;
		}
		if (b && blocks[b].addr == blocks[b - 1].addr +
					  blocks[b - 1].length) {
			fprintf(stderr, "%s: blocks %zu and %zu touch (runs "
				"not maximal)\n", where, b - 1, b);
			return -1;
		}
		for (off = 0; off < blocks[b].length; off += ps, i++)
			if (i >= n || blocks[b].addr + off != pages[i]) {
				fprintf(stderr, "%s: block %zu does not match "
					"page %zu\n", where, b, i);
				return -1;
			}
	}
	if (b != nb) {
		fprintf(stderr, "%s: %zu blocks reported, %zu expected\n",
			where, nb, b);
		return -1;
	}
	return 0;
}

/*
 * Check a handle's page list against the page tables: the area must cover
 * [start, start+length); every page must be present and, where PFNs are
 * readable, at the frame pagemap reports (else: its own virtual address
 * with LMM_PAGES_VIRTUAL set).  The block list must agree.  Fills 'out'
 * (may be NULL) with the list.  0, or a message and -1.
 */
static inline int lmmt_check_pages_out(lmm_handle_t h, const void *start,
				       size_t length, uint64_t *out,
				       const char *where)
{
	uint64_t pages[LMMT_MAX_PAGES], pm[LMMT_MAX_PAGES];
	size_t ps = vdt_page_size(), alen = 0, n = 0, i;
	uintptr_t s = (uintptr_t)start & ~(ps - 1);
	uintptr_t e = ((uintptr_t)start + length + ps - 1) & ~(ps - 1);
	unsigned flags = 0;
	void *astart = NULL;
	int err, physical = lmmt_physical();

	err = lmm_area_get(h, &astart, &alen);
	if (err) {
		fprintf(stderr, "%s: lmm_area_get: %d\n", where, err);
		return -1;
	}
	if ((uintptr_t)astart > s || (uintptr_t)astart + alen < e ||
	    alen % ps || alen / ps > LMMT_MAX_PAGES) {
		fprintf(stderr, "%s: area %p+%zu does not cover %p+%zu\n",
			where, astart, alen, start, length);
		return -1;
	}
	err = lmm_get_pages(h, pages, LMMT_MAX_PAGES, &n, &flags);
	if (err || n != alen / ps) {
		fprintf(stderr, "%s: lmm_get_pages: %d, %zu pages of %zu\n",
			where, err, n, alen / ps);
		return -1;
	}
	if (!!(flags & LMM_PAGES_VIRTUAL) == physical) {
		fprintf(stderr, "%s: flags %#x but PFNs %sreadable\n", where,
			flags, physical ? "" : "not ");
		return -1;
	}
	if (lmmt_pagemap_read(astart, pm, n)) {
		fprintf(stderr, "%s: cannot read pagemap\n", where);
		return -1;
	}
	for (i = 0; i < n; i++) {
		uint64_t va = (uintptr_t)astart + i * ps;
		uint64_t want = physical ? (pm[i] & LMMT_PM_PFN_MASK) * ps : va;

		if (!(pm[i] & LMMT_PM_PRESENT) || pages[i] != want) {
			fprintf(stderr,
				"%s: page %zu (va %#llx): LMM says %#llx, page "
				"tables say %#llx (present %d)\n",
				where, i, (unsigned long long)va,
				(unsigned long long)pages[i],
				(unsigned long long)want,
				!!(pm[i] & LMMT_PM_PRESENT));
			return -1;
		}
	}
	if (out)
		memcpy(out, pages, n * sizeof(*out));
	return lmmt_check_blocks(h, pages, n, where);
}

static inline int lmmt_check_pages(lmm_handle_t h, const void *start,
				   size_t length, const char *where)
{
	return lmmt_check_pages_out(h, start, length, NULL, where);
}

/*
 * Whether this process can open a userfaultfd with the events the cache's
 * monitor needs (so the library should manage to start it).
 */
static inline int lmmt_uffd_usable(void)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE |
			    UFFD_FEATURE_EVENT_REMAP,
	};
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	int ok;

	if (fd < 0)
		fd = (int)syscall(SYS_userfaultfd,
				  O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0)
		return 0;
	ok = !ioctl(fd, UFFDIO_API, &api) &&
	     (api.features & UFFD_FEATURE_EVENT_UNMAP);
	close(fd);
	return ok;
}

/* Private anonymous memory of n pages, touched; NULL on failure. */
static inline char *lmmt_map_pages(size_t n)
{
	char *p = mmap(NULL, n * vdt_page_size(), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0x5a, n * vdt_page_size());
	return p;
}

static inline struct lmm_cache_stats lmmt_cache_stats(void)
{
	struct lmm_cache_stats cs;

	memset(&cs, 0, sizeof(cs));
	VDT_CHECK_EQ(lmm_cache_get_stats(&cs), 0);
	return cs;
}

static inline struct lmm_stats lmmt_stats(void)
{
	struct lmm_stats st;

	memset(&st, 0, sizeof(st));
	VDT_CHECK_EQ(lmm_get_stats(&st), 0);
	return st;
}

#endif
