/* SPDX-License-Identifier: MIT */
/*
 * LMM internals shared by lmm.c (registrations), pages.c (page lists),
 * watch.c (userfaultfd monitor), cache.c (pin-down cache) and fork.c.
 *
 * One process-wide mutex, lmm_g.lock, guards everything, the cache
 * included.  One lock on purpose: the monitor must apply an invalidation
 * before any thread can look at the cache again (see watch.c), and the hit
 * path is a single uncontended lock/unlock.  Rule: nothing done under the
 * lock may unmap or discard memory (no free(), no munmap of anything a user
 * could have registered), or the monitor could deadlock; internal memory
 * comes from vd_pool.
 */
#ifndef VIADUCT_LMM_INTERNAL_H
#define VIADUCT_LMM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "lmm/lma_tree.h"
#include "viaduct/lmm.h"

enum reg_state { REG_FREE = 0, REG_LIVE, REG_REVOKED };

struct cache_entry;

/* One registration (handle slot). */
struct lmm_reg {
	uintptr_t start, end;       /* page-aligned locked range */
	uintptr_t ustart, uend;     /* the bytes asked for (a cache entry:
	                             * those of the request that made it) */
	uint32_t gen;               /* must match the handle's */
	uint8_t state;              /* enum reg_state */
	uint32_t next_free;         /* free list link: index + 1, 0 = end */
	struct cache_entry *owner;  /* non-NULL: owned by the pin-down cache */
};

#define REG_CHUNK_SLOTS 4096u
#define REG_MAX_CHUNKS 1024u /* 4 Mi registrations */

struct lmm_watch {
	int uffd;          /* -1 when not running */
	int stop_fd;       /* eventfd: tells the monitor thread to exit */
	int state;         /* enum lmm_cache_monitor */
	pthread_t thread;
};

struct lmm_global {
	pthread_mutex_t lock;
	bool ready;
	size_t page_size;
	struct lma_tree tree;
	struct lmm_reg *chunks[REG_MAX_CHUNKS];
	uint32_t nr_slots;
	uint32_t free_head;        /* index + 1 */
	uint64_t nr_live;          /* slots not free (live or revoked) */
	uint64_t mlock_calls, munlock_calls, revoked;
	int pagemap_fd;            /* -1 until first use */
	int pfn_readable;          /* -1 unknown, 0, 1 */
	bool check_resident;       /* mlock accepts PROT_NONE on this kernel */
	struct lmm_watch watch;
};

extern struct lmm_global lmm_g;

/* lmm.c */
void lmm_global_lock(void);   /* also initialises on first use */
void lmm_global_unlock(void);
struct lmm_reg *lmm_reg_lookup(lmm_handle_t h);
/* Validate a lock/get request and round it to whole pages. */
int lmm_request_range(const void *start, size_t length,
		      const lmm_handle_t *handle, uintptr_t *s, uintptr_t *e);
/* Register [s, e) (page-aligned) under the lock; evicts idle cache entries
 * and retries when RLIMIT_MEMLOCK is exhausted. */
int lmm_register_locked(uintptr_t s, uintptr_t e, struct cache_entry *owner,
			lmm_handle_t *h, struct lmm_reg **out);
/* Drop a registration (live: its locks too) and free its handle. */
void lmm_release_locked(struct lmm_reg *reg);
/* Revoke every live registration overlapping [s, e).  gone: the range is
 * already unmapped (do not munlock inside it). */
void lmm_revoke_range_locked(uintptr_t s, uintptr_t e, bool gone);
/* munlock (and unwatch) the pages of [s, e) no registration counts. */
void lmm_release_unaccounted_locked(uintptr_t s, uintptr_t e);
/* Reset everything without syscalls on the registered memory (fork child). */
void lmm_reset_child(void);
/* Call fn for each live registration's byte range (ustart, uend). */
void lmm_for_each_reg(void (*fn)(void *ctx, uintptr_t ustart, uintptr_t uend), void *ctx);
void lmm_for_each_area(lma_visit_fn fn, void *ctx);

/* pages.c */
int lmm_pages_locked(const struct lmm_reg *reg, uint64_t *pages, size_t max,
		     size_t *count, unsigned *flags);
int lmm_blocks_locked(const struct lmm_reg *reg, struct lmm_block *blocks,
		      size_t max, size_t *count, unsigned *flags);
void lmm_pages_reset(void);

/* watch.c */
int lmm_watch_start_locked(void);
bool lmm_watch_active(void);
int lmm_watch_range(uintptr_t s, uintptr_t e);   /* 0 or -errno */
void lmm_unwatch_range(uintptr_t s, uintptr_t e);
void lmm_watch_reset_child(void);
/* Stop the monitor (lmm_cleanup): it closes its descriptors and exits. */
void lmm_watch_stop_locked(void);

/* cache.c */
void lmm_cache_on_revoke(struct cache_entry *e);
bool lmm_cache_evict_one_locked(void);
void lmm_cache_drop_all_locked(void);
void lmm_cache_reset_child(void);
/* The monitor is gone: drop idle entries, unindex the ones in use. */
void lmm_cache_forget_locked(void);

/* fork.c */
void lmm_fork_handlers_install(void);

#endif
