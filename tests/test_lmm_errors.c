/* SPDX-License-Identifier: MIT */
/*
 * Description: every bad input to the LMM gets its documented error code
 * (include/viaduct/lmm.h) and leaves nothing behind: VmLck and
 * lmm_get_stats() (registrations, locked_bytes, areas) are unchanged after
 * each failed call, and an unrelated registration made beforehand stays
 * intact.  Covered: NULL output pointers and zero length (-EINVAL),
 * wrap-around (-EOVERFLOW), unmapped, partly unmapped, PROT_NONE and
 * past-end-of-file ranges (-EFAULT; the mapped part is not left locked), handle 0, forged, bit-
 * flipped, stale, double-released and post-lmm_cleanup handles (-EBADF,
 * never a crash), cache handles (-EBUSY on lmm_unlock_area), a double
 * lmm_cache_put, RLIMIT_MEMLOCK exhaustion (-ENOMEM, in a child without
 * CAP_IPC_LOCK) and RLIMIT_MEMLOCK 0 (-EPERM), and viaduct_strerror().
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "viaduct/lmm.h"
#include "viaduct/viaduct.h"
#include "vdtest.h"
#include "vdtest_lmm.h"

static size_t ps;

/* ---- "nothing changed" ---------------------------------------------------- */

struct snapshot {
	long long vmlck;
	struct lmm_stats st;
};

static struct snapshot take_snapshot(void)
{
	struct snapshot s;

	s.vmlck = vdt_vmlck_bytes(0);
	VDT_CHECK(s.vmlck >= 0);
	VDT_CHECK_EQ(lmm_get_stats(&s.st), 0);
	return s;
}

static void check_unchanged(const struct snapshot *before)
{
	struct snapshot now = take_snapshot();

	VDT_CHECK_EQ(now.vmlck, before->vmlck);
	VDT_CHECK_EQ(now.st.registrations, before->st.registrations);
	VDT_CHECK_EQ(now.st.locked_bytes, before->st.locked_bytes);
	VDT_CHECK_EQ(now.st.areas, before->st.areas);
}

/* lmm_lock_area(start, length) must fail with want and change nothing. */
static void expect_lock_error(void *start, size_t length, int want)
{
	struct snapshot s = take_snapshot();
	lmm_handle_t h = LMM_HANDLE_INVALID;
	int err = lmm_lock_area(start, length, &h);

	if (err != want)
		fprintf(stderr, "lmm_lock_area(%p, %#zx): %d (%s), expected "
			"%d (%s)\n", start, length, err, viaduct_strerror(err),
			want, viaduct_strerror(want));
	VDT_CHECK_EQ(err, want);
	check_unchanged(&s);
}

/* A registration unrelated to the bad calls; must survive all of them. */
static char *g_bystander_buf;
static lmm_handle_t g_bystander;

static void check_bystander(void)
{
	void *start;
	size_t len;

	VDT_CHECK_EQ(lmm_area_get(g_bystander, &start, &len), 0);
	VDT_CHECK(start == g_bystander_buf);
	VDT_CHECK_EQ(len, 2 * ps);
	VDT_CHECK_EQ(vdt_check_page_list(g_bystander), 2);
}

/* ---- lock arguments ----------------------------------------------------- */

static void test_invalid_arguments(void)
{
	char *buf = vdt_map_pages(2);
	struct snapshot s = take_snapshot();
	lmm_handle_t h;

	VDT_CHECK_EQ(lmm_lock_area(buf, ps, NULL), -EINVAL);
	VDT_CHECK_EQ(lmm_cache_get(buf, ps, NULL), -EINVAL);
	check_unchanged(&s);
	expect_lock_error(buf, 0, -EINVAL);
	expect_lock_error(NULL, 0, -EINVAL);
	VDT_CHECK_EQ(lmm_cache_get(buf, 0, &h), -EINVAL);
	VDT_CHECK_EQ(lmm_get_stats(NULL), -EINVAL);
	VDT_CHECK_EQ(lmm_cache_get_stats(NULL), -EINVAL);
	check_unchanged(&s);
	vdt_unmap_pages(buf, 2);
}

static void test_overflow(void)
{
	lmm_handle_t h;

	expect_lock_error((void *)(UINTPTR_MAX - ps + 1), 2 * ps, -EOVERFLOW);
	expect_lock_error((void *)UINTPTR_MAX, 1, -EOVERFLOW);
	expect_lock_error((void *)(uintptr_t)0x10000, SIZE_MAX, -EOVERFLOW);
	expect_lock_error(g_bystander_buf, SIZE_MAX - 5, -EOVERFLOW);
	VDT_CHECK_EQ(lmm_cache_get((void *)UINTPTR_MAX, 2, &h), -EOVERFLOW);
}

static void test_unmapped(void)
{
	char *p = vdt_map_pages(4);

	vdt_unmap_pages(p, 4);
	expect_lock_error(p, 4 * ps, -EFAULT);
	expect_lock_error(p + 1, 1, -EFAULT);
	expect_lock_error(NULL, ps, -EFAULT);
	/* Kernel half of the address space. */
	expect_lock_error((void *)(uintptr_t)0xffff900000000000ULL, ps,
			  -EFAULT);
}

/* Three pages with page `hole` unmapped: locking all three fails and no
 * page stays locked, also with a page locked beforehand by another
 * registration (which must stay locked). */
static void check_partly_unmapped(size_t hole)
{
	char *p = vdt_map_pages(3);
	size_t other = hole == 0 ? 2 : 0;
	struct snapshot s;
	lmm_handle_t h;

	VDT_CHECK_EQ(munmap(p + hole * ps, ps), 0);
	expect_lock_error(p, 3 * ps, -EFAULT);

	VDT_CHECK_EQ(lmm_lock_area(p + other * ps, ps, &h), 0);
	s = take_snapshot();
	expect_lock_error(p, 3 * ps, -EFAULT);
	check_unchanged(&s); /* the other page is still locked */
	VDT_CHECK_EQ(vdt_check_page_list(h), 1);
	VDT_CHECK_EQ(lmm_unlock_area(h), 0);

	VDT_CHECK_EQ(munmap(p, 3 * ps), 0);
}

static void test_partly_unmapped(void)
{
	check_partly_unmapped(1);
	check_partly_unmapped(0);
	check_partly_unmapped(2);
}

static void test_prot_none(void)
{
	char *p = mmap(NULL, 3 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	char *q = vdt_map_pages(3);
	lmm_handle_t h;

	VDT_CHECK(p != MAP_FAILED);
	expect_lock_error(p, 3 * ps, -EFAULT);   /* never touched */
	expect_lock_error(p + 5, 10, -EFAULT);

	/* Touched first, then made inaccessible: still not lockable. */
	VDT_CHECK_EQ(mprotect(q, 3 * ps, PROT_NONE), 0);
	expect_lock_error(q, 3 * ps, -EFAULT);
	/* Only the middle page inaccessible. */
	VDT_CHECK_EQ(mprotect(q, 3 * ps, PROT_READ | PROT_WRITE), 0);
	VDT_CHECK_EQ(mprotect(q + ps, ps, PROT_NONE), 0);
	expect_lock_error(q, 3 * ps, -EFAULT);

	/* Read-only memory is accessible: locking it is fine. */
	VDT_CHECK_EQ(mprotect(q, 3 * ps, PROT_READ), 0);
	VDT_CHECK_EQ(lmm_lock_area(q, 3 * ps, &h), 0);
	VDT_CHECK_EQ(vdt_check_page_list(h), 3);
	VDT_CHECK_EQ(lmm_unlock_area(h), 0);

	VDT_CHECK_EQ(munmap(p, 3 * ps), 0);
	VDT_CHECK_EQ(munmap(q, 3 * ps), 0);
}

/* A shared file mapping longer than its file: the pages past the end
 * would raise SIGBUS, so they are inaccessible too. */
static void test_beyond_end_of_file(void)
{
	int fd = memfd_create("vdt-lmm-errors", MFD_CLOEXEC);
	char *p;
	lmm_handle_t h;

	VDT_CHECK(fd >= 0);
	VDT_CHECK_EQ(ftruncate(fd, (off_t)ps), 0);
	p = mmap(NULL, 3 * ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	VDT_CHECK(p != MAP_FAILED);
	p[0] = 1;
	expect_lock_error(p, 3 * ps, -EFAULT);
	expect_lock_error(p + 2 * ps, 1, -EFAULT);
	/* The page inside the file is fine. */
	VDT_CHECK_EQ(lmm_lock_area(p, ps, &h), 0);
	VDT_CHECK_EQ(vdt_check_page_list(h), 1);
	VDT_CHECK_EQ(lmm_unlock_area(h), 0);
	VDT_CHECK_EQ(munmap(p, 3 * ps), 0);
	close(fd);
}

/* ---- handles ------------------------------------------------------------ */

/* Every handle-taking function must reject h with -EBADF, changing
 * nothing. */
static void expect_bad_handle(lmm_handle_t h)
{
	struct snapshot s = take_snapshot();
	uint64_t pages[2];
	struct lmm_block blocks[2];
	void *start;
	size_t len, n;

	VDT_CHECK_EQ(lmm_area_get(h, &start, &len), -EBADF);
	VDT_CHECK_EQ(lmm_get_pages(h, pages, 2, &n, NULL), -EBADF);
	VDT_CHECK_EQ(lmm_get_pages(h, NULL, 0, &n, NULL), -EBADF);
	VDT_CHECK_EQ(lmm_get_blocks(h, blocks, 2, &n, NULL), -EBADF);
	VDT_CHECK_EQ(lmm_unlock_area(h), -EBADF);
	VDT_CHECK_EQ(lmm_cache_put(h), -EBADF);
	check_unchanged(&s);
}

static void test_handle_zero(void)
{
	expect_bad_handle(0);
	expect_bad_handle(LMM_HANDLE_INVALID);
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Random values, small values, and the bystander's handle with any one
 * bit flipped, +-1: never accepted (only read-only probes here, so a
 * wrongly accepted value cannot release the bystander). */
static void test_forged_handles(uint64_t seed)
{
	struct snapshot s = take_snapshot();
	uint64_t x = seed | 1;
	void *start;
	size_t len;
	int i;

	for (i = 0; i < 20000; i++) {
		lmm_handle_t h = i < 1000 ? (lmm_handle_t)i : xorshift(&x);

		if (h == g_bystander)
			continue;
		VDT_CHECK_EQ(lmm_area_get(h, &start, &len), -EBADF);
	}
	for (i = 0; i < 64; i++) {
		lmm_handle_t h = g_bystander ^ (1ULL << i);

		if (lmm_area_get(h, &start, &len) != -EBADF)
			fprintf(stderr, "handle %#llx with bit %d flipped "
				"accepted\n", (unsigned long long)g_bystander,
				i);
		VDT_CHECK_EQ(lmm_area_get(h, &start, &len), -EBADF);
	}
	VDT_CHECK_EQ(lmm_area_get(g_bystander + 1, &start, &len), -EBADF);
	VDT_CHECK_EQ(lmm_area_get(g_bystander - 1, &start, &len), -EBADF);
	VDT_CHECK_EQ(lmm_area_get(~g_bystander, &start, &len), -EBADF);
	/* The full set of calls on a few forged values. */
	for (i = 0; i < 200; i++) {
		lmm_handle_t h = xorshift(&x);

		if (h != g_bystander)
			expect_bad_handle(h);
	}
	check_unchanged(&s);
	check_bystander();
}

static void test_double_release(void)
{
	char *p = vdt_map_pages(2);
	struct snapshot s = take_snapshot();
	lmm_handle_t a, b;

	VDT_CHECK_EQ(lmm_lock_area(p, 2 * ps, &a), 0);
	VDT_CHECK_EQ(lmm_unlock_area(a), 0);
	check_unchanged(&s);
	expect_bad_handle(a);

	/* The slot may be reused: the old handle still must not work, and
	 * must not release the new registration. */
	VDT_CHECK_EQ(lmm_lock_area(p, ps, &b), 0);
	VDT_CHECK(b != a);
	expect_bad_handle(a);
	VDT_CHECK_EQ(vdt_check_page_list(b), 1);
	VDT_CHECK_EQ(lmm_unlock_area(b), 0);
	expect_bad_handle(b);
	check_unchanged(&s);
	vdt_unmap_pages(p, 2);
}

static void test_null_outputs(void)
{
	uint64_t pages[4];
	struct lmm_block blocks[4];
	struct snapshot s = take_snapshot();
	void *start;
	size_t len, n;

	VDT_CHECK_EQ(lmm_get_pages(g_bystander, pages, 4, NULL, NULL), -EINVAL);
	VDT_CHECK_EQ(lmm_get_pages(g_bystander, NULL, 4, &n, NULL), -EINVAL);
	VDT_CHECK_EQ(lmm_get_blocks(g_bystander, blocks, 4, NULL, NULL),
		     -EINVAL);
	VDT_CHECK_EQ(lmm_get_blocks(g_bystander, NULL, 4, &n, NULL), -EINVAL);
	VDT_CHECK_EQ(lmm_area_get(g_bystander, NULL, &len), -EINVAL);
	VDT_CHECK_EQ(lmm_area_get(g_bystander, &start, NULL), -EINVAL);
	/* NULL count with a bad handle: either error, never a crash. */
	VDT_CHECK(lmm_get_pages(12345, pages, 4, NULL, NULL) < 0);
	VDT_CHECK(lmm_get_blocks(12345, blocks, 4, NULL, NULL) < 0);
	check_unchanged(&s);
	check_bystander();
}

/* ---- the pin-down cache's handles --------------------------------------- */

static void test_cache_handle_busy(void)
{
	char *p = vdt_map_pages(4);
	struct snapshot s = take_snapshot();
	struct lmm_cache_stats cs;
	lmm_handle_t h, plain;
	void *start;
	size_t len;

	VDT_CHECK_EQ(lmm_cache_get(p + 10, 2 * ps, &h), 0);
	VDT_CHECK_EQ(lmm_unlock_area(h), -EBUSY);
	VDT_CHECK_EQ(lmm_unlock_area(h), -EBUSY);
	/* Still a working registration. */
	VDT_CHECK_EQ(lmm_area_get(h, &start, &len), 0);
	VDT_CHECK(start == p && len == 3 * ps);
	VDT_CHECK_EQ(vdt_check_page_list(h), 3);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	VDT_CHECK_EQ(lmm_cache_get_stats(&cs), 0);
	VDT_CHECK_EQ(cs.in_use, 0);
	VDT_CHECK_EQ(cs.entries, 0);
	check_unchanged(&s);

	/* A plain handle is not the cache's: put refuses it, keeps it. */
	VDT_CHECK_EQ(lmm_lock_area(p, ps, &plain), 0);
	VDT_CHECK(lmm_cache_put(plain) < 0);
	VDT_CHECK_EQ(vdt_check_page_list(plain), 1);
	VDT_CHECK_EQ(lmm_unlock_area(plain), 0);
	check_unchanged(&s);
	vdt_unmap_pages(p, 4);
}

/* A second put of one get is refused and does not corrupt the use count:
 * the next get of the same range is in use until its own put, a flush
 * meanwhile must not release it. */
static void test_cache_double_put(void)
{
	char *p = vdt_map_pages(4);
	struct snapshot s = take_snapshot();
	struct lmm_cache_stats cs;
	lmm_handle_t h, again;

	VDT_CHECK_EQ(lmm_cache_get(p, 2 * ps, &h), 0);
	VDT_CHECK_EQ(lmm_cache_put(h), 0);
	VDT_CHECK(lmm_cache_put(h) < 0);
	VDT_CHECK_EQ(lmm_cache_get_stats(&cs), 0);
	VDT_CHECK_EQ(cs.in_use, 0);

	VDT_CHECK_EQ(lmm_cache_get(p, 2 * ps, &again), 0);
	VDT_CHECK_EQ(lmm_cache_get_stats(&cs), 0);
	VDT_CHECK_EQ(cs.in_use, 1);
	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	VDT_CHECK_EQ(vdt_check_page_list(again), 2); /* still registered */
	VDT_CHECK_EQ(lmm_cache_put(again), 0);
	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	check_unchanged(&s);
	vdt_unmap_pages(p, 4);
}

static void test_release_after_cleanup(void)
{
	char *p = vdt_map_pages(4);
	lmm_handle_t a, b, c;

	VDT_CHECK_EQ(lmm_lock_area(p, ps, &a), 0);
	VDT_CHECK_EQ(lmm_lock_area(p, 4 * ps, &b), 0);
	VDT_CHECK_EQ(lmm_cache_get(p + ps, ps, &c), 0);
	VDT_CHECK_EQ(lmm_cleanup(), 0);
	expect_bad_handle(a);
	expect_bad_handle(b);
	expect_bad_handle(c);
	expect_bad_handle(g_bystander); /* cleanup released it too */
	VDT_CHECK_EQ(vdt_vmlck_bytes(0), 0);
	vdt_unmap_pages(p, 4);
}

/* ---- RLIMIT_MEMLOCK, in a child without CAP_IPC_LOCK ------------------- */

static void set_memlock_limit(rlim_t bytes)
{
	struct rlimit rl = { bytes, bytes };

	VDT_CHECK_EQ(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
}

static int rlimit_child(void)
{
	char *p = vdt_map_pages(64);
	struct snapshot s;
	lmm_handle_t a, b[3], c;
	int i;

	if (vdt_drop_effective_cap(CAP_IPC_LOCK) && geteuid() == 0)
		return VDT_SKIP;
	set_memlock_limit(16 * ps);
	VDT_CHECK_EQ(vdt_vmlck_bytes(0), 0); /* locks are not inherited */

	VDT_CHECK_EQ(lmm_lock_area(p, 8 * ps, &a), 0);
	/* Stacking does not count twice against the limit. */
	for (i = 0; i < 3; i++)
		VDT_CHECK_EQ(lmm_lock_area(p, 8 * ps, &b[i]), 0);
	VDT_CHECK_EQ(lmm_lock_area(p + 4 * ps, 12 * ps, &c), 0); /* 16 */
	VDT_CHECK_VMLCK(0, 16);
	VDT_CHECK_EQ(lmm_unlock_area(c), 0);

	/* Over the limit: -ENOMEM, the part already locked stays as it was,
	 * nothing new is left locked. */
	s = take_snapshot();
	VDT_CHECK_EQ(lmm_lock_area(p + 4 * ps, 20 * ps, &c), -ENOMEM);
	VDT_CHECK_EQ(lmm_lock_area(p + 20 * ps, 30 * ps, &c), -ENOMEM);
	VDT_CHECK_EQ(lmm_cache_get(p + 20 * ps, 30 * ps, &c), -ENOMEM);
	check_unchanged(&s);
	VDT_CHECK(strstr(viaduct_strerror(-ENOMEM), "RLIMIT_MEMLOCK"));

	VDT_CHECK_EQ(lmm_unlock_area(a), 0);
	for (i = 0; i < 3; i++)
		VDT_CHECK_EQ(lmm_unlock_area(b[i]), 0);
	VDT_CHECK_EQ(lmm_cache_flush(), 0);
	VDT_CHECK_VMLCK(0, 0);

	/* A zero limit without CAP_IPC_LOCK: not permitted at all. */
	set_memlock_limit(0);
	s = take_snapshot();
	VDT_CHECK_EQ(lmm_lock_area(p, ps, &c), -EPERM);
	check_unchanged(&s);
	return VDT_PASS;
}

static void test_rlimit_memlock(void)
{
	int status;
	pid_t pid = fork();

	VDT_CHECK(pid >= 0);
	if (pid == 0)
		_exit(rlimit_child());
	VDT_CHECK(waitpid(pid, &status, 0) == pid);
	if (WIFSIGNALED(status))
		fprintf(stderr, "rlimit child killed by signal %d\n",
			WTERMSIG(status));
	VDT_CHECK(WIFEXITED(status));
	if (WEXITSTATUS(status) == VDT_SKIP)
		printf("  (cannot drop CAP_IPC_LOCK: not checked)\n");
	else
		VDT_CHECK_EQ(WEXITSTATUS(status), VDT_PASS);
}

/* ---- error strings -------------------------------------------------------- */

static void test_strerror(void)
{
	int e;

	VDT_CHECK(strstr(viaduct_strerror(-ENOMEM), "RLIMIT_MEMLOCK"));
	for (e = -200; e <= 200; e++) {
		const char *s = viaduct_strerror(e);

		VDT_CHECK(s != NULL);
		VDT_CHECK(s[0] != '\0');
	}
	VDT_CHECK(viaduct_strerror(INT32_MIN) != NULL);
	VDT_CHECK(viaduct_strerror(INT32_MAX) != NULL);
	VDT_CHECK(strcmp(viaduct_strerror(-EBADF), viaduct_strerror(-EFAULT)));
}

#define RUN(test)                                                            \
	do {                                                                 \
		test;                                                        \
		printf("ok %s\n", #test);                                    \
		fflush(stdout);                                              \
	} while (0)

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0)
				 : (uint64_t)time(NULL) ^ (uint64_t)getpid();
	int err;

	ps = vdt_page_size();
	printf("seed %llu\n", (unsigned long long)seed);
	VDT_SKIP_IF(vdt_vmlck_bytes(0) < 0, "no VmLck in /proc/self/status");
	VDT_SKIP_IF(vdt_vmlck_bytes(0) != 0, "memory already locked");
	RUN(test_strerror());
	RUN(test_rlimit_memlock()); /* before this process locks anything */

	g_bystander_buf = vdt_map_pages(2);
	err = lmm_lock_area(g_bystander_buf + 1, ps, &g_bystander);
	VDT_SKIP_IF(err == -EPERM || err == -ENOMEM,
		    "cannot lock memory here (RLIMIT_MEMLOCK / CAP_IPC_LOCK)");
	VDT_CHECK_EQ(err, 0);

	RUN(test_invalid_arguments());
	RUN(test_overflow());
	RUN(test_unmapped());
	RUN(test_partly_unmapped());
	RUN(test_handle_zero());
	RUN(test_forged_handles(seed));
	RUN(test_double_release());
	RUN(test_null_outputs());
	RUN(test_cache_handle_busy());
	RUN(test_prot_none());
	RUN(test_beyond_end_of_file());
	RUN(test_cache_double_put());
	check_bystander();
	RUN(test_release_after_cleanup());
	return VDT_PASS;
}
