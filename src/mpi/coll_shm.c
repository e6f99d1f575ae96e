/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the shared segment of a node-local communicator, and how
 * its members wait for each other in it.
 *
 * Made on the communicator's first collective: the lowest rank creates a
 * memfd (its pages reserved, so a full tmpfs fails here and not with
 * SIGBUS later; sealed against resizing, which the others check, so no
 * member can cut it short under the others) and broadcasts its pid, fd
 * number and the slot size over point to point; every member opens it
 * through /proc/PID/fd and maps it, and the members swap their process
 * ids (an allgather that doubles as "everyone has it mapped"), after
 * which the creator closes it: only the mappings hold the memory and
 * nothing ever had a name, so nothing outlives the job.  Where /proc
 * does not allow that, the same happens with a POSIX shared memory
 * object (random name, 0600) unlinked right after the allgather.  A
 * member that could not map it sends pid 0 and everyone falls back to
 * the point to point algorithms.
 *
 * Waiting spins for the engine's spin budget (none on a host whose ranks
 * outnumber its CPUs: vd_coll_spin_budget_ns), yields the CPU for a while
 * (SHM_YIELD_NS; not while yields go to other processes: yields_pay),
 * then sleeps on the awaited member's counter as a futex
 * word (shared between processes, so not FUTEX_PRIVATE): when members
 * outnumber the CPUs, the one waited for needs this CPU, and a publisher
 * wakes sleepers with FUTEX_WAKE rather than leave them to a tick.  Sleeps
 * are short (SHM_NAP_NS) so the engine keeps making progress for point to
 * point traffic; yields and sleeps let go of the library's lock
 * (MPI_THREAD_MULTIPLE), so other threads' communicators move meanwhile;
 * and every SHM_LIVENESS_NS a sleeper checks that its fellow members
 * still exist: a dead member ends the wait with -EIO instead of a hang.
 * A counter read that no member can have published (plausible()) ends
 * it with -EIO too, and the segment stays refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "coll_shm.h"
#include "engine.h"
#include "util/sys.h"

#define SHM_YIELD_NS (200 * 1000)
/* A yield that takes this long gave the CPU to a process of someone
 * else's (a CPU hog runs its whole slice, ~2 ms here), not to the member
 * waited for: yields are then left out for SHM_YIELD_OFF_NS, and waits
 * go from spinning to the futex, whose wake-up preempts the hog. */
#define SHM_YIELD_SLOW_NS (1000 * 1000)
#define SHM_YIELD_OFF_NS (50 * 1000 * 1000)
#define SHM_NAP_NS (2 * 1000 * 1000)
#define SHM_LIVENESS_NS (100 * 1000 * 1000)
#define SHM_NAME_LEN 128
#define SHM_DIRECT_MIN 16384            /* VIADUCT_MPI_COLL_DIRECT_MIN's default */
/* Where in its line a member keeps the address its process maps the
 * segment at (the direct-read probe reads it back through that process). */
#define SHM_MAPPED_AT 48
_Static_assert(SHM_MAPPED_AT >= (2 + SHM_NBUF) * sizeof(uint32_t) &&
	       SHM_MAPPED_AT + sizeof(uint64_t) <= SHM_LINE,
	       "a counter, its sleepers, a signature per area and an address in each line");

/* ---- layout ------------------------------------------------------------------ */

/* One line per member: its phase counter (also the futex word its
 * waiters sleep on), how many may be asleep on it and the signatures of
 * the collectives it began in each area; then the areas (page
 * aligned). */
static size_t areas_offset(int n)
{
	size_t end = (size_t)n * SHM_LINE;

	return (end + 4095) & ~(size_t)4095;
}

static size_t segment_len(int n, size_t slot)
{
	return areas_offset(n) + (size_t)SHM_NBUF * (size_t)n * slot;
}

static _Atomic uint32_t *counter(const struct vd_shm *s, int i)
{
	return (_Atomic uint32_t *)(s->counters + (size_t)i * SHM_LINE);
}

static _Atomic uint32_t *sleepers(const struct vd_shm *s, int i)
{
	return counter(s, i) + 1;
}

static _Atomic uint64_t *mapped_at(const struct vd_shm *s, int i)
{
	return (_Atomic uint64_t *)(s->counters + (size_t)i * SHM_LINE + SHM_MAPPED_AT);
}

/* Member i's signature of phase p: one word per area, so it lives as
 * long as the area's data (a member cannot claim phase p + SHM_NBUF
 * before everyone has published p + 2; a Bcast receiver signs its phase
 * without claiming it, but only once it has seen the root of its phase
 * before, which claimed that one: everyone is past p by then). */
static _Atomic uint32_t *signature(const struct vd_shm *s, int i, uint32_t p)
{
	return counter(s, i) + 2 + p % SHM_NBUF;
}

/* The word stored for sig at phase p: a signature left from an earlier
 * use of the area (a member that began something else) does not pass
 * for this phase's. */
static uint32_t signature_word(uint32_t sig, uint32_t p)
{
	return sig ^ (p * 0x9e3779b9u);
}

/* ---- setup ------------------------------------------------------------------- */

static bool shm_enabled(void)
{
	static int on = -1;
	uint64_t v = 1;

	if (on < 0) {
		(void)viaduct_param_uint("VIADUCT_MPI_COLL_SHM", 1, &v);    /* checked at init */
		on = v != 0;
	}
	return on;
}

static bool node_local(const struct vd_comm *c)
{
	int mine = vd_place_node(vd_mpi.rank);

	for (int i = 0; i < c->size; i++)
		if (vd_place_node(c->world[i]) != mine)
			return false;
	return true;
}

/* The job id with only characters safe in a file name. */
static void safe_jobid(char *out, size_t len)
{
	size_t k = 0;

	for (const char *p = vd_mpi.jobid; *p && k + 1 < len; p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '_')
			out[k++] = *p;
	out[k] = '\0';
}

/* Job, node and context tell the segments of a job apart; the random
 * part keeps a communicator split into several on one node (the same
 * context) and a stale object of a crashed job from colliding. */
static void make_name(const struct vd_comm *c, char *name)
{
	char job[40];
	uint64_t r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r ^= (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL) ^ (uintptr_t)&r;
	safe_jobid(job, sizeof(job));
	snprintf(name, SHM_NAME_LEN, "/vd-mpi-coll-%s-n%d-c%u-%016llx", job,
		 vd_place_node(vd_mpi.rank), (unsigned)c->ctx, (unsigned long long)r);
}

/* How the members get hold of the segment: first a memfd the others open
 * through the creator's /proc/PID/fd (nothing ever has a name); where
 * that is not allowed, a POSIX shared memory object unlinked as soon as
 * everyone has it. */
enum shm_way { SHM_MEMFD, SHM_NAMED };

/* What the creator tells the others. */
struct shm_offer {
	char name[SHM_NAME_LEN];        /* SHM_NAMED: the object, "": none */
	int32_t pid, fd;                /* SHM_MEMFD: the creator's fd, -1: none */
	uint32_t slot;
};

/* The slot size: larger when this node's ranks outnumber the CPUs they
 * may use (a rank bound to one CPU was placed by a launcher that spread
 * the ranks: then all online CPUs count), or VIADUCT_MPI_COLL_CROWDED
 * says so.  The creator's choice holds for every member. */
static uint32_t choose_slot(void)
{
	enum { CROWDED_AUTO, CROWDED_NO, CROWDED_YES };
	uint64_t given = CROWDED_AUTO;
	cpu_set_t cpus;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	/* Checked at MPI_Init.  A container's CPU quota, say, is not in the
	 * affinity mask: the user may know better. */
	(void)viaduct_param_uint("VIADUCT_MPI_COLL_CROWDED", CROWDED_AUTO, &given);
	if (given != CROWDED_AUTO)
		return given == CROWDED_YES ? SHM_SLOT_CROWDED : SHM_SLOT;

	if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) > 1)
		ncpu = CPU_COUNT(&cpus);
	return ncpu > 0 && vd_place_local_ranks() > ncpu ? SHM_SLOT_CROWDED : SHM_SLOT;
}

/* The pages reserved, so a full tmpfs fails here and not with SIGBUS in
 * a collective. */
static int reserve(int fd, size_t len)
{
	if (fd >= 0 && posix_fallocate(fd, 0, (off_t)len) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A memfd that nobody can shrink: a member that could (it had the fd
 * open) would turn every other member's next access into SIGBUS. */
#define SHM_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

static int sealed(int fd)
{
	if (fd >= 0 && fcntl(fd, F_ADD_SEALS, SHM_SEALS) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int create_memfd(size_t len, struct shm_offer *o)
{
	o->pid = (int32_t)getpid();
	o->fd = sealed(reserve(memfd_create("vd-mpi-coll", MFD_CLOEXEC | MFD_ALLOW_SEALING), len));
	return o->fd;
}

/* fd, if its size can no longer change; else -1. */
static int checked_seals(int fd)
{
	int seals = fd >= 0 ? fcntl(fd, F_GET_SEALS) : -1;

	if (fd >= 0 && (seals < 0 || (seals & SHM_SEALS) != SHM_SEALS)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A new named object, or -1 and name "". */
static int create_named(const struct vd_comm *c, size_t len, char *name)
{
	int fd;

	make_name(c, name);
	fd = reserve(shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600), len);
	if (fd < 0) {
		shm_unlink(name);
		name[0] = '\0';
	}
	return fd;
}

/* fd, if it is ours and of the right size; else -1. */
static int checked(int fd, size_t len)
{
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_uid != geteuid() || (size_t)st.st_size != len) {
		close(fd);
		return -1;
	}
	return fd;
}

static int open_offered(const struct shm_offer *o, enum shm_way way, size_t len)
{
	char path[64];

	if (way == SHM_NAMED)
		return checked(o->name[0] ? shm_open(o->name, O_RDWR | O_CLOEXEC, 0) : -1, len);
	if (o->fd < 0 || o->pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)o->pid, (int)o->fd);
	return checked_seals(checked(open(path, O_RDWR | O_CLOEXEC), len));
}

/* The creator makes the segment and offers it; the others open it.  The
 * segment's fd here, or -1.  A member that refuses (the segment is off
 * here) takes part all the same, offering or opening nothing, so that
 * everyone falls back together. */
static int offer_and_open(struct vd_comm *c, enum shm_way way, struct shm_offer *o,
			  bool refuse)
{
	int fd = -1;

	if (c->rank == 0 && !refuse) {
		o->slot = choose_slot();
		fd = way == SHM_MEMFD ? create_memfd(segment_len(c->size, o->slot), o)
				      : create_named(c, segment_len(c->size, o->slot), o->name);
	}
	if (vd_coll_bcast_tree(o, (int)sizeof(*o), MPI_BYTE, 0, c) ||
	    (o->slot != SHM_SLOT && o->slot != SHM_SLOT_CROWDED)) {
		if (fd >= 0)
			close(fd);
		o->slot = SHM_SLOT;
		return -1;
	}
	o->name[SHM_NAME_LEN - 1] = '\0';
	return c->rank == 0 || refuse ? fd : open_offered(o, way, segment_len(c->size, o->slot));
}

static struct vd_shm *shm_new(const struct vd_comm *c, char *base, size_t slot)
{
	struct vd_shm *s = calloc(1, sizeof(*s) + (size_t)c->size * (sizeof(pid_t) +
								      sizeof(uint32_t)));

	if (!s)
		return NULL;
	s->pids = (pid_t *)(s + 1);
	s->seen = (uint32_t *)(s->pids + c->size);
	s->base = base;
	s->len = segment_len(c->size, slot);
	s->n = c->size;
	s->me = c->rank;
	s->counters = base;
	s->areas = base + areas_offset(c->size);
	s->slot = slot;
	s->area_len = (size_t)c->size * slot;
	s->direct_min = SIZE_MAX;
	/* Relaxed: the allgather's messages that follow order it before the
	 * others' loads in direct_reaches_all. */
	atomic_store_explicit(mapped_at(s, s->me), (uint64_t)(uintptr_t)base, memory_order_relaxed);
	return s;
}

static char *map_fd(int fd, size_t len)
{
	void *base = fd < 0 ? MAP_FAILED
			    : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return base == MAP_FAILED ? NULL : base;
}

int vd_shm_pull(const struct vd_shm *s, int i, void *buf, uint64_t at, size_t len)
{
	while (len) {
		struct iovec mine = { buf, len }, theirs = { (void *)(uintptr_t)at, len };
		ssize_t n = process_vm_readv(s->pids[i], &mine, 1, &theirs, 1, 0);

		if (n <= 0)
			return -EIO;
		buf = (char *)buf + n;
		at += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int vd_shm_push(const struct vd_shm *s, int i, uint64_t at, const void *buf, size_t len)
{
	while (len) {
		struct iovec mine = { (void *)buf, len }, theirs = { (void *)(uintptr_t)at, len };
		ssize_t n = process_vm_writev(s->pids[i], &mine, 1, &theirs, 1, 0);

		if (n <= 0)
			return -EIO;
		buf = (const char *)buf + n;
		at += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Whether this member reads every other one's memory: member i's line,
 * read through member i's process at the address the line gives, must
 * hold that address (the line is untrusted, but only the kernel follows
 * the address). */
static bool direct_reaches_all(const struct vd_shm *s)
{
	for (int i = 0; i < s->n; i++) {
		uint64_t at, got = 0;

		if (i == s->me)
			continue;
		/* Each member's own word for its pid: one naming this process
		 * or another member's would turn writes meant for it into
		 * writes into them (reading this process's own segment would
		 * pass the probe). */
		for (int j = 0; j < s->n; j++)
			if (j != i && s->pids[j] == s->pids[i])
				return false;
		if (s->pids[i] == getpid())
			return false;
		/* Relaxed: the pid allgather's messages order member i's store
		 * (in shm_new) before this load. */
		at = atomic_load_explicit(mapped_at(s, i), memory_order_relaxed);
		if (vd_shm_pull(s, i, &got, at + (uint64_t)i * SHM_LINE + SHM_MAPPED_AT,
				sizeof(got)) || got != at)
			return false;
	}
	return true;
}

/* Whether this process takes part in the kernel's global expedited
 * memory barrier and can issue it (registered once per process; Linux
 * 4.16 and later, where no seccomp filter refuses either call). */
static bool membarrier_ready(void)
{
	static int ready = -1;          /* under the library's lock */
	long cmds;

	if (ready < 0) {
		cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
		ready = cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
			(cmds & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) &&
			syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED,
				0, 0) == 0 &&
			syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) == 0;
	}
	return ready > 0;
}

/* What the members must agree on, each sending its own view:
 *  - direct reads: every member must read every other and want the same
 *    threshold (VIADUCT_MPI_COLL_DIRECT_MIN), or nobody reads directly,
 *    so all of them take the same path through every collective;
 *  - asymmetric fences (vd_shm_publish, sleep_on): only when every
 *    member's process takes part in the kernel's barrier.
 * -EIO if the exchange failed. */
static int agree_modes(struct vd_shm *s, struct vd_comm *c)
{
	int want[3 * SHM_MAX_MEMBERS];
	struct vd_coll_side R = { .buf = want, .count = 3, .dt = MPI_INT,
				  .t = vd_dtype_get(MPI_INT) };
	uint64_t min = SHM_DIRECT_MIN;
	bool direct = true, asym = true;

	/* Checked at MPI_Init; at most 2^30. */
	(void)viaduct_param_uint("VIADUCT_MPI_COLL_DIRECT_MIN", SHM_DIRECT_MIN, &min);
	/* Page aligned, so that each pull can land at its source's offset
	 * in a page (coll_shm_direct.c, copy_aliases): into a malloc'd
	 * buffer 16 bytes past its source's offset, 2-rank Reduce of 1 MiB
	 * took 510-815 against 165-186 us. */
	s->bounce = min ? aligned_alloc(SHM_BOUNCE_PAGE, 2 * SHM_BOUNCE_REGION) : NULL;
	want[3 * s->me] = s->bounce && direct_reaches_all(s);
	want[3 * s->me + 1] = (int)min;
	want[3 * s->me + 2] = membarrier_ready();
	if (vd_coll_allgather_flat(&R, c))
		return -EIO;
	for (int i = 0; i < s->n; i++) {
		direct = direct && want[3 * i] && want[3 * i + 1] == (int)min;
		asym = asym && want[3 * i + 2];
	}
	s->asym_fence = asym;
	if (!direct) {
		free(s->bounce);
		s->bounce = NULL;
		return 0;
	}
	s->direct_min = (size_t)min;
	return 0;
}

static struct vd_shm *shm_attach(struct vd_comm *c, enum shm_way way, bool refuse)
{
	struct shm_offer o = { .name = "", .pid = 0, .fd = -1, .slot = 0 };
	int pids[SHM_MAX_MEMBERS], fd = offer_and_open(c, way, &o, refuse), err;
	size_t len = segment_len(c->size, o.slot);
	char *base = map_fd(fd, len);
	struct vd_shm *s = base ? shm_new(c, base, o.slot) : NULL;
	struct vd_coll_side R = { .buf = pids, .count = 1, .dt = MPI_INT,
				  .t = vd_dtype_get(MPI_INT) };
	bool all = true;

	pids[c->rank] = s ? (int)getpid() : 0;
	err = vd_coll_allgather_flat(&R, c);
	/* Every member that could open it has: the creator's memfd may go,
	 * and the name. */
	if (fd >= 0)
		close(fd);
	if (c->rank == 0 && o.name[0])
		shm_unlink(o.name);
	for (int i = 0; i < c->size; i++)
		all = all && pids[i] > 0;
	if (err || !all) {
		free(s);
		if (base)
			munmap(base, len);
		return NULL;
	}
	for (int i = 0; i < c->size; i++)
		s->pids[i] = pids[i];
	if (agree_modes(s, c)) {
		vd_shm_free(s);
		return NULL;
	}
	return s;
}

/* VIADUCT_DEBUG=1: the outcome, once per communicator. */
static void say_shm(const struct vd_comm *c, const struct vd_shm *s)
{
	uint64_t dbg = 0;

	if (viaduct_param_uint("VIADUCT_DEBUG", 0, &dbg) || !dbg)
		return;
	if (s)
		fprintf(stderr, "viaduct MPI: rank %d: a communicator of %d ranks on this node: "
			"collectives through a shared segment of %zu KiB, %s, %s\n", vd_mpi.rank,
			c->size, s->len / 1024,
			s->direct_min == SIZE_MAX ? "blocks never read directly"
						  : "larger blocks read directly",
			s->asym_fence ? "sleepers fence for publishers (membarrier)"
				      : "publishers fence");
	else
		fprintf(stderr, "viaduct MPI: rank %d: a communicator of %d ranks on this node: "
			"no shared segment, collectives go point to point\n", vd_mpi.rank, c->size);
}

struct vd_shm *vd_shm_of(struct vd_comm *c)
{
	if (c->shm_done)
		return c->shm;
	c->shm_done = true;
	/* Members with the segment off (VIADUCT_MPI_COLL_SHM=0) take part
	 * refusing: one member's setting must not leave the others waiting
	 * for it in the segment. */
	if (!c->inter && c->size >= 2 && c->size <= SHM_MAX_MEMBERS && node_local(c)) {
		c->shm = shm_attach(c, SHM_MEMFD, !shm_enabled());
		if (!c->shm)
			c->shm = shm_attach(c, SHM_NAMED, !shm_enabled());
		say_shm(c, c->shm);
	}
	return c->shm;
}

void vd_shm_free(struct vd_shm *s)
{
	if (!s)
		return;
	munmap(s->base, s->len);
	free(s->bounce);
	free(s);
}

/* ---- waiting ------------------------------------------------------------------- */

/* Until when this process leaves yields out (SHM_YIELD_SLOW_NS); one
 * word for all its communicators, which share its CPUs.  Relaxed: a
 * hint, ordered with nothing. */
static _Atomic uint64_t yields_off_until;

static bool yields_pay(void)
{
	return vd_now_ns() >= atomic_load_explicit(&yields_off_until, memory_order_relaxed);
}

static void yield_timed(void)
{
	uint64_t t0 = vd_now_ns(), t1;

	sched_yield();
	t1 = vd_now_ns();
	if (t1 - t0 >= SHM_YIELD_SLOW_NS)
		atomic_store_explicit(&yields_off_until, t1 + SHM_YIELD_OFF_NS,
				      memory_order_relaxed);
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Phase v at or after p (wrapping counters). */
static bool reached(uint32_t v, uint32_t p)
{
	return (int32_t)(v - p) >= 0;
}

/* How far a member's counter can be from this member's phase: nobody
 * runs further ahead than the areas let it (a writer waits for everyone
 * to be at most SHM_NBUF - 2 phases behind), nor further behind than
 * those ahead of it waited for; twice that leaves a margin. */
#define SHM_PLAUSIBLE (2 * SHM_NBUF)

/* Whether member i's counter can read v: within reach of this member's
 * phase, not behind what was read of it before, and this member's own
 * exactly what it published. */
static bool plausible(struct vd_shm *s, int i, uint32_t v)
{
	int32_t d = (int32_t)(v - s->phase);

	if (i == s->me)
		return v == s->published;
	if (d > SHM_PLAUSIBLE || d < -SHM_PLAUSIBLE || !reached(v, s->seen[i]))
		return false;
	s->seen[i] = v;
	return true;
}

/* Said once: the wait that found it and every later one fail. */
static void found_overwritten(struct vd_shm *s, int i, uint32_t v)
{
	if (s->corrupt)
		return;
	s->corrupt = true;
	if (i == s->me)
		fprintf(stderr, "viaduct MPI: rank %d: the shared segment of a node-local "
			"collective was overwritten: this rank's own phase counter reads %u, "
			"it published %u\n", vd_mpi.rank, v, s->published);
	else
		fprintf(stderr, "viaduct MPI: rank %d: the shared segment of a node-local "
			"collective was overwritten: the phase counter of member %d (of %d) "
			"reads %u, impossible at phase %u (last read %u)\n", vd_mpi.rank, i,
			s->n, v, s->phase, s->seen[i]);
}

void vd_shm_found_bad(struct vd_shm *s, int i, const char *what, uint64_t v)
{
	if (s->corrupt)
		return;
	s->corrupt = true;
	fprintf(stderr, "viaduct MPI: rank %d: the shared segment of a node-local collective "
		"was overwritten, or its members are not in the same collective: member %d "
		"(of %d) left %llu %s at phase %u\n", vd_mpi.rank, i, s->n,
		(unsigned long long)v, what, s->phase);
}

/* Acquire: pairs with the release store in vd_shm_publish, so the data
 * written before that phase is visible to whoever sees it.  An
 * impossible value counts as reached: it ends the wait, which then
 * fails. */
static bool member_reached(struct vd_shm *s, int i, uint32_t p)
{
	uint32_t v = atomic_load_explicit(counter(s, i), memory_order_acquire);

	if (!plausible(s, i, v)) {
		found_overwritten(s, i, v);
		return true;
	}
	if (!reached(v, p))
		return false;
	/* Its signature now, while the line is here: once the member moves
	 * on, reading it would cost another trip of the line. */
	if (s->sig_wanted &&
	    atomic_load_explicit(signature(s, i, s->sig_phase), memory_order_relaxed) != s->sig_word)
		s->sig_differs = true;
	return true;
}

/* The word that stamps phase p signed sig: the signature word (mixed
 * with how often the phases wrapped) above the phase, so that neither
 * an earlier use of the line, 2^32 phases ago included, nor another
 * collective's stamp passes for it. */
static uint64_t stamp_value(const struct vd_shm *s, uint32_t sig, uint32_t p)
{
	return (uint64_t)(signature_word(sig, p) ^ (s->wraps * 0x85ebca6bu)) << 32 | p;
}

static _Atomic uint64_t *stamp_word(const char *line)
{
	return (_Atomic uint64_t *)(uintptr_t)(line + SHM_STAMP_AT);
}

/* Whether member i's line bears the stamp watched for.  Acquire: pairs
 * with the release store in vd_shm_stamp, so the bytes before the stamp
 * are visible once it is. */
static bool stamped(const struct vd_shm *s, int i)
{
	return s->stamp_wanted &&
	       atomic_load_explicit(stamp_word(s->stamp_first + (size_t)i * s->stamp_stride),
				    memory_order_acquire) == s->stamp_want;
}

/* The first member (of `who`, or of all for -1) not yet at phase p, or
 * -1 when none is left.  A watched stamp counts first: its line is the
 * one whose data the caller reads next. */
static int laggard(struct vd_shm *s, int who, uint32_t p)
{
	if (who >= 0)
		return stamped(s, who) || member_reached(s, who, p) ? -1 : who;
	for (int i = 0; i < s->n; i++)
		if (!stamped(s, i) && !member_reached(s, i, p))
			return i;
	return -1;
}

static bool ready(struct vd_shm *s, int who, uint32_t p)
{
	return laggard(s, who, p) < 0;
}

void vd_shm_publish(struct vd_shm *s, uint32_t p)
{
	_Atomic uint32_t *mine = counter(s, s->me);

	s->published = p;
	/* Release: pairs with the acquire loads of member_reached. */
	atomic_store_explicit(mine, p, memory_order_release);
	/* Pairs with the fence or the kernel's barrier in sleep_on: either
	 * that sleeper's check sees p, or this load sees the sleeper
	 * counted.  With the kernel's barrier (asym_fence) the sleeper pays
	 * for both sides, and this side only keeps the compiler from moving
	 * the load above the store: a full fence here waits for the
	 * counter's line to come back from the member polling it. */
	if (s->asym_fence)
		atomic_signal_fence(memory_order_seq_cst);
	else
		atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(sleepers(s, s->me), memory_order_relaxed) != 0)
		syscall(SYS_futex, (uint32_t *)mine, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Sleep until member i publishes (or SHM_NAP_NS passes): counted among
 * its sleepers, then its counter read once more, so a publish in between
 * is never lost (FUTEX_WAIT returns at once when the counter moved). */
static void sleep_on(struct vd_shm *s, int i, uint32_t p)
{
	struct timespec nap = { 0, SHM_NAP_NS };
	uint32_t v;

	atomic_fetch_add_explicit(sleepers(s, i), 1, memory_order_relaxed);
	/* Pairs with vd_shm_publish's fence, or (asym_fence) stands in for
	 * it: the kernel's barrier runs a full fence on every CPU running a
	 * registered process (every member's), so a publisher that loaded
	 * the sleepers before it also made its counter visible before it,
	 * and one that loads after sees this count.  Should the call fail
	 * (it worked once, in membarrier_ready), the nap bounds a lost
	 * wake-up. */
	if (!s->asym_fence ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) != 0)
		atomic_thread_fence(memory_order_seq_cst);
	/* Acquire: pairs with the release store in vd_shm_publish. */
	v = atomic_load_explicit(counter(s, i), memory_order_acquire);
	if (!reached(v, p))
		syscall(SYS_futex, (uint32_t *)counter(s, i), FUTEX_WAIT, v, &nap, NULL, 0);
	atomic_fetch_sub_explicit(sleepers(s, i), 1, memory_order_relaxed);
}

/* A member whose process is gone (pids came over point to point, not
 * from the segment). */
static bool member_died(const struct vd_shm *s)
{
	for (int i = 0; i < s->n; i++) {
		if (i == s->me || kill(s->pids[i], 0) == 0 || errno != ESRCH)
			continue;
		fprintf(stderr, "viaduct MPI: rank %d: process %d of a node-local collective "
			"died\n", vd_mpi.rank, (int)s->pids[i]);
		return true;
	}
	return false;
}

/* The end of a wait whose members all got there: -EIO if one of them
 * only seemed to (its counter was overwritten), or this member's own
 * counter was. */
static int wait_outcome(struct vd_shm *s)
{
	if (!s->corrupt)
		(void)member_reached(s, s->me, s->published);
	return s->corrupt ? -EIO : 0;
}

int vd_shm_wait(struct vd_shm *s, int who, uint32_t p)
{
	uint64_t start, budget, checked;

	if (s->corrupt)
		return -EIO;
	if (ready(s, who, p))
		return wait_outcome(s);
	start = checked = vd_now_ns();
	budget = vd_coll_spin_budget_ns();
	for (unsigned i = 1; !ready(s, who, p); i++) {
		if (!(i & 15) && vd_now_ns() - start >= budget)
			goto yield;
		cpu_relax();
	}
	return wait_outcome(s);
yield:
	/* Hand the CPU to whoever can run -- likely the member waited for
	 * -- for a while before sleeping: cheaper than a futex round trip
	 * when the wait is short. */
	while (vd_now_ns() - start < budget + SHM_YIELD_NS && yields_pay()) {
		int held = vd_lock_release();

		yield_timed();
		vd_lock_reacquire(held);
		if (ready(s, who, p))
			return wait_outcome(s);
	}
	for (;;) {
		uint64_t now;
		int i, held;

		vd_progress(false);
		if ((i = laggard(s, who, p)) < 0)
			return wait_outcome(s);
		held = vd_lock_release();
		sleep_on(s, i, p);
		vd_lock_reacquire(held);
		now = vd_now_ns();
		if (now - checked >= SHM_LIVENESS_NS) {
			checked = now;
			/* Ours too: a member that reset it would stall the
			 * others waiting for us. */
			(void)member_reached(s, s->me, s->published);
			if (s->corrupt)
				return -EIO;
			if (!ready(s, who, p) && member_died(s))
				return -EIO;
		}
	}
}

static bool member_gone(const struct vd_shm *s, int i)
{
	return i != s->me && kill(s->pids[i], 0) != 0 && errno == ESRCH;
}

/* How long the live members get, after a death, to let go of this
 * member's buffers: each does so on every path right after its own
 * reads and writes, so only a member that stopped taking part (hostile,
 * or stopped in a debugger) runs into it. */
#define SHM_RELEASE_NS (2ull * 1000 * 1000 * 1000)

int vd_shm_wait_release(struct vd_shm *s, uint32_t p)
{
	int err = vd_shm_wait(s, -1, p);
	uint64_t give_up = vd_now_ns() + SHM_RELEASE_NS;

	if (err != -EIO)
		return err;
	for (int i = 0; i < s->n && !s->corrupt && vd_now_ns() < give_up; i++) {
		while (!member_gone(s, i) && !member_reached(s, i, p) && !s->corrupt &&
		       vd_now_ns() < give_up) {
			struct timespec nap = { 0, SHM_NAP_NS };
			int held = vd_lock_release();

			nanosleep(&nap, NULL);
			vd_lock_reacquire(held);
		}
	}
	return -EIO;
}

char *vd_shm_area(const struct vd_shm *s, uint32_t p)
{
	return s->areas + (size_t)(p % SHM_NBUF) * s->area_len;
}

void vd_shm_sign(struct vd_shm *s, uint32_t p, uint32_t sig)
{
	/* Relaxed: the release store of phase p publishes it. */
	atomic_store_explicit(signature(s, s->me, p), signature_word(sig, p),
			      memory_order_relaxed);
}

void vd_shm_sig_watch(struct vd_shm *s, uint32_t p, uint32_t sig)
{
	s->sig_wanted = true;
	s->sig_phase = p;
	s->sig_word = signature_word(sig, p);
	s->sig_differs = false;
}

bool vd_shm_sig_unwatch(struct vd_shm *s)
{
	s->sig_wanted = false;
	return s->sig_differs;
}

void vd_shm_stamp(const struct vd_shm *s, char *line, uint32_t p, uint32_t sig)
{
	/* Release: pairs with the acquire load in stamped(). */
	atomic_store_explicit(stamp_word(line), stamp_value(s, sig, p), memory_order_release);
}

void vd_shm_stamp_watch(struct vd_shm *s, const char *first, size_t stride, uint32_t p,
			uint32_t sig)
{
	s->stamp_wanted = true;
	s->stamp_first = first;
	s->stamp_stride = stride;
	s->stamp_want = stamp_value(s, sig, p);
}

void vd_shm_stamp_unwatch(struct vd_shm *s)
{
	s->stamp_wanted = false;
}

bool vd_shm_signed_with(const struct vd_shm *s, int i, uint32_t p, uint32_t sig)
{
	/* Relaxed: read after the acquire load that saw i at phase p. */
	return atomic_load_explicit(signature(s, i, p), memory_order_relaxed) ==
	       signature_word(sig, p);
}

int vd_shm_wait_signed(struct vd_shm *s, uint32_t p, uint32_t sig)
{
	int err;

	vd_shm_sig_watch(s, p, sig);
	err = vd_shm_wait(s, -1, p);
	return vd_shm_sig_unwatch(s) && !err ? -EMSGSIZE : err;
}

bool vd_shm_at(struct vd_shm *s, int i, uint32_t p)
{
	return member_reached(s, i, p);
}

void vd_shm_refuse_turn(struct vd_comm *c)
{
	struct vd_shm *s;

	if (c->size >= 2 && (s = vd_shm_of(c)))
		(void)vd_shm_signed_phase(s, SHM_SIG_REFUSED);
}

int vd_shm_signed_phase(struct vd_shm *s, uint32_t sig)
{
	uint32_t p = vd_shm_next(s);
	char *area;
	int err = vd_shm_area_claim(s, p, &area);

	if (err)
		return err;
	vd_shm_sign(s, p, sig);
	vd_shm_publish(s, p);
	return vd_shm_wait_signed(s, p, sig);
}

int vd_shm_area_claim(struct vd_shm *s, uint32_t p, char **area)
{
	*area = vd_shm_area(s, p);
	return vd_shm_wait(s, -1, p - SHM_NBUF + 2);
}
