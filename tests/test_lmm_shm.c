/* SPDX-License-Identifier: MIT */
/*
 * Description: locking shared memory from two processes (the LMM paper, section
 * 4: every process locks its own mapping and keeps its own counts).  For a
 * System V segment, a memfd, a /dev/shm file and MAP_SHARED|MAP_ANONYMOUS
 * memory inherited by fork, processes A (parent) and B (child) lock the
 * same segment -- overlapping and different sub-ranges -- and take turns:
 * both get the same physical pages for the same pages (lists compared over
 * a pipe, where PFNs are readable); A's unlock leaves B's VmLck and pages
 * alone; A locking twice and unlocking once stays locked without another
 * mlock; each process's VmLck equals its own live registrations at every
 * step; one process's lmm_cleanup never affects the other; a registration
 * taken before fork is not inherited, but the shared mapping is.  Segments
 * are removed right after creation (IPC_RMID, unlink), so no path leaves
 * one behind; the end checks ipcs and /dev/shm.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lmmtest.h"
#include "vdtest.h"
#include "viaduct/lmm.h"

#define SEG_PAGES 16
#define DEVSHM_PREFIX "viaduct-test-lmm-shm-"

enum seg_kind { SEG_SYSV, SEG_MEMFD, SEG_DEVSHM, SEG_ANON_SHARED, NR_KINDS };

static const char *const kind_names[NR_KINDS] = {
	"System V shm", "memfd MAP_SHARED", "/dev/shm file MAP_SHARED",
	"MAP_SHARED|MAP_ANONYMOUS",
};

struct segment {
	enum seg_kind kind;
	char *base;
	size_t size;
	int shmid;             /* SEG_SYSV */
	char path[128];        /* SEG_DEVSHM */
};

/* What travels with a turn: a page list, or nothing (n == 0). */
struct token {
	uint32_t n, flags;
	uint64_t pages[SEG_PAGES];
};

enum role { ROLE_A, ROLE_B };

struct ctx {
	enum role role;
	struct segment *seg;
	int rd, wr;            /* pipe ends to the peer */
	pid_t peer;
	int physical;
	int count[SEG_PAGES];  /* this process's lock count per page */
	lmm_handle_t h[8];
	uint64_t list[8][SEG_PAGES]; /* page lists saved per handle */
	struct token in;       /* what the peer sent with its last turn */
	struct token out;
};

static size_t ps;

/* ---- segments ------------------------------------------------------------- */

static void create_sysv(struct segment *s)
{
	s->shmid = shmget(IPC_PRIVATE, s->size, IPC_CREAT | 0600);
	VDT_CHECK(s->shmid >= 0);
	s->base = shmat(s->shmid, NULL, 0);
	/* Removed at once: it lives while attached, and dies with us. */
	VDT_CHECK_EQ(shmctl(s->shmid, IPC_RMID, NULL), 0);
	VDT_CHECK(s->base != (char *)-1);
}

static void create_memfd(struct segment *s)
{
	int fd = memfd_create("viaduct-test-lmm-shm", MFD_CLOEXEC);

	VDT_CHECK(fd >= 0);
	VDT_CHECK_EQ(ftruncate(fd, (off_t)s->size), 0);
	s->base = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       0);
	close(fd);
	VDT_CHECK(s->base != MAP_FAILED);
}

static void create_devshm(struct segment *s)
{
	int fd;

	snprintf(s->path, sizeof(s->path), "/dev/shm/" DEVSHM_PREFIX "%d",
		 (int)getpid());
	fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	VDT_SKIP_IF(fd < 0 && errno == ENOENT, "no /dev/shm");
	VDT_CHECK(fd >= 0);
	unlink(s->path); /* before anything can fail */
	VDT_CHECK_EQ(ftruncate(fd, (off_t)s->size), 0);
	s->base = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       0);
	close(fd);
	VDT_CHECK(s->base != MAP_FAILED);
}

static void create_anon_shared(struct segment *s)
{
	s->base = mmap(NULL, s->size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	VDT_CHECK(s->base != MAP_FAILED);
}

static void segment_create(struct segment *s, enum seg_kind kind)
{
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->size = SEG_PAGES * ps;
	s->shmid = -1;
	switch (kind) {
	case SEG_SYSV:
		create_sysv(s);
		break;
	case SEG_MEMFD:
		create_memfd(s);
		break;
	case SEG_DEVSHM:
		create_devshm(s);
		break;
	default:
		create_anon_shared(s);
		break;
	}
}

/* In /proc/sysvipc/shm: is segment 'id' still there? */
static int sysv_segment_exists(int id)
{
	char line[512];
	int key, shmid, found = 0;
	FILE *f = fopen("/proc/sysvipc/shm", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%d %d", &key, &shmid) == 2 && shmid == id)
			found = 1;
	fclose(f);
	return found;
}

/* This process's names in /dev/shm (another run may be between its create
 * and unlink right now). */
static int devshm_leftovers(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	char mine[64];
	int n = 0;

	if (!d)
		return 0;
	snprintf(mine, sizeof(mine), DEVSHM_PREFIX "%d", (int)getpid());
	while ((e = readdir(d)))
		if (!strcmp(e->d_name, mine))
			n++;
	closedir(d);
	return n;
}

static void segment_destroy(struct segment *s)
{
	if (s->kind == SEG_SYSV) {
		struct shmid_ds ds;

		VDT_CHECK_EQ(shmdt(s->base), 0);
		VDT_CHECK_EQ(shmctl(s->shmid, IPC_STAT, &ds), -1);
		VDT_CHECK(!sysv_segment_exists(s->shmid));
	} else {
		VDT_CHECK_EQ(munmap(s->base, s->size), 0);
	}
	if (s->kind == SEG_DEVSHM)
		VDT_CHECK(access(s->path, F_OK) == -1 && errno == ENOENT);
}

/* ---- turns ------------------------------------------------------------------ */

/* The idle process blocks in wait_turn(), so the active one may look at
 * it through /proc. */
static void end_turn(struct ctx *c)
{
	VDT_CHECK(write(c->wr, &c->out, sizeof(c->out)) ==
		  (ssize_t)sizeof(c->out));
	memset(&c->out, 0, sizeof(c->out));
}

static void wait_turn(struct ctx *c)
{
	ssize_t n = read(c->rd, &c->in, sizeof(c->in));

	if (n != (ssize_t)sizeof(c->in)) {
		fprintf(stderr, "%c: the peer is gone\n", "AB"[c->role]);
		exit(VDT_FAIL);
	}
}

/* ---- per-process bookkeeping ------------------------------------------------ */

static unsigned pages_locked(const struct ctx *c)
{
	unsigned i, n = 0;

	for (i = 0; i < SEG_PAGES; i++)
		n += c->count[i] > 0;
	return n;
}

/* My VmLck equals my live registrations, also in the LMM's view. */
static void check_own_vmlck(const struct ctx *c, const char *where)
{
	long long want = (long long)pages_locked(c) * (long long)ps, v;

	VDT_CHECK(lmmt_check_vmlck(0, where) == 0);
	v = lmmt_vmlck();
	if (v != want) {
		fprintf(stderr, "%c, %s, %s: VmLck %lld, expected %lld\n",
			"AB"[c->role], kind_names[c->seg->kind], where, v, want);
		exit(VDT_FAIL);
	}
}

static void check_peer_vmlck(const struct ctx *c, unsigned pages,
			     const char *where)
{
	long long v = vdt_vmlck_bytes(c->peer);

	if (v != (long long)pages * (long long)ps) {
		fprintf(stderr, "%c, %s, %s: peer's VmLck %lld, expected %u "
			"pages\n", "AB"[c->role], kind_names[c->seg->kind],
			where, v, pages);
		exit(VDT_FAIL);
	}
}

/* Register pages [first, first+n) of the segment as handle slot k, with
 * its page list checked and saved. */
static void lock_pages(struct ctx *c, int k, unsigned first, unsigned n,
		       const char *where)
{
	char *p = c->seg->base + first * ps;
	unsigned i;

	VDT_CHECK_EQ(lmm_lock_area(p, n * ps, &c->h[k]), 0);
	for (i = first; i < first + n; i++)
		c->count[i]++;
	VDT_CHECK(lmmt_check_pages_out(c->h[k], p, n * ps, c->list[k],
				       where) == 0);
	check_own_vmlck(c, where);
}

static void unlock_pages(struct ctx *c, int k, unsigned first, unsigned n,
			 const char *where)
{
	unsigned i;

	VDT_CHECK_EQ(lmm_unlock_area(c->h[k]), 0);
	for (i = first; i < first + n; i++)
		c->count[i]--;
	check_own_vmlck(c, where);
}

/* Handle k still lists the pages it listed when it was made. */
static void check_unchanged(const struct ctx *c, int k, unsigned first,
			    unsigned n, const char *where)
{
	uint64_t now[SEG_PAGES];

	VDT_CHECK(lmmt_check_pages_out(c->h[k], c->seg->base + first * ps,
				       n * ps, now, where) == 0);
	VDT_CHECK(!memcmp(now, c->list[k], n * sizeof(now[0])));
}

static void send_list(struct ctx *c, int k, unsigned n)
{
	c->out.n = n;
	c->out.flags = c->physical ? 0 : LMM_PAGES_VIRTUAL;
	memcpy(c->out.pages, c->list[k], n * sizeof(uint64_t));
}

/* My list of handle k (starting at segment page 'mine') against the
 * peer's list (starting at page 'theirs'), over 'n' common pages. */
static void compare_with_peer(const struct ctx *c, int k, unsigned mine,
			      unsigned theirs, unsigned n, const char *where)
{
	unsigned i, first = mine > theirs ? mine : theirs;

	VDT_CHECK(c->in.n > 0);
	VDT_CHECK_EQ(c->in.flags, c->physical ? 0 : LMM_PAGES_VIRTUAL);
	if (!c->physical)
		return; /* said once in main() */
	for (i = first; i < first + n; i++)
		if (c->list[k][i - mine] != c->in.pages[i - theirs]) {
			fprintf(stderr, "%c, %s, %s: page %u: mine %#llx, "
				"peer's %#llx\n", "AB"[c->role],
				kind_names[c->seg->kind], where, i,
				(unsigned long long)c->list[k][i - mine],
				(unsigned long long)c->in.pages[i - theirs]);
			exit(VDT_FAIL);
		}
}

/* ---- the scenario ------------------------------------------------------------ */

/* Handle slots: A: 0 pre-fork [0,4), 1 and 2 [0,8), 3 [8,16), 4 [0,16),
 * 5 [2,6).  B: 1 [4,12) (unaligned), 2 [0,8). */

static void b_after_fork(struct ctx *c, lmm_handle_t inherited)
{
	struct lmm_stats st = lmmt_stats();
	size_t n;

	/* Locks and registrations are not inherited; the mapping is. */
	VDT_CHECK_EQ(lmmt_vmlck(), 0);
	VDT_CHECK_EQ(st.registrations, 0);
	VDT_CHECK_EQ(lmm_get_pages(inherited, NULL, 0, &n, NULL), -EBADF);
	VDT_CHECK(c->seg->base[0] == 'A' && c->seg->base[4 * ps - 1] == 'A');
	/* Unaligned: whole pages 4..11. */
	VDT_CHECK_EQ(lmm_lock_area(c->seg->base + 4 * ps + 100, 8 * ps - 200,
				   &c->h[1]), 0);
	for (unsigned i = 4; i < 12; i++)
		c->count[i]++;
	VDT_CHECK(lmmt_check_pages_out(c->h[1], c->seg->base + 4 * ps,
				       8 * ps, c->list[1], "B [4,12)") == 0);
	check_own_vmlck(c, "B [4,12)");
	check_peer_vmlck(c, 4, "A holds its pre-fork [0,4)");
	send_list(c, 1, 8);
	end_turn(c);
}

static void a_turn_overlap(struct ctx *c)
{
	wait_turn(c);
	unlock_pages(c, 0, 0, 4, "A drops the pre-fork registration");
	check_peer_vmlck(c, 8, "B's [4,12) after A's unlock");
	lock_pages(c, 1, 0, 8, "A [0,8)");
	compare_with_peer(c, 1, 0, 4, 4, "A [0,8) vs B [4,12)");
	send_list(c, 1, 8);
	end_turn(c);
}

static void b_turn_same_range(struct ctx *c)
{
	wait_turn(c);
	compare_with_peer(c, 1, 4, 0, 4, "B [4,12) vs A [0,8)");
	lock_pages(c, 2, 0, 8, "B [0,8)");
	compare_with_peer(c, 2, 0, 0, 8, "B [0,8) vs A [0,8)");
	check_peer_vmlck(c, 8, "A [0,8)");
	end_turn(c);
}

static void a_turn_twice_once(struct ctx *c)
{
	uint64_t mlocks, munlocks;

	wait_turn(c);
	mlocks = lmmt_stats().mlock_calls;
	munlocks = lmmt_stats().munlock_calls;
	lock_pages(c, 2, 0, 8, "A [0,8) twice");
	unlock_pages(c, 1, 0, 8, "A [0,8) unlocked once");
	VDT_CHECK_EQ(lmmt_stats().mlock_calls, mlocks);
	VDT_CHECK_EQ(lmmt_stats().munlock_calls, munlocks);
	check_unchanged(c, 2, 0, 8, "A [0,8) still locked");
	unlock_pages(c, 2, 0, 8, "A [0,8) unlocked");
	VDT_CHECK_EQ(lmmt_vmlck(), 0);
	check_peer_vmlck(c, 12, "B after A unlocked everything");
	end_turn(c);
}

static void b_turn_still_locked(struct ctx *c, const char *where)
{
	wait_turn(c);
	check_own_vmlck(c, where);
	check_unchanged(c, 1, 4, 8, where);
	check_unchanged(c, 2, 0, 8, where);
	end_turn(c);
}

static void a_turn_cleanup(struct ctx *c)
{
	size_t n;

	wait_turn(c);
	lock_pages(c, 3, 8, 8, "A [8,16)");
	lock_pages(c, 4, 0, 16, "A [0,16)");
	VDT_CHECK_EQ(lmm_cleanup(), 0);
	memset(c->count, 0, sizeof(c->count));
	check_own_vmlck(c, "A after lmm_cleanup");
	VDT_CHECK_EQ(lmm_get_pages(c->h[3], NULL, 0, &n, NULL), -EBADF);
	VDT_CHECK_EQ(lmm_unlock_area(c->h[4]), -EBADF);
	check_peer_vmlck(c, 12, "B after A's lmm_cleanup");
	end_turn(c);
}

static void a_turn_lock_again(struct ctx *c)
{
	wait_turn(c);
	lock_pages(c, 5, 2, 4, "A [2,6)");
	end_turn(c);
}

static void b_turn_cleanup(struct ctx *c)
{
	size_t n;

	wait_turn(c);
	VDT_CHECK_EQ(lmm_cleanup(), 0);
	memset(c->count, 0, sizeof(c->count));
	check_own_vmlck(c, "B after lmm_cleanup");
	VDT_CHECK_EQ(lmm_get_pages(c->h[1], NULL, 0, &n, NULL), -EBADF);
	check_peer_vmlck(c, 4, "A after B's lmm_cleanup");
	end_turn(c);
}

static void a_turn_last(struct ctx *c)
{
	wait_turn(c);
	check_own_vmlck(c, "A after B's lmm_cleanup");
	check_unchanged(c, 5, 2, 4, "A [2,6) after B's lmm_cleanup");
	check_peer_vmlck(c, 0, "B after its lmm_cleanup");
	unlock_pages(c, 5, 2, 4, "A done");
	VDT_CHECK_EQ(lmmt_stats().registrations, 0);
}

static void run_b(struct ctx *c, lmm_handle_t inherited)
{
	b_after_fork(c, inherited);
	b_turn_same_range(c);
	b_turn_still_locked(c, "B after A unlocked");
	b_turn_still_locked(c, "B after A's lmm_cleanup");
	b_turn_cleanup(c);
	/* Stay inspectable until A is done: wait for A to hang up. */
	while (read(c->rd, &c->in, sizeof(c->in)) > 0)
		;
}

static void run_a(struct ctx *c)
{
	a_turn_overlap(c);
	a_turn_twice_once(c);
	a_turn_cleanup(c);
	a_turn_lock_again(c);
	a_turn_last(c);
}

static void test_kind(enum seg_kind kind, int physical)
{
	struct segment seg;
	struct ctx c;
	int a2b[2], b2a[2], status;
	pid_t pid;

	segment_create(&seg, kind);
	memset(&c, 0, sizeof(c));
	c.seg = &seg;
	c.physical = physical;
	memset(seg.base, 'A', seg.size);
	/* A registration taken before fork. */
	lock_pages(&c, 0, 0, 4, "A [0,4) before fork");
	VDT_CHECK_EQ(pipe(a2b), 0);
	VDT_CHECK_EQ(pipe(b2a), 0);
	pid = fork();
	VDT_CHECK(pid >= 0);
	if (!pid) {
		lmm_handle_t inherited = c.h[0];

		lmmt_watchdog(LMMT_SANITIZED ? 300 : 60);
		close(a2b[1]);
		close(b2a[0]);
		memset(c.count, 0, sizeof(c.count));
		c.role = ROLE_B;
		c.rd = a2b[0];
		c.wr = b2a[1];
		c.peer = getppid();
		run_b(&c, inherited);
		exit(VDT_PASS);
	}
	close(a2b[0]);
	close(b2a[1]);
	c.role = ROLE_A;
	c.rd = b2a[0];
	c.wr = a2b[1];
	c.peer = pid;
	run_a(&c);
	close(c.wr);
	close(c.rd);
	VDT_CHECK_EQ(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != VDT_PASS) {
		fprintf(stderr, "%s: B failed (status %#x)\n", kind_names[kind],
			status);
		exit(VDT_FAIL);
	}
	segment_destroy(&seg);
	VDT_CHECK_EQ(lmmt_vmlck(), 0);
	fprintf(stderr, "ok   %s\n", kind_names[kind]);
}

int main(void)
{
	int physical, kind;

	ps = vdt_page_size();
	lmmt_watchdog(LMMT_SANITIZED ? 300 : 60);
	VDT_SKIP_IF(lmmt_vmlck() != 0, "memory is locked already");
	physical = lmmt_physical();
	if (!physical)
		fprintf(stderr, "note: PFNs are not readable: page lists are "
			"virtual; comparing flags and counts only\n");
	for (kind = 0; kind < NR_KINDS; kind++)
		test_kind((enum seg_kind)kind, physical);
	VDT_CHECK_EQ(lmm_cleanup(), 0);
	VDT_CHECK_EQ(devshm_leftovers(), 0);
	return VDT_PASS;
}
