/* SPDX-License-Identifier: MIT */
/*
 * Description: fork after registration (include/viaduct/lmm.h, "Fork").
 * The parent registers private mmap memory, private heap memory and a
 * MAP_SHARED|MAP_ANONYMOUS region, then forks.
 *  Child: VmLck starts at 0; every parent handle is -EBADF; the stats show
 *  no registration; the registered private pages are not mapped (a
 *  grandchild touching them dies of SIGSEGV); the shared region is there
 *  and its writes reach the parent; the LMM works afresh.
 *  Parent, while the child lives: writes to every registered page, and the
 *  page lists stay what they were and equal /proc/self/pagemap (no
 *  copy-on-write moved a page; the physical part needs readable frame
 *  numbers); VmLck unchanged, before and after the child exits.
 * Then: pages are excluded only while registered (a later fork after the
 * release shares them again), and a mapping the user marked MADV_DONTFORK
 * stays so after a fork during its registration.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "viaduct/lmm.h"
#include "vdtest.h"
#include "vdtest_lmm.h"

#define PRIV_PAGES 8
#define HEAP_PAGES 8
#define SHARED_PAGES 4

static size_t ps;
static int g_physical;

struct regions {
	char *priv, *heap, *shared;
	lmm_handle_t h_priv, h_priv2, h_heap, h_shared;
	uint64_t pages_priv[PRIV_PAGES], pages_heap[HEAP_PAGES],
		pages_shared[SHARED_PAGES];
};

/* ---- small helpers ------------------------------------------------------- */

static int is_mapped(const void *p, size_t len)
{
	return msync((void *)vdt_page_of(p), len, MS_ASYNC) == 0;
}

static void get_page_list(lmm_handle_t h, uint64_t *pages, size_t n)
{
	size_t count = 0;

	VDT_CHECK_EQ(lmm_get_pages(h, pages, n, &count, NULL), 0);
	VDT_CHECK_EQ(count, n);
}

/* The list still equals `before`, and pagemap. */
static void check_page_list_unchanged(lmm_handle_t h, const uint64_t *before,
				      size_t n)
{
	uint64_t now[PRIV_PAGES + HEAP_PAGES];
	size_t i;

	get_page_list(h, now, n);
	for (i = 0; i < n; i++) {
		if (now[i] != before[i])
			fprintf(stderr, "page %zu moved: %#llx -> %#llx\n", i,
				(unsigned long long)before[i],
				(unsigned long long)now[i]);
		VDT_CHECK(now[i] == before[i]);
	}
	VDT_CHECK_EQ(vdt_check_page_list(h), n);
}

static void write_pages(char *p, size_t n, int value)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i * ps + (size_t)value % ps] = (char)value;
}

/* Restore the default SIGSEGV action with the raw system call, past any
 * sanitizer's interception, so a fault really kills the process. */
static void default_sigsegv(void)
{
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} act = { (void *)SIG_DFL, 0, NULL, 0 };

	(void)syscall(SYS_rt_sigaction, SIGSEGV, &act, NULL, sizeof(act.mask));
}

/* A child that reads *p must be killed by SIGSEGV. */
static void check_access_faults(const volatile char *p)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	VDT_CHECK(pid >= 0);
	if (pid == 0) {
		default_sigsegv();
		(void)*p;
		_exit(42); /* it was readable */
	}
	VDT_CHECK(waitpid(pid, &status, 0) == pid);
	if (!WIFSIGNALED(status))
		fprintf(stderr, "reading %p did not fault (exit %d)\n",
			(const void *)p, WEXITSTATUS(status));
	VDT_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
}

static void expect_bad_handle(lmm_handle_t h)
{
	void *start;
	size_t len, n;

	VDT_CHECK_EQ(lmm_area_get(h, &start, &len), -EBADF);
	VDT_CHECK_EQ(lmm_get_pages(h, NULL, 0, &n, NULL), -EBADF);
	VDT_CHECK_EQ(lmm_unlock_area(h), -EBADF);
}

static void wait_child_ok(pid_t pid)
{
	int status;

	VDT_CHECK(waitpid(pid, &status, 0) == pid);
	if (WIFSIGNALED(status))
		fprintf(stderr, "child killed by signal %d\n",
			WTERMSIG(status));
	VDT_CHECK(WIFEXITED(status));
	VDT_CHECK_EQ(WEXITSTATUS(status), 0);
}

static void pipe_send(int fd, char c)
{
	VDT_CHECK(write(fd, &c, 1) == 1);
}

static char pipe_recv(int fd)
{
	char c = 0;

	VDT_CHECK(read(fd, &c, 1) == 1);
	return c;
}

/* ---- the child of the main scenario -------------------------------------- */

static void child_checks_lmm_empty(const struct regions *r)
{
	struct lmm_stats st;

	expect_bad_handle(r->h_priv);
	expect_bad_handle(r->h_priv2);
	expect_bad_handle(r->h_heap);
	expect_bad_handle(r->h_shared);
	VDT_CHECK_EQ(lmm_get_stats(&st), 0);
	VDT_CHECK_EQ(st.registrations, 0);
	VDT_CHECK_EQ(st.areas, 0);
	VDT_CHECK_EQ(st.locked_bytes, 0);
}

static void child_checks_private_excluded(const struct regions *r)
{
	VDT_CHECK(!is_mapped(r->priv, PRIV_PAGES * ps));
	VDT_CHECK(!is_mapped(r->heap, HEAP_PAGES * ps));
	check_access_faults(r->priv);
	check_access_faults(r->priv + PRIV_PAGES * ps - 1);
	check_access_faults(r->heap + ps);
}

static void child_uses_lmm_afresh(const struct regions *r)
{
	char *own = vdt_map_pages(4);
	lmm_handle_t a, b;
	uint64_t shared_pages[SHARED_PAGES];
	size_t i;

	VDT_CHECK_EQ(lmm_lock_area(own + 1, 3 * ps, &a), 0);
	VDT_CHECK_VMLCK(0, 4);
	VDT_CHECK_EQ(vdt_check_page_list(a), 4);
	/* The shared region: the same frames as in the parent. */
	VDT_CHECK_EQ(lmm_lock_area(r->shared, SHARED_PAGES * ps, &b), 0);
	VDT_CHECK_VMLCK(0, 4 + SHARED_PAGES);
	VDT_CHECK_EQ(vdt_check_page_list(b), SHARED_PAGES);
	get_page_list(b, shared_pages, SHARED_PAGES);
	if (g_physical)
		for (i = 0; i < SHARED_PAGES; i++)
			VDT_CHECK(shared_pages[i] == r->pages_shared[i]);
	VDT_CHECK_EQ(lmm_unlock_area(a), 0);
	VDT_CHECK_EQ(lmm_unlock_area(b), 0);
	VDT_CHECK_VMLCK(0, 0);
	vdt_unmap_pages(own, 4);
}

static int child_main(const struct regions *r, int rd, int wr)
{
	size_t i;

	VDT_CHECK_VMLCK(0, 0); /* first thing: locks are not inherited */
	child_checks_lmm_empty(r);
	child_checks_private_excluded(r);
	/* The shared region is inherited: read the parent's data, write. */
	for (i = 0; i < SHARED_PAGES * ps; i++)
		VDT_CHECK(r->shared[i] == (char)0xa1);
	memset(r->shared, 0xc3, SHARED_PAGES * ps);
	child_uses_lmm_afresh(r);
	pipe_send(wr, 'r');     /* ready: the parent writes its pages now */
	VDT_CHECK(pipe_recv(rd) == 'x');
	return 0;
}

/* ---- parent -------------------------------------------------------------- */

static void register_regions(struct regions *r)
{
	void *heap = NULL;

	r->priv = vdt_map_pages(PRIV_PAGES);
	VDT_CHECK_EQ(posix_memalign(&heap, ps, HEAP_PAGES * ps), 0);
	r->heap = heap;
	memset(r->heap, 0x11, HEAP_PAGES * ps);
	r->shared = mmap(NULL, SHARED_PAGES * ps, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	VDT_CHECK(r->shared != MAP_FAILED);
	memset(r->shared, 0xa1, SHARED_PAGES * ps);

	VDT_CHECK_EQ(lmm_lock_area(r->priv, PRIV_PAGES * ps, &r->h_priv), 0);
	VDT_CHECK_EQ(lmm_lock_area(r->priv + 2 * ps + 5, ps, &r->h_priv2), 0);
	VDT_CHECK_EQ(lmm_lock_area(r->heap, HEAP_PAGES * ps, &r->h_heap), 0);
	VDT_CHECK_EQ(lmm_lock_area(r->shared, SHARED_PAGES * ps,
				   &r->h_shared), 0);
	get_page_list(r->h_priv, r->pages_priv, PRIV_PAGES);
	get_page_list(r->h_heap, r->pages_heap, HEAP_PAGES);
	get_page_list(r->h_shared, r->pages_shared, SHARED_PAGES);
	VDT_CHECK_EQ(vdt_check_page_list(r->h_priv), PRIV_PAGES);
	VDT_CHECK_EQ(vdt_check_page_list(r->h_heap), HEAP_PAGES);
	VDT_CHECK_EQ(vdt_check_page_list(r->h_shared), SHARED_PAGES);
}

static void parent_checks_lists(const struct regions *r)
{
	check_page_list_unchanged(r->h_priv, r->pages_priv, PRIV_PAGES);
	check_page_list_unchanged(r->h_heap, r->pages_heap, HEAP_PAGES);
	check_page_list_unchanged(r->h_shared, r->pages_shared, SHARED_PAGES);
}

static void test_fork_with_registrations(struct regions *r)
{
	long long vmlck = vdt_vmlck_bytes(0);
	int to_child[2], to_parent[2];
	size_t i;
	pid_t pid;

	VDT_CHECK_EQ(pipe(to_child), 0);
	VDT_CHECK_EQ(pipe(to_parent), 0);
	fflush(NULL);
	pid = fork();
	VDT_CHECK(pid >= 0);
	if (pid == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		_exit(child_main(r, to_child[0], to_parent[1]));
	}
	close(to_child[0]);
	close(to_parent[1]);

	VDT_CHECK_EQ(vdt_vmlck_bytes(0), vmlck);
	VDT_CHECK(pipe_recv(to_parent[0]) == 'r');
	/* The child's writes to the shared region are visible here. */
	for (i = 0; i < SHARED_PAGES * ps; i++)
		VDT_CHECK(r->shared[i] == (char)0xc3);
	/* Write every registered page while the child still lives: with
	 * copy-on-write the parent would move to new frames now. */
	write_pages(r->priv, PRIV_PAGES, 0x22);
	write_pages(r->heap, HEAP_PAGES, 0x33);
	write_pages(r->shared, SHARED_PAGES, 0x44);
	parent_checks_lists(r);
	VDT_CHECK_EQ(vdt_vmlck_bytes(0), vmlck);

	pipe_send(to_child[1], 'x');
	wait_child_ok(pid);
	close(to_child[1]);
	close(to_parent[0]);
	write_pages(r->priv, PRIV_PAGES, 0x55);
	parent_checks_lists(r);
	VDT_CHECK_EQ(vdt_vmlck_bytes(0), vmlck);
	VDT_CHECK_EQ(lmm_unlock_area(r->h_priv2), 0);
	VDT_CHECK_EQ(lmm_unlock_area(r->h_shared), 0);
}

/* After release, the pages belong to the next child again; registered
 * heap pages are still excluded. */
static void test_exclusion_ends_with_release(struct regions *r)
{
	pid_t pid;

	VDT_CHECK_EQ(lmm_unlock_area(r->h_priv), 0);
	r->priv[3 * ps] = 0x66;
	fflush(NULL);
	pid = fork();
	VDT_CHECK(pid >= 0);
	if (pid == 0) {
		VDT_CHECK(is_mapped(r->priv, PRIV_PAGES * ps));
		VDT_CHECK(r->priv[3 * ps] == 0x66);
		VDT_CHECK(!is_mapped(r->heap, HEAP_PAGES * ps));
		_exit(0);
	}
	wait_child_ok(pid);
	/* And in the parent the released pages still work normally. */
	VDT_CHECK(r->priv[3 * ps] == 0x66);
	VDT_CHECK_EQ(lmm_unlock_area(r->h_heap), 0);
}

/* A mapping the user marked MADV_DONTFORK must stay excluded after the
 * LMM's fork handling, also once the registration is gone. */
/* A registration that shares its first and last page with other data:
 * the child keeps those pages (and the heap around a small malloc'd
 * buffer), and loses only the pages holding nothing but registered bytes.
 * The child used to lose the whole pages and crash at its first printf. */
static void test_partial_pages_kept(void)
{
	char *small[5], *m = vdt_map_pages(3);
	lmm_handle_t h_small, h_mid;
	pid_t pid;

	for (int i = 0; i < 5; i++) {
		small[i] = malloc(48);
		VDT_CHECK(small[i] != NULL);
		memset(small[i], 'a' + i, 48);
	}
	memset(m, 0x5a, 3 * ps);
	VDT_CHECK_EQ(lmm_lock_area(small[2], 48, &h_small), 0);
	VDT_CHECK_EQ(lmm_lock_area(m + 100, 2 * ps - 50, &h_mid), 0);
	fflush(NULL);
	pid = fork();
	VDT_CHECK(pid >= 0);
	if (pid == 0) {
		char *fresh = malloc(4096);
		int bad = !fresh;

		for (int i = 0; i < 5; i++)
			bad |= small[i][0] != 'a' + i || small[i][47] != 'a' + i;
		bad |= !is_mapped(m, ps) || m[99] != 0x5a || m[0] != 0x5a;
		bad |= !is_mapped(m + 2 * ps, ps) || m[3 * ps - 1] != 0x5a;
		bad |= is_mapped(m + ps, ps);   /* registered bytes only */
		printf("child after fork: heap and partly registered pages kept\n");
		free(fresh);
		_exit(bad);
	}
	wait_child_ok(pid);
	VDT_CHECK_EQ(lmm_unlock_area(h_small), 0);
	VDT_CHECK_EQ(lmm_unlock_area(h_mid), 0);
	for (int i = 0; i < 5; i++)
		free(small[i]);
	vdt_unmap_pages(m, 3);
}

static void test_user_dontfork_kept(void)
{
	char *u = vdt_map_pages(2);
	lmm_handle_t h;
	pid_t pid;

	VDT_CHECK_EQ(madvise(u, 2 * ps, MADV_DONTFORK), 0);
	VDT_CHECK_EQ(lmm_lock_area(u, ps, &h), 0);
	fflush(NULL);
	pid = fork();
	VDT_CHECK(pid >= 0);
	if (pid == 0)
		_exit(is_mapped(u, 2 * ps) ? 1 : 0);
	wait_child_ok(pid);
	VDT_CHECK_EQ(lmm_unlock_area(h), 0);

	pid = fork();
	VDT_CHECK(pid >= 0);
	if (pid == 0) {
		if (is_mapped(u, ps) || is_mapped(u + ps, ps))
			fprintf(stderr, "user's MADV_DONTFORK on %p lost after "
				"a fork during its registration\n", (void *)u);
		_exit(is_mapped(u, ps) || is_mapped(u + ps, ps) ? 1 : 0);
	}
	wait_child_ok(pid);
	vdt_unmap_pages(u, 2);
}

#define RUN(test)                                                            \
	do {                                                                 \
		test;                                                        \
		printf("ok %s\n", #test);                                    \
		fflush(stdout);                                              \
	} while (0)

int main(void)
{
	static struct regions r;
	long long base;
	lmm_handle_t probe;
	char *p;
	int err;

	ps = vdt_page_size();
	base = vdt_vmlck_bytes(0);
	VDT_SKIP_IF(base < 0, "no VmLck in /proc/self/status");
	VDT_SKIP_IF(base != 0, "memory already locked");
	g_physical = vdt_pfns_readable();
	if (!g_physical)
		printf("frame numbers unreadable: comparing virtual lists "
		       "only, the copy-on-write (physical) part is not "
		       "checked\n");
	p = vdt_map_pages(1);
	err = lmm_lock_area(p, 1, &probe);
	VDT_SKIP_IF(err == -EPERM || err == -ENOMEM,
		    "cannot lock memory here (RLIMIT_MEMLOCK / CAP_IPC_LOCK)");
	VDT_CHECK_EQ(err, 0);
	VDT_CHECK_EQ(lmm_unlock_area(probe), 0);
	vdt_unmap_pages(p, 1);

	register_regions(&r);
	RUN(test_fork_with_registrations(&r));
	RUN(test_exclusion_ends_with_release(&r));
	RUN(test_user_dontfork_kept());
	RUN(test_partial_pages_kept());
	VDT_CHECK_VMLCK(base, 0);
	free(r.heap);
	return VDT_PASS;
}
