/* SPDX-License-Identifier: MIT */
/*
 * Description: semantics of the pin-down registration cache
 * (lmm_cache_get/put): revocation of plain registrations once the monitor
 * runs (also of those made before it started), hits on the same range and
 * on sub-ranges, use
 * counts, bad and foreign handles, the entry and byte budget with LRU
 * eviction, flush, lmm_cleanup, the userfaultfd monitor and a basic
 * invalidation, regular-file mappings served uncached, argument errors, and
 * the environment (VIADUCT_LMM_CACHE=0, VIADUCT_LMM_CACHE_MAX_*), checked
 * in a re-executed copy of this program.  Every step compares the page list
 * with /proc/self/pagemap and VmLck with what the LMM reports.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lmmtest.h"
#include "vdtest.h"
#include "viaduct/lmm.h"

#define ENV_CHILD_ARG "--env-child"
#define ENV_MAX_ENTRIES 7
#define ENV_MAX_BYTES_PAGES 123
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

extern char **environ;

static size_t ps;
static long long baseline;       /* VmLck before any registration */
static int have_monitor;         /* the userfaultfd monitor runs */
static struct lmm_cache_stats defaults; /* budget before any test */

static void unmap_pages(void *p, size_t n)
{
	VDT_CHECK_EQ(munmap(p, n * ps), 0);
}

/* Take a cache registration of [p, p+len) and check its pages. */
static lmm_handle_t get_checked(void *p, size_t len, const char *where)
{
	lmm_handle_t h = LMM_HANDLE_INVALID;

	VDT_CHECK_EQ(lmm_cache_get(p, len, &h), 0);
	VDT_CHECK(h != LMM_HANDLE_INVALID);
	VDT_CHECK(lmmt_check_pages(h, p, len, where) == 0);
	return h;
}

static void get_put(void *p, size_t len, const char *where)
{
	VDT_CHECK_EQ(lmm_cache_put(get_checked(p, len, where)), 0);
}

/* VmLck must be exactly 'extra' bytes above the baseline, and agree with
 * the LMM's own accounting. */
static void expect_locked(long long extra, const char *where)
{
	long long v;

	VDT_CHECK(lmmt_check_vmlck(baseline, where) == 0); /* syncs first */
	v = lmmt_vmlck();
	if (v != baseline + extra) {
		fprintf(stderr, "%s: VmLck %lld, expected %lld + %lld\n",
			where, v, baseline, extra);
		exit(VDT_FAIL);
	}
}

/* Every test must leave nothing behind but idle entries; drop those. */
static void finish_test(const char *name)
{
	struct lmm_cache_stats cs;
	struct lmm_stats st;

	VDT_CHECK_EQ(lmm_cache_set_limits(defaults.max_entries,
					  defaults.max_bytes), 0);
	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	cs = lmmt_cache_stats();
	st = lmmt_stats();
	VDT_CHECK_EQ(cs.in_use, 0);
	VDT_CHECK_EQ(cs.entries, 0);
	VDT_CHECK_EQ(cs.bytes, 0);
	VDT_CHECK_EQ(st.registrations, 0);
	VDT_CHECK_EQ(st.locked_bytes, 0);
	expect_locked(0, name);
	fprintf(stderr, "ok   %s\n", name);
}

/* ---- tests ---------------------------------------------------------------- */

/*
 * Plain registrations are watched too once the monitor runs, also those
 * made before it started: memory going away revokes them (-ESTALE), and
 * lmm_unlock_area still releases them.  Must run before the first get.
 */
static void test_plain_revoked(void)
{
	char *b = lmmt_map_pages(3), *c = lmmt_map_pages(2), *d;
	lmm_handle_t before, after;
	struct lmm_stats l0;
	size_t n;

	VDT_CHECK(b && c);
	VDT_CHECK_EQ(lmm_lock_area(b, 3 * ps, &before), 0);
	get_put(c, 2 * ps, "first cache get: starts the monitor");
	if (lmmt_cache_stats().monitor != LMM_CACHE_MONITOR_USERFAULTFD) {
		VDT_CHECK_EQ(lmm_unlock_area(before), 0);
		unmap_pages(b, 3);
		unmap_pages(c, 2);
		finish_test("plain registrations (no monitor: not revoked)");
		return;
	}
	d = lmmt_map_pages(2);
	VDT_CHECK(d);
	VDT_CHECK_EQ(lmm_lock_area(d, 2 * ps, &after), 0);
	l0 = lmmt_stats();
	unmap_pages(b + ps, 1); /* part of it is enough */
	unmap_pages(d, 2);
	VDT_CHECK_EQ(lmm_get_pages(before, NULL, 0, &n, NULL), -ESTALE);
	VDT_CHECK_EQ(lmm_get_pages(after, NULL, 0, &n, NULL), -ESTALE);
	VDT_CHECK_EQ(lmmt_stats().revoked, l0.revoked + 2);
	expect_locked(2 * (long long)ps, "revoked plain ones; c cached");
	VDT_CHECK_EQ(lmm_unlock_area(before), 0);
	VDT_CHECK_EQ(lmm_unlock_area(after), 0);
	VDT_CHECK_EQ(lmm_unlock_area(before), -EBADF);
	unmap_pages(b, 1);
	unmap_pages(b + 2 * ps, 1);
	unmap_pages(c, 2);
	finish_test("plain registrations are revoked when memory goes away");
}

static void test_get_errors(void)
{
	char *b = lmmt_map_pages(4);
	lmm_handle_t h = LMM_HANDLE_INVALID;
	char *hole;

	VDT_CHECK(b);
	VDT_CHECK_EQ(lmm_cache_get(b, 0, &h), -EINVAL);
	VDT_CHECK_EQ(lmm_cache_get(b, ps, NULL), -EINVAL);
	VDT_CHECK_EQ(lmm_cache_get((void *)(UINTPTR_MAX - ps + 1), 2 * ps, &h),
		     -EOVERFLOW);
	/* Last two pages unmapped: the range is not entirely mapped. */
	hole = b + 2 * ps;
	unmap_pages(hole, 2);
	VDT_CHECK_EQ(lmm_cache_get(b, 4 * ps, &h), -EFAULT);
	VDT_CHECK_EQ(lmm_cache_get(hole, ps, &h), -EFAULT);
	/* PROT_NONE cannot be locked into memory. */
	VDT_CHECK_EQ(mprotect(b + ps, ps, PROT_NONE), 0);
	VDT_CHECK_EQ(lmm_cache_get(b, 2 * ps, &h), -EFAULT);
	expect_locked(0, "after failed gets");
	unmap_pages(b, 2);
	finish_test("get: argument and mapping errors");
}

static void test_monitor(void)
{
	char *b = lmmt_map_pages(2);
	struct lmm_cache_stats cs;
	lmm_handle_t h;

	VDT_CHECK(b);
	h = get_checked(b, 2 * ps, "first get");
	cs = lmmt_cache_stats();
	have_monitor = cs.monitor == LMM_CACHE_MONITOR_USERFAULTFD;
	if (!have_monitor) {
		VDT_CHECK_EQ(cs.monitor, LMM_CACHE_MONITOR_UNAVAILABLE);
		if (lmmt_uffd_usable()) {
			fprintf(stderr, "userfaultfd is usable here, but the "
				"cache's monitor did not start\n");
			exit(VDT_FAIL);
		}
		fprintf(stderr, "note: no userfaultfd monitor on this system: "
			"caching and invalidation parts are skipped\n");
	}
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	unmap_pages(b, 2);
	finish_test("monitor starts at the first get");
}

static void test_hit_same_range(void)
{
	char *b = lmmt_map_pages(4);
	struct lmm_cache_stats s0 = lmmt_cache_stats(), s1;
	lmm_handle_t h1, h2;

	VDT_CHECK(b);
	h1 = get_checked(b, 4 * ps, "miss");
	VDT_CHECK_EQ(lmm_cache_put(h1), 0);
	expect_locked(4 * (long long)ps, "idle entry stays locked");
	h2 = get_checked(b, 4 * ps, "hit");
	VDT_CHECK(h2 == h1);
	s1 = lmmt_cache_stats();
	VDT_CHECK_EQ(s1.misses - s0.misses, 1);
	VDT_CHECK_EQ(s1.hits - s0.hits, 1);
	VDT_CHECK_EQ(s1.entries, 1);
	VDT_CHECK_EQ(s1.bytes, 4 * ps);
	VDT_CHECK_EQ(lmm_cache_put(h2), 0);
	expect_locked(4 * (long long)ps, "idle after the hit");
	unmap_pages(b, 4);
	finish_test("second get of the same range hits, same handle");
}

static void test_hit_subrange(void)
{
	char *b = lmmt_map_pages(12);
	struct lmm_cache_stats s0 = lmmt_cache_stats(), s1;
	lmm_handle_t h1, h2, h3;
	void *start;
	size_t len;

	VDT_CHECK(b);
	h1 = get_checked(b, 8 * ps, "entry of 8 pages");
	VDT_CHECK_EQ(lmm_cache_put(h1), 0);
	/* An unaligned piece inside it. */
	h2 = get_checked(b + 2 * ps + 10, 100, "sub-range");
	VDT_CHECK(h2 == h1);
	VDT_CHECK_EQ(lmm_area_get(h2, &start, &len), 0);
	VDT_CHECK(start == b && len == 8 * ps);
	/* A range reaching past the entry cannot be served by it. */
	h3 = get_checked(b, 12 * ps, "super-range");
	VDT_CHECK(h3 != h1);
	VDT_CHECK_EQ(lmm_area_get(h3, &start, &len), 0);
	VDT_CHECK(start == b && len == 12 * ps);
	s1 = lmmt_cache_stats();
	VDT_CHECK_EQ(s1.hits - s0.hits, 1);
	VDT_CHECK_EQ(s1.misses - s0.misses, 2);
	VDT_CHECK_EQ(lmm_cache_put(h2), 0);
	VDT_CHECK_EQ(lmm_cache_put(h3), 0);
	expect_locked(12 * (long long)ps, "two overlapping idle entries");
	unmap_pages(b, 12);
	finish_test("get of a sub-range hits, a super-range misses");
}

static void test_use_counts(void)
{
	char *b = lmmt_map_pages(2);
	struct lmm_cache_stats s0 = lmmt_cache_stats(), s;
	lmm_handle_t h1, h2, h3;
	int err;

	VDT_CHECK(b);
	h1 = get_checked(b, 2 * ps, "first user");
	h2 = get_checked(b, 2 * ps, "second user");
	VDT_CHECK(h1 == h2);
	s = lmmt_cache_stats();
	VDT_CHECK_EQ(s.in_use, s0.in_use + 1);
	VDT_CHECK_EQ(s.entries, s0.entries + 1);
	VDT_CHECK_EQ(lmm_cache_put(h1), 0);
	VDT_CHECK_EQ(lmmt_cache_stats().in_use, s0.in_use + 1);
	/* Still in use: neither unlock_area nor flush may take it. */
	VDT_CHECK_EQ(lmm_unlock_area(h1), -EBUSY);
	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	VDT_CHECK(lmmt_check_pages(h1, b, 2 * ps, "in use after flush") == 0);
	expect_locked(2 * (long long)ps, "in use after flush");
	VDT_CHECK_EQ(lmm_cache_put(h2), 0);
	s = lmmt_cache_stats();
	VDT_CHECK_EQ(s.in_use, s0.in_use);
	VDT_CHECK_EQ(s.entries, s0.entries + 1);
	/* Idle and still cache-owned. */
	VDT_CHECK_EQ(lmm_unlock_area(h1), -EBUSY);
	/* One put more than gets: the reference was already released. */
	err = lmm_cache_put(h1);
	if (err != -EBADF) {
		fprintf(stderr, "extra put of an idle entry returned %d, "
			"expected -EBADF (already released)\n", err);
		exit(VDT_FAIL);
	}
	s = lmmt_cache_stats();
	VDT_CHECK_EQ(s.in_use, s0.in_use);
	/* The entry is intact: it hits, counts once, and flush drops it. */
	h3 = get_checked(b, 2 * ps, "hit after the extra put");
	VDT_CHECK(h3 == h1);
	VDT_CHECK_EQ(lmmt_cache_stats().in_use, s0.in_use + 1);
	VDT_CHECK_EQ(lmm_cache_put(h3), 0);
	VDT_CHECK_EQ(lmmt_cache_stats().in_use, s0.in_use);
	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	expect_locked(0, "flushed");
	unmap_pages(b, 2);
	finish_test("use counts: two gets, one put keeps it in use");
}

static void test_bad_handles(void)
{
	char *b = lmmt_map_pages(4);
	lmm_handle_t hc, hp;
	size_t n;
	int err;

	VDT_CHECK(b);
	VDT_CHECK_EQ(lmm_cache_put(LMM_HANDLE_INVALID), -EBADF);
	VDT_CHECK_EQ(lmm_cache_put(0xfeedface00000001ULL), -EBADF);
	VDT_CHECK_EQ(lmm_cache_put(~0ULL), -EBADF);
	hc = get_checked(b, 2 * ps, "cache handle");
	/* The same slot with another generation, and neighbouring slots. */
	VDT_CHECK_EQ(lmm_cache_put(hc ^ (1ULL << 40)), -EBADF);
	VDT_CHECK_EQ(lmm_cache_put(hc + 1), -EBADF);
	VDT_CHECK_EQ(lmmt_cache_stats().in_use, 1);
	/* A plain registration is not the cache's. */
	VDT_CHECK_EQ(lmm_lock_area(b + 2 * ps, 2 * ps, &hp), 0);
	err = lmm_cache_put(hp);
	fprintf(stderr, "     lmm_cache_put(plain handle) = %d\n", err);
	VDT_CHECK(err == -EINVAL || err == -EBADF);
	VDT_CHECK(lmmt_check_pages(hp, b + 2 * ps, 2 * ps,
				   "plain handle after a refused put") == 0);
	VDT_CHECK_EQ(lmm_unlock_area(hc), -EBUSY);
	VDT_CHECK_EQ(lmm_unlock_area(hp), 0);
	VDT_CHECK_EQ(lmm_unlock_area(hp), -EBADF);
	VDT_CHECK_EQ(lmm_cache_put(hc), 0);
	/* Evicted: the cache handle is gone for good. */
	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	VDT_CHECK_EQ(lmm_cache_put(hc), -EBADF);
	VDT_CHECK_EQ(lmm_get_pages(hc, NULL, 0, &n, NULL), -EBADF);
	VDT_CHECK_EQ(lmm_unlock_area(hc), -EBADF);
	unmap_pages(b, 4);
	finish_test("put of forged, plain and evicted handles");
}

/* 10 distinct two-page buffers, each got and put once. */
static void cycle_ten_buffers(char *b, size_t *max_entries_seen)
{
	int i;

	for (i = 0; i < 10; i++) {
		get_put(b + (size_t)i * 3 * ps, 2 * ps, "budget buffer");
		if (lmmt_cache_stats().entries > *max_entries_seen)
			*max_entries_seen = lmmt_cache_stats().entries;
	}
}

static void test_budget_entries(void)
{
	char *b = lmmt_map_pages(30);
	struct lmm_cache_stats s0, s;
	size_t seen = 0;

	VDT_CHECK(b);
	VDT_CHECK_EQ(lmm_cache_set_limits(4, 0), 0);
	s0 = lmmt_cache_stats();
	VDT_CHECK_EQ(s0.max_entries, 4);
	VDT_CHECK_EQ(s0.max_bytes, defaults.max_bytes); /* 0 keeps it */
	cycle_ten_buffers(b, &seen);
	s = lmmt_cache_stats();
	VDT_CHECK(seen <= 4);
	VDT_CHECK_EQ(s.entries, 4);
	VDT_CHECK_EQ(s.evictions - s0.evictions, 6);
	VDT_CHECK_EQ(s.bytes, 8 * ps);
	expect_locked(8 * (long long)ps, "four idle entries");
	/* Shrinking the budget evicts at once. */
	VDT_CHECK_EQ(lmm_cache_set_limits(2, 0), 0);
	VDT_CHECK_EQ(lmmt_cache_stats().entries, 2);
	expect_locked(4 * (long long)ps, "two idle entries");
	unmap_pages(b, 30);
	finish_test("entry budget: 10 buffers, at most 4 entries");
}

static void test_budget_bytes(void)
{
	char *b = lmmt_map_pages(30);
	struct lmm_cache_stats s0, s;
	size_t seen = 0;

	VDT_CHECK(b);
	VDT_CHECK_EQ(lmm_cache_set_limits(0, 5 * ps), 0);
	s0 = lmmt_cache_stats();
	VDT_CHECK_EQ(s0.max_bytes, 5 * ps);
	cycle_ten_buffers(b, &seen);
	s = lmmt_cache_stats();
	VDT_CHECK(s.bytes <= 5 * ps);
	VDT_CHECK_EQ(s.entries, 2);
	VDT_CHECK_EQ(s.evictions - s0.evictions, 8);
	expect_locked((long long)s.bytes, "byte budget");
	unmap_pages(b, 30);
	finish_test("byte budget: 10 buffers, at most 5 pages");
}

static void test_lru_order(void)
{
	char *b = lmmt_map_pages(15), *buf[5];
	struct lmm_cache_stats s0, s;
	int i;

	VDT_CHECK(b);
	for (i = 0; i < 5; i++)
		buf[i] = b + (size_t)i * 3 * ps; /* A..E, with gaps */
	VDT_CHECK_EQ(lmm_cache_set_limits(4, 0), 0);
	s0 = lmmt_cache_stats();
	for (i = 0; i < 4; i++)
		get_put(buf[i], 2 * ps, "fill A-D");
	get_put(buf[0], 2 * ps, "touch A");  /* A most recently used */
	get_put(buf[4], 2 * ps, "E evicts the LRU, B");
	s = lmmt_cache_stats();
	VDT_CHECK_EQ(s.evictions - s0.evictions, 1);
	VDT_CHECK_EQ(s.hits - s0.hits, 1);
	get_put(buf[0], 2 * ps, "A survived");
	get_put(buf[2], 2 * ps, "C survived");
	get_put(buf[3], 2 * ps, "D survived");
	s = lmmt_cache_stats();
	VDT_CHECK_EQ(s.hits - s0.hits, 4);
	VDT_CHECK_EQ(s.misses - s0.misses, 5);
	get_put(buf[1], 2 * ps, "B was evicted");
	s = lmmt_cache_stats();
	VDT_CHECK_EQ(s.misses - s0.misses, 6);
	VDT_CHECK_EQ(s.evictions - s0.evictions, 2);
	unmap_pages(b, 15);
	finish_test("LRU: the most recently used entry survives");
}

static void test_flush(void)
{
	char *b = lmmt_map_pages(6);
	lmm_handle_t idle, busy;
	size_t n;

	VDT_CHECK(b);
	idle = get_checked(b, 2 * ps, "idle entry");
	VDT_CHECK_EQ(lmm_cache_put(idle), 0);
	busy = get_checked(b + 3 * ps, 3 * ps, "busy entry");
	expect_locked(5 * (long long)ps, "before flush");
	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	VDT_CHECK_EQ(lmmt_cache_stats().entries, 1);
	VDT_CHECK_EQ(lmmt_cache_stats().in_use, 1);
	expect_locked(3 * (long long)ps, "flush keeps the busy entry");
	VDT_CHECK(lmmt_check_pages(busy, b + 3 * ps, 3 * ps, "busy") == 0);
	VDT_CHECK_EQ(lmm_get_pages(idle, NULL, 0, &n, NULL), -EBADF);
	VDT_CHECK_EQ(lmm_cache_put(busy), 0);
	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	expect_locked(0, "flush after the put");
	unmap_pages(b, 6);
	finish_test("flush drops idle entries only");
}

/* A file on a disk file system (never tmpfs, which userfaultfd can watch),
 * unlinked at once; -1 when there is none. */
static int open_disk_file(size_t len)
{
	static const char *const dirs[] = { "/tmp", "/var/tmp", "." };
	char path[256];
	struct statfs sf;
	size_t i;
	int fd;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (statfs(dirs[i], &sf) || sf.f_type == TMPFS_MAGIC)
			continue;
		snprintf(path, sizeof(path), "%s/viaduct-lmm-cache-XXXXXX",
			 dirs[i]);
		fd = mkstemp(path);
		if (fd < 0)
			continue;
		unlink(path);
		if (ftruncate(fd, (off_t)len)) {
			close(fd);
			continue;
		}
		return fd;
	}
	return -1;
}

/* A file mapping is registered per call: uncacheable, released at put. */
static void check_file_mapping_uncached(int fd, int flags, const char *what)
{
	struct lmm_cache_stats s0 = lmmt_cache_stats(), s;
	char *m = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, flags, fd, 0);
	lmm_handle_t h1, h2;

	VDT_CHECK(m != MAP_FAILED);
	memset(m, 0x3c, 4 * ps);
	h1 = get_checked(m, 4 * ps, what);
	expect_locked(4 * (long long)ps, what);
	VDT_CHECK_EQ(lmm_cache_put(h1), 0);
	expect_locked(0, "file mapping released at put");
	h2 = get_checked(m + ps, ps, what);
	VDT_CHECK_EQ(lmm_cache_put(h2), 0);
	VDT_CHECK_EQ(lmm_cache_put(h2), -EBADF);
	s = lmmt_cache_stats();
	VDT_CHECK_EQ(s.uncacheable - s0.uncacheable, 2);
	VDT_CHECK_EQ(s.hits, s0.hits);
	VDT_CHECK_EQ(s.entries, s0.entries);
	VDT_CHECK(m[0] == 0x3c && m[4 * ps - 1] == 0x3c);
	unmap_pages(m, 4);
}

static void test_file_mapping_uncacheable(void)
{
	int fd = open_disk_file(4 * ps);

	if (fd < 0) {
		fprintf(stderr, "note: no disk file system for a file "
			"mapping: skipped\n");
		return;
	}
	check_file_mapping_uncached(fd, MAP_SHARED, "MAP_SHARED file");
	check_file_mapping_uncached(fd, MAP_PRIVATE, "MAP_PRIVATE file");
	close(fd);
	finish_test("regular file mappings are served uncached");
}

/* Memory going away invalidates; other unmaps and a refused MADV_DONTNEED
 * do not. */
static void test_invalidation_basic(void)
{
	char *b = lmmt_map_pages(4), *other = lmmt_map_pages(4), *again;
	struct lmm_cache_stats s0, s;
	lmm_handle_t h;

	VDT_CHECK(b && other);
	get_put(b, 4 * ps, "cached");
	s0 = lmmt_cache_stats();
	unmap_pages(other, 4);
	VDT_CHECK_EQ(madvise(b, 4 * ps, MADV_DONTNEED), -1); /* locked */
	VDT_CHECK_EQ(errno, EINVAL);
	VDT_CHECK_EQ(lmmt_cache_stats().invalidations, s0.invalidations);
	get_put(b, 4 * ps, "still valid");
	VDT_CHECK_EQ(lmmt_cache_stats().hits, s0.hits + 1);
	unmap_pages(b, 4);
	s = lmmt_cache_stats();
	VDT_CHECK_EQ(s.invalidations, s0.invalidations + 1);
	VDT_CHECK_EQ(s.entries, s0.entries - 1);
	expect_locked(0, "after munmap of the cached buffer");
	again = mmap(b, 4 * ps, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	VDT_CHECK(again != MAP_FAILED);
	memset(again, 0x11, 4 * ps);
	h = get_checked(again, 4 * ps, "new memory at the address");
	s = lmmt_cache_stats();
	VDT_CHECK_EQ(s.misses, s0.misses + 1);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	unmap_pages(again, 4);
	finish_test("munmap invalidates, unrelated events do not");
}

/* Handles of every kind, alive when lmm_cleanup() runs. */
struct cleanup_fixture {
	char *b, *file_map;
	int fd;
	lmm_handle_t idle, busy, revoked, plain, uncached;
};

static void cleanup_fixture_make(struct cleanup_fixture *fx)
{
	char *gone = lmmt_map_pages(2);
	size_t n;

	fx->b = lmmt_map_pages(12);
	VDT_CHECK(fx->b && gone);
	fx->idle = get_checked(fx->b, 2 * ps, "idle");
	VDT_CHECK_EQ(lmm_cache_put(fx->idle), 0);
	fx->busy = get_checked(fx->b + 3 * ps, 2 * ps, "busy");
	VDT_CHECK_EQ(lmm_lock_area(fx->b + 6 * ps, 2 * ps, &fx->plain), 0);
	/* In use and revoked by the monitor. */
	fx->revoked = get_checked(gone, 2 * ps, "to be revoked");
	unmap_pages(gone, 2);
	VDT_CHECK_EQ(lmm_get_pages(fx->revoked, NULL, 0, &n, NULL), -ESTALE);
	/* In use and uncacheable. */
	fx->file_map = NULL;
	fx->fd = open_disk_file(2 * ps);
	if (fx->fd >= 0) {
		fx->file_map = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE,
				    MAP_SHARED, fx->fd, 0);
		VDT_CHECK(fx->file_map != MAP_FAILED);
		fx->uncached = get_checked(fx->file_map, 2 * ps,
					   "uncacheable, in use");
	}
}

static void expect_everything_released(const struct cleanup_fixture *fx)
{
	struct lmm_cache_stats s = lmmt_cache_stats();
	struct lmm_stats st = lmmt_stats();
	size_t n;

	expect_locked(0, "after lmm_cleanup");
	VDT_CHECK_EQ(st.registrations, 0);
	VDT_CHECK_EQ(st.areas, 0);
	if (s.entries || s.in_use || s.bytes) {
		fprintf(stderr, "cache stats after lmm_cleanup: entries %llu, "
			"in_use %llu, bytes %llu; expected 0\n",
			(unsigned long long)s.entries,
			(unsigned long long)s.in_use,
			(unsigned long long)s.bytes);
		exit(VDT_FAIL);
	}
	VDT_CHECK_EQ(lmm_get_pages(fx->idle, NULL, 0, &n, NULL), -EBADF);
	VDT_CHECK_EQ(lmm_get_pages(fx->busy, NULL, 0, &n, NULL), -EBADF);
	VDT_CHECK_EQ(lmm_cache_put(fx->busy), -EBADF);
	VDT_CHECK_EQ(lmm_cache_put(fx->revoked), -EBADF);
	VDT_CHECK_EQ(lmm_unlock_area(fx->plain), -EBADF);
	if (fx->file_map)
		VDT_CHECK_EQ(lmm_cache_put(fx->uncached), -EBADF);
}

/* The cache works again, with a monitor that sees munmap. */
static void expect_usable_again(const struct cleanup_fixture *fx)
{
	lmm_handle_t h = get_checked(fx->b, 2 * ps, "after cleanup");
	struct lmm_cache_stats s;

	VDT_CHECK(h != fx->idle);
	VDT_CHECK_EQ(lmmt_cache_stats().monitor, LMM_CACHE_MONITOR_USERFAULTFD);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	s = lmmt_cache_stats();
	unmap_pages(fx->b, 12);
	VDT_CHECK_EQ(lmmt_cache_stats().invalidations, s.invalidations + 1);
}

static void test_cleanup(void)
{
	struct cleanup_fixture fx;
	int monitor_after;

	cleanup_fixture_make(&fx);
	VDT_CHECK_EQ(lmm_cleanup(), 0);
	monitor_after = lmmt_cache_stats().monitor;
	expect_everything_released(&fx);
	expect_usable_again(&fx);
	if (fx.file_map)
		unmap_pages(fx.file_map, 2);
	if (fx.fd >= 0)
		close(fx.fd);
	/* "and stop the cache's monitor" (lmm.h). */
	if (monitor_after != LMM_CACHE_MONITOR_NONE) {
		fprintf(stderr, "monitor state %d after lmm_cleanup, expected "
			"%d (stopped)\n", monitor_after,
			LMM_CACHE_MONITOR_NONE);
		exit(VDT_FAIL);
	}
	finish_test("lmm_cleanup invalidates every handle");
}

/* ---- environment, in a re-executed copy ---------------------------------- */

static int env_child(void)
{
	char *b = lmmt_map_pages(2);
	struct lmm_cache_stats s0, s;
	lmm_handle_t h1, h2;

	ps = vdt_page_size();
	baseline = lmmt_vmlck();
	VDT_CHECK(b);
	s0 = lmmt_cache_stats();
	VDT_CHECK_EQ(s0.max_entries, ENV_MAX_ENTRIES);
	VDT_CHECK_EQ(s0.max_bytes, ENV_MAX_BYTES_PAGES * ps);
	h1 = get_checked(b, 2 * ps, "caching disabled");
	expect_locked(2 * (long long)ps, "held");
	VDT_CHECK_EQ(lmm_cache_put(h1), 0);
	expect_locked(0, "released at put");
	h2 = get_checked(b, 2 * ps, "caching disabled, again");
	VDT_CHECK_EQ(lmm_cache_put(h2), 0);
	s = lmmt_cache_stats();
	VDT_CHECK_EQ(s.hits, 0);
	VDT_CHECK_EQ(s.uncacheable, 2);
	VDT_CHECK_EQ(s.entries, 0);
	VDT_CHECK(s.monitor != LMM_CACHE_MONITOR_USERFAULTFD);
	return VDT_PASS;
}

static void test_environment(const char *self)
{
	char max_entries[64], max_bytes[64];
	char *envp[512], *argv[] = { (char *)self, (char *)ENV_CHILD_ARG, NULL };
	size_t i, n = 0;
	pid_t pid;
	int status;

	snprintf(max_entries, sizeof(max_entries),
		 "VIADUCT_LMM_CACHE_MAX_ENTRIES=%d", ENV_MAX_ENTRIES);
	snprintf(max_bytes, sizeof(max_bytes),
		 "VIADUCT_LMM_CACHE_MAX_BYTES=%zu", ENV_MAX_BYTES_PAGES * ps);
	for (i = 0; environ[i] && n < 500; i++)
		if (strncmp(environ[i], "VIADUCT_LMM_CACHE", 17))
			envp[n++] = environ[i];
	envp[n++] = (char *)"VIADUCT_LMM_CACHE=0";
	envp[n++] = max_entries;
	envp[n++] = max_bytes;
	envp[n] = NULL;
	VDT_CHECK_EQ(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv,
				 envp), 0);
	VDT_CHECK_EQ(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != VDT_PASS) {
		fprintf(stderr, "environment child failed (status %#x)\n",
			status);
		exit(VDT_FAIL);
	}
	finish_test("VIADUCT_LMM_CACHE=0 and _MAX_ENTRIES/_MAX_BYTES");
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], ENV_CHILD_ARG))
		return env_child();

	ps = vdt_page_size();
	lmmt_watchdog(LMMT_SANITIZED ? 300 : 60);
	baseline = lmmt_vmlck();
	VDT_CHECK(baseline >= 0);
	defaults = lmmt_cache_stats();

	test_plain_revoked();
	test_get_errors();
	test_monitor();
	test_environment(argv[0]);
	test_file_mapping_uncacheable();
	test_bad_handles();
	if (!have_monitor) {
		fprintf(stderr, "SKIP: caching parts need the userfaultfd "
			"monitor\n");
		return VDT_SKIP;
	}
	test_hit_same_range();
	test_hit_subrange();
	test_use_counts();
	test_budget_entries();
	test_budget_bytes();
	test_lru_order();
	test_flush();
	test_invalidation_basic();
	test_cleanup();
	return VDT_PASS;
}
