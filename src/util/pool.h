/* SPDX-License-Identifier: MIT */
/*
 * Fixed-size object pool, grow-only, backed by private anonymous mappings.
 *
 * Why not malloc: the LMM and its cache run with their lock held while a
 * userfaultfd monitor may need that lock; free() can trim the heap (brk
 * shrink, munmap), which raises a userfaultfd event and blocks the caller
 * until the monitor reads it -- a deadlock if the caller holds the lock.
 * This pool never unmaps while in use, so allocation and release under the
 * lock never raise an event.
 */
#ifndef VIADUCT_UTIL_POOL_H
#define VIADUCT_UTIL_POOL_H

#include <stddef.h>

struct vd_pool_chunk;

struct vd_pool {
	size_t obj_size;            /* rounded up to pointer alignment */
	void *free_list;            /* singly linked through the object */
	size_t nr_free;
	struct vd_pool_chunk *chunks;
};

void vd_pool_init(struct vd_pool *p, size_t obj_size);
/* Ensure at least n objects can be allocated without failure.  0 or
 * -ENOMEM. */
int vd_pool_reserve(struct vd_pool *p, size_t n);
/* NULL when out of memory. */
void *vd_pool_alloc(struct vd_pool *p);
void vd_pool_free(struct vd_pool *p, void *obj);
/* Unmap every chunk (only when no object is in use). */
void vd_pool_fini(struct vd_pool *p);

#endif
