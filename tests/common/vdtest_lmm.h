/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the LMM tests: mappings, expected page lists, locked-memory
 * accounting.  Header-only (static inline) so each test takes what it uses.
 */
#ifndef VIADUCT_TESTS_VDTEST_LMM_H
#define VIADUCT_TESTS_VDTEST_LMM_H

#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "viaduct/lmm.h"
#include "vdtest.h"

/* n fresh private anonymous read-write pages, every page touched. */
static inline char *vdt_map_pages(size_t n)
{
	size_t len = n * vdt_page_size();
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	VDT_CHECK(p != MAP_FAILED);
	memset(p, 0x5a, len);
	return p;
}

static inline void vdt_unmap_pages(void *p, size_t n)
{
	VDT_CHECK(munmap(p, n * vdt_page_size()) == 0);
}

/* The page-aligned address of the page holding p. */
static inline uintptr_t vdt_page_of(const void *p)
{
	return (uintptr_t)p & ~(uintptr_t)(vdt_page_size() - 1);
}

/* What lmm_get_pages must return for the page at virtual address va: the
 * physical address from /proc/self/pagemap, or va in virtual mode. */
static inline uint64_t vdt_expected_page(uintptr_t va, int physical)
{
	return physical ? vdt_pfn((const void *)va) * vdt_page_size()
			: (uint64_t)va;
}

/* The handle's page list must be complete and equal, entry by entry, to
 * pagemap (or the virtual addresses, with LMM_PAGES_VIRTUAL set, where
 * frame numbers are unreadable).  Returns the number of pages. */
static inline size_t vdt_check_page_list(lmm_handle_t h)
{
	size_t ps = vdt_page_size(), count = 0, i;
	int physical = vdt_pfns_readable();
	void *start = NULL;
	size_t length = 0;
	unsigned flags = 0;
	uint64_t *pages;

	VDT_CHECK_EQ(lmm_area_get(h, &start, &length), 0);
	VDT_CHECK(length > 0 && length % ps == 0);
	VDT_CHECK_EQ((uintptr_t)start % ps, 0);
	pages = calloc(length / ps, sizeof(*pages));
	VDT_CHECK(pages);
	VDT_CHECK_EQ(lmm_get_pages(h, pages, length / ps, &count, &flags), 0);
	VDT_CHECK_EQ(count, length / ps);
	VDT_CHECK_EQ(!!(flags & LMM_PAGES_VIRTUAL), !physical);
	for (i = 0; i < count; i++) {
		uintptr_t va = (uintptr_t)start + i * ps;
		uint64_t want = vdt_expected_page(va, physical);

		if (pages[i] != want)
			fprintf(stderr, "page %zu (va %#lx): got %#llx, "
				"expected %#llx\n", i, (unsigned long)va,
				(unsigned long long)pages[i],
				(unsigned long long)want);
		VDT_CHECK(pages[i] == want);
	}
	free(pages);
	return count;
}

/* VmLck must have grown by exactly `pages` pages over `base` bytes. */
#define VDT_CHECK_VMLCK(base, pages)                                         \
	VDT_CHECK_EQ(vdt_vmlck_bytes(0) - (base),                            \
		     (long long)(pages) * (long long)vdt_page_size())

/* Remove one capability from this process's effective set (e.g.
 * CAP_SYS_ADMIN to make pagemap frame numbers unreadable).  0 or -errno. */
static inline int vdt_drop_effective_cap(int cap)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[cap / 32].effective &= ~(1u << (cap % 32));
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	return 0;
}

#endif
