/* SPDX-License-Identifier: MIT */
/*
 * Description: the public LMM API on good input (include/viaduct/lmm.h).
 *
 * - stacking: 2000 random lock/unlock steps over a 256-page buffer; after
 *   every step VmLck, lmm_get_stats() (registrations, locked_bytes, areas)
 *   and every live area equal a per-page model;
 * - the same range locked twice: distinct handles, locked until both go;
 * - any alignment locks whole pages;
 * - lmm_get_pages() against /proc/self/pagemap (or virtual addresses with
 *   LMM_PAGES_VIRTUAL where frame numbers are unreadable, also forced in a
 *   child without CAP_SYS_ADMIN), short arrays, max 0;
 * - lmm_get_blocks() as the maximal contiguous runs of the page list;
 * - lmm_area_get(), lmm_get_stats() values and mlock call counts;
 * - lmm_cleanup() releases everything and invalidates every handle;
 * - a System V segment and memfd mappings (twice mapped: same pages).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "viaduct/lmm.h"
#include "vdtest.h"
#include "vdtest_lmm.h"
#include "vdtest_scale.h"

static long long g_vmlck_base; /* VmLck before the first lock */
static size_t ps;

/* Nothing of ours locked, no registration, no area. */
static void check_all_released(void)
{
	struct lmm_stats st;

	VDT_CHECK_VMLCK(g_vmlck_base, 0);
	VDT_CHECK_EQ(lmm_get_stats(&st), 0);
	VDT_CHECK_EQ(st.registrations, 0);
	VDT_CHECK_EQ(st.locked_bytes, 0);
	VDT_CHECK_EQ(st.areas, 0);
}

/* ---- stacking against a page model ------------------------------------ */

#define BUF_PAGES 256
#define MAX_LIVE 64

struct live_reg {
	lmm_handle_t h;
	size_t first, end; /* pages [first, end) of the buffer */
};

struct page_model {
	unsigned count[BUF_PAGES];
	struct live_reg live[MAX_LIVE];
	size_t nr_live;
};

static size_t model_covered(const struct page_model *m)
{
	size_t i, n = 0;

	for (i = 0; i < BUF_PAGES; i++)
		n += m->count[i] != 0;
	return n;
}

/* Maximal runs of equal nonzero count (the LMAs). */
static size_t model_areas(const struct page_model *m)
{
	size_t i, n = 0;

	for (i = 0; i < BUF_PAGES; i++)
		if (m->count[i] && (i == 0 || m->count[i - 1] != m->count[i]))
			n++;
	return n;
}

static void check_model(const struct page_model *m, const char *buf,
			int check_areas_of_handles)
{
	struct lmm_stats st;
	size_t i;

	VDT_CHECK_VMLCK(g_vmlck_base, model_covered(m));
	VDT_CHECK_EQ(lmm_get_stats(&st), 0);
	VDT_CHECK_EQ(st.registrations, m->nr_live);
	VDT_CHECK_EQ(st.locked_bytes, model_covered(m) * ps);
	VDT_CHECK_EQ(st.areas, model_areas(m));
	for (i = 0; check_areas_of_handles && i < m->nr_live; i++) {
		void *start;
		size_t len;

		VDT_CHECK_EQ(lmm_area_get(m->live[i].h, &start, &len), 0);
		VDT_CHECK(start == buf + m->live[i].first * ps);
		VDT_CHECK_EQ(len, (m->live[i].end - m->live[i].first) * ps);
	}
}

static void random_lock(struct page_model *m, char *buf)
{
	size_t off = (size_t)rand() % (BUF_PAGES * ps);
	size_t room = BUF_PAGES * ps - off;
	size_t len = 1 + (size_t)rand() % (room < 40 * ps ? room : 40 * ps);
	struct live_reg *r = &m->live[m->nr_live];
	size_t i;

	VDT_CHECK_EQ(lmm_lock_area(buf + off, len, &r->h), 0);
	VDT_CHECK(r->h != LMM_HANDLE_INVALID);
	for (i = 0; i < m->nr_live; i++)
		VDT_CHECK(m->live[i].h != r->h);
	r->first = off / ps;
	r->end = (off + len - 1) / ps + 1;
	for (i = r->first; i < r->end; i++)
		m->count[i]++;
	m->nr_live++;
}

static void random_unlock(struct page_model *m)
{
	size_t k = (size_t)rand() % m->nr_live, i;
	struct live_reg *r = &m->live[k];

	VDT_CHECK_EQ(lmm_unlock_area(r->h), 0);
	for (i = r->first; i < r->end; i++)
		m->count[i]--;
	*r = m->live[--m->nr_live];
}

static void test_stacking_random(void)
{
	static struct page_model m;
	char *buf = vdt_map_pages(BUF_PAGES);
	long steps = vdt_iterations(2000, 2000), s;

	memset(&m, 0, sizeof(m));
	for (s = 0; s < steps; s++) {
		int lock = m.nr_live == 0 ||
			   (m.nr_live < MAX_LIVE && rand() % 100 < 55);

		if (lock)
			random_lock(&m, buf);
		else
			random_unlock(&m);
		check_model(&m, buf, s % 50 == 0);
	}
	while (m.nr_live) {
		random_unlock(&m);
		check_model(&m, buf, 1);
	}
	check_all_released();
	vdt_unmap_pages(buf, BUF_PAGES);
}

/* ---- simple behaviours ------------------------------------------------- */

static void test_same_range_twice(void)
{
	char *buf = vdt_map_pages(8);
	lmm_handle_t a, b;

	VDT_CHECK_EQ(lmm_lock_area(buf + ps, 4 * ps, &a), 0);
	VDT_CHECK_EQ(lmm_lock_area(buf + ps, 4 * ps, &b), 0);
	VDT_CHECK(a != b);
	VDT_CHECK_VMLCK(g_vmlck_base, 4);
	VDT_CHECK_EQ(lmm_unlock_area(a), 0);
	VDT_CHECK_VMLCK(g_vmlck_base, 4); /* b still holds them */
	VDT_CHECK_EQ(vdt_check_page_list(b), 4);
	VDT_CHECK_EQ(lmm_unlock_area(b), 0);
	check_all_released();
	vdt_unmap_pages(buf, 8);
}

/* Lock [buf + off, +len): the area must be exactly the pages touched. */
static void check_alignment(char *buf, size_t off, size_t len)
{
	size_t first = off / ps, end = (off + len - 1) / ps + 1;
	lmm_handle_t h;
	void *start;
	size_t length;

	VDT_CHECK_EQ(lmm_lock_area(buf + off, len, &h), 0);
	VDT_CHECK_EQ(lmm_area_get(h, &start, &length), 0);
	VDT_CHECK(start == buf + first * ps);
	VDT_CHECK_EQ(length, (end - first) * ps);
	VDT_CHECK_VMLCK(g_vmlck_base, end - first);
	VDT_CHECK_EQ(vdt_check_page_list(h), end - first);
	VDT_CHECK_EQ(lmm_unlock_area(h), 0);
	check_all_released();
}

static void test_any_alignment(void)
{
	char *buf = vdt_map_pages(8);

	check_alignment(buf, 0, 1);
	check_alignment(buf, ps - 1, 1);
	check_alignment(buf, ps - 1, 2);           /* straddles a boundary */
	check_alignment(buf, 5, ps);               /* one page long, two pages */
	check_alignment(buf, 123, 3 * ps);
	check_alignment(buf, 2 * ps, 2 * ps);      /* aligned */
	check_alignment(buf, 2 * ps + 1, 2 * ps - 2);
	check_alignment(buf, 0, 8 * ps);
	check_alignment(buf, 8 * ps - 1, 1);
	vdt_unmap_pages(buf, 8);
}

/* ---- page and block lists ---------------------------------------------- */

static void test_get_pages_short_array(void)
{
	char *buf = vdt_map_pages(8);
	uint64_t pages[8], full[6];
	size_t count, i;
	unsigned flags;
	lmm_handle_t h;

	VDT_CHECK_EQ(lmm_lock_area(buf + 100, 5 * ps, &h), 0); /* 6 pages */
	VDT_CHECK_EQ(vdt_check_page_list(h), 6);
	VDT_CHECK_EQ(lmm_get_pages(h, full, 6, &count, NULL), 0);

	for (i = 0; i < 8; i++)
		pages[i] = 0xdeadbeef;
	count = 0;
	VDT_CHECK_EQ(lmm_get_pages(h, pages, 3, &count, &flags), 0);
	VDT_CHECK_EQ(count, 6);
	for (i = 0; i < 3; i++)
		VDT_CHECK(pages[i] == full[i]);
	for (i = 3; i < 8; i++)
		VDT_CHECK(pages[i] == 0xdeadbeef); /* not written past max */

	count = 0;
	flags = 0;
	VDT_CHECK_EQ(lmm_get_pages(h, NULL, 0, &count, &flags), 0);
	VDT_CHECK_EQ(count, 6);
	VDT_CHECK_EQ(!!(flags & LMM_PAGES_VIRTUAL), !vdt_pfns_readable());

	/* A larger array: only count entries written. */
	for (i = 0; i < 8; i++)
		pages[i] = 0xdeadbeef;
	VDT_CHECK_EQ(lmm_get_pages(h, pages, 8, &count, NULL), 0);
	VDT_CHECK_EQ(count, 6);
	VDT_CHECK(pages[6] == 0xdeadbeef && pages[7] == 0xdeadbeef);
	VDT_CHECK_EQ(lmm_unlock_area(h), 0);
	check_all_released();
	vdt_unmap_pages(buf, 8);
}

/* Blocks must be the maximal runs of consecutive addresses of the page
 * list (one run in virtual mode), their lengths summing to the area. */
static void check_blocks_match_pages(lmm_handle_t h)
{
	size_t n = 0, nb = 0, i, k, runs = 0;
	uint64_t *pages, sum = 0;
	struct lmm_block *blocks;
	unsigned flags = 0, bflags = 0;

	VDT_CHECK_EQ(lmm_get_pages(h, NULL, 0, &n, NULL), 0);
	pages = calloc(n, sizeof(*pages));
	blocks = calloc(n + 1, sizeof(*blocks));
	VDT_CHECK(pages && blocks);
	VDT_CHECK_EQ(lmm_get_pages(h, pages, n, &n, &flags), 0);
	VDT_CHECK_EQ(lmm_get_blocks(h, blocks, n + 1, &nb, &bflags), 0);
	VDT_CHECK_EQ(flags, bflags);
	if (flags & LMM_PAGES_VIRTUAL)
		VDT_CHECK_EQ(nb, 1);
	for (i = 0, k = 0; i < n; k++) {
		size_t j = i + 1;

		while (j < n && pages[j] == pages[j - 1] + ps)
			j++;
		VDT_CHECK(k < nb);
		VDT_CHECK(blocks[k].addr == pages[i]);
		VDT_CHECK_EQ(blocks[k].length, (j - i) * ps);
		sum += blocks[k].length;
		runs++;
		i = j;
	}
	VDT_CHECK_EQ(nb, runs);
	VDT_CHECK_EQ(sum, n * ps);

	/* Short array: min(max, n) blocks filled, *count the full number. */
	if (nb > 1) {
		struct lmm_block two[3];
		size_t c = 0;

		memset(two, 0xee, sizeof(two));
		VDT_CHECK_EQ(lmm_get_blocks(h, two, 2, &c, NULL), 0);
		VDT_CHECK_EQ(c, nb);
		VDT_CHECK(two[0].addr == blocks[0].addr &&
			  two[0].length == blocks[0].length);
		VDT_CHECK(two[1].addr == blocks[1].addr &&
			  two[1].length == blocks[1].length);
		VDT_CHECK(two[2].addr == 0xeeeeeeeeeeeeeeeeULL);
	}
	VDT_CHECK_EQ(lmm_get_blocks(h, NULL, 0, &nb, NULL), 0);
	VDT_CHECK_EQ(nb, runs);
	free(pages);
	free(blocks);
}

static void test_get_blocks(void)
{
	char *buf = vdt_map_pages(128);
	lmm_handle_t a, b, c;

	VDT_CHECK_EQ(lmm_lock_area(buf, 128 * ps, &a), 0);
	VDT_CHECK_EQ(lmm_lock_area(buf + 7, 3, &b), 0);
	VDT_CHECK_EQ(lmm_lock_area(buf + 17 * ps + 99, 40 * ps, &c), 0);
	VDT_CHECK_EQ(vdt_check_page_list(a), 128);
	check_blocks_match_pages(a);
	check_blocks_match_pages(b);
	check_blocks_match_pages(c);
	VDT_CHECK_EQ(lmm_unlock_area(a), 0);
	VDT_CHECK_EQ(lmm_unlock_area(b), 0);
	VDT_CHECK_EQ(lmm_unlock_area(c), 0);
	check_all_released();
	vdt_unmap_pages(buf, 128);
}

/* A heap buffer (not page-aligned, possibly huge-page backed: any run
 * structure) must give consistent pages and blocks too. */
static void test_heap_buffer(void)
{
	size_t len = 300 * 1024 + 17;
	char *p = malloc(len);
	lmm_handle_t h;

	VDT_CHECK(p);
	memset(p, 1, len);
	VDT_CHECK_EQ(lmm_lock_area(p + 3, len - 3, &h), 0);
	vdt_check_page_list(h);
	check_blocks_match_pages(h);
	VDT_CHECK_EQ(lmm_unlock_area(h), 0);
	check_all_released();
	free(p);
}

/* In a child without CAP_SYS_ADMIN frame numbers read as 0: the lists must
 * be virtual and flagged.  Runs first, before the LMM is used at all. */
static int virtual_mode_child(void)
{
	char *buf;
	lmm_handle_t h;
	uint64_t pages[4];
	struct lmm_block blk[2];
	size_t n, i;
	unsigned flags = 0;

	if (vdt_drop_effective_cap(CAP_SYS_ADMIN) || vdt_pfns_readable())
		return VDT_SKIP;
	buf = vdt_map_pages(4);
	VDT_CHECK_EQ(lmm_lock_area(buf + 1, 4 * ps - 2, &h), 0);
	VDT_CHECK_EQ(lmm_get_pages(h, pages, 4, &n, &flags), 0);
	VDT_CHECK_EQ(n, 4);
	VDT_CHECK(flags & LMM_PAGES_VIRTUAL);
	for (i = 0; i < 4; i++)
		VDT_CHECK(pages[i] == (uint64_t)(uintptr_t)(buf + i * ps));
	flags = 0;
	VDT_CHECK_EQ(lmm_get_blocks(h, blk, 2, &n, &flags), 0);
	VDT_CHECK_EQ(n, 1);
	VDT_CHECK(flags & LMM_PAGES_VIRTUAL);
	VDT_CHECK(blk[0].addr == (uint64_t)(uintptr_t)buf);
	VDT_CHECK_EQ(blk[0].length, 4 * ps);
	VDT_CHECK_EQ(lmm_unlock_area(h), 0);
	return VDT_PASS;
}

static void test_virtual_mode_without_cap(void)
{
	int status;
	pid_t pid = fork();

	VDT_CHECK(pid >= 0);
	if (pid == 0)
		_exit(virtual_mode_child());
	VDT_CHECK(waitpid(pid, &status, 0) == pid);
	VDT_CHECK(WIFEXITED(status));
	if (WEXITSTATUS(status) == VDT_SKIP)
		printf("  (virtual mode: could not drop CAP_SYS_ADMIN or PFNs "
		       "still readable; not checked)\n");
	else
		VDT_CHECK_EQ(WEXITSTATUS(status), VDT_PASS);
}

/* ---- stats and cleanup --------------------------------------------------- */

static void test_stats(void)
{
	char *buf = vdt_map_pages(16);
	struct lmm_stats s0, st;
	lmm_handle_t a, b, c;

	VDT_CHECK_EQ(lmm_get_stats(&s0), 0);
	VDT_CHECK_EQ(lmm_lock_area(buf, 4 * ps, &a), 0);           /* [0,4) */
	VDT_CHECK_EQ(lmm_lock_area(buf + 2 * ps, 4 * ps, &b), 0);  /* [2,6) */
	VDT_CHECK_EQ(lmm_lock_area(buf + 10 * ps, 1, &c), 0);     /* [10,11) */
	VDT_CHECK_EQ(lmm_get_stats(&st), 0);
	VDT_CHECK_EQ(st.registrations, 3);
	VDT_CHECK_EQ(st.locked_bytes, 7 * ps);
	VDT_CHECK_EQ(st.areas, 4); /* [0,2):1 [2,4):2 [4,6):1 [10,11):1 */
	/* mlock only for pages going 0 -> 1: [0,4), [4,6), [10,11). */
	VDT_CHECK_EQ(st.mlock_calls - s0.mlock_calls, 3);
	VDT_CHECK_EQ(st.munlock_calls - s0.munlock_calls, 0);
	VDT_CHECK_EQ(st.revoked, s0.revoked);

	VDT_CHECK_EQ(lmm_unlock_area(a), 0); /* munlock [0,2) only */
	VDT_CHECK_EQ(lmm_get_stats(&st), 0);
	VDT_CHECK_EQ(st.registrations, 2);
	VDT_CHECK_EQ(st.locked_bytes, 5 * ps);
	VDT_CHECK_EQ(st.areas, 2); /* [2,6):1 [10,11):1 */
	VDT_CHECK_EQ(st.munlock_calls - s0.munlock_calls, 1);
	VDT_CHECK_VMLCK(g_vmlck_base, 5);

	VDT_CHECK_EQ(lmm_unlock_area(b), 0);
	VDT_CHECK_EQ(lmm_unlock_area(c), 0);
	VDT_CHECK_EQ(lmm_get_stats(&st), 0);
	VDT_CHECK_EQ(st.mlock_calls - s0.mlock_calls, 3);
	VDT_CHECK_EQ(st.munlock_calls - s0.munlock_calls, 3);
	VDT_CHECK_EQ(lmm_get_stats(NULL), -EINVAL);
	check_all_released();
	vdt_unmap_pages(buf, 16);
}

static void check_handle_dead(lmm_handle_t h)
{
	void *start;
	size_t len, n;

	VDT_CHECK_EQ(lmm_area_get(h, &start, &len), -EBADF);
	VDT_CHECK_EQ(lmm_get_pages(h, NULL, 0, &n, NULL), -EBADF);
	VDT_CHECK_EQ(lmm_unlock_area(h), -EBADF);
}

static void test_cleanup(void)
{
	char *buf = vdt_map_pages(32);
	lmm_handle_t h[6], ch;
	struct lmm_stats st;
	size_t i;

	VDT_CHECK_EQ(lmm_lock_area(buf, 32 * ps, &h[0]), 0);
	VDT_CHECK_EQ(lmm_lock_area(buf, 32 * ps, &h[1]), 0);
	VDT_CHECK_EQ(lmm_lock_area(buf + 3 * ps, 5, &h[2]), 0);
	VDT_CHECK_EQ(lmm_lock_area(buf + 20 * ps, 4 * ps, &h[3]), 0);
	VDT_CHECK_EQ(lmm_unlock_area(h[0]), 0);
	VDT_CHECK_EQ(lmm_lock_area(buf + 9 * ps, 2 * ps, &h[4]), 0);
	VDT_CHECK_EQ(lmm_lock_area(buf + 31 * ps, ps, &h[5]), 0);
	VDT_CHECK_EQ(lmm_cache_get(buf + 4 * ps, 6 * ps, &ch), 0);
	VDT_CHECK_VMLCK(g_vmlck_base, 32);

	VDT_CHECK_EQ(lmm_cleanup(), 0);
	VDT_CHECK_VMLCK(g_vmlck_base, 0);
	VDT_CHECK_EQ(lmm_get_stats(&st), 0);
	VDT_CHECK_EQ(st.registrations, 0);
	VDT_CHECK_EQ(st.locked_bytes, 0);
	VDT_CHECK_EQ(st.areas, 0);
	for (i = 0; i < 6; i++)
		check_handle_dead(h[i]);
	check_handle_dead(ch);
	VDT_CHECK_EQ(lmm_cache_put(ch), -EBADF);

	/* The LMM works afterwards, and a second cleanup is harmless. */
	VDT_CHECK_EQ(lmm_lock_area(buf, ps, &h[0]), 0);
	VDT_CHECK_VMLCK(g_vmlck_base, 1);
	VDT_CHECK_EQ(vdt_check_page_list(h[0]), 1);
	VDT_CHECK_EQ(lmm_cleanup(), 0);
	VDT_CHECK_EQ(lmm_cleanup(), 0);
	check_handle_dead(h[0]);
	check_all_released();
	vdt_unmap_pages(buf, 32);
}

/* mlock_calls and munlock_calls count "since start (or lmm_cleanup)". */
static void test_cleanup_resets_call_counts(void)
{
	char *buf = vdt_map_pages(2);
	struct lmm_stats st;
	lmm_handle_t h;

	VDT_CHECK_EQ(lmm_lock_area(buf, 2 * ps, &h), 0);
	VDT_CHECK_EQ(lmm_cleanup(), 0);
	VDT_CHECK_EQ(lmm_get_stats(&st), 0);
	VDT_CHECK_EQ(st.mlock_calls, 0);
	VDT_CHECK_EQ(st.munlock_calls, 0);
	VDT_CHECK_EQ(lmm_lock_area(buf, ps, &h), 0);
	VDT_CHECK_EQ(lmm_unlock_area(h), 0);
	VDT_CHECK_EQ(lmm_get_stats(&st), 0);
	VDT_CHECK_EQ(st.mlock_calls, 1);
	VDT_CHECK_EQ(st.munlock_calls, 1);
	check_all_released();
	vdt_unmap_pages(buf, 2);
}

/* ---- shared memory ------------------------------------------------------- */

/* Overlapping registrations in a shared mapping of n pages: VmLck follows
 * the pages covered, lists equal pagemap. */
static void check_shared_mapping(char *p, size_t n)
{
	lmm_handle_t a, b;

	VDT_CHECK(n >= 12);
	VDT_CHECK_EQ(lmm_lock_area(p + ps / 2, 5 * ps, &a), 0); /* [0,6) */
	VDT_CHECK_VMLCK(g_vmlck_base, 6);
	VDT_CHECK_EQ(lmm_lock_area(p + 2 * ps, 8 * ps, &b), 0); /* [2,10) */
	VDT_CHECK_VMLCK(g_vmlck_base, 10);
	VDT_CHECK_EQ(vdt_check_page_list(a), 6);
	VDT_CHECK_EQ(vdt_check_page_list(b), 8);
	check_blocks_match_pages(b);
	VDT_CHECK_EQ(lmm_unlock_area(a), 0);
	VDT_CHECK_VMLCK(g_vmlck_base, 8);
	VDT_CHECK_EQ(vdt_check_page_list(b), 8);
	VDT_CHECK_EQ(lmm_unlock_area(b), 0);
	check_all_released();
}

static void test_sysv_segment(void)
{
	size_t n = 16;
	int id = shmget(IPC_PRIVATE, n * ps, IPC_CREAT | 0600);
	char *p;

	if (id < 0) {
		printf("  (System V shm unavailable: %s; not checked)\n",
		       strerror(errno));
		return;
	}
	p = shmat(id, NULL, 0);
	VDT_CHECK(p != (void *)-1);
	VDT_CHECK_EQ(shmctl(id, IPC_RMID, NULL), 0); /* gone at detach */
	memset(p, 7, n * ps);
	check_shared_mapping(p, n);
	VDT_CHECK_EQ(shmdt(p), 0);
}

static void test_memfd_mapping(void)
{
	size_t n = 16, i;
	int fd = memfd_create("vdt-lmm-basic", MFD_CLOEXEC);
	char *p, *q;
	lmm_handle_t a, b;
	uint64_t pa[16], pb[16];
	size_t na, nb;

	VDT_CHECK(fd >= 0);
	VDT_CHECK_EQ(ftruncate(fd, (off_t)(n * ps)), 0);
	p = mmap(NULL, n * ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	q = mmap(NULL, n * ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	VDT_CHECK(p != MAP_FAILED && q != MAP_FAILED);
	memset(p, 3, n * ps);
	check_shared_mapping(p, n);

	/* Two mappings of the same file: two areas, the same frames. */
	VDT_CHECK_EQ(lmm_lock_area(p, n * ps, &a), 0);
	VDT_CHECK_EQ(lmm_lock_area(q, n * ps, &b), 0);
	VDT_CHECK_VMLCK(g_vmlck_base, 2 * n);
	VDT_CHECK_EQ(vdt_check_page_list(a), n);
	VDT_CHECK_EQ(vdt_check_page_list(b), n);
	VDT_CHECK_EQ(lmm_get_pages(a, pa, n, &na, NULL), 0);
	VDT_CHECK_EQ(lmm_get_pages(b, pb, n, &nb, NULL), 0);
	if (vdt_pfns_readable())
		for (i = 0; i < n; i++)
			VDT_CHECK(pa[i] == pb[i]);
	VDT_CHECK_EQ(lmm_unlock_area(a), 0);
	VDT_CHECK_EQ(lmm_unlock_area(b), 0);
	check_all_released();
	VDT_CHECK_EQ(munmap(p, n * ps), 0);
	VDT_CHECK_EQ(munmap(q, n * ps), 0);
	close(fd);
}

#define RUN(test)                                                            \
	do {                                                                 \
		test();                                                      \
		printf("ok %s\n", #test);                                    \
		fflush(stdout);                                              \
	} while (0)

/* Skip where this process may not lock memory at all. */
static void skip_unless_locking_works(void)
{
	char *p = vdt_map_pages(1);
	lmm_handle_t h;
	int err = lmm_lock_area(p, 1, &h);

	VDT_SKIP_IF(err == -EPERM || err == -ENOMEM,
		    "cannot lock memory here (RLIMIT_MEMLOCK / CAP_IPC_LOCK)");
	VDT_CHECK_EQ(err, 0);
	VDT_CHECK_EQ(lmm_unlock_area(h), 0);
	vdt_unmap_pages(p, 1);
}

int main(int argc, char **argv)
{
	unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0)
				 : (unsigned)time(NULL) ^ (unsigned)getpid();

	ps = vdt_page_size();
	srand(seed);
	printf("seed %u (rerun: %s %u)\n", seed, argv[0], seed);
	fflush(stdout);
	g_vmlck_base = vdt_vmlck_bytes(0);
	VDT_SKIP_IF(g_vmlck_base < 0, "no VmLck in /proc/self/status");
	RUN(test_virtual_mode_without_cap); /* before this process locks */
	skip_unless_locking_works();

	RUN(test_same_range_twice);
	RUN(test_any_alignment);
	RUN(test_stacking_random);
	RUN(test_get_pages_short_array);
	RUN(test_get_blocks);
	RUN(test_heap_buffer);
	RUN(test_stats);
	RUN(test_sysv_segment);
	RUN(test_memfd_mapping);
	RUN(test_cleanup);
	RUN(test_cleanup_resets_call_counts);
	return VDT_PASS;
}
