/* SPDX-License-Identifier: MIT */
/*
 * Version and error strings shared by every layer (viaduct/viaduct.h).
 *
 * viaduct_strerror() returns only string constants: strerror() may use a
 * static buffer and is not thread-safe, strerrordesc_np() (glibc >= 2.32)
 * returns the constant description or NULL for an unknown code.
 */
#include "viaduct/viaduct.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>

const char *viaduct_version(void)
{
	return VIADUCT_VERSION_STRING;
}

/* The meaning viaduct gives an errno, where it is more precise than the
 * C library's text; NULL otherwise. */
static const char *viaduct_meaning(int errnum)
{
	switch (errnum) {
	case ENOMEM:
		return "out of locked memory: RLIMIT_MEMLOCK would be exceeded "
		       "(see ulimit -l)";
	case EPERM:
		return "memory locking not permitted: RLIMIT_MEMLOCK is 0 and "
		       "no CAP_IPC_LOCK";
	case EBADF:
		return "invalid, stale or already released handle";
	case ESTALE:
		return "registration revoked: its memory was unmapped, "
		       "remapped or discarded";
	case EBUSY:
		return "handle is owned by the pin-down cache; release it with "
		       "lmm_cache_put";
	case EFAULT:
		return "address range not entirely mapped or not accessible";
	case EOVERFLOW:
		return "address range wraps around";
	case ENOTSUP:
		return "not supported on this system";
	default:
		return NULL;
	}
}

const char *viaduct_strerror(int err)
{
	const char *text;

	if (err == 0)
		return "success";
	/* viaduct returns negative codes; a positive one is a caller bug
	 * (an errno passed as is), INT_MIN has no positive counterpart. */
	if (err > 0 || err == INT_MIN)
		return "unknown error (viaduct error codes are negative errno "
		       "values)";
	text = viaduct_meaning(-err);
	if (!text)
		text = strerrordesc_np(-err);
	return text ? text : "unknown error";
}
