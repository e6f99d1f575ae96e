/* SPDX-License-Identifier: MIT */
#include "util/pool.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

/* Chunks are mapped directly (see pool.h for why not malloc). */
#define POOL_CHUNK_BYTES (64u * 1024u)

struct vd_pool_chunk {
	struct vd_pool_chunk *next;
	size_t bytes;
};

void vd_pool_init(struct vd_pool *p, size_t obj_size)
{
	size_t align = sizeof(void *);

	p->obj_size = (obj_size + align - 1) / align * align;
	p->free_list = NULL;
	p->nr_free = 0;
	p->chunks = NULL;
}

static size_t chunk_header_bytes(const struct vd_pool *p)
{
	size_t h = sizeof(struct vd_pool_chunk);

	return (h + p->obj_size - 1) / p->obj_size * p->obj_size;
}

static int pool_grow(struct vd_pool *p)
{
	size_t bytes = POOL_CHUNK_BYTES, off;
	struct vd_pool_chunk *c;

	if (p->obj_size * 4 > bytes)
		bytes = p->obj_size * 4;
	c = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED)
		return -ENOMEM;
	c->bytes = bytes;
	c->next = p->chunks;
	p->chunks = c;
	for (off = chunk_header_bytes(p); off + p->obj_size <= bytes;
	     off += p->obj_size)
		vd_pool_free(p, (char *)c + off);
	return 0;
}

int vd_pool_reserve(struct vd_pool *p, size_t n)
{
	while (p->nr_free < n)
		if (pool_grow(p))
			return -ENOMEM;
	return 0;
}

void *vd_pool_alloc(struct vd_pool *p)
{
	void *obj;

	if (!p->free_list && pool_grow(p))
		return NULL;
	obj = p->free_list;
	p->free_list = *(void **)obj;
	p->nr_free--;
	return obj;
}

void vd_pool_free(struct vd_pool *p, void *obj)
{
	*(void **)obj = p->free_list;
	p->free_list = obj;
	p->nr_free++;
}

void vd_pool_fini(struct vd_pool *p)
{
	struct vd_pool_chunk *c = p->chunks, *next;

	for (; c; c = next) {
		next = c->next;
		munmap(c, c->bytes);
	}
	vd_pool_init(p, p->obj_size);
}
