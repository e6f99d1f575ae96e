/* SPDX-License-Identifier: MIT */
/*
 * Registrations and the public lock/unlock API (the LMM paper's section 2).
 *
 * Each registration is a handle slot recording its page range; the lock
 * counts live in the LMA tree, whose callbacks make the only mlock/munlock
 * calls: mlock for runs going 0 -> 1, munlock for runs going 1 -> 0.
 * Handles are (generation << 32 | slot + 1); generations start random and
 * change on every release, so stale and forged handles are rejected.
 */
#include "lmm/lmm_internal.h"
#include "util/sys.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct lmm_global lmm_g = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.pagemap_fd = -1,
	.pfn_readable = -1,
	.watch = { .uffd = -1, .stop_fd = -1 },
};

/* The sanitizer runtimes replace mlock/munlock with no-ops; call the kernel
 * directly so locking is real in every build. */
static int sys_mlock(uintptr_t s, size_t len)
{
	return (int)syscall(SYS_mlock, (void *)s, len);
}

static int sys_munlock(uintptr_t s, size_t len)
{
	return (int)syscall(SYS_munlock, (void *)s, len);
}

/* Older kernels lock PROT_NONE memory without faulting it in; newer ones
 * fail with ENOMEM.  Only the former need a residency check per lock. */
static bool mlock_accepts_prot_none(void)
{
	void *p = mmap(NULL, lmm_g.page_size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool accepts;

	if (p == MAP_FAILED)
		return true;
	accepts = sys_mlock((uintptr_t)p, lmm_g.page_size) == 0;
	munmap(p, lmm_g.page_size); /* before any monitor exists */
	return accepts;
}

static void global_init(void)
{
	lmm_g.page_size = (size_t)sysconf(_SC_PAGESIZE);
	lmm_g.check_resident = mlock_accepts_prot_none();
	lma_tree_init(&lmm_g.tree);
	lmm_g.tree.rng = vd_random64() | 1;
	lmm_fork_handlers_install();
	lmm_g.ready = true;
}

void lmm_global_lock(void)
{
	pthread_mutex_lock(&lmm_g.lock);
	if (!lmm_g.ready)
		global_init();
}

void lmm_global_unlock(void)
{
	pthread_mutex_unlock(&lmm_g.lock);
}

/* ---- handle slots ---------------------------------------------------------- */

static struct lmm_reg *slot_at(uint32_t idx)
{
	return &lmm_g.chunks[idx / REG_CHUNK_SLOTS][idx % REG_CHUNK_SLOTS];
}

static int grow_slots(void)
{
	uint32_t c = lmm_g.nr_slots / REG_CHUNK_SLOTS, i;
	struct lmm_reg *chunk;

	if (c >= REG_MAX_CHUNKS)
		return -ENOMEM;
	chunk = mmap(NULL, REG_CHUNK_SLOTS * sizeof(*chunk),
		     PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (chunk == MAP_FAILED)
		return -ENOMEM;
	for (i = 0; i < REG_CHUNK_SLOTS; i++)
		chunk[i].gen = (uint32_t)vd_random64();
	lmm_g.chunks[c] = chunk;
	lmm_g.nr_slots += REG_CHUNK_SLOTS;
	return 0;
}

static struct lmm_reg *slot_alloc(uint32_t *idx)
{
	struct lmm_reg *reg;

	if (!lmm_g.free_head) {
		uint32_t first = lmm_g.nr_slots, i;

		if (grow_slots())
			return NULL;
		/* Push in reverse so low indices are handed out first. */
		for (i = lmm_g.nr_slots; i > first; i--) {
			slot_at(i - 1)->next_free = lmm_g.free_head;
			lmm_g.free_head = i;
		}
	}
	*idx = lmm_g.free_head - 1;
	reg = slot_at(*idx);
	lmm_g.free_head = reg->next_free;
	lmm_g.nr_live++;
	return reg;
}

static void slot_free(struct lmm_reg *reg, uint32_t idx)
{
	reg->state = REG_FREE;
	reg->owner = NULL;
	reg->gen++;
	reg->next_free = lmm_g.free_head;
	lmm_g.free_head = idx + 1;
	lmm_g.nr_live--;
}

static uint32_t slot_index(const struct lmm_reg *reg)
{
	uint32_t c;

	for (c = 0; c < lmm_g.nr_slots / REG_CHUNK_SLOTS; c++) {
		const struct lmm_reg *base = lmm_g.chunks[c];

		if (reg >= base && reg < base + REG_CHUNK_SLOTS)
			return c * REG_CHUNK_SLOTS + (uint32_t)(reg - base);
	}
	abort(); /* not one of ours: a bug, not bad input */
}

struct lmm_reg *lmm_reg_lookup(lmm_handle_t h)
{
	uint64_t idx = (h & 0xffffffffu) - 1;
	struct lmm_reg *reg;

	if (!h || (h & 0xffffffffu) == 0 || idx >= lmm_g.nr_slots)
		return NULL;
	reg = slot_at((uint32_t)idx);
	if (reg->state == REG_FREE || reg->gen != (uint32_t)(h >> 32))
		return NULL;
	return reg;
}

static lmm_handle_t handle_of(const struct lmm_reg *reg, uint32_t idx)
{
	return (uint64_t)reg->gen << 32 | (uint64_t)(idx + 1);
}

/* ---- the mlock side of the tree ------------------------------------------- */

/* munlock that also works across holes (memory already unmapped): on
 * failure, split and retry, so every still-mapped piece is unlocked. */
static void munlock_robust(uintptr_t s, uintptr_t e)
{
	uintptr_t mid;

	if (s >= e)
		return;
	lmm_g.munlock_calls++;
	if (!sys_munlock(s, e - s) || e - s <= lmm_g.page_size)
		return;
	mid = s + (e - s) / 2 / lmm_g.page_size * lmm_g.page_size;
	munlock_robust(s, mid);
	munlock_robust(mid, e);
}

static bool range_mapped(uintptr_t s, uintptr_t e)
{
	return msync((void *)s, e - s, MS_ASYNC) == 0;
}

/* mlock does not fault in PROT_NONE pages; refuse what cannot be backed. */
static bool range_resident(uintptr_t s, uintptr_t e)
{
	unsigned char vec[4096];
	size_t ps = lmm_g.page_size, n, i;

	for (; s < e; s += n * ps) {
		n = (e - s) / ps < sizeof(vec) ? (e - s) / ps : sizeof(vec);
		if (mincore((void *)s, n * ps, vec))
			return false;
		for (i = 0; i < n; i++)
			if (!(vec[i] & 1))
				return false;
	}
	return true;
}

/* mlock's ENOMEM means a hole, the limit, or pages that cannot be faulted
 * in (PROT_NONE, beyond the end of a file).  Locking without faulting
 * (MLOCK_ONFAULT) separates the last from the limit. */
static int mlock_error(int err, uintptr_t s, uintptr_t e)
{
	if (err == EPERM)
		return -EPERM;
	if (err == EINVAL)
		return -EINVAL;
	if (!range_mapped(s, e))
		return -EFAULT;
	if (syscall(SYS_mlock2, (void *)s, e - s, MLOCK_ONFAULT))
		return -ENOMEM;
	munlock_robust(s, e);
	return -EFAULT;
}

static int lock_run(void *ctx, uintptr_t s, uintptr_t e)
{
	(void)ctx;
	lmm_g.mlock_calls++;
	if (sys_mlock(s, e - s)) {
		int err = errno;

		munlock_robust(s, e); /* mlock may have locked a prefix */
		return mlock_error(err, s, e);
	}
	if (lmm_g.check_resident && !range_resident(s, e)) {
		munlock_robust(s, e);
		return -EFAULT;
	}
	if (lmm_watch_active())
		(void)lmm_watch_range(s, e); /* failure: the cache won't cache */
	return 0;
}

static void unlock_run(void *ctx, uintptr_t s, uintptr_t e)
{
	(void)ctx;
	if (lmm_watch_active())
		lmm_unwatch_range(s, e);
	munlock_robust(s, e);
}

static const struct lma_range_ops lock_ops = {
	.lock = lock_run,
	.unlock = unlock_run,
};

/* Unlock callback for revocation: the pages of 'gone' are unmapped already,
 * the kernel dropped their locks and watches with them. */
struct revoke_ctx {
	uintptr_t gone_s, gone_e;
};

static void unlock_outside(void *ctx, uintptr_t s, uintptr_t e)
{
	const struct revoke_ctx *rc = ctx;

	if (s < rc->gone_s)
		unlock_run(NULL, s, e < rc->gone_s ? e : rc->gone_s);
	if (e > rc->gone_e)
		unlock_run(NULL, s > rc->gone_e ? s : rc->gone_e, e);
}

/* ---- registration core ---------------------------------------------------- */

int lmm_request_range(const void *start, size_t length,
		      const lmm_handle_t *handle, uintptr_t *s, uintptr_t *e)
{
	uintptr_t a = (uintptr_t)start, ps = (uintptr_t)sysconf(_SC_PAGESIZE);

	if (!handle || !length)
		return -EINVAL;
	if (a + length < a || a + length + ps - 1 < a + length)
		return -EOVERFLOW;
	*s = a & ~(ps - 1);
	*e = (a + length + ps - 1) & ~(ps - 1);
	return 0;
}

static int add_evicting(uintptr_t s, uintptr_t e)
{
	int err;

	/* Idle cache entries hold locked memory nobody is using: give it
	 * back before reporting RLIMIT_MEMLOCK exhaustion. */
	while ((err = lma_tree_add(&lmm_g.tree, s, e, &lock_ops)) == -ENOMEM &&
	       lmm_cache_evict_one_locked())
		;
	return err;
}

int lmm_register_locked(uintptr_t s, uintptr_t e, struct cache_entry *owner,
			lmm_handle_t *h, struct lmm_reg **out)
{
	struct lmm_reg *reg;
	uint32_t idx;
	int err;

	reg = slot_alloc(&idx);
	if (!reg)
		return -ENOMEM;
	err = add_evicting(s, e);
	if (err) {
		slot_free(reg, idx);
		return err;
	}
	reg->start = s;
	reg->end = e;
	reg->ustart = s;        /* callers that know the bytes narrow it */
	reg->uend = e;
	reg->state = REG_LIVE;
	reg->owner = owner;
	*h = handle_of(reg, idx);
	if (out)
		*out = reg;
	return 0;
}

void lmm_release_locked(struct lmm_reg *reg)
{
	if (reg->state == REG_LIVE)
		(void)lma_tree_sub(&lmm_g.tree, reg->start, reg->end, &lock_ops);
	slot_free(reg, slot_index(reg));
}

static void revoke_one(struct lmm_reg *reg, uintptr_t s, uintptr_t e,
		       bool gone)
{
	struct revoke_ctx rc = { .gone_s = gone ? s : 0, .gone_e = gone ? e : 0 };
	struct lma_range_ops ops = { .unlock = unlock_outside, .ctx = &rc };

	(void)lma_tree_sub(&lmm_g.tree, reg->start, reg->end, &ops);
	reg->state = REG_REVOKED;
	lmm_g.revoked++;
	if (reg->owner)
		lmm_cache_on_revoke(reg->owner);
}

void lmm_revoke_range_locked(uintptr_t s, uintptr_t e, bool gone)
{
	uint32_t i;

	/* A linear scan: events are rare next to lookups; see docs/lmm.md. */
	for (i = 0; i < lmm_g.nr_slots; i++) {
		struct lmm_reg *reg = slot_at(i);

		if (reg->state == REG_LIVE && reg->start < e && s < reg->end)
			revoke_one(reg, s, e, gone);
	}
}

/* Tree visitor: munlock (and unwatch) a run. */
static void unlock_visit(void *ctx, uintptr_t s, uintptr_t e, uint64_t count)
{
	(void)ctx;
	(void)count;
	unlock_run(NULL, s, e);
}

void lmm_release_unaccounted_locked(uintptr_t s, uintptr_t e)
{
	lma_tree_for_each_gap(&lmm_g.tree, s, e, unlock_visit, NULL);
}

void lmm_for_each_reg(void (*fn)(void *ctx, uintptr_t ustart, uintptr_t uend), void *ctx)
{
	for (uint32_t i = 0; i < lmm_g.nr_slots; i++) {
		const struct lmm_reg *reg = slot_at(i);

		if (reg->state == REG_LIVE)
			fn(ctx, reg->ustart, reg->uend);
	}
}

void lmm_for_each_area(lma_visit_fn fn, void *ctx)
{
	lma_tree_for_each(&lmm_g.tree, fn, ctx);
}

static void free_all_slots(void)
{
	uint32_t i;

	for (i = 0; i < lmm_g.nr_slots; i++)
		if (slot_at(i)->state != REG_FREE)
			slot_free(slot_at(i), i);
}

void lmm_reset_child(void)
{
	lmm_cache_reset_child();
	free_all_slots();
	lma_tree_clear(&lmm_g.tree);
	lmm_g.mlock_calls = lmm_g.munlock_calls = lmm_g.revoked = 0;
	lmm_pages_reset();
	lmm_watch_reset_child();
}

/* ---- public API ------------------------------------------------------------- */

int lmm_lock_area(void *start, size_t length, lmm_handle_t *handle)
{
	struct lmm_reg *reg;
	uintptr_t s, e;
	int err;

	err = lmm_request_range(start, length, handle, &s, &e);
	if (err)
		return err;
	lmm_global_lock();
	err = lmm_register_locked(s, e, NULL, handle, &reg);
	if (!err) {
		reg->ustart = (uintptr_t)start;
		reg->uend = (uintptr_t)start + length;
	}
	lmm_global_unlock();
	return err;
}

int lmm_unlock_area(lmm_handle_t handle)
{
	struct lmm_reg *reg;
	int err = 0;

	lmm_global_lock();
	reg = lmm_reg_lookup(handle);
	if (!reg)
		err = -EBADF;
	else if (reg->owner)
		err = -EBUSY;
	else
		lmm_release_locked(reg);
	lmm_global_unlock();
	return err;
}

int lmm_area_get(lmm_handle_t handle, void **start, size_t *length)
{
	struct lmm_reg *reg;
	int err = 0;

	if (!start || !length)
		return -EINVAL;
	lmm_global_lock();
	reg = lmm_reg_lookup(handle);
	if (!reg) {
		err = -EBADF;
	} else {
		*start = (void *)reg->start;
		*length = reg->end - reg->start;
		err = reg->state == REG_REVOKED ? -ESTALE : 0;
	}
	lmm_global_unlock();
	return err;
}

/* The registration behind a handle, if it is live; else -EBADF/-ESTALE. */
static int live_reg(lmm_handle_t handle, struct lmm_reg **out)
{
	struct lmm_reg *reg = lmm_reg_lookup(handle);

	if (!reg)
		return -EBADF;
	if (reg->state == REG_REVOKED)
		return -ESTALE;
	*out = reg;
	return 0;
}

int lmm_get_pages(lmm_handle_t handle, uint64_t *pages, size_t max,
		  size_t *count, unsigned *flags)
{
	struct lmm_reg *reg;
	int err;

	if (!count || (!pages && max))
		return -EINVAL;
	lmm_global_lock();
	err = live_reg(handle, &reg);
	if (!err)
		err = lmm_pages_locked(reg, pages, max, count, flags);
	lmm_global_unlock();
	return err;
}

int lmm_get_blocks(lmm_handle_t handle, struct lmm_block *blocks, size_t max,
		   size_t *count, unsigned *flags)
{
	struct lmm_reg *reg;
	int err;

	if (!count || (!blocks && max))
		return -EINVAL;
	lmm_global_lock();
	err = live_reg(handle, &reg);
	if (!err)
		err = lmm_blocks_locked(reg, blocks, max, count, flags);
	lmm_global_unlock();
	return err;
}

int lmm_cleanup(void)
{
	lmm_global_lock();
	lmm_cache_drop_all_locked();
	lma_tree_for_each(&lmm_g.tree, unlock_visit, NULL);
	lma_tree_clear(&lmm_g.tree);
	free_all_slots();
	lmm_g.mlock_calls = lmm_g.munlock_calls = lmm_g.revoked = 0;
	lmm_watch_stop_locked();
	lmm_global_unlock();
	return 0;
}

int lmm_get_stats(struct lmm_stats *st)
{
	if (!st)
		return -EINVAL;
	lmm_global_lock();
	*st = (struct lmm_stats){
		.registrations = lmm_g.nr_live,
		.areas = lma_tree_nr_areas(&lmm_g.tree),
		.locked_bytes = lma_tree_covered(&lmm_g.tree),
		.mlock_calls = lmm_g.mlock_calls,
		.munlock_calls = lmm_g.munlock_calls,
		.revoked = lmm_g.revoked,
	};
	lmm_global_unlock();
	return 0;
}
