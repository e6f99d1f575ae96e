/* SPDX-License-Identifier: MIT */
/*
 * viaduct lmm -- the Locked Memory Manager.
 *
 * Registration of arbitrary, overlapping address ranges that *stacks*:
 * mlock(2) does not nest, so the LMM keeps, per process, an ordered tree of
 * Locked Memory Areas (page intervals with a lock count) and calls mlock only
 * for pages whose count goes 0->1 and munlock only for pages going 1->0.
 *
 * Conventions: every function returns 0 on success or a negative errno.
 * All functions are thread-safe.
 *
 *   -EINVAL     NULL output pointer, zero length, unknown flag
 *   -EOVERFLOW  start + length wraps around the address space
 *   -EFAULT     the range is not entirely mapped, or has inaccessible pages
 *   -ENOMEM     RLIMIT_MEMLOCK would be exceeded (or no memory for
 *               bookkeeping); nothing was left locked
 *   -EPERM      locking not permitted (RLIMIT_MEMLOCK is 0, no CAP_IPC_LOCK)
 *   -EBADF      stale, forged, already released or foreign handle
 *   -ESTALE     the registration was revoked because its memory was
 *               unmapped, remapped or discarded (only detected while the
 *               pin-down cache's monitor runs); release it as usual
 *   -EBUSY      lmm_unlock_area() on a handle owned by the pin-down cache
 *               (return it with lmm_cache_put())
 *   -ENOTSUP    the operation is not supported on this system
 *
 * Fork: registrations are not inherited.  In the child every handle is
 * invalid (-EBADF) and the LMM starts empty.  In the parent, registered pages
 * of private mappings are excluded from the child (MADV_DONTFORK for the
 * duration of fork()), so the parent never takes a copy-on-write fault on
 * them and the page lists it handed out stay valid; the child sees those
 * pages as unmapped.  Shared mappings are inherited normally.  See
 * docs/lmm.md.
 */
#ifndef VIADUCT_LMM_H
#define VIADUCT_LMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t lmm_handle_t;

/* Never returned by a successful call. */
#define LMM_HANDLE_INVALID ((lmm_handle_t)0)

/* Set in *flags by lmm_get_pages()/lmm_get_blocks() when physical frame
 * numbers are not readable (no CAP_SYS_ADMIN): the addresses are virtual. */
#define LMM_PAGES_VIRTUAL 0x1u

struct lmm_block {
	uint64_t addr;   /* first byte of the run (physical, or virtual) */
	uint64_t length; /* bytes, a multiple of the page size */
};

/* Lock [start, start+length) (any alignment; the whole pages containing it
 * are locked) and return a new, distinct handle, also for an area that is
 * already locked. */
int lmm_lock_area(void *start, size_t length, lmm_handle_t *handle);

/* Release that one registration; pages stay locked while any other
 * registration covers them. */
int lmm_unlock_area(lmm_handle_t handle);

/* The address of every page of the area, in order (base pages of
 * sysconf(_SC_PAGESIZE) bytes; the area's first byte lies at offset
 * start % pagesize of pages[0]).  Physical addresses where the process may
 * read /proc/self/pagemap frame numbers, otherwise virtual page addresses
 * and LMM_PAGES_VIRTUAL in *flags.  Fills min(max, n) entries and sets
 * *count = n, the number of pages, even when max is smaller (pages may be
 * NULL when max is 0).  flags may be NULL. */
int lmm_get_pages(lmm_handle_t handle, uint64_t *pages, size_t max,
		  size_t *count, unsigned *flags);

/* The same as runs of contiguous pages, for scatter/gather lists.  In
 * virtual mode the area is one run.  Fills min(max, n) blocks and sets
 * *count = n, the number of runs. */
int lmm_get_blocks(lmm_handle_t handle, struct lmm_block *blocks, size_t max,
		   size_t *count, unsigned *flags);

/* The page-aligned range a handle locks. */
int lmm_area_get(lmm_handle_t handle, void **start, size_t *length);

/* Release every registration of the calling process (pin-down cache
 * included; its handles become invalid) and stop the cache's monitor
 * thread.  The LMM stays usable (the monitor restarts on demand). */
int lmm_cleanup(void);

struct lmm_stats {
	uint64_t registrations; /* live handles (cache-owned included) */
	uint64_t areas;         /* LMAs: intervals of equal lock count */
	uint64_t locked_bytes;  /* bytes covered by live registrations */
	uint64_t mlock_calls;   /* since start or the last lmm_cleanup() */
	uint64_t munlock_calls;
	uint64_t revoked;       /* registrations revoked by the monitor */
};
int lmm_get_stats(struct lmm_stats *stats);

/*
 * Pin-down registration cache (Tezuka et al.).  lmm_cache_get() returns a
 * registration covering [start, start+length), reusing a cached one while
 * it is still valid (use-counted); lmm_cache_put() returns it.  The handle
 * works with lmm_get_pages()/lmm_get_blocks()/lmm_area_get(); the area may
 * be larger than asked (whole pages).  Idle entries stay locked until they
 * are evicted (LRU, under an entry and byte budget) or their memory goes
 * away: a userfaultfd monitor sees every munmap, mremap, MADV_DONTNEED /
 * MADV_REMOVE and brk shrink of cached memory, and the next lmm_cache_get()
 * on that address never returns the stale registration.  Where the monitor
 * cannot run (no userfaultfd) or a mapping cannot be watched (regular file
 * mappings), registrations are made per call and released at put: correct,
 * just not cached.  See docs/lmm.md.
 */
int lmm_cache_get(void *start, size_t length, lmm_handle_t *handle);
/* One put per successful get.  Gets of the same memory share one handle,
 * so an extra put is only detected (-EBADF) once no get is outstanding. */
int lmm_cache_put(lmm_handle_t handle);

/* Release every idle cached registration. */
int lmm_cache_flush(void);

/* Budget for idle + in-use entries; 0 keeps the current value.  Defaults:
 * 4096 entries, bytes = half of RLIMIT_MEMLOCK (or 1/4 of RAM when
 * unlimited); environment VIADUCT_LMM_CACHE_MAX_ENTRIES / _MAX_BYTES. */
int lmm_cache_set_limits(size_t max_entries, size_t max_bytes);

enum lmm_cache_monitor {
	LMM_CACHE_MONITOR_NONE = 0,        /* not started yet, or disabled */
	LMM_CACHE_MONITOR_USERFAULTFD = 1,
	LMM_CACHE_MONITOR_UNAVAILABLE = 2, /* caching off: per-call registration */
};

struct lmm_cache_stats {
	uint64_t hits, misses;
	uint64_t evictions;     /* idle entries dropped: budget, memlock, flush */
	uint64_t invalidations; /* entries dropped because memory went away */
	uint64_t uncacheable;   /* gets served without caching */
	uint64_t entries;       /* current entries (idle + in use) */
	uint64_t in_use;        /* entries with a use count > 0 */
	uint64_t bytes;         /* bytes covered by current entries */
	uint64_t max_entries, max_bytes;
	int monitor;            /* enum lmm_cache_monitor */
};
int lmm_cache_get_stats(struct lmm_cache_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* VIADUCT_LMM_H */
