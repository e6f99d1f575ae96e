/* SPDX-License-Identifier: MIT */
/*
 * Pin-down registration cache (Tezuka et al., IPPS 1998; the MPICH-PM/CLUMP paper).
 *
 * An entry owns one LMM registration and a use count.  Valid entries sit in
 * an interval index (a treap ordered by start, augmented with the largest
 * end in each subtree, answering "which entry contains [a, b)"); idle ones
 * (use count 0) also sit on an LRU list and are evicted under the entry and
 * byte budget, or when RLIMIT_MEMLOCK runs out.  Entries whose memory goes
 * away are dropped by the monitor (watch.c) through lmm_cache_on_revoke(),
 * before any thread can look them up again.  Without a monitor, or for
 * memory it cannot watch, a get registers afresh and the put releases:
 * never a stale hit.
 */
#include "lmm/lmm_internal.h"
#include "viaduct/viaduct.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct cache_entry {
	uintptr_t start, end;
	lmm_handle_t handle;
	struct lmm_reg *reg;
	uint32_t refs;
	bool indexed;                      /* in the index: valid, cacheable */
	struct cache_entry *lru_prev, *lru_next; /* idle list, MRU first */
	struct cache_entry *all_prev, *all_next; /* every entry */
	struct cache_entry *l, *r;         /* index treap */
	uint32_t prio;
	uintptr_t max_end;                 /* subtree */
};

static struct {
	bool ready, disabled;
	struct vd_pool pool;
	struct cache_entry *index;
	struct cache_entry *lru_head, *lru_tail;
	struct cache_entry *all;
	uint64_t entries, bytes, in_use;
	uint64_t max_entries, max_bytes;
	uint64_t hits, misses, evictions, invalidations, uncacheable;
	uint64_t rng;
} cache;

/* ---- configuration -------------------------------------------------------- */


static uint64_t default_max_bytes(void)
{
	struct rlimit rl;
	uint64_t ram = (uint64_t)sysconf(_SC_PHYS_PAGES) *
		       (uint64_t)sysconf(_SC_PAGESIZE);

	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    geteuid() != 0)
		return rl.rlim_cur / 2;
	return ram / 4;
}

/* The budgets from the environment; -EINVAL (already said) for a bad
 * value, which fails every lmm_cache_get rather than be ignored. */
static int cache_init(void)
{
	uint64_t on, entries, max_bytes;

	if (viaduct_param_uint("VIADUCT_LMM_CACHE", 1, &on) ||
	    viaduct_param_uint("VIADUCT_LMM_CACHE_MAX_ENTRIES", 4096, &entries) ||
	    viaduct_param_uint("VIADUCT_LMM_CACHE_MAX_BYTES", default_max_bytes(), &max_bytes))
		return -EINVAL;
	vd_pool_init(&cache.pool, sizeof(struct cache_entry));
	cache.max_entries = entries;
	cache.max_bytes = max_bytes;
	cache.disabled = !on;
	cache.rng = 0x2545f4914f6cdd1dULL ^ (uint64_t)getpid();
	cache.ready = true;
	return 0;
}

/* ---- interval index --------------------------------------------------------- */

static uint32_t next_prio(void)
{
	cache.rng ^= cache.rng << 13;
	cache.rng ^= cache.rng >> 7;
	cache.rng ^= cache.rng << 17;
	return (uint32_t)(cache.rng >> 32);
}

static void fix_max(struct cache_entry *n)
{
	n->max_end = n->end;
	if (n->l && n->l->max_end > n->max_end)
		n->max_end = n->l->max_end;
	if (n->r && n->r->max_end > n->max_end)
		n->max_end = n->r->max_end;
}

/* Total order: by start, ties by address of the entry. */
static bool before(const struct cache_entry *a, const struct cache_entry *b)
{
	return a->start < b->start || (a->start == b->start && a < b);
}

/* Entries before 'key' (inclusive: or equal to it) go to *a. */
static void idx_split(struct cache_entry *n, const struct cache_entry *key,
		      bool inclusive, struct cache_entry **a,
		      struct cache_entry **b)
{
	if (!n) {
		*a = *b = NULL;
		return;
	}
	if (before(n, key) || (inclusive && n == key)) {
		idx_split(n->r, key, inclusive, &n->r, b);
		*a = n;
	} else {
		idx_split(n->l, key, inclusive, a, &n->l);
		*b = n;
	}
	fix_max(n);
}

static struct cache_entry *idx_merge(struct cache_entry *a,
				     struct cache_entry *b)
{
	if (!a || !b)
		return a ? a : b;
	if (a->prio > b->prio) {
		a->r = idx_merge(a->r, b);
		fix_max(a);
		return a;
	}
	b->l = idx_merge(a, b->l);
	fix_max(b);
	return b;
}

static void idx_insert(struct cache_entry *e)
{
	struct cache_entry *a, *b;

	e->l = e->r = NULL;
	e->prio = next_prio();
	fix_max(e);
	idx_split(cache.index, e, false, &a, &b);
	cache.index = idx_merge(idx_merge(a, e), b);
	e->indexed = true;
}

static void idx_remove(struct cache_entry *e)
{
	struct cache_entry *a, *mid, *b;

	idx_split(cache.index, e, false, &a, &mid);
	idx_split(mid, e, true, &mid, &b); /* mid == e */
	cache.index = idx_merge(a, b);
	e->indexed = false;
}

/* Some entry containing [s, e), or NULL. */
static struct cache_entry *idx_find(struct cache_entry *n, uintptr_t s,
				    uintptr_t e)
{
	struct cache_entry *hit;

	if (!n || n->max_end < e)
		return NULL;
	hit = idx_find(n->l, s, e);
	if (hit)
		return hit;
	if (n->start > s) /* n and everything right of it start too late */
		return NULL;
	if (n->end >= e)
		return n;
	return idx_find(n->r, s, e);
}

/* ---- LRU of idle entries ---------------------------------------------------- */

static void lru_push(struct cache_entry *e)
{
	e->lru_prev = NULL;
	e->lru_next = cache.lru_head;
	if (cache.lru_head)
		cache.lru_head->lru_prev = e;
	cache.lru_head = e;
	if (!cache.lru_tail)
		cache.lru_tail = e;
}

static void lru_unlink(struct cache_entry *e)
{
	if (e->lru_prev)
		e->lru_prev->lru_next = e->lru_next;
	else
		cache.lru_head = e->lru_next;
	if (e->lru_next)
		e->lru_next->lru_prev = e->lru_prev;
	else
		cache.lru_tail = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

/* ---- entry life cycle ----------------------------------------------------- */

static void entry_free(struct cache_entry *e)
{
	if (e->all_prev)
		e->all_prev->all_next = e->all_next;
	else
		cache.all = e->all_next;
	if (e->all_next)
		e->all_next->all_prev = e->all_prev;
	cache.entries--;
	cache.bytes -= e->end - e->start;
	vd_pool_free(&cache.pool, e);
}

/* Drop an idle, indexed entry and its registration. */
static void evict(struct cache_entry *e)
{
	lru_unlink(e);
	idx_remove(e);
	lmm_release_locked(e->reg);
	entry_free(e);
	cache.evictions++;
}

bool lmm_cache_evict_one_locked(void)
{
	if (!cache.ready || !cache.lru_tail)
		return false;
	evict(cache.lru_tail);
	return true;
}

static bool over_budget(void)
{
	return cache.entries > cache.max_entries || cache.bytes > cache.max_bytes;
}

/* Evict idle entries down to the budget; false if entries in use alone
 * exceed it (a new entry is then served uncached). */
static bool fit_budget(void)
{
	while (over_budget() && cache.lru_tail)
		evict(cache.lru_tail);
	return !over_budget();
}

void lmm_cache_on_revoke(struct cache_entry *e)
{
	if (e->indexed) {
		idx_remove(e);
		cache.invalidations++;
	}
	if (e->refs)
		return; /* the holder's put frees it */
	lru_unlink(e);
	lmm_release_locked(e->reg); /* revoked: frees the handle only */
	entry_free(e);
}

static struct cache_entry *entry_new(uintptr_t s, uintptr_t e)
{
	struct cache_entry *ce = vd_pool_alloc(&cache.pool);

	if (!ce)
		return NULL;
	memset(ce, 0, sizeof(*ce));
	ce->start = s;
	ce->end = e;
	ce->refs = 1;
	ce->all_next = cache.all;
	if (cache.all)
		cache.all->all_prev = ce;
	cache.all = ce;
	cache.entries++;
	cache.bytes += e - s;
	cache.in_use++;
	return ce;
}

/* Only memory the monitor watches may be cached; the registration (made
 * already) watched every newly locked run, and re-registering the whole
 * range is all-or-nothing in the kernel, so this fails if any part -- e.g.
 * a regular file mapping -- cannot be watched. */
static bool cacheable(uintptr_t s, uintptr_t e)
{
	return !cache.disabled && lmm_watch_active() &&
	       !lmm_watch_range(s, e) && fit_budget();
}

static int cache_miss(uintptr_t s, uintptr_t e, lmm_handle_t *h)
{
	struct cache_entry *ce = entry_new(s, e);
	int err;

	if (!ce)
		return -ENOMEM;
	err = lmm_register_locked(s, e, ce, &ce->handle, &ce->reg);
	if (err) {
		cache.in_use--;
		entry_free(ce);
		return err;
	}
	if (cacheable(s, e))
		idx_insert(ce);
	else
		cache.uncacheable++;
	*h = ce->handle;
	return 0;
}

int lmm_cache_get(void *start, size_t length, lmm_handle_t *handle)
{
	struct cache_entry *ce;
	uintptr_t s, e;
	int err;

	err = lmm_request_range(start, length, handle, &s, &e);
	if (err)
		return err;
	lmm_global_lock();
	if (!cache.ready && cache_init()) {
		lmm_global_unlock();
		return -EINVAL;         /* a bad VIADUCT_LMM_CACHE* value */
	}
	if (!cache.disabled && lmm_g.watch.state == LMM_CACHE_MONITOR_NONE)
		(void)lmm_watch_start_locked(); /* failure: served uncached */
	ce = idx_find(cache.index, s, e);
	if (ce) {
		if (!ce->refs++) {
			lru_unlink(ce);
			cache.in_use++;
		}
		cache.hits++;
		*handle = ce->handle;
	} else {
		cache.misses++;
		err = cache_miss(s, e, handle);
		if (!err) {     /* the bytes fork keeps from the child */
			struct lmm_reg *reg = lmm_reg_lookup(*handle);

			reg->ustart = (uintptr_t)start;
			reg->uend = (uintptr_t)start + length;
		}
	}
	lmm_global_unlock();
	return err;
}

static int put_locked(lmm_handle_t handle)
{
	struct lmm_reg *reg = lmm_reg_lookup(handle);
	struct cache_entry *ce;

	if (!reg)
		return -EBADF;
	ce = reg->owner;
	if (!ce)
		return -EINVAL; /* a plain lmm_lock_area handle */
	if (!ce->refs)
		return -EBADF; /* put without a get: already released */
	if (--ce->refs)
		return 0;
	cache.in_use--;
	if (ce->indexed) {
		lru_push(ce);
		fit_budget();
	} else {
		lmm_release_locked(ce->reg);
		entry_free(ce);
	}
	return 0;
}

int lmm_cache_put(lmm_handle_t handle)
{
	int err;

	lmm_global_lock();
	err = cache.ready ? put_locked(handle) : -EBADF;
	lmm_global_unlock();
	return err;
}

int lmm_cache_flush(void)
{
	lmm_global_lock();
	while (cache.ready && cache.lru_tail)
		evict(cache.lru_tail);
	lmm_global_unlock();
	return 0;
}

int lmm_cache_set_limits(size_t max_entries, size_t max_bytes)
{
	lmm_global_lock();
	if (!cache.ready && cache_init()) {
		lmm_global_unlock();
		return -EINVAL;
	}
	if (max_entries)
		cache.max_entries = max_entries;
	if (max_bytes)
		cache.max_bytes = max_bytes;
	(void)fit_budget(); /* entries in use may keep it over, for now */
	lmm_global_unlock();
	return 0;
}

int lmm_cache_get_stats(struct lmm_cache_stats *st)
{
	if (!st)
		return -EINVAL;
	lmm_global_lock();
	if (!cache.ready && cache_init()) {
		lmm_global_unlock();
		return -EINVAL;
	}
	*st = (struct lmm_cache_stats){
		.hits = cache.hits, .misses = cache.misses,
		.evictions = cache.evictions,
		.invalidations = cache.invalidations,
		.uncacheable = cache.uncacheable,
		.entries = cache.entries, .in_use = cache.in_use,
		.bytes = cache.bytes,
		.max_entries = cache.max_entries, .max_bytes = cache.max_bytes,
		.monitor = lmm_g.watch.state,
	};
	lmm_global_unlock();
	return 0;
}

void lmm_cache_forget_locked(void)
{
	struct cache_entry *ce, *next;

	if (!cache.ready)
		return;
	for (ce = cache.all; ce; ce = next) {
		next = ce->all_next;
		if (ce->indexed)
			idx_remove(ce);
		if (!ce->refs) {
			lru_unlink(ce);
			lmm_release_locked(ce->reg);
			entry_free(ce);
		}
	}
}

/* Every entry, in use or not, with its registration (lmm_cleanup). */
void lmm_cache_drop_all_locked(void)
{
	if (!cache.ready)
		return;
	while (cache.all) {
		lmm_release_locked(cache.all->reg);
		entry_free(cache.all);
	}
	cache.index = NULL;
	cache.lru_head = cache.lru_tail = NULL;
	cache.in_use = 0;
}

void lmm_cache_reset_child(void)
{
	if (!cache.ready)
		return;
	cache.index = NULL;
	cache.all = NULL;
	cache.lru_head = cache.lru_tail = NULL;
	cache.entries = cache.bytes = cache.in_use = 0;
	vd_pool_fini(&cache.pool);
}
