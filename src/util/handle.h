/* SPDX-License-Identifier: MIT */
/*
 * Handles (handle.c).  A handle is not a pointer: it encodes (type,
 * generation, index) into a grow-only table, so a stale or forged handle
 * is detected, never dereferenced.  Objects live in memory that is never
 * unmapped, so a race between destroy and use touches reused memory, not
 * a hole.  Types are small nonzero integers chosen by the user of the
 * table (the VIPL core numbers its objects).
 */
#ifndef VIADUCT_UTIL_HANDLE_H
#define VIADUCT_UTIL_HANDLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct vd_obj {
	uint32_t type;
	_Atomic uint32_t gen;     /* odd while live */
	uint32_t idx;
	uint32_t reserved;
};

/* Zeroed object of `size` bytes (starting with struct vd_obj), live.
 * NULL on -ENOMEM. */
void *vd_obj_new(unsigned type, size_t size);
/* Invalidate every handle to it and recycle the memory. */
void vd_obj_free(void *obj);
void *vd_obj_handle(const void *obj);
/* The live object `handle` names, or NULL. */
void *vd_obj_lookup(const void *handle, unsigned type);
/* 64-bit handle value, for carrying in a queue or shared memory. */
static inline uint64_t vd_obj_handle_bits(const void *obj)
{
	return (uint64_t)(uintptr_t)vd_obj_handle(obj);
}

#endif /* VIADUCT_UTIL_HANDLE_H */
