/* SPDX-License-Identifier: MIT */
/*
 * Page and block lists from /proc/self/pagemap (the user-space stand-in for
 * the paper's kiobuf page lists).  Entries are read at call time from
 * locked memory; a frame number reads as 0 without CAP_SYS_ADMIN, in which
 * case the lists hold virtual addresses and LMM_PAGES_VIRTUAL is set.
 */
#include "lmm/lmm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#define PM_PRESENT (1ULL << 63)
#define PM_PFN_MASK ((1ULL << 55) - 1)
#define PAGES_BATCH 512u

static int pagemap_fd(void)
{
	if (lmm_g.pagemap_fd < 0)
		lmm_g.pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	return lmm_g.pagemap_fd;
}

void lmm_pages_reset(void)
{
	/* After fork the inherited descriptor still reads the parent. */
	if (lmm_g.pagemap_fd >= 0)
		close(lmm_g.pagemap_fd);
	lmm_g.pagemap_fd = -1;
	lmm_g.pfn_readable = -1;
}

/* Read n raw entries starting at virtual page address va. */
static int read_entries(uintptr_t va, uint64_t *out, size_t n)
{
	size_t done = 0;
	int fd = pagemap_fd();

	if (fd < 0)
		return -ENOTSUP;
	while (done < n) {
		off_t off = (off_t)((va / lmm_g.page_size + done) * sizeof(*out));
		ssize_t r = pread(fd, out + done, (n - done) * sizeof(*out), off);

		if (r <= 0)
			return r < 0 && errno != EINTR ? -errno : -EIO;
		done += (size_t)r / sizeof(*out);
	}
	return 0;
}

/* Turn raw entries into page addresses in place. */
static int translate(uintptr_t va, uint64_t *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!(e[i] & PM_PRESENT))
			return -EFAULT; /* locked memory is always present */
		if (lmm_g.pfn_readable < 0)
			lmm_g.pfn_readable = (e[i] & PM_PFN_MASK) != 0;
		if (lmm_g.pfn_readable)
			e[i] = (e[i] & PM_PFN_MASK) * lmm_g.page_size;
		else
			e[i] = va + i * lmm_g.page_size;
	}
	return 0;
}

static unsigned list_flags(void)
{
	return lmm_g.pfn_readable == 1 ? 0 : LMM_PAGES_VIRTUAL;
}

/* Visit the area's page addresses in batches. */
typedef int (*batch_fn)(void *ctx, const uint64_t *addrs, size_t n);

static int for_each_batch(const struct lmm_reg *reg, batch_fn fn, void *ctx)
{
	uint64_t buf[PAGES_BATCH];
	uintptr_t va;
	int err;

	for (va = reg->start; va < reg->end; va += PAGES_BATCH * lmm_g.page_size) {
		size_t n = (reg->end - va) / lmm_g.page_size;

		if (n > PAGES_BATCH)
			n = PAGES_BATCH;
		err = read_entries(va, buf, n);
		if (!err)
			err = translate(va, buf, n);
		if (!err)
			err = fn(ctx, buf, n);
		if (err)
			return err;
	}
	return 0;
}

int lmm_pages_locked(const struct lmm_reg *reg, uint64_t *pages, size_t max,
		     size_t *count, unsigned *flags)
{
	size_t n = (reg->end - reg->start) / lmm_g.page_size;
	size_t fill = n < max ? n : max;
	int err;

	/* The user's array doubles as the read buffer. */
	err = fill ? read_entries(reg->start, pages, fill) : 0;
	if (!err && fill)
		err = translate(reg->start, pages, fill);
	if (!err && !fill) {
		uint64_t probe;

		/* Still settle the mode so *flags is right. */
		err = read_entries(reg->start, &probe, 1);
		if (!err)
			err = translate(reg->start, &probe, 1);
	}
	if (err)
		return err;
	*count = n;
	if (flags)
		*flags = list_flags();
	return 0;
}

struct block_build {
	struct lmm_block *blocks;
	size_t max, count;
	uint64_t page;
};

static void block_add_page(struct block_build *b, uint64_t addr)
{
	struct lmm_block *last = b->count && b->count <= b->max ?
				 &b->blocks[b->count - 1] : NULL;

	if (b->count && b->page == addr) { /* contiguous with the last page */
		if (last)
			last->length += lmm_g.page_size;
	} else {
		b->count++;
		if (b->count <= b->max)
			b->blocks[b->count - 1] = (struct lmm_block){
				.addr = addr, .length = lmm_g.page_size };
	}
	b->page = addr + lmm_g.page_size;
}

static int block_batch(void *ctx, const uint64_t *addrs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		block_add_page(ctx, addrs[i]);
	return 0;
}

int lmm_blocks_locked(const struct lmm_reg *reg, struct lmm_block *blocks,
		      size_t max, size_t *count, unsigned *flags)
{
	struct block_build b = { .blocks = blocks, .max = max };
	int err = for_each_batch(reg, block_batch, &b);

	if (err)
		return err;
	*count = b.count;
	if (flags)
		*flags = list_flags();
	return 0;
}
