/* SPDX-License-Identifier: MIT */
/*
 * Description: invalidation torture test of the pin-down cache.  Thousands
 * of rounds of: memory at a fixed address, filled with a pattern, got and
 * put through the cache and checked against /proc/self/pagemap; then the
 * memory goes away in one of nine ways (munmap; mremap away and back,
 * away only, or shrink; MADV_DONTNEED_LOCKED; free() of an mmapped malloc
 * block; brk shrink; mmap MAP_FIXED over it; shmdt + shmat of a new System
 * V segment; munmap of a memfd or shared anonymous mapping; munmap of part
 * of it) and new memory appears at the address.  (System V segments cannot
 * be watched -- shmdt and shmat raise no userfaultfd event -- so the cache
 * must serve them uncached; the checks hold either way.)
 * The next get there must be a miss whose pages match the page tables,
 * never the stale registration, and the invalidation count must rise.  A
 * "thief" faults in fresh pages right after the memory goes away, so the
 * new memory gets other frames and a stale page list would show.  Also:
 * memory going away while its entry is in use (lmm_get_pages -> -ESTALE,
 * put still 0, a new get is a fresh registration).  VmLck must equal the
 * LMM's own count after every round, and everything is released at the end.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <time.h>
#include <unistd.h>

#include "lmmtest.h"
#include "vdtest.h"
#include "viaduct/lmm.h"

#define SLOT_PAGES 4
/* Above the mmap threshold set in main() and larger than the heap's top
 * chunk, which would otherwise serve it. */
#define MALLOC_BYTES (512u * 1024u)

static size_t ps, slot_len;
static char *slot;            /* the fixed address */
static long long baseline;
static unsigned relocated;    /* rounds where the address was taken */

struct tally {
	unsigned rounds, cached, went_away, pfn_changed, same_address;
};

/* What a variant produced: memory, and whether the old memory is gone. */
struct mem {
	char *addr;
	size_t len;
	int shmid;     /* SysV variant: segment id, else -1 */
};

struct variant {
	const char *name;
	int (*create)(struct mem *m);             /* 0, or -1: skip round */
	/* Make m's memory go away and put new memory in its place (in m);
	 * returns whether the old memory really went away. */
	int (*replace)(struct mem *m, unsigned round);
	void (*destroy)(struct mem *m);
	struct tally t;
};

/* ---- memory helpers ------------------------------------------------------ */

static char *map_at(char *want, size_t len)
{
	char *p = mmap(want, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED || p != want) {
		if (p != MAP_FAILED)
			munmap(p, len);
		relocated++;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	VDT_CHECK(p != MAP_FAILED);
	return p;
}

/* Takes an address, not a pointer: it may be one free() gave back. */
static int still_mapped(uintptr_t p, size_t len)
{
	uintptr_t a = p & ~(uintptr_t)(ps - 1);

	return msync((void *)a, len + (p - a), MS_ASYNC) == 0;
}

static void fill(char *p, size_t len, unsigned round)
{
	size_t off;

	for (off = 0; off < len; off += 64)
		p[off] = (char)(round * 31 + off / ps);
}

static void verify_fill(const char *p, size_t len, unsigned round)
{
	size_t off;

	for (off = 0; off < len; off += 64)
		if (p[off] != (char)(round * 31 + off / ps)) {
			fprintf(stderr, "data at +%zu changed\n", off);
			exit(VDT_FAIL);
		}
}

/* Fresh frames for whatever was freed last, so new memory gets others. */
static char *thief_reserve(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	VDT_CHECK(p != MAP_FAILED);
	return p;
}

static void thief_steal(char *p, size_t len)
{
	memset(p, 0x77, len);
}

/* ---- variant: munmap ------------------------------------------------------ */

static int create_anon(struct mem *m)
{
	m->addr = map_at(slot, slot_len);
	m->len = slot_len;
	m->shmid = -1;
	return 0;
}

static void destroy_anon(struct mem *m)
{
	VDT_CHECK_EQ(munmap(m->addr, m->len), 0);
}

static int replace_munmap(struct mem *m, unsigned round)
{
	(void)round;
	VDT_CHECK_EQ(munmap(m->addr, m->len), 0);
	m->addr = map_at(m->addr, m->len);
	return 1;
}

/* ---- variant: mremap ------------------------------------------------------ */

static char *park_somewhere(size_t len)
{
	char *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);

	VDT_CHECK(p != MAP_FAILED);
	return p;
}

/* Away and back (same frames return), away only, or shrink in place. */
static int replace_mremap(struct mem *m, unsigned round)
{
	char *park, *p;

	switch (round / 8 % 3) {
	case 0:
		park = park_somewhere(m->len);
		p = mremap(m->addr, m->len, m->len,
			   MREMAP_MAYMOVE | MREMAP_FIXED, park);
		VDT_CHECK(p == park);
		VDT_CHECK(lmmt_check_vmlck(baseline, "moved away") == 0);
		p = mremap(park, m->len, m->len,
			   MREMAP_MAYMOVE | MREMAP_FIXED, m->addr);
		VDT_CHECK(p == m->addr);
		return 1;
	case 1:
		park = park_somewhere(m->len);
		p = mremap(m->addr, m->len, m->len,
			   MREMAP_MAYMOVE | MREMAP_FIXED, park);
		VDT_CHECK(p == park);
		VDT_CHECK(lmmt_check_vmlck(baseline, "moved away") == 0);
		VDT_CHECK_EQ(munmap(park, m->len), 0);
		m->addr = map_at(m->addr, m->len);
		return 1;
	default:
		p = mremap(m->addr, m->len, m->len - ps, 0);
		VDT_CHECK(p == m->addr);
		VDT_CHECK(lmmt_check_vmlck(baseline, "shrunk") == 0);
		p = map_at(m->addr + m->len - ps, ps);
		if (p != m->addr + m->len - ps) { /* tail taken: start over */
			VDT_CHECK_EQ(munmap(p, ps), 0);
			VDT_CHECK_EQ(munmap(m->addr, m->len - ps), 0);
			m->addr = map_at(slot, m->len);
		}
		return 1;
	}
}

/* ---- variant: MADV_DONTNEED_LOCKED ------------------------------------------ */

static int replace_dontneed_locked(struct mem *m, unsigned round)
{
	(void)round;
	/* Plain MADV_DONTNEED is refused on locked memory... */
	VDT_CHECK_EQ(madvise(m->addr, m->len, MADV_DONTNEED), -1);
	/* ...this one discards it: the next touch faults in new pages. */
	VDT_CHECK_EQ(madvise(m->addr, m->len, MADV_DONTNEED_LOCKED), 0);
	VDT_CHECK(lmmt_check_vmlck(baseline, "discarded") == 0);
	return 1;
}

/* ---- variant: free() of an mmapped malloc block --------------------------- */

static int create_malloc(struct mem *m)
{
	m->addr = malloc(MALLOC_BYTES);
	VDT_CHECK(m->addr);
	m->len = MALLOC_BYTES;
	m->shmid = -1;
	return 0;
}

static void destroy_malloc(struct mem *m)
{
	free(m->addr);
}

static int replace_free(struct mem *m, unsigned round)
{
	uintptr_t old = (uintptr_t)m->addr;
	int gone;

	(void)round;
	free(m->addr);
	/* glibc unmaps the block; a sanitizer's allocator may keep it in
	 * quarantine (then nothing went away and nothing is invalidated). */
	gone = !still_mapped(old, m->len);
	m->addr = malloc(MALLOC_BYTES);
	VDT_CHECK(m->addr);
	return gone;
}

/* ---- variant: brk shrink ---------------------------------------------------- */

static int brk_aligned;

static int create_brk(struct mem *m)
{
	char *cur = sbrk(0);

	if (cur == (char *)-1)
		return -1;
	if (!brk_aligned) {
		size_t pad = (ps - (uintptr_t)cur % ps) % ps;

		if (pad && sbrk((intptr_t)pad) == (void *)-1)
			return -1;
		brk_aligned = 1;
		cur = sbrk(0);
	}
	if ((uintptr_t)cur % ps)
		return -1; /* someone else moved the break: skip */
	m->addr = sbrk((intptr_t)slot_len);
	if (m->addr == (char *)-1)
		return -1;
	m->len = slot_len;
	m->shmid = -1;
	return 0;
}

/* Shrink only when our block is still the top of the heap. */
static int brk_release(struct mem *m)
{
	if ((char *)sbrk(0) != m->addr + m->len)
		return 0;
	VDT_CHECK(sbrk(-(intptr_t)m->len) != (void *)-1);
	return 1;
}

static void destroy_brk(struct mem *m)
{
	if (!brk_release(m))
		fprintf(stderr, "note: heap grew above the brk block: left\n");
}

static int replace_brk(struct mem *m, unsigned round)
{
	char *p;

	(void)round;
	if (!brk_release(m))
		return 0;
	p = sbrk((intptr_t)m->len);
	VDT_CHECK(p != (char *)-1);
	m->addr = p;
	return 1;
}

/* ---- variant: mmap MAP_FIXED over it --------------------------------------- */

static int replace_map_fixed(struct mem *m, unsigned round)
{
	char *p = mmap(m->addr, m->len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	(void)round;
	VDT_CHECK(p == m->addr);
	return 1;
}

/* ---- variant: System V shm, shmdt + shmat ---------------------------------- */

/* A new segment, attached at 'want' if free, removed at once (it lives
 * until detached, so no path leaves it behind). */
static char *attach_new_segment(char *want, size_t len, int *id)
{
	char *p;

	*id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
	VDT_CHECK(*id >= 0);
	p = shmat(*id, want, 0);
	if (p == (char *)-1) {
		relocated++;
		p = shmat(*id, NULL, 0);
	}
	VDT_CHECK_EQ(shmctl(*id, IPC_RMID, NULL), 0);
	VDT_CHECK(p != (char *)-1);
	return p;
}

static int create_shm(struct mem *m)
{
	m->len = slot_len;
	m->addr = attach_new_segment(slot, slot_len, &m->shmid);
	return 0;
}

static void destroy_shm(struct mem *m)
{
	VDT_CHECK_EQ(shmdt(m->addr), 0);
}

/* shmdt + shmat of a new segment, or shmat(SHM_REMAP) over it. */
static int replace_shm(struct mem *m, unsigned round)
{
	char *p;
	int id;

	if (round / 8 % 2) {
		VDT_CHECK_EQ(shmdt(m->addr), 0);
		m->addr = attach_new_segment(m->addr, m->len, &m->shmid);
		return 1;
	}
	id = shmget(IPC_PRIVATE, m->len, IPC_CREAT | 0600);
	VDT_CHECK(id >= 0);
	p = shmat(id, m->addr, SHM_REMAP);
	VDT_CHECK_EQ(shmctl(id, IPC_RMID, NULL), 0);
	VDT_CHECK(p == m->addr);
	m->shmid = id;
	return 1;
}

/* ---- variant: shared memory (memfd or MAP_SHARED|MAP_ANONYMOUS) ------------ */

/* New shared memory at 'want' if free: a memfd or shared anonymous. */
static char *map_shared_at(char *want, size_t len, unsigned round)
{
	int fd = -1, flags = MAP_SHARED | MAP_FIXED_NOREPLACE;
	char *p;

	if (round / 8 % 2) {
		fd = memfd_create("viaduct-torture", MFD_CLOEXEC);
		VDT_CHECK(fd >= 0);
		VDT_CHECK_EQ(ftruncate(fd, (off_t)len), 0);
	} else {
		flags |= MAP_ANONYMOUS;
	}
	p = mmap(want, len, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (p == MAP_FAILED || p != want) {
		if (p != MAP_FAILED)
			munmap(p, len);
		relocated++;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 flags & ~MAP_FIXED_NOREPLACE, fd, 0);
	}
	if (fd >= 0)
		close(fd);
	VDT_CHECK(p != MAP_FAILED);
	return p;
}

static unsigned shared_round;

static int create_shared(struct mem *m)
{
	m->len = slot_len;
	m->shmid = -1;
	m->addr = map_shared_at(slot, slot_len, shared_round++);
	return 0;
}

static int replace_shared(struct mem *m, unsigned round)
{
	VDT_CHECK_EQ(munmap(m->addr, m->len), 0);
	m->addr = map_shared_at(m->addr, m->len, round + 8);
	return 1;
}

/* ---- variant: munmap of part of it ---------------------------------------- */

/* The rest must not be served from the revoked entry either. */
static void expect_fresh_miss(char *p, size_t len, const char *where)
{
	struct lmm_cache_stats s0 = lmmt_cache_stats(), s1;
	lmm_handle_t h;

	VDT_CHECK_EQ(lmm_cache_get(p, len, &h), 0);
	s1 = lmmt_cache_stats();
	if (s1.hits != s0.hits) {
		fprintf(stderr, "%s: get hit a revoked entry\n", where);
		exit(VDT_FAIL);
	}
	VDT_CHECK(lmmt_check_pages(h, p, len, where) == 0);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
}

static int replace_partial(struct mem *m, unsigned round)
{
	size_t hole = 1 + round / 8 % (SLOT_PAGES - 1); /* page 1..3 */
	char *p;

	VDT_CHECK_EQ(munmap(m->addr + hole * ps, ps), 0);
	VDT_CHECK(lmmt_check_vmlck(baseline, "part unmapped") == 0);
	expect_fresh_miss(m->addr, hole * ps, "mapped part before the hole");
	p = map_at(m->addr + hole * ps, ps);
	if (p != m->addr + hole * ps) { /* hole taken: start over */
		VDT_CHECK_EQ(munmap(p, ps), 0);
		VDT_CHECK_EQ(munmap(m->addr, hole * ps), 0);
		if (hole + 1 < SLOT_PAGES)
			VDT_CHECK_EQ(munmap(m->addr + (hole + 1) * ps,
					    (SLOT_PAGES - hole - 1) * ps), 0);
		m->addr = map_at(slot, m->len);
	}
	return 1;
}

static struct variant variants[] = {
	{ "munmap", create_anon, replace_munmap, destroy_anon, { 0 } },
	{ "mremap", create_anon, replace_mremap, destroy_anon, { 0 } },
	{ "MADV_DONTNEED_LOCKED", create_anon, replace_dontneed_locked,
	  destroy_anon, { 0 } },
	{ "free", create_malloc, replace_free, destroy_malloc, { 0 } },
	{ "brk shrink", create_brk, replace_brk, destroy_brk, { 0 } },
	{ "MAP_FIXED over", create_anon, replace_map_fixed, destroy_anon,
	  { 0 } },
	{ "shmdt/shmat", create_shm, replace_shm, destroy_shm, { 0 } },
	{ "memfd/shared munmap", create_shared, replace_shared, destroy_anon,
	  { 0 } },
	{ "partial munmap", create_anon, replace_partial, destroy_anon,
	  { 0 } },
};
#define NR_VARIANTS (sizeof(variants) / sizeof(variants[0]))

/* ---- one round ------------------------------------------------------------ */

static void page_frames(const char *p, uint64_t *pm, size_t n)
{
	VDT_CHECK_EQ(lmmt_pagemap_read(p, pm, n), 0);
}

static int frames_differ(const uint64_t *a, const uint64_t *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((a[i] & LMMT_PM_PFN_MASK) != (b[i] & LMMT_PM_PFN_MASK))
			return 1;
	return 0;
}

static void round_fail(const struct variant *v, unsigned round,
		       const char *what)
{
	fprintf(stderr, "%s, round %u: %s\n", v->name, round, what);
	exit(VDT_FAIL);
}

/* Get, check and put m through the cache; returns the handle and whether
 * the cache kept it (unwatchable memory, System V shm, is served uncached). */
static lmm_handle_t get_put_first(const struct variant *v, struct mem *m,
				  int *cached)
{
	struct lmm_cache_stats s0 = lmmt_cache_stats();
	lmm_handle_t h = LMM_HANDLE_INVALID;

	VDT_CHECK_EQ(lmm_cache_get(m->addr, m->len, &h), 0);
	*cached = lmmt_cache_stats().uncacheable == s0.uncacheable;
	VDT_CHECK(lmmt_check_pages(h, m->addr, m->len, v->name) == 0);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	return h;
}

/* After the memory went away: a miss, a new handle, the current pages. */
static void get_put_fresh(const struct variant *v, unsigned round,
			  struct mem *m, lmm_handle_t old_h, int cached,
			  int gone)
{
	struct lmm_cache_stats s0 = lmmt_cache_stats();
	lmm_handle_t h = LMM_HANDLE_INVALID;

	VDT_CHECK_EQ(lmm_cache_get(m->addr, m->len, &h), 0);
	if (gone && (lmmt_cache_stats().hits != s0.hits ||
		     (cached && h == old_h)))
		round_fail(v, round, "the get after the memory went away "
			   "was a hit (stale registration)");
	if (lmmt_check_pages(h, m->addr, m->len, v->name))
		round_fail(v, round, "page list does not match the page "
			   "tables");
	verify_fill(m->addr, m->len, round + 1);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
}

static void torture_round(struct variant *v, unsigned round)
{
	uint64_t before[LMMT_MAX_PAGES], after[LMMT_MAX_PAGES];
	struct lmm_cache_stats s0;
	struct mem m;
	lmm_handle_t h;
	char *thief, *old;
	int gone, cached;

	if (v->create(&m))
		return;
	fill(m.addr, m.len, round);
	h = get_put_first(v, &m, &cached);
	page_frames(m.addr, before, m.len / ps);

	thief = thief_reserve(m.len + ps);
	s0 = lmmt_cache_stats();
	old = m.addr;
	gone = v->replace(&m, round);
	thief_steal(thief, m.len + ps);
	if (gone && cached &&
	    lmmt_cache_stats().invalidations <= s0.invalidations)
		round_fail(v, round, "memory went away, no invalidation");
	fill(m.addr, m.len, round + 1);
	get_put_fresh(v, round, &m, h, cached, gone);

	page_frames(m.addr, after, m.len / ps);
	v->t.rounds++;
	v->t.went_away += gone;
	v->t.cached += cached;
	v->t.same_address += m.addr == old;
	v->t.pfn_changed += m.addr == old &&
			    frames_differ(before, after, m.len / ps);
	v->destroy(&m);
	VDT_CHECK_EQ(munmap(thief, m.len + ps), 0);
	if (lmmt_check_vmlck(baseline, v->name))
		round_fail(v, round, "VmLck and the LMM disagree");
}

/* ---- memory going away while in use --------------------------------------- */

static void go_away_in_use(char *p, unsigned round)
{
	switch (round % 4) {
	case 0:
		VDT_CHECK_EQ(munmap(p, slot_len), 0);
		break;
	case 1:
		VDT_CHECK_EQ(madvise(p, slot_len, MADV_DONTNEED_LOCKED), 0);
		VDT_CHECK_EQ(munmap(p, slot_len), 0);
		break;
	case 2:
		VDT_CHECK(mmap(p, slot_len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			       0) == p);
		VDT_CHECK_EQ(munmap(p, slot_len), 0);
		break;
	default:
		VDT_CHECK_EQ(munmap(p + ps, ps), 0);
		VDT_CHECK(lmmt_check_vmlck(baseline, "in use, hole") == 0);
		VDT_CHECK_EQ(munmap(p, slot_len), 0);
		break;
	}
}

static void in_use_round(unsigned round)
{
	struct lmm_cache_stats s0, s1;
	struct lmm_stats l0, l1;
	lmm_handle_t h, h2;
	struct lmm_block blk;
	size_t n;
	char *p = map_at(slot, slot_len);

	fill(p, slot_len, round);
	VDT_CHECK_EQ(lmm_cache_get(p, slot_len, &h), 0);
	VDT_CHECK(lmmt_check_pages(h, p, slot_len, "in use") == 0);
	s0 = lmmt_cache_stats();
	l0 = lmmt_stats();
	go_away_in_use(p, round);
	s1 = lmmt_cache_stats();
	l1 = lmmt_stats();
	VDT_CHECK_EQ(lmm_get_pages(h, NULL, 0, &n, NULL), -ESTALE);
	VDT_CHECK_EQ(lmm_get_blocks(h, &blk, 1, &n, NULL), -ESTALE);
	VDT_CHECK_EQ(s1.invalidations, s0.invalidations + 1);
	VDT_CHECK(l1.revoked > l0.revoked);
	VDT_CHECK(lmmt_check_vmlck(baseline, "revoked in use") == 0);

	p = map_at(p, slot_len);
	fill(p, slot_len, round + 1);
	VDT_CHECK_EQ(lmm_cache_get(p, slot_len, &h2), 0);
	VDT_CHECK(h2 != h);
	VDT_CHECK_EQ(lmmt_cache_stats().hits, s1.hits);
	VDT_CHECK(lmmt_check_pages(h2, p, slot_len, "fresh after revoke") == 0);
	/* Releasing the revoked one must not touch the new registration. */
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	VDT_CHECK_EQ(lmm_cache_put(h), -EBADF);
	VDT_CHECK(lmmt_check_pages(h2, p, slot_len, "after old put") == 0);
	VDT_CHECK(lmmt_check_vmlck(baseline, "after old put") == 0);
	VDT_CHECK_EQ(lmm_cache_put(h2), 0);
	VDT_CHECK_EQ(munmap(p, slot_len), 0);
	VDT_CHECK(lmmt_check_vmlck(baseline, "in-use round done") == 0);
}

/* ---- main ----------------------------------------------------------------- */

static void check_nothing_left(void)
{
	struct lmm_cache_stats cs;
	struct lmm_stats st;

	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	cs = lmmt_cache_stats();
	st = lmmt_stats();
	VDT_CHECK_EQ(cs.entries, 0);
	VDT_CHECK_EQ(cs.in_use, 0);
	VDT_CHECK_EQ(cs.bytes, 0);
	VDT_CHECK_EQ(st.registrations, 0);
	VDT_CHECK_EQ(st.locked_bytes, 0);
	VDT_CHECK_EQ(st.areas, 0);
	VDT_CHECK_EQ(lmmt_vmlck(), baseline);
	VDT_CHECK_EQ(lmm_cleanup(), 0);
	VDT_CHECK_EQ(lmmt_vmlck(), baseline);
	VDT_CHECK_EQ(lmmt_vmlck(), 0);
}

static void print_summary(unsigned in_use_rounds, double secs)
{
	size_t i;

	for (i = 0; i < NR_VARIANTS; i++)
		fprintf(stderr, "  %-20s rounds %5u cached %5u went away %5u "
			"same address %5u new frames %5u\n", variants[i].name,
			variants[i].t.rounds, variants[i].t.cached,
			variants[i].t.went_away, variants[i].t.same_address,
			variants[i].t.pfn_changed);
	fprintf(stderr, "  in-use revocations %u; relocations %u; %.2f s; "
		"%s frames\n", in_use_rounds, relocated, secs,
		lmmt_physical() ? "physical" : "virtual (PFNs unreadable)");
}

static void check_variants_ran(void)
{
	size_t i;

	for (i = 0; i < NR_VARIANTS; i++) {
		VDT_CHECK(variants[i].t.rounds > 0);
		/* A variant that never made memory go away tested nothing
		 * (free() under a sanitizer's allocator, which keeps freed
		 * blocks in quarantine, aside). */
		if (!variants[i].t.went_away &&
		    (variants[i].create != create_malloc || !LMMT_SANITIZED)) {
			fprintf(stderr, "%s: memory never went away\n",
				variants[i].name);
			exit(VDT_FAIL);
		}
	}
}

int main(void)
{
	unsigned rounds = lmmt_iterations(3000, 900), r, in_use = 0;
	struct timespec t0, t1;
	char *probe;

	ps = vdt_page_size();
	slot_len = SLOT_PAGES * ps;
	lmmt_watchdog(LMMT_SANITIZED ? 600 : 120);
	/* A fixed threshold: glibc would otherwise raise it after the first
	 * free() and serve the block from the heap. */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024);
	baseline = lmmt_vmlck();
	VDT_CHECK(baseline >= 0);

	probe = mmap(NULL, slot_len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	VDT_CHECK(probe != MAP_FAILED);
	slot = probe;
	{
		lmm_handle_t h;

		VDT_CHECK_EQ(lmm_cache_get(probe, slot_len, &h), 0);
		VDT_CHECK_EQ(lmm_cache_put(h), 0);
	}
	VDT_SKIP_IF(lmmt_cache_stats().monitor != LMM_CACHE_MONITOR_USERFAULTFD,
		    "the cache's userfaultfd monitor is not running");
	VDT_CHECK_EQ(munmap(probe, slot_len), 0);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (r = 0; r < rounds; r++) {
		torture_round(&variants[r % NR_VARIANTS], r);
		if (r % 8 == 7)
			in_use_round(in_use++);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	print_summary(in_use, (double)(t1.tv_sec - t0.tv_sec) +
				      (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	check_variants_ran();
	check_nothing_left();
	return VDT_PASS;
}
