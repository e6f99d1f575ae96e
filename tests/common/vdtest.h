/* SPDX-License-Identifier: MIT */
/*
 * Minimal test helpers.  A test is a standalone program: exit 0 = pass,
 * 1 = fail, 77 = skip (the feature is missing here; say why on stderr).
 */
#ifndef VIADUCT_TESTS_VDTEST_H
#define VIADUCT_TESTS_VDTEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define VDT_PASS 0
#define VDT_FAIL 1
#define VDT_SKIP 77

#define VDT_CHECK(cond)                                                      \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                            \
			exit(VDT_FAIL);                                      \
		}                                                            \
	} while (0)

/* Compare two integers and print both on failure. */
#define VDT_CHECK_EQ(a, b)                                                   \
	do {                                                                 \
		long long vdt_a_ = (long long)(a), vdt_b_ = (long long)(b);  \
		if (vdt_a_ != vdt_b_) {                                      \
			fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", \
				__FILE__, __LINE__, #a, vdt_a_, #b, vdt_b_); \
			exit(VDT_FAIL);                                      \
		}                                                            \
	} while (0)

#define VDT_SKIP_IF(cond, why)                                               \
	do {                                                                 \
		if (cond) {                                                  \
			fprintf(stderr, "SKIP: %s\n", why);                  \
			exit(VDT_SKIP);                                      \
		}                                                            \
	} while (0)

/* VmLck of /proc/<pid>/status in bytes (pid 0 = self); -1 on error. */
long long vdt_vmlck_bytes(int pid);
/* Raw /proc/self/pagemap entry for the page holding addr; 0 on error. */
uint64_t vdt_pagemap_entry(const void *addr);
/* Physical frame number of addr's page (0 when unreadable/not present). */
uint64_t vdt_pfn(const void *addr);
/* True when this process can read PFNs (privileged). */
int vdt_pfns_readable(void);
size_t vdt_page_size(void);

#endif
