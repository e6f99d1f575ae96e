/* SPDX-License-Identifier: MIT */
/*
 * Description: RLIMIT_MEMLOCK as an unprivileged user.  A child lowers
 * RLIMIT_MEMLOCK to 64 KiB (16 pages of 4 KiB; soft and hard) and, when
 * run as root, becomes nobody without CAP_IPC_LOCK.  Then: registrations
 * up to the limit succeed; one past it fails with -ENOMEM and leaves
 * nothing locked (also when part of it had been locked before the limit
 * was hit), earlier registrations intact; registering pages that are
 * already locked still succeeds at the limit; after unlocking, the big one
 * fits.  The pin-down cache's default byte budget is half the limit; with
 * a larger budget the cache fills up to RLIMIT_MEMLOCK, and then a new
 * lmm_cache_get or lmm_lock_area still succeeds because idle entries are
 * evicted first, least recently used first (in-use entries are not:
 * -ENOMEM).  Last, RLIMIT_MEMLOCK 0
 * gives -EPERM (accepted too: -ENOMEM); the parent prints which.  The child
 * reports through its exit status and a pipe.
 */
#include <errno.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lmmtest.h"
#include "vdtest.h"
#include "viaduct/lmm.h"

#define LIMIT_PAGES 16u   /* RLIMIT_MEMLOCK = 64 KiB with 4 KiB pages */
#define NOBODY 65534
#define CAP_IPC_LOCK_BIT 14

struct report {
	int zero_limit_lock;   /* lmm_lock_area under RLIMIT_MEMLOCK 0 */
	int zero_limit_cache;  /* lmm_cache_get under RLIMIT_MEMLOCK 0 */
	int cache_tested;
	int dropped;           /* became nobody */
};

static size_t ps;
static long long pages_bytes(unsigned n)
{
	return (long long)n * (long long)ps;
}

static int has_cap_ipc_lock(void)
{
	char line[256];
	unsigned long long caps = 0;
	FILE *f = fopen("/proc/self/status", "re");

	VDT_CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	fclose(f);
	return !!(caps & (1ULL << CAP_IPC_LOCK_BIT));
}

static void set_memlock_limit(rlim_t bytes)
{
	struct rlimit rl = { bytes, bytes };

	VDT_CHECK_EQ(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
}

/* Become an ordinary user: nobody, no supplementary groups. */
static int drop_privileges(void)
{
	if (geteuid() != 0)
		return 0;
	VDT_CHECK_EQ(setgroups(0, NULL), 0);
	VDT_CHECK_EQ(setgid(NOBODY), 0);
	VDT_CHECK_EQ(setuid(NOBODY), 0);
	/* Changing ids made us non-dumpable, which makes /proc/self files
	 * root-owned (pagemap unreadable); an ordinary process is dumpable. */
	VDT_CHECK_EQ(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), 0);
	VDT_CHECK(getuid() == NOBODY && geteuid() == NOBODY);
	return 1;
}

/* VmLck must be exactly n pages, and match the LMM's accounting. */
static void expect_locked_pages(unsigned n, const char *where)
{
	long long v;

	VDT_CHECK(lmmt_check_vmlck(0, where) == 0);
	v = lmmt_vmlck();
	if (v != pages_bytes(n)) {
		fprintf(stderr, "%s: VmLck %lld, expected %u pages\n", where,
			v, n);
		exit(VDT_FAIL);
	}
}

static lmm_handle_t lock_ok(char *p, size_t len, const char *where)
{
	lmm_handle_t h = LMM_HANDLE_INVALID;
	int err = lmm_lock_area(p, len, &h);

	if (err) {
		fprintf(stderr, "%s: lmm_lock_area: %d\n", where, err);
		exit(VDT_FAIL);
	}
	VDT_CHECK(lmmt_check_pages(h, p, len, where) == 0);
	return h;
}

static void expect_lock_enomem(char *p, size_t len, const char *where)
{
	lmm_handle_t h = LMM_HANDLE_INVALID;
	int err = lmm_lock_area(p, len, &h);

	if (err != -ENOMEM) {
		fprintf(stderr, "%s: lmm_lock_area: %d, expected -ENOMEM\n",
			where, err);
		exit(VDT_FAIL);
	}
}

/* ---- plain registrations under the limit -------------------------------- */

static void test_plain_limit(void)
{
	char *x = lmmt_map_pages(32), *y = lmmt_map_pages(LIMIT_PAGES);
	lmm_handle_t small, h[4], big;
	struct lmm_stats st;
	uint64_t mlocks;
	int i;

	VDT_CHECK(x && y);
	expect_locked_pages(0, "start");
	small = lock_ok(x + 4 * ps, 4 * ps, "4 pages");
	expect_locked_pages(4, "4 pages");

	/* 4 + 14 > 16 */
	expect_lock_enomem(y, 14 * ps, "14 more pages");
	expect_locked_pages(4, "after the refused 14");
	VDT_CHECK(lmmt_check_pages(small, x + 4 * ps, 4 * ps, "intact") == 0);

	/* x[0,24): [0,4) fits, [8,24) does not; [0,4) must be undone. */
	expect_lock_enomem(x, 24 * ps, "around the locked pages");
	expect_locked_pages(4, "after the refused overlap");

	/* Up to the limit exactly, then one page past it. */
	h[0] = lock_ok(x + 8 * ps, 12 * ps, "to the limit");
	expect_locked_pages(LIMIT_PAGES, "at the limit");
	expect_lock_enomem(x + 20 * ps, ps, "one page past the limit");
	expect_locked_pages(LIMIT_PAGES, "still at the limit");

	/* Already locked pages cost nothing: no mlock, no charge. */
	st = lmmt_stats();
	mlocks = st.mlock_calls;
	h[1] = lock_ok(x + 4 * ps, 16 * ps, "all locked pages again");
	h[2] = lock_ok(x + 5 * ps + 100, 2 * ps - 200, "unaligned inside");
	h[3] = lock_ok(x + 4 * ps, 4 * ps, "the small one again");
	VDT_CHECK_EQ(lmmt_stats().mlock_calls, mlocks);
	expect_locked_pages(LIMIT_PAGES, "overlaps at the limit");

	VDT_CHECK_EQ(lmm_unlock_area(small), 0);
	for (i = 0; i < 4; i++)
		VDT_CHECK_EQ(lmm_unlock_area(h[i]), 0);
	expect_locked_pages(0, "all unlocked");
	big = lock_ok(y, 14 * ps, "the big one after unlocking");
	expect_locked_pages(14, "big");
	VDT_CHECK_EQ(lmm_unlock_area(big), 0);
	expect_locked_pages(0, "big unlocked");
	VDT_CHECK_EQ(munmap(x, 32 * ps), 0);
	VDT_CHECK_EQ(munmap(y, LIMIT_PAGES * ps), 0);
	fprintf(stderr, "ok   plain registrations under RLIMIT_MEMLOCK\n");
}

/* ---- the pin-down cache under the limit ---------------------------------- */

#define CACHE_BUFS 10 /* two pages each: 20 pages > LIMIT_PAGES */

static char *cache_buf(char *z, int i)
{
	return z + (size_t)i * 3 * ps;
}

static void fill_cache_to_limit(char *z, lmm_handle_t *held, int keep)
{
	int i;

	for (i = 0; i < (int)LIMIT_PAGES / 2; i++) {
		VDT_CHECK_EQ(lmm_cache_get(cache_buf(z, i), 2 * ps, &held[i]),
			     0);
		if (!keep)
			VDT_CHECK_EQ(lmm_cache_put(held[i]), 0);
	}
	expect_locked_pages(LIMIT_PAGES, "cache filled to the limit");
}

/* Returns whether the cache could be tested (its monitor runs). */
static int test_cache_limit(void)
{
	char *z = lmmt_map_pages(3 * CACHE_BUFS), *w = lmmt_map_pages(2);
	lmm_handle_t held[CACHE_BUFS], h;
	struct lmm_cache_stats s0, s;

	VDT_CHECK(z && w);
	s0 = lmmt_cache_stats();
	VDT_CHECK_EQ(s0.max_bytes, pages_bytes(LIMIT_PAGES) / 2);
	VDT_CHECK_EQ(lmm_cache_get(w, 2 * ps, &h), 0);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	if (lmmt_cache_stats().monitor != LMM_CACHE_MONITOR_USERFAULTFD) {
		if (lmmt_uffd_usable()) {
			fprintf(stderr, "userfaultfd is usable by this user, "
				"but the cache's monitor did not start\n");
			exit(VDT_FAIL);
		}
		fprintf(stderr, "note: no userfaultfd monitor for this user: "
			"cache part skipped\n");
		return 0;
	}
	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	/* A budget larger than the limit: RLIMIT_MEMLOCK decides. */
	VDT_CHECK_EQ(lmm_cache_set_limits(0, (size_t)pages_bytes(64 * LIMIT_PAGES)),
		     0);

	fill_cache_to_limit(z, held, 0);
	/* Buffer 0 becomes the most recently used, buffer 1 the least. */
	VDT_CHECK_EQ(lmm_cache_get(cache_buf(z, 0), 2 * ps, &h), 0);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	s0 = lmmt_cache_stats();
	VDT_CHECK_EQ(lmm_cache_get(cache_buf(z, 8), 2 * ps, &h), 0);
	VDT_CHECK(lmmt_check_pages(h, cache_buf(z, 8), 2 * ps, "evicting get")
		  == 0);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	s = lmmt_cache_stats();
	VDT_CHECK_EQ(s.evictions, s0.evictions + 1);
	expect_locked_pages(LIMIT_PAGES, "after the evicting get");
	/* The LRU one went, the recently used one stayed. */
	VDT_CHECK_EQ(lmm_cache_get(cache_buf(z, 0), 2 * ps, &h), 0);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	VDT_CHECK_EQ(lmmt_cache_stats().hits, s.hits + 1);
	s = lmmt_cache_stats();
	VDT_CHECK_EQ(lmm_cache_get(cache_buf(z, 1), 2 * ps, &h), 0);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	VDT_CHECK_EQ(lmmt_cache_stats().misses, s.misses + 1);
	expect_locked_pages(LIMIT_PAGES, "after refetching the evicted one");

	/* The cache is full again; a plain registration evicts too. */
	s0 = s;
	h = lock_ok(cache_buf(z, 9), 2 * ps, "plain lock with a full cache");
	VDT_CHECK(lmmt_cache_stats().evictions > s0.evictions);
	expect_locked_pages(LIMIT_PAGES, "plain lock evicted an entry");
	VDT_CHECK_EQ(lmm_unlock_area(h), 0);
	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	expect_locked_pages(0, "flushed");

	/* Entries in use cannot be evicted. */
	fill_cache_to_limit(z, held, 1);
	expect_lock_enomem(w, 2 * ps, "plain lock, cache busy");
	VDT_CHECK_EQ(lmm_cache_get(cache_buf(z, 8), 2 * ps, &h), -ENOMEM);
	s = lmmt_cache_stats();
	VDT_CHECK_EQ(s.entries, LIMIT_PAGES / 2);
	VDT_CHECK_EQ(s.in_use, LIMIT_PAGES / 2);
	expect_locked_pages(LIMIT_PAGES, "busy cache intact");
	for (int i = 0; i < (int)LIMIT_PAGES / 2; i++) {
		VDT_CHECK(lmmt_check_pages(held[i], cache_buf(z, i), 2 * ps,
					   "held entry") == 0);
		VDT_CHECK_EQ(lmm_cache_put(held[i]), 0);
	}
	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	expect_locked_pages(0, "all released");
	VDT_CHECK_EQ(munmap(z, 3 * CACHE_BUFS * ps), 0);
	VDT_CHECK_EQ(munmap(w, 2 * ps), 0);
	fprintf(stderr, "ok   the cache under RLIMIT_MEMLOCK evicts idle "
		"entries\n");
	return 1;
}

/* ---- RLIMIT_MEMLOCK 0 ------------------------------------------------------ */

static void test_zero_limit(struct report *r)
{
	char *b = lmmt_map_pages(1);
	lmm_handle_t h;

	VDT_CHECK(b);
	VDT_CHECK_EQ(lmm_cleanup(), 0);
	set_memlock_limit(0);
	r->zero_limit_lock = lmm_lock_area(b, ps, &h);
	r->zero_limit_cache = lmm_cache_get(b, ps, &h);
	VDT_CHECK(r->zero_limit_lock == -EPERM ||
		  r->zero_limit_lock == -ENOMEM);
	VDT_CHECK(r->zero_limit_cache == -EPERM ||
		  r->zero_limit_cache == -ENOMEM);
	expect_locked_pages(0, "RLIMIT_MEMLOCK 0");
	fprintf(stderr, "ok   RLIMIT_MEMLOCK 0 refused\n");
}

static int child_main(int report_fd)
{
	struct report r = { 0 };
	struct rlimit cur;

	VDT_CHECK_EQ(getrlimit(RLIMIT_MEMLOCK, &cur), 0);
	if (cur.rlim_max != RLIM_INFINITY &&
	    cur.rlim_max < (rlim_t)pages_bytes(LIMIT_PAGES) && geteuid()) {
		fprintf(stderr, "SKIP: hard RLIMIT_MEMLOCK below %lld bytes\n",
			pages_bytes(LIMIT_PAGES));
		return VDT_SKIP;
	}
	set_memlock_limit(pages_bytes(LIMIT_PAGES));
	r.dropped = drop_privileges();
	if (has_cap_ipc_lock()) {
		fprintf(stderr, "SKIP: still CAP_IPC_LOCK (not root, but "
			"privileged): RLIMIT_MEMLOCK does not apply\n");
		return VDT_SKIP;
	}
	test_plain_limit();
	r.cache_tested = test_cache_limit();
	test_zero_limit(&r);
	VDT_CHECK(write(report_fd, &r, sizeof(r)) == (ssize_t)sizeof(r));
	return VDT_PASS;
}

static const char *errno_name(int err)
{
	return err == -EPERM ? "-EPERM" : err == -ENOMEM ? "-ENOMEM" : "other";
}

int main(void)
{
	struct report r;
	int fds[2], status;
	pid_t pid;
	ssize_t n;

	ps = vdt_page_size();
	lmmt_watchdog(LMMT_SANITIZED ? 300 : 60);
	VDT_CHECK_EQ(pipe(fds), 0);
	pid = fork();
	VDT_CHECK(pid >= 0);
	if (!pid) {
		close(fds[0]);
		lmmt_watchdog(LMMT_SANITIZED ? 300 : 60);
		_exit(child_main(fds[1]));
	}
	close(fds[1]);
	n = read(fds[0], &r, sizeof(r));
	VDT_CHECK_EQ(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == VDT_SKIP)
		return VDT_SKIP;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != VDT_PASS ||
	    n != (ssize_t)sizeof(r)) {
		fprintf(stderr, "child failed (status %#x)\n", status);
		return VDT_FAIL;
	}
	fprintf(stderr, "child ran as %s; RLIMIT_MEMLOCK 0: lmm_lock_area %s, "
		"lmm_cache_get %s; cache part %s\n",
		r.dropped ? "nobody" : "this user",
		errno_name(r.zero_limit_lock), errno_name(r.zero_limit_cache),
		r.cache_tested ? "tested" : "skipped (no monitor)");
	return VDT_PASS;
}
