/* SPDX-License-Identifier: MIT */
/*
 * Iteration counts for randomised and stress tests.  Sanitizer builds run
 * 5-10x slower, so they get a fraction of the normal count; VDT_SCALE in the
 * environment (a positive factor, e.g. 0.1 or 10) scales any build further.
 */
#ifndef VIADUCT_TESTS_VDTEST_SCALE_H
#define VIADUCT_TESTS_VDTEST_SCALE_H

#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define VDT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define VDT_SANITIZED 1
#endif
#endif
#ifndef VDT_SANITIZED
#define VDT_SANITIZED 0
#endif

/* normal in a plain build, sanitized in an ASan/TSan build; both times
 * VDT_SCALE.  Never less than 1. */
static inline long vdt_iterations(long normal, long sanitized)
{
	const char *env = getenv("VDT_SCALE");
	double n = (double)(VDT_SANITIZED ? sanitized : normal);

	if (env && atof(env) > 0)
		n *= atof(env);
	return n < 1 ? 1 : (long)n;
}

#endif
