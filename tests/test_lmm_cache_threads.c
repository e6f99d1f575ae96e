/* SPDX-License-Identifier: MIT */
/*
 * Description: the pin-down cache under threads (meant for TSan too).
 * Three workers get and put registrations of a set of buffers (whole
 * buffers and pieces of them) and check every page list against
 * /proc/self/pagemap and the buffer's contents, while a remapper thread
 * makes buffers go away and come back (munmap + mmap, mmap MAP_FIXED over,
 * MADV_DONTNEED_LOCKED, mremap of its first page elsewhere).  A per-buffer rwlock keeps
 * workers off a buffer while it is being replaced; the cache must never
 * hand out a registration of the old memory: every handle a buffer was
 * served with is remembered, and once the buffer is replaced none of them
 * may come back (handles carry a generation, so a new registration in a
 * reused slot has a new value).  Nothing may deadlock:
 * alarm(60) fails the test instead of letting it hang.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "lmmtest.h"
#include "vdtest.h"
#include "viaduct/lmm.h"

#define NR_BUFS 8
#define BUF_PAGES 4
#define NR_WORKERS 3

#define SEEN_MAX 32    /* handles remembered per buffer and epoch */

/* Handles a buffer's memory was served with: in the current epoch, and
 * in earlier ones (its memory has been replaced since: any of those
 * handed out again would be a stale registration). */
struct seen {
	pthread_mutex_t lock;
	lmm_handle_t now[SEEN_MAX], old[SEEN_MAX * 4];
	unsigned nr_now, nr_old, next_old;
};

struct buffer {
	pthread_rwlock_t lock;  /* read: in use by a worker; write: remap */
	char *addr;             /* under lock */
	unsigned char tag;      /* every page starts with it; under lock */
	struct seen seen;
};

static struct buffer bufs[NR_BUFS];
static size_t ps, buf_len;
static atomic_int workers_running;
static atomic_uint remaps;

static void fill_buffer(struct buffer *b)
{
	size_t off;

	for (off = 0; off < buf_len; off += ps)
		memset(b->addr + off, b->tag, 64);
}

/* At 'want' if that is free, else anywhere (want NULL: anywhere; as root,
 * MAP_FIXED_NOREPLACE at 0 would really map page 0). */
static char *map_buffer_at(char *want)
{
	char *p = MAP_FAILED;

	if (want)
		p = mmap(want, buf_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
			 0);
	if (p == MAP_FAILED)
		p = mmap(NULL, buf_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	VDT_CHECK(p != MAP_FAILED);
	return p;
}

/* ---- stale handle detection ------------------------------------------------- */

static int seen_contains(const lmm_handle_t *set, unsigned n, lmm_handle_t h)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (set[i] == h)
			return 1;
	return 0;
}

/* A worker got h for buffer b: it must not be one from before b's memory
 * was last replaced. */
static void seen_record(struct buffer *b, lmm_handle_t h)
{
	struct seen *sn = &b->seen;
	int stale;

	VDT_CHECK_EQ(pthread_mutex_lock(&sn->lock), 0);
	stale = seen_contains(sn->old, sn->nr_old, h);
	if (!stale && sn->nr_now < SEEN_MAX &&
	    !seen_contains(sn->now, sn->nr_now, h))
		sn->now[sn->nr_now++] = h;
	VDT_CHECK_EQ(pthread_mutex_unlock(&sn->lock), 0);
	if (stale) {
		fprintf(stderr, "lmm_cache_get returned handle %#llx, a "
			"registration of memory that has been replaced\n",
			(unsigned long long)h);
		exit(VDT_FAIL);
	}
}

/* b's memory was replaced: its handles so far are stale from now on. */
static void seen_new_epoch(struct buffer *b)
{
	struct seen *sn = &b->seen;
	unsigned i;

	VDT_CHECK_EQ(pthread_mutex_lock(&sn->lock), 0);
	for (i = 0; i < sn->nr_now; i++) {
		sn->old[sn->next_old] = sn->now[i];
		sn->next_old = (sn->next_old + 1) % (SEEN_MAX * 4);
		if (sn->nr_old < SEEN_MAX * 4)
			sn->nr_old++;
	}
	sn->nr_now = 0;
	VDT_CHECK_EQ(pthread_mutex_unlock(&sn->lock), 0);
}

/* ---- workers ---------------------------------------------------------------- */

/* A whole buffer or a piece of it (then usually a hit on the whole). */
static void pick_range(struct buffer *b, unsigned *seed, char **p,
		       size_t *len)
{
	unsigned r = (unsigned)rand_r(seed);

	if (r % 3) {
		*p = b->addr;
		*len = buf_len;
		return;
	}
	*p = b->addr + (r / 3 % BUF_PAGES) * ps + r % 97;
	*len = 1 + r % ps;
	if (*p + *len > b->addr + buf_len)
		*len = (size_t)(b->addr + buf_len - *p);
}

static void check_contents(const struct buffer *b)
{
	size_t off;

	for (off = 0; off < buf_len; off += ps)
		if ((unsigned char)b->addr[off] != b->tag) {
			fprintf(stderr, "buffer contents changed under a "
				"reader\n");
			exit(VDT_FAIL);
		}
}

static void use_buffer(struct buffer *b, unsigned *seed)
{
	lmm_handle_t h;
	size_t len;
	char *p;
	int err;

	VDT_CHECK_EQ(pthread_rwlock_rdlock(&b->lock), 0);
	pick_range(b, seed, &p, &len);
	err = lmm_cache_get(p, len, &h);
	if (err) {
		fprintf(stderr, "lmm_cache_get: %d\n", err);
		exit(VDT_FAIL);
	}
	seen_record(b, h);
	if (lmmt_check_pages(h, p, len, "worker")) {
		fprintf(stderr, "a worker got a stale or wrong page list\n");
		exit(VDT_FAIL);
	}
	check_contents(b);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	VDT_CHECK_EQ(pthread_rwlock_unlock(&b->lock), 0);
}

static void *worker_main(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
	unsigned n = lmmt_iterations(50000, 5000), i;

	for (i = 0; i < n; i++)
		use_buffer(&bufs[rand_r(&seed) % NR_BUFS], &seed);
	atomic_fetch_sub(&workers_running, 1);
	return NULL;
}

/* ---- remapper ---------------------------------------------------------------- */

static void replace_buffer(struct buffer *b, unsigned how)
{
	char *park, *p;

	switch (how % 4) {
	case 0: /* munmap, new memory at the address */
		VDT_CHECK_EQ(munmap(b->addr, buf_len), 0);
		b->addr = map_buffer_at(b->addr);
		break;
	case 1: /* mmap MAP_FIXED over our own mapping */
		p = mmap(b->addr, buf_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		VDT_CHECK(p == b->addr);
		break;
	case 2: /* discard; the next touch faults in new pages */
		VDT_CHECK_EQ(madvise(b->addr, buf_len, MADV_DONTNEED_LOCKED),
			     0);
		break;
	default:
		/* The first page moved elsewhere (registrations of pieces
		 * split the buffer into several VMAs, and mremap moves only
		 * within one), the rest unmapped, new memory at the address. */
		park = mmap(NULL, ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
		VDT_CHECK(park != MAP_FAILED);
		p = mremap(b->addr, ps, ps, MREMAP_MAYMOVE | MREMAP_FIXED,
			   park);
		VDT_CHECK(p == park);
		VDT_CHECK_EQ(munmap(park, ps), 0);
		VDT_CHECK_EQ(munmap(b->addr + ps, buf_len - ps), 0);
		b->addr = map_buffer_at(b->addr);
		break;
	}
	b->tag++;
	fill_buffer(b);
	seen_new_epoch(b);
}

static void *remapper_main(void *arg)
{
	unsigned seed = 12345, how = 0;
	struct timespec pause = { 0, 20000 };

	(void)arg;
	while (atomic_load(&workers_running) > 0) {
		struct buffer *b = &bufs[rand_r(&seed) % NR_BUFS];

		VDT_CHECK_EQ(pthread_rwlock_wrlock(&b->lock), 0);
		replace_buffer(b, how++);
		VDT_CHECK_EQ(pthread_rwlock_unlock(&b->lock), 0);
		atomic_fetch_add(&remaps, 1);
		nanosleep(&pause, NULL); /* let the workers hit the cache */
	}
	return NULL;
}

/* ---- main ------------------------------------------------------------------- */

static void init_buffers(void)
{
	pthread_rwlockattr_t attr;
	int i;

	VDT_CHECK_EQ(pthread_rwlockattr_init(&attr), 0);
	/* The remapper must not starve behind a stream of readers. */
	VDT_CHECK_EQ(pthread_rwlockattr_setkind_np(
			     &attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP),
		     0);
	for (i = 0; i < NR_BUFS; i++) {
		VDT_CHECK_EQ(pthread_rwlock_init(&bufs[i].lock, &attr), 0);
		VDT_CHECK_EQ(pthread_mutex_init(&bufs[i].seen.lock, NULL), 0);
		bufs[i].addr = map_buffer_at(NULL);
		bufs[i].tag = (unsigned char)(i * 16);
		fill_buffer(&bufs[i]);
	}
	pthread_rwlockattr_destroy(&attr);
}

static void release_buffers(void)
{
	int i;

	for (i = 0; i < NR_BUFS; i++) {
		VDT_CHECK_EQ(munmap(bufs[i].addr, buf_len), 0);
		pthread_rwlock_destroy(&bufs[i].lock);
		pthread_mutex_destroy(&bufs[i].seen.lock);
	}
}

int main(void)
{
	pthread_t workers[NR_WORKERS], remapper;
	struct lmm_cache_stats s;
	struct lmm_stats st;
	long long baseline;
	struct timespec t0, t1;
	lmm_handle_t h;
	int i;

	ps = vdt_page_size();
	buf_len = BUF_PAGES * ps;
	lmmt_watchdog(60);
	baseline = lmmt_vmlck();
	VDT_CHECK(baseline >= 0);
	(void)lmmt_pagemap_fd(); /* opened before the threads start */
	init_buffers();

	VDT_CHECK_EQ(lmm_cache_get(bufs[0].addr, buf_len, &h), 0);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	VDT_SKIP_IF(lmmt_cache_stats().monitor != LMM_CACHE_MONITOR_USERFAULTFD,
		    "the cache's userfaultfd monitor is not running");

	clock_gettime(CLOCK_MONOTONIC, &t0);
	atomic_store(&workers_running, NR_WORKERS);
	for (i = 0; i < NR_WORKERS; i++)
		VDT_CHECK_EQ(pthread_create(&workers[i], NULL, worker_main,
					    (void *)(uintptr_t)i), 0);
	VDT_CHECK_EQ(pthread_create(&remapper, NULL, remapper_main, NULL), 0);
	for (i = 0; i < NR_WORKERS; i++)
		VDT_CHECK_EQ(pthread_join(workers[i], NULL), 0);
	VDT_CHECK_EQ(pthread_join(remapper, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	s = lmmt_cache_stats();
	fprintf(stderr, "hits %llu misses %llu invalidations %llu remaps %u, "
		"%.2f s\n", (unsigned long long)s.hits,
		(unsigned long long)s.misses,
		(unsigned long long)s.invalidations, atomic_load(&remaps),
		(double)(t1.tv_sec - t0.tv_sec) +
			(double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	VDT_CHECK(atomic_load(&remaps) > 0);
	VDT_CHECK(s.hits > 0);
	VDT_CHECK(s.invalidations > 0);
	VDT_CHECK_EQ(s.in_use, 0);
	VDT_CHECK(lmmt_check_vmlck(baseline, "after the threads") == 0);

	release_buffers();
	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	s = lmmt_cache_stats();
	st = lmmt_stats();
	VDT_CHECK_EQ(s.entries, 0);
	VDT_CHECK_EQ(st.registrations, 0);
	VDT_CHECK_EQ(lmmt_vmlck(), baseline);
	VDT_CHECK_EQ(lmm_cleanup(), 0);
	return VDT_PASS;
}
