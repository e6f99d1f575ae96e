/* SPDX-License-Identifier: MIT */
/*
 * Description: the LMM under concurrency (meant for the TSan build too).
 * Four threads lock, unlock and list pages of random overlapping ranges of
 * one shared buffer and take/return pin-down cache registrations, while a
 * fifth thread reads lmm_get_stats()/lmm_cache_get_stats() and checks
 * their invariants.  At a few barriers the workers stop, the cache is
 * flushed and VmLck and the stats must equal the union of the ranges the
 * workers hold.  At the end everything is released: VmLck back to where it
 * was, no registration, no area.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "viaduct/lmm.h"
#include "vdtest.h"
#include "vdtest_lmm.h"
#include "vdtest_scale.h"

#define NR_WORKERS 4
#define BUF_PAGES 64
#define MAX_LIVE 16
#define NR_CHECKPOINTS 5

struct live_reg {
	lmm_handle_t h;
	size_t first, end; /* pages of the buffer */
};

struct worker {
	pthread_t thread;
	int id;
	uint64_t rng;
	struct live_reg live[MAX_LIVE];
	size_t nr_live;
	unsigned long locks, unlocks, lists, cache_gets;
};

static struct worker g_workers[NR_WORKERS];
static pthread_barrier_t g_barrier;
static char *g_buf;
static size_t ps;
static long g_iterations;
static long long g_vmlck_base;
static int g_physical;
static atomic_int g_done;

static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static size_t below(struct worker *w, size_t n)
{
	return (size_t)(next_rand(&w->rng) % n);
}

/* A random byte range of the buffer, 1..16 pages' worth. */
static void random_range(struct worker *w, size_t *off, size_t *len)
{
	size_t room;

	*off = below(w, BUF_PAGES * ps);
	room = BUF_PAGES * ps - *off;
	*len = 1 + below(w, room < 16 * ps ? room : 16 * ps);
}

/* The handle's area is [first, end) pages and its page list is right. */
static void check_handle(lmm_handle_t h, size_t first, size_t end)
{
	uint64_t pages[BUF_PAGES];
	void *start;
	size_t len, n, i;
	unsigned flags = 0;

	VDT_CHECK_EQ(lmm_area_get(h, &start, &len), 0);
	VDT_CHECK(start == g_buf + first * ps);
	VDT_CHECK_EQ(len, (end - first) * ps);
	VDT_CHECK_EQ(lmm_get_pages(h, pages, BUF_PAGES, &n, &flags), 0);
	VDT_CHECK_EQ(n, end - first);
	VDT_CHECK_EQ(!!(flags & LMM_PAGES_VIRTUAL), !g_physical);
	for (i = 0; i < n; i++)
		VDT_CHECK(pages[i] == vdt_expected_page(
					      (uintptr_t)start + i * ps,
					      g_physical));
}

static void do_lock(struct worker *w)
{
	struct live_reg *r = &w->live[w->nr_live];
	size_t off, len;

	random_range(w, &off, &len);
	VDT_CHECK_EQ(lmm_lock_area(g_buf + off, len, &r->h), 0);
	r->first = off / ps;
	r->end = (off + len - 1) / ps + 1;
	w->nr_live++;
	w->locks++;
}

static void do_unlock(struct worker *w)
{
	size_t k = below(w, w->nr_live);

	VDT_CHECK_EQ(lmm_unlock_area(w->live[k].h), 0);
	w->live[k] = w->live[--w->nr_live];
	w->unlocks++;
}

static void do_list(struct worker *w)
{
	const struct live_reg *r = &w->live[below(w, w->nr_live)];

	check_handle(r->h, r->first, r->end);
	w->lists++;
}

static void do_cache_get_put(struct worker *w)
{
	size_t off, len, first, end, n;
	lmm_handle_t h;
	void *start;

	random_range(w, &off, &len);
	first = off / ps;
	end = (off + len - 1) / ps + 1;
	VDT_CHECK_EQ(lmm_cache_get(g_buf + off, len, &h), 0);
	/* The cached area may be larger than asked, never smaller. */
	VDT_CHECK_EQ(lmm_area_get(h, &start, &n), 0);
	VDT_CHECK((char *)start <= g_buf + first * ps);
	VDT_CHECK((char *)start + n >= g_buf + end * ps);
	VDT_CHECK_EQ(lmm_unlock_area(h), -EBUSY);
	VDT_CHECK_EQ(lmm_get_pages(h, NULL, 0, &n, NULL), 0);
	VDT_CHECK(n >= end - first);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	w->cache_gets++;
}

/* Workers stopped: flush the cache, then VmLck and the stats must be the
 * union of what the workers hold.  Run by worker 0 between barriers. */
static void check_quiescent(void)
{
	unsigned char covered[BUF_PAGES] = { 0 };
	size_t pages = 0, regs = 0, i, p;
	struct lmm_stats st;
	struct lmm_cache_stats cs;
	int t;

	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	for (t = 0; t < NR_WORKERS; t++)
		for (i = 0; i < g_workers[t].nr_live; i++, regs++)
			for (p = g_workers[t].live[i].first;
			     p < g_workers[t].live[i].end; p++)
				covered[p] = 1;
	for (p = 0; p < BUF_PAGES; p++)
		pages += covered[p];
	VDT_CHECK_VMLCK(g_vmlck_base, pages);
	VDT_CHECK_EQ(lmm_get_stats(&st), 0);
	VDT_CHECK_EQ(st.registrations, regs);
	VDT_CHECK_EQ(st.locked_bytes, pages * ps);
	VDT_CHECK_EQ(lmm_cache_get_stats(&cs), 0);
	VDT_CHECK_EQ(cs.in_use, 0);
	VDT_CHECK_EQ(cs.entries, 0);
}

static void checkpoint(struct worker *w)
{
	int r = pthread_barrier_wait(&g_barrier);

	VDT_CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
	if (w->id == 0)
		check_quiescent();
	r = pthread_barrier_wait(&g_barrier);
	VDT_CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	long i, every = g_iterations / NR_CHECKPOINTS;

	for (i = 0; i < g_iterations; i++) {
		size_t roll = below(w, 100);

		if (w->nr_live == 0 || (w->nr_live < MAX_LIVE && roll < 35))
			do_lock(w);
		else if (roll < 65)
			do_unlock(w);
		else if (roll < 85)
			do_list(w);
		else
			do_cache_get_put(w);
		if (every && i % every == every - 1)
			checkpoint(w);
	}
	while (w->nr_live)
		do_unlock(w);
	return NULL;
}

/* Concurrent reader: the stats are always self-consistent. */
static void *stats_main(void *arg)
{
	unsigned long *reads = arg;

	while (!atomic_load(&g_done)) {
		struct lmm_stats st;
		struct lmm_cache_stats cs;

		VDT_CHECK_EQ(lmm_get_stats(&st), 0);
		VDT_CHECK(st.locked_bytes <= (uint64_t)BUF_PAGES * ps);
		VDT_CHECK(st.locked_bytes % ps == 0);
		VDT_CHECK(st.areas * ps <= st.locked_bytes);
		VDT_CHECK(st.areas <= BUF_PAGES);
		VDT_CHECK_EQ(!st.registrations, !st.locked_bytes);
		VDT_CHECK_EQ(lmm_cache_get_stats(&cs), 0);
		VDT_CHECK(cs.in_use <= NR_WORKERS);
		VDT_CHECK(cs.in_use <= cs.entries);
		(*reads)++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0)
				 : (uint64_t)time(NULL) ^ (uint64_t)getpid();
	unsigned long reads = 0;
	pthread_t stats_thread;
	struct lmm_stats st;
	lmm_handle_t probe;
	int t, err;

	ps = vdt_page_size();
	g_iterations = vdt_iterations(20000, 8000);
	printf("seed %llu, %ld iterations per thread\n",
	       (unsigned long long)seed, g_iterations);
	fflush(stdout);
	g_vmlck_base = vdt_vmlck_bytes(0);
	VDT_SKIP_IF(g_vmlck_base < 0, "no VmLck in /proc/self/status");
	g_physical = vdt_pfns_readable();
	g_buf = vdt_map_pages(BUF_PAGES);
	err = lmm_lock_area(g_buf, ps, &probe);
	VDT_SKIP_IF(err == -EPERM || err == -ENOMEM,
		    "cannot lock memory here (RLIMIT_MEMLOCK / CAP_IPC_LOCK)");
	VDT_CHECK_EQ(err, 0);
	VDT_CHECK_EQ(lmm_unlock_area(probe), 0);

	VDT_CHECK_EQ(pthread_barrier_init(&g_barrier, NULL, NR_WORKERS), 0);
	VDT_CHECK_EQ(pthread_create(&stats_thread, NULL, stats_main, &reads),
		     0);
	for (t = 0; t < NR_WORKERS; t++) {
		g_workers[t].id = t;
		g_workers[t].rng = (seed + (uint64_t)t * 0x9e3779b97f4a7c15ULL) | 1;
		VDT_CHECK_EQ(pthread_create(&g_workers[t].thread, NULL,
					    worker_main, &g_workers[t]), 0);
	}
	for (t = 0; t < NR_WORKERS; t++)
		VDT_CHECK_EQ(pthread_join(g_workers[t].thread, NULL), 0);
	atomic_store(&g_done, 1);
	VDT_CHECK_EQ(pthread_join(stats_thread, NULL), 0);

	for (t = 0; t < NR_WORKERS; t++)
		printf("worker %d: %lu locks, %lu unlocks, %lu lists, %lu "
		       "cache gets\n", t, g_workers[t].locks,
		       g_workers[t].unlocks, g_workers[t].lists,
		       g_workers[t].cache_gets);
	printf("stats reads: %lu\n", reads);

	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	VDT_CHECK_VMLCK(g_vmlck_base, 0);
	VDT_CHECK_EQ(lmm_get_stats(&st), 0);
	VDT_CHECK_EQ(st.registrations, 0);
	VDT_CHECK_EQ(st.locked_bytes, 0);
	VDT_CHECK_EQ(st.areas, 0);
	VDT_CHECK(reads > 0);
	pthread_barrier_destroy(&g_barrier);
	return VDT_PASS;
}
