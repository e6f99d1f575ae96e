/* SPDX-License-Identifier: MIT */
/*
 * Fork after registration.
 *
 * mlock does not stop copy-on-write: after fork a private locked page is
 * shared with the child, and the parent's next write moves the *parent* to
 * a new physical page, silently invalidating page lists it handed out.  So
 * for the duration of fork() the registered pages of private mappings are
 * marked MADV_DONTFORK (the child does not get them; the parent keeps its
 * pages exclusively) and unmarked again in the parent.
 *
 * Only pages that hold nothing but registered bytes are excluded: the
 * first and last page of a registration that does not start or end on a
 * page boundary also hold other objects (a small malloc buffer shares its
 * page with its heap neighbours), and a child without them crashes.  Those
 * pages stay copy-on-write: the child gets them, and the parent's
 * physical page list for them is valid until it writes to them after the
 * fork (a provider that moves data by virtual address does not care).  Doing it at fork
 * time, not at registration, keeps the register path at one mlock and
 * lets us skip shared mappings, which have no copy-on-write and which the
 * child should keep.  The child starts with an empty LMM: locks are not
 * inherited by fork(2), and neither is the monitor.
 *
 * VIADUCT_LMM_FORK=keep turns this off (the child keeps everything; the
 * parent's page lists may then go stale when it writes after a fork).
 * Registered stack pages are never excluded (the child needs its stack).
 *
 * Not covered: clone() without CLONE_VM called directly (no atfork
 * handlers run); vfork/posix_spawn share the address space and need none.
 */
#include "lmm/lmm_internal.h"
#include "viaduct/viaduct.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Streaming reader of /proc/self/smaps without stdio: nothing here may
 * allocate or free while the LMM lock is held (lmm_internal.h). */
struct maps_reader {
	int fd;
	char buf[4096];
	size_t pos, len;
	bool have;           /* a parsed mapping is current */
	uintptr_t start, end;
	bool exclude;        /* private, not the stack, not already DONTFORK */
};

/* Ranges this fork marked, so the parent unmarks exactly those and never
 * clears an application's own MADV_DONTFORK. */
struct fork_mark {
	uintptr_t start, end;
	struct fork_mark *next;
};

static struct vd_pool mark_pool;
static struct fork_mark *marks;

static bool fill_line(struct maps_reader *m, char *line, size_t cap)
{
	size_t n = 0;

	for (;;) {
		if (m->pos == m->len) {
			ssize_t r = read(m->fd, m->buf, sizeof(m->buf));

			if (r <= 0)
				return n > 0;
			m->pos = 0;
			m->len = (size_t)r;
		}
		char c = m->buf[m->pos++];
		if (c == '\n')
			break;
		if (n + 1 < cap)
			line[n++] = c;
	}
	line[n] = '\0';
	return true;
}

/* Advance to the next mapping (header line ... "VmFlags:" line); false at
 * the end. */
static bool next_mapping(struct maps_reader *m)
{
	char line[512], *p;
	bool private_map;

	m->have = false;
	if (!fill_line(m, line, sizeof(line)))
		return false;
	m->start = (uintptr_t)strtoull(line, &p, 16);
	m->end = (uintptr_t)strtoull(p + 1, &p, 16);
	/* perms field " rwxp" / " rw-s": the 4th character tells.  The
	 * child needs its stack, so stack pages are left to copy-on-write. */
	private_map = p[4] == 'p' && !strstr(p, "[stack]");
	while (fill_line(m, line, sizeof(line)))
		if (!strncmp(line, "VmFlags:", 8))
			break;
	m->exclude = private_map && !strstr(line, " dc");
	m->have = true;
	return true;
}

static void mark_pages(uintptr_t s, uintptr_t e)
{
	struct fork_mark *fm = vd_pool_alloc(&mark_pool);

	/* Without a record we could not unmark it: leave it to CoW. */
	if (!fm || madvise((void *)s, e - s, MADV_DONTFORK)) {
		if (fm)
			vd_pool_free(&mark_pool, fm);
		return;
	}
	*fm = (struct fork_mark){ .start = s, .end = e, .next = marks };
	marks = fm;
}

/* The pages of [s, e) that lie wholly inside one registration's bytes. */
struct span {
	uintptr_t s, e, page;
};

static void mark_whole_pages(void *ctx, uintptr_t us, uintptr_t ue)
{
	const struct span *sp = ctx;
	uintptr_t first = (us + sp->page - 1) & ~(sp->page - 1);
	uintptr_t last = ue & ~(sp->page - 1);

	if (first < sp->s)
		first = sp->s;
	if (last > sp->e)
		last = sp->e;
	if (first < last)
		mark_pages(first, last);
}

static void mark_range(uintptr_t s, uintptr_t e)
{
	struct span sp = { .s = s, .e = e, .page = lmm_g.page_size };

	lmm_for_each_reg(mark_whole_pages, &sp);
}

static void mark_area(void *ctx, uintptr_t s, uintptr_t e, uint64_t count)
{
	struct maps_reader *m = ctx;

	(void)count;
	while (m->have || next_mapping(m)) {
		if (m->end <= s) { /* mapping lies before the area */
			m->have = false;
			continue;
		}
		if (m->start >= e)
			return; /* keep it for the next area */
		if (m->exclude)
			mark_range(m->start > s ? m->start : s,
				   m->end < e ? m->end : e);
		if (m->end > e)
			return;
		m->have = false;
	}
}

static bool fork_protection_off(void)
{
	static int off = -1;
	uint64_t keep = 0;

	/* A bad value is reported, and the safe default kept: a fork
	 * handler has no one to return an error to. */
	if (off < 0)
		off = !viaduct_param_uint("VIADUCT_LMM_FORK", 0, &keep) && keep == 1;
	return off;
}

static void mark_private_areas(void)
{
	struct maps_reader m = { 0 };

	if (!lma_tree_nr_areas(&lmm_g.tree) || fork_protection_off())
		return;
	m.fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
	if (m.fd < 0)
		return;
	lmm_for_each_area(mark_area, &m);
	close(m.fd);
}

/* Unmark (parent) or just forget (child: the marks are the parent's). */
static void drop_marks(bool unmark)
{
	struct fork_mark *fm, *next;

	for (fm = marks; fm; fm = next) {
		next = fm->next;
		if (unmark)
			(void)madvise((void *)fm->start, fm->end - fm->start,
				      MADV_DOFORK);
		vd_pool_free(&mark_pool, fm);
	}
	marks = NULL;
}

static void before_fork(void)
{
	lmm_global_lock();
	mark_private_areas();
}

static void after_fork_parent(void)
{
	drop_marks(true);
	lmm_global_unlock();
}

static void after_fork_child(void)
{
	drop_marks(false);
	lmm_reset_child();
	lmm_global_unlock();
}

void lmm_fork_handlers_install(void)
{
	/* Called once, under the lock, from the LMM's first use. */
	vd_pool_init(&mark_pool, sizeof(struct fork_mark));
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}
