// SPDX-License-Identifier: MIT
/*
 * bench_lmm -- figures for the Locked Memory Manager, not asserts.
 *
 * Reproduces on this machine what the LMM paper (Seifert & Rehm, "Reliably
 * Locking System V Shared Memory ...") measured in Tables 1 and 2 and
 * figure 8, next to raw mlock(2)+munlock(2) of the same range, plus the
 * pin-down cache, the cost of unlocking one of N overlapping registrations
 * and the SCI paper's physical-contiguity statistic.  Prints tables, writes one
 * long-format CSV for bench/lmm/plot.py, and ends with a targets section
 * that says "met" or "NOT met" from the numbers actually measured.
 *
 * Every time is the median over several runs of the mean over many
 * repetitions (CLOCK_MONOTONIC): the machine is shared and noisy, so the
 * raw and LMM runs are interleaved and ratios are taken per run pair.
 *
 * Usage: bench_lmm [--csv FILE] [--quick]
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"
#include "viaduct/lmm.h"

#define MIN_SIZE (4 * KIB)
#define MAX_SIZE (16 * MIB)
#define NR_SIZES 13 /* 4 KiB .. 16 MiB, powers of two */
#define PAGEMAP_PFN_MASK ((UINT64_C(1) << 55) - 1)
#define PAGEMAP_PRESENT (UINT64_C(1) << 63)
#define CONTIG_PAGES 4096 /* the SCI paper, section III.A */
#define RULE_WIDTH 116

/* ------------------------------------------------------------------ */
/* Options, global context                                             */

struct options {
	const char *csv_path;
	bool quick;
	int runs;           /* independent runs; the median is reported */
	size_t bytes_per_run; /* repetitions per run = this / size, clamped */
	int min_reps, max_reps;
	int small_reps;     /* repetitions for sub-microsecond operations */
};

static struct options opt;
static size_t page_size;
static int pagemap_fd = -1;
static bool can_lock_unlimited; /* CAP_IPC_LOCK or RLIMIT_MEMLOCK infinite */
static uint64_t memlock_limit;  /* bytes; meaningful if !can_lock_unlimited */
static double timer_ns;         /* cost of one now_ns(), subtracted below */

/* Mean of intervals timed one call at a time.  Each such interval also
 * contains one clock read, which is removed so that sub-microsecond
 * operations are not inflated by the timer itself (batched loops do not
 * need this). */
static double per_call_ns(uint64_t total, int calls)
{
	double mean = (double)total / calls - timer_ns;

	return mean > 0 ? mean : 0;
}

/* Enough repetitions that large sizes do not dominate the run time while
 * small sizes are repeated often enough to rise above timer noise. */
static int reps_for(size_t bytes)
{
	size_t reps = opt.bytes_per_run / bytes;

	if (reps < (size_t)opt.min_reps)
		return opt.min_reps;
	if (reps > (size_t)opt.max_reps)
		return opt.max_reps;
	return (int)reps;
}

/* ------------------------------------------------------------------ */
/* Formatting helpers                                                  */

static const char *err_text(int rc)
{
	return strerror(rc < 0 ? -rc : rc);
}

/* ------------------------------------------------------------------ */
/* Section 5 (printed first): machine context                          */

static void read_first_line(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f || !fgets(out, (int)len, f))
		snprintf(out, len, "unknown");
	else
		out[strcspn(out, "\n")] = 0;
	if (f)
		fclose(f);
}

static void probe_memlock(char *desc, size_t len)
{
	struct rlimit rl;

	getrlimit(RLIMIT_MEMLOCK, &rl);
	can_lock_unlimited = has_cap_ipc_lock() || rl.rlim_cur == RLIM_INFINITY;
	memlock_limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
	describe_memlock(desc, len);
}

/* The kernel zeroes the PFN field of /proc/self/pagemap for readers
 * without CAP_SYS_ADMIN; probe one touched page to find out. */
static bool pfns_readable(void)
{
	volatile char *p = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t entry = 0;

	if (p == MAP_FAILED || pagemap_fd < 0)
		return false;
	p[0] = 1;
	off_t off = (off_t)((uintptr_t)p / page_size * sizeof(entry));
	ssize_t got = pread(pagemap_fd, &entry, sizeof(entry), off);

	munmap((void *)p, page_size);
	return got == (ssize_t)sizeof(entry) && (entry & PAGEMAP_PRESENT) &&
	       (entry & PAGEMAP_PFN_MASK) != 0;
}

/* Cost of one clock_gettime, subtracted from single-call timings: the
 * median of several batches, as one batch can hit a neighbour's burst. */
static double timer_overhead_ns(void)
{
	enum { BATCHES = 11, N = 20000 };
	struct samples batches = { 0 };

	for (int b = 0; b < BATCHES; b++) {
		uint64_t t0 = now_ns();

		for (int i = 0; i < N; i++)
			(void)now_ns();
		samples_add(&batches, (double)(now_ns() - t0) / N);
	}
	return samples_median(&batches);
}

static void print_context(void)
{
	char buf[512];
	struct utsname u;

	puts("viaduct bench_lmm -- Locked Memory Manager figures");
	print_rule(RULE_WIDTH);
	snprintf(buf, sizeof(buf), "%zu bytes", page_size);
	print_context_line("page_size", "page size", buf);
	probe_memlock(buf, sizeof(buf));
	print_context_line("rlimit_memlock", "RLIMIT_MEMLOCK (soft)", buf);
	snprintf(buf, sizeof(buf), "%s", pfns_readable() ?
		 "yes (physical addresses)" :
		 "no (pagemap PFNs zeroed: needs CAP_SYS_ADMIN)");
	print_context_line("pfns_readable", "PFNs readable", buf);
	read_first_match("/proc/cpuinfo", "model name", buf, sizeof(buf));
	print_context_line("cpu_model", "CPU model", buf);
	snprintf(buf, sizeof(buf), "%ld online", sysconf(_SC_NPROCESSORS_ONLN));
	print_context_line("cpus", "CPUs", buf);
	uname(&u);
	snprintf(buf, sizeof(buf), "%s %s %s", u.sysname, u.release, u.machine);
	print_context_line("kernel", "kernel", buf);
	read_first_line("/sys/kernel/mm/transparent_hugepage/enabled", buf,
			sizeof(buf));
	print_context_line("thp", "transparent hugepages", buf);
	timer_ns = timer_overhead_ns();
	snprintf(buf, sizeof(buf), "%.1f ns per clock_gettime (subtracted from"
		 " single-call timings)", timer_ns);
	print_context_line("timer_overhead", "timer", buf);
	snprintf(buf, sizeof(buf), "%s: %d runs (median reported)",
		 opt.quick ? "quick" : "full", opt.runs);
	print_context_line("mode", "mode", buf);
	print_rule(RULE_WIDTH);
}

/* Bytes this process has locked right now (VmLck), which count against
 * RLIMIT_MEMLOCK together with whatever the bench locks next. */
static uint64_t locked_now(void)
{
	char text[64];
	unsigned long long kib;

	read_first_match("/proc/self/status", "VmLck", text, sizeof(text));
	return sscanf(text, "%llu", &kib) == 1 ? kib * 1024 : 0;
}

/* Whether the bench may lock this much more memory at once. */
static bool lockable(size_t bytes)
{
	return can_lock_unlimited || bytes + locked_now() <= memlock_limit;
}

/* The largest power-of-two prefix of len that lockable() allows: what the
 * holder child registers (the parent skips larger sizes anyway). */
static size_t lockable_prefix(size_t len)
{
	while (len > MIN_SIZE && !lockable(len))
		len /= 2;
	return len;
}

/* ------------------------------------------------------------------ */
/* Section 1: memory regions for the four cases                        */

/* The last case repeats the first once the pin-down cache's monitor runs:
 * from then on every 0->1 lock also registers the range with it. */
enum region_kind { REGION_PRIVATE, REGION_SHM_FIRST, REGION_SHM_HELD,
		   REGION_MEMFD, REGION_PRIVATE_MONITORED, NR_REGION_KINDS };

struct region {
	enum region_kind kind;
	char *addr;
	size_t len;
	int shmid;
	int memfd;
	pid_t holder;       /* child keeping the shm segment registered */
	int release_fd;     /* closing it lets the holder exit */
};

static const char *const case_names[NR_REGION_KINDS] = {
	"private", "shm_first", "shm_registered", "memfd", "private_monitored",
};

static const char *const case_titles[NR_REGION_KINDS] = {
	"[1a] private anonymous memory, pre-faulted  (the LMM paper's figure 8)",
	"[1b] System V shared segment, first registration  (the LMM paper's Table 2)",
	"[1c] System V shared segment already registered by another process"
	"  (the LMM paper's Table 1)",
	"[1d] memfd MAP_SHARED mapping",
	"[1e] private anonymous memory again, with the pin-down cache's monitor"
	" running",
};

/* Every page is written so that no timing includes the first fault. */
static void prefault(char *addr, size_t len)
{
	for (size_t off = 0; off < len; off += page_size)
		addr[off] = (char)(off / page_size);
}

static int region_private(struct region *rg)
{
	rg->addr = mmap(NULL, rg->len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return rg->addr == MAP_FAILED ? -errno : 0;
}

/* The segment is marked for removal at once so that a crash cannot leak
 * it; Linux still lets the holder child attach it while attached here. */
static int region_shm(struct region *rg)
{
	rg->shmid = shmget(IPC_PRIVATE, rg->len, IPC_CREAT | 0600);
	if (rg->shmid < 0)
		return -errno;
	rg->addr = shmat(rg->shmid, NULL, 0);
	int err = rg->addr == (void *)-1 ? -errno : 0;

	shmctl(rg->shmid, IPC_RMID, NULL);
	return err;
}

static int region_memfd(struct region *rg)
{
	rg->memfd = memfd_create("bench_lmm", MFD_CLOEXEC);
	if (rg->memfd < 0)
		return -errno;
	if (ftruncate(rg->memfd, (off_t)rg->len) != 0)
		return -errno;
	rg->addr = mmap(NULL, rg->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			rg->memfd, 0);
	return rg->addr == MAP_FAILED ? -errno : 0;
}

/* Child: attach the segment itself, register all of it, report the result
 * and hold the registration until the parent closes the pipe. */
static void holder_child(int shmid, size_t len, int ready_fd, int release_fd)
{
	lmm_handle_t h;
	char byte;
	void *addr = shmat(shmid, NULL, 0);
	int rc = addr == (void *)-1 ? -errno : lmm_lock_area(addr, len, &h);

	if (write(ready_fd, &rc, sizeof(rc)) != (ssize_t)sizeof(rc))
		_exit(1);
	while (read(release_fd, &byte, 1) < 0 && errno == EINTR)
		;
	if (rc == 0)
		lmm_unlock_area(h);
	_exit(0);
}

static int holder_start(struct region *rg)
{
	int ready[2], release[2], rc = -EIO;

	if (pipe(ready) != 0 || pipe(release) != 0)
		return -errno;
	fflush(NULL); /* the child must not flush our stdio buffers again */
	rg->holder = fork();
	if (rg->holder < 0)
		return -errno;
	if (rg->holder == 0) {
		close(ready[0]);
		close(release[1]);
		holder_child(rg->shmid, lockable_prefix(rg->len), ready[1],
			     release[0]);
	}
	close(ready[1]);
	close(release[0]);
	rg->release_fd = release[1];
	if (read(ready[0], &rc, sizeof(rc)) != (ssize_t)sizeof(rc))
		rc = -EIO;
	close(ready[0]);
	return rc;
}

static void holder_stop(struct region *rg)
{
	if (rg->holder <= 0)
		return;
	close(rg->release_fd);
	waitpid(rg->holder, NULL, 0);
	rg->holder = 0;
}

static int region_open(struct region *rg, enum region_kind kind, size_t len)
{
	int rc;

	memset(rg, 0, sizeof(*rg));
	rg->kind = kind;
	rg->len = len;
	rg->memfd = -1;
	rg->shmid = -1;
	if (kind == REGION_PRIVATE || kind == REGION_PRIVATE_MONITORED)
		rc = region_private(rg);
	else if (kind == REGION_MEMFD)
		rc = region_memfd(rg);
	else
		rc = region_shm(rg);
	if (rc == 0)
		prefault(rg->addr, len);
	if (rc == 0 && kind == REGION_SHM_HELD)
		rc = holder_start(rg);
	return rc;
}

static void region_close(struct region *rg)
{
	holder_stop(rg);
	if (rg->kind == REGION_SHM_FIRST || rg->kind == REGION_SHM_HELD) {
		if (rg->addr && rg->addr != (void *)-1)
			shmdt(rg->addr);
	} else if (rg->addr && rg->addr != MAP_FAILED) {
		munmap(rg->addr, rg->len);
	}
	if (rg->memfd >= 0)
		close(rg->memfd);
}

/* ------------------------------------------------------------------ */
/* Section 1: timing one size                                          */

struct reg_result {
	bool measured;
	int error;          /* negative errno of the first failing call */
	double reg, dereg;  /* lmm_lock_area / lmm_unlock_area, ns */
	double mlock_ns, munlock_ns;
	double ratio;       /* median of per-run (lmm total / raw total) */
	double extra;       /* median of per-run (lmm total - raw total), ns */
	double pagemap, get_pages; /* translation of the whole range, ns */
};

static struct reg_result results[NR_REGION_KINDS][NR_SIZES];

/* The LMM paper, Tables 1 and 2: Pentium III 450 MHz, Linux 2.4.0, in us. */
static const double paper_table1[NR_SIZES][2] = {
	{ 6.9, 4.4 }, { 8.4, 4.7 }, { 10.8, 5.3 }, { 15.8, 6.7 },
	{ 25.5, 9.3 }, { 47.2, 14.8 }, { 87.8, 25.9 }, { 177, 49.5 },
	{ 340, 98.8 }, { 697, 205 }, { 1371, 409 }, { 2739, 814 },
	{ 5414, 1646 },
};

static const double paper_table2[NR_SIZES][2] = {
	{ 7.4, 4.5 }, { 8.8, 4.9 }, { 11.4, 7.5 }, { 16.4, 7.2 },
	{ 26.1, 9.8 }, { 49.5, 15.6 }, { 86.8, 26.5 }, { 167, 49.2 },
	{ 334, 101 }, { 668, 206 }, { 1373, 409 }, { 2841, 815 },
	{ 5507, 1650 },
};

/* Mean lock and unlock time over reps register/deregister cycles. */
static int time_lmm_cycles(char *addr, size_t len, int reps, double *lock_ns,
			   double *unlock_ns)
{
	uint64_t lock_total = 0, unlock_total = 0;

	for (int i = 0; i < reps; i++) {
		lmm_handle_t h;
		uint64_t t0 = now_ns();
		int rc = lmm_lock_area(addr, len, &h);
		uint64_t t1 = now_ns();

		if (rc != 0)
			return rc;
		rc = lmm_unlock_area(h);
		lock_total += t1 - t0;
		unlock_total += now_ns() - t1;
		if (rc != 0)
			return rc;
	}
	*lock_ns = per_call_ns(lock_total, reps);
	*unlock_ns = per_call_ns(unlock_total, reps);
	return 0;
}

/* The same with the bare system calls, the baseline the LMM adds to. */
static int time_raw_cycles(char *addr, size_t len, int reps, double *lock_ns,
			   double *unlock_ns)
{
	uint64_t lock_total = 0, unlock_total = 0;

	for (int i = 0; i < reps; i++) {
		uint64_t t0 = now_ns();
		int rc = mlock(addr, len);
		uint64_t t1 = now_ns();

		if (rc != 0)
			return -errno;
		rc = munlock(addr, len);
		lock_total += t1 - t0;
		unlock_total += now_ns() - t1;
		if (rc != 0)
			return -errno;
	}
	*lock_ns = per_call_ns(lock_total, reps);
	*unlock_ns = per_call_ns(unlock_total, reps);
	return 0;
}

struct cycle_samples {
	struct samples reg, dereg, mlk, munlk, ratio, extra;
};

/* One run of each kind; the order alternates so that neither side always
 * profits from a warm cache or suffers from a neighbour's burst. */
static int run_cycle_pair(char *addr, size_t len, int reps, int run,
			  struct cycle_samples *cs)
{
	double lr, lu, rr, ru;
	int rc;

	if (run % 2) {
		rc = time_raw_cycles(addr, len, reps, &rr, &ru);
		if (rc == 0)
			rc = time_lmm_cycles(addr, len, reps, &lr, &lu);
	} else {
		rc = time_lmm_cycles(addr, len, reps, &lr, &lu);
		if (rc == 0)
			rc = time_raw_cycles(addr, len, reps, &rr, &ru);
	}
	if (rc != 0)
		return rc;
	samples_add(&cs->reg, lr);
	samples_add(&cs->dereg, lu);
	samples_add(&cs->mlk, rr);
	samples_add(&cs->munlk, ru);
	samples_add(&cs->ratio, (lr + lu) / (rr + ru));
	samples_add(&cs->extra, (lr + lu) - (rr + ru));
	return 0;
}

static int time_pagemap(char *addr, size_t len, uint64_t *buf, int reps,
			double *ns)
{
	size_t bytes = len / page_size * sizeof(uint64_t);
	off_t off = (off_t)((uintptr_t)addr / page_size * sizeof(uint64_t));
	uint64_t t0 = now_ns();

	if (pagemap_fd < 0)
		return -ENOENT;
	for (int i = 0; i < reps; i++)
		if (pread(pagemap_fd, buf, bytes, off) != (ssize_t)bytes)
			return -EIO;
	*ns = (double)(now_ns() - t0) / reps;
	return 0;
}

static int time_get_pages(lmm_handle_t h, uint64_t *buf, size_t max, int reps,
			  double *ns)
{
	uint64_t t0 = now_ns();

	for (int i = 0; i < reps; i++) {
		size_t count;
		unsigned flags;
		int rc = lmm_get_pages(h, buf, max, &count, &flags);

		if (rc != 0)
			return rc;
	}
	*ns = (double)(now_ns() - t0) / reps;
	return 0;
}

/* Raw pagemap read vs lmm_get_pages for a registered range. */
static int measure_translation(char *addr, size_t len, struct reg_result *r)
{
	static uint64_t buf[MAX_SIZE / 4096]; /* pages are >= 4 KiB */
	struct samples pm = { 0 }, gp = { 0 };
	size_t max = len / page_size;
	int reps = reps_for(len) * 4, rc;
	lmm_handle_t h;
	double ns = NAN;

	rc = lmm_lock_area(addr, len, &h);
	if (rc != 0)
		return rc;
	for (int run = 0; rc == 0 && run < opt.runs; run++) {
		/* pagemap may be unreadable (no /proc): keep the lmm column */
		samples_add(&pm, time_pagemap(addr, len, buf, reps, &ns) == 0 ?
				 ns : NAN);
		rc = time_get_pages(h, buf, max, reps, &ns);
		samples_add(&gp, ns);
	}
	lmm_unlock_area(h);
	r->pagemap = samples_median(&pm);
	r->get_pages = samples_median(&gp);
	return rc;
}

static void measure_size(char *addr, size_t len, struct reg_result *r)
{
	struct cycle_samples cs = { 0 };
	int reps = reps_for(len);
	double a, b;

	r->error = time_lmm_cycles(addr, len, 1, &a, &b); /* warm-up */
	if (r->error == 0)
		r->error = time_raw_cycles(addr, len, 1, &a, &b);
	for (int run = 0; r->error == 0 && run < opt.runs; run++)
		r->error = run_cycle_pair(addr, len, reps, run, &cs);
	if (r->error == 0 && len / page_size <= MAX_SIZE / 4096)
		r->error = measure_translation(addr, len, r);
	r->measured = r->error == 0;
	r->reg = samples_median(&cs.reg);
	r->dereg = samples_median(&cs.dereg);
	r->mlock_ns = samples_median(&cs.mlk);
	r->munlock_ns = samples_median(&cs.munlk);
	r->ratio = samples_median(&cs.ratio);
	r->extra = samples_median(&cs.extra);
}

static void csv_reg_result(const char *cas, size_t len,
			   const struct reg_result *r)
{
	csv_row("register", cas, len, "lmm_register_ns", r->reg);
	csv_row("register", cas, len, "lmm_deregister_ns", r->dereg);
	csv_row("register", cas, len, "lmm_total_ns", r->reg + r->dereg);
	csv_row("register", cas, len, "raw_mlock_ns", r->mlock_ns);
	csv_row("register", cas, len, "raw_munlock_ns", r->munlock_ns);
	csv_row("register", cas, len, "raw_total_ns",
		r->mlock_ns + r->munlock_ns);
	csv_row("register", cas, len, "ratio_lmm_raw", r->ratio);
	csv_row("register", cas, len, "extra_ns", r->extra);
	csv_row("register", cas, len, "pagemap_pread_ns", r->pagemap);
	csv_row("register", cas, len, "lmm_get_pages_ns", r->get_pages);
}

static void print_reg_header(enum region_kind kind)
{
	bool paper = kind == REGION_SHM_FIRST || kind == REGION_SHM_HELD;

	printf("\n%s\n", case_titles[kind]);
	printf("%8s %9s %9s %9s %9s %9s %9s %6s %8s %9s %9s%s\n", "size",
	       "reg us", "dereg us", "mlock us", "munlck us", "lmm tot",
	       "raw tot", "ratio", "+us", "pagemap", "get_pgs",
	       paper ? "   paper reg/dereg us" : "");
}

static void print_reg_row(enum region_kind kind, int idx, size_t len,
			  const struct reg_result *r)
{
	char lbl[32];
	double lmm = (r->reg + r->dereg) / 1e3;
	double raw = (r->mlock_ns + r->munlock_ns) / 1e3;
	const double (*paper)[2] = kind == REGION_SHM_FIRST ? paper_table2 :
				   kind == REGION_SHM_HELD ? paper_table1 : NULL;

	printf("%8s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %6.2f %8.2f %9.2f %9.2f",
	       size_label(len, lbl, sizeof(lbl)), r->reg / 1e3, r->dereg / 1e3,
	       r->mlock_ns / 1e3, r->munlock_ns / 1e3, lmm, raw, r->ratio,
	       r->extra / 1e3, r->pagemap / 1e3, r->get_pages / 1e3);
	if (paper)
		printf("   %8.1f / %-7.1f", paper[idx][0], paper[idx][1]);
	putchar('\n');
}

static void print_reg_skip(size_t len, const char *why)
{
	char lbl[32];

	printf("%8s  skipped: %s\n", size_label(len, lbl, sizeof(lbl)), why);
}

/* The monitor starts with the first lmm_cache_get(); one round trip on a
 * scratch page is enough, and the flush leaves nothing cached behind. */
static int start_cache_monitor(void)
{
	char *page = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct lmm_cache_stats st;
	lmm_handle_t h;
	int rc = page == MAP_FAILED ? -errno : 0;

	if (rc == 0) {
		page[0] = 1;
		rc = lmm_cache_get(page, page_size, &h);
		if (rc == 0)
			rc = lmm_cache_put(h);
		lmm_cache_flush();
		munmap(page, page_size);
	}
	if (rc == 0)
		rc = lmm_cache_get_stats(&st);
	if (rc == 0 && st.monitor != LMM_CACHE_MONITOR_USERFAULTFD)
		rc = -ENOTSUP;
	return rc;
}

/* Every size from 4 KiB up, each a prefix of the case's 16 MiB region. */
static void run_sizes(enum region_kind kind, char *addr)
{
	for (int i = 0; i < NR_SIZES; i++) {
		size_t len = MIN_SIZE << i;
		struct reg_result *r = &results[kind][i];

		if (!lockable(len)) {
			print_reg_skip(len, "larger than RLIMIT_MEMLOCK and no "
				       "CAP_IPC_LOCK (raise ulimit -l or run as root)");
			continue;
		}
		measure_size(addr, len, r);
		if (!r->measured) {
			print_reg_skip(len, err_text(r->error));
			continue;
		}
		print_reg_row(kind, i, len, r);
		csv_reg_result(case_names[kind], len, r);
	}
}

static void run_case(enum region_kind kind)
{
	struct region rg;
	int rc = kind == REGION_PRIVATE_MONITORED ? start_cache_monitor() : 0;

	print_reg_header(kind);
	if (rc != 0) {
		printf("  case not measurable: the cache monitor did not start: "
		       "%s\n", err_text(rc));
		return;
	}
	rc = region_open(&rg, kind, MAX_SIZE);
	if (rc != 0)
		printf("  case not measurable: setting up the memory failed: %s\n",
		       err_text(rc));
	else
		run_sizes(kind, rg.addr);
	region_close(&rg);
}

/* The paper's figures go into the CSV too, so plot.py can draw them next
 * to this machine's without a second copy of the tables. */
static void csv_paper_tables(void)
{
	for (int i = 0; i < NR_SIZES; i++) {
		uint64_t len = (uint64_t)MIN_SIZE << i;

		csv_row("paper", "shm_registered", len, "lmm_register_ns",
			paper_table1[i][0] * 1e3);
		csv_row("paper", "shm_registered", len, "lmm_deregister_ns",
			paper_table1[i][1] * 1e3);
		csv_row("paper", "shm_first", len, "lmm_register_ns",
			paper_table2[i][0] * 1e3);
		csv_row("paper", "shm_first", len, "lmm_deregister_ns",
			paper_table2[i][1] * 1e3);
	}
}

/* The library's first calls allocate its tables, and the CPU may still be
 * clocking up: neither belongs in the 4 KiB figures of the first case. */
static void warm_up(void)
{
	char *page = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double a, b;

	if (page == MAP_FAILED)
		return;
	prefault(page, page_size);
	for (int i = 0; i < 20; i++) {
		(void)time_lmm_cycles(page, page_size, 100, &a, &b);
		(void)time_raw_cycles(page, page_size, 100, &a, &b);
	}
	munmap(page, page_size);
}

static void section_register(void)
{
	csv_paper_tables();
	warm_up();
	printf("\n[1] register (lmm_lock_area) + deregister (lmm_unlock_area) "
	       "vs raw mlock+munlock\n");
	puts("    times per call in us, medians over runs; ratio and +us are "
	     "the medians of the per-run (lmm total / raw total)\n    and "
	     "(lmm total - raw total), from interleaved runs;");
	puts("    pagemap = pread of /proc/self/pagemap for the range; get_pgs ="
	     " lmm_get_pages for the range");
	for (int k = 0; k < NR_REGION_KINDS; k++) {
		run_case((enum region_kind)k);
		fflush(stdout);
	}
}

/* ------------------------------------------------------------------ */
/* Section 2: pin-down cache                                           */

#define CACHE_SIZES 3
#define MISS_BUFFERS 64

static const size_t cache_sizes[CACHE_SIZES] = { 4 * KIB, 64 * KIB, MIB };

struct cache_result {
	bool measured;
	bool cached;  /* false: the cache served every get uncached */
	double pair_ns, get_ns, miss_ns;
};

static struct cache_result cache_results[CACHE_SIZES];

static char *map_prefaulted(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	prefault(p, len);
	return p;
}

static int time_hit_pairs(char *buf, size_t len, int reps, double *ns)
{
	uint64_t t0 = now_ns();

	for (int i = 0; i < reps; i++) {
		lmm_handle_t h;
		int rc = lmm_cache_get(buf, len, &h);

		if (rc != 0)
			return rc;
		rc = lmm_cache_put(h);
		if (rc != 0)
			return rc;
	}
	*ns = (double)(now_ns() - t0) / reps;
	return 0;
}

/* Gets alone: reps nested uses of the cached entry, returned afterwards. */
static int time_hit_gets(char *buf, size_t len, lmm_handle_t *handles,
			 int reps, double *ns)
{
	int rc = 0, got = 0;
	uint64_t t0 = now_ns();

	for (; got < reps && rc == 0; got += rc == 0)
		rc = lmm_cache_get(buf, len, &handles[got]);
	*ns = (double)(now_ns() - t0) / reps;
	for (int i = 0; i < got; i++)
		lmm_cache_put(handles[i]);
	return rc;
}

/* First gets of MISS_BUFFERS distinct buffers (a guard page apart so no
 * entry can cover its neighbour), then everything is flushed again. */
static int time_misses(char *pool, size_t len, double *ns)
{
	lmm_handle_t h[MISS_BUFFERS];
	int rc = 0, got = 0;
	uint64_t total = 0;

	for (; got < MISS_BUFFERS && rc == 0; got += rc == 0) {
		uint64_t t0 = now_ns();

		rc = lmm_cache_get(pool + (size_t)got * (len + page_size), len,
				   &h[got]);
		total += now_ns() - t0;
	}
	for (int i = 0; i < got; i++)
		lmm_cache_put(h[i]);
	lmm_cache_flush();
	*ns = per_call_ns(total, MISS_BUFFERS);
	return rc;
}

static int measure_cache_hits(size_t len, struct cache_result *cr)
{
	struct samples pair = { 0 }, get = { 0 };
	int reps = opt.small_reps, rc;
	lmm_handle_t *handles = calloc((size_t)reps, sizeof(*handles));
	char *buf = map_prefaulted(len);
	double ns = NAN;

	rc = !buf || !handles ? -ENOMEM : time_hit_pairs(buf, len, 1, &ns);
	for (int run = 0; rc == 0 && run < opt.runs; run++) {
		rc = time_hit_pairs(buf, len, reps, &ns);
		samples_add(&pair, ns);
		if (rc == 0)
			rc = time_hit_gets(buf, len, handles, reps, &ns);
		samples_add(&get, ns);
	}
	lmm_cache_flush();
	if (buf)
		munmap(buf, len);
	free(handles);
	cr->pair_ns = samples_median(&pair);
	cr->get_ns = samples_median(&get);
	return rc;
}

/* Hits, and whether they were hits: an entry larger than the cache's byte
 * budget (half of RLIMIT_MEMLOCK by default) is registered per call. */
static int measure_cache_hits_checked(size_t len, struct cache_result *cr)
{
	struct lmm_cache_stats before, after;
	int rc = lmm_cache_get_stats(&before);

	if (rc == 0)
		rc = measure_cache_hits(len, cr);
	if (rc == 0)
		rc = lmm_cache_get_stats(&after);
	cr->cached = rc == 0 && after.uncacheable == before.uncacheable &&
		     after.monitor == LMM_CACHE_MONITOR_USERFAULTFD;
	return rc;
}

static int measure_cache_misses(size_t len, struct cache_result *cr)
{
	size_t pool_len = MISS_BUFFERS * (len + page_size);
	char *pool = map_prefaulted(pool_len);
	struct samples miss = { 0 };
	int rc = pool ? 0 : -ENOMEM;
	double ns = NAN;

	for (int run = 0; rc == 0 && run < opt.runs; run++) {
		rc = time_misses(pool, len, &ns);
		samples_add(&miss, ns);
	}
	if (pool)
		munmap(pool, pool_len);
	cr->miss_ns = samples_median(&miss);
	return rc;
}

static const char *monitor_name(int monitor)
{
	switch (monitor) {
	case LMM_CACHE_MONITOR_USERFAULTFD:
		return "userfaultfd (cache active)";
	case LMM_CACHE_MONITOR_UNAVAILABLE:
		return "unavailable (per-call registration: hits are not hits)";
	case LMM_CACHE_MONITOR_NONE:
		return "none (not started)";
	default:
		return "unknown";
	}
}

static void print_cache_stats(const struct lmm_cache_stats *before)
{
	struct lmm_cache_stats after;

	if (lmm_cache_get_stats(&after) != 0) {
		puts("  lmm_cache_get_stats failed");
		return;
	}
	printf("  cache counters during this section: %" PRIu64 " hits, %" PRIu64
	       " misses, %" PRIu64 " uncacheable, %" PRIu64
	       " evictions (lmm_cache_flush included)\n",
	       after.hits - before->hits, after.misses - before->misses,
	       after.uncacheable - before->uncacheable,
	       after.evictions - before->evictions);
	printf("  monitor: %s\n", monitor_name(after.monitor));
	csv_row("cache", "stats", 0, "monitor", after.monitor);
}

static void print_cache_row(size_t len, const struct cache_result *cr,
			    const struct reg_result *uncached)
{
	char lbl[32];

	printf("%8s %14.1f %12.1f", size_label(len, lbl, sizeof(lbl)),
	       cr->pair_ns, cr->get_ns);
	if (isnan(cr->miss_ns))
		printf(" %12s", "memlock");
	else
		printf(" %12.2f", cr->miss_ns / 1e3);
	printf(" %14.2f", uncached && uncached->measured ?
	       (uncached->reg + uncached->dereg) / 1e3 : NAN);
	if (!cr->cached)
		printf("  <- served uncached (over the cache's budget, or no "
		       "monitor): not hits");
	putchar('\n');
	csv_row("cache", "hit", len, "get_put_pair_ns", cr->pair_ns);
	csv_row("cache", "hit", len, "get_ns", cr->get_ns);
	if (!isnan(cr->miss_ns))
		csv_row("cache", "miss", len, "first_get_ns", cr->miss_ns);
}

/* Uncached registration of the same size, measured while the monitor ran
 * (as it does whenever the cache is in use). */
static const struct reg_result *uncached_result(size_t len)
{
	for (int i = 0; i < NR_SIZES; i++)
		if ((MIN_SIZE << i) == len)
			return &results[REGION_PRIVATE_MONITORED][i];
	return NULL;
}

static void measure_cache_size(size_t len, struct cache_result *cr)
{
	int rc;

	if (!lockable(len)) {
		print_reg_skip(len, "exceeds RLIMIT_MEMLOCK");
		return;
	}
	cr->miss_ns = NAN; /* unless its MISS_BUFFERS buffers fit too */
	rc = measure_cache_hits_checked(len, cr);
	if (rc == 0 && lockable(MISS_BUFFERS * len))
		rc = measure_cache_misses(len, cr);
	cr->measured = rc == 0;
	if (rc != 0)
		print_reg_skip(len, err_text(rc));
	else
		print_cache_row(len, cr, uncached_result(len));
}

static void section_cache(void)
{
	struct lmm_cache_stats before = { 0 };

	printf("\n[2] pin-down cache: hit = lmm_cache_get+lmm_cache_put on a "
	       "cached buffer; miss = first get of a fresh buffer\n");
	lmm_cache_get_stats(&before);
	/* Room for every miss buffer, so a miss is not a miss plus the
	 * eviction of an older entry (only where locking is not limited). */
	if (can_lock_unlimited)
		lmm_cache_set_limits(0, 2 * MISS_BUFFERS * cache_sizes[CACHE_SIZES - 1]);
	printf("%8s %14s %12s %12s %14s\n", "size", "hit get+put ns",
	       "hit get ns", "miss get us", "uncached l+u us");
	for (int i = 0; i < CACHE_SIZES; i++)
		measure_cache_size(cache_sizes[i], &cache_results[i]);
	print_cache_stats(&before);
	lmm_cache_set_limits(before.max_entries, before.max_bytes);
}

/* ------------------------------------------------------------------ */
/* Section 3: unlock cost vs number of overlapping registrations       */

#define NR_OVERLAP 5

static const int overlap_counts[NR_OVERLAP] = { 1, 10, 100, 1000, 10000 };

enum overlap_layout { NESTED, IDENTICAL, NR_LAYOUTS };

#define IDENTICAL_PAGES 16

struct overlap_result {
	bool measured;
	double build_ns, teardown_ns; /* per registration */
	double pair_ns;               /* unlock + relock, batched loop */
	double unlock_ns, relock_ns;  /* the same split, timed per call */
	uint64_t areas;
};

static struct overlap_result overlap_results[NR_LAYOUTS][NR_OVERLAP];

static const char *const layout_names[NR_LAYOUTS] = { "nested", "identical" };

/* Registration i of n: nested ones are [i, 2n-i) pages, so every inner one
 * lies inside all outer ones; identical ones all cover the same pages. */
static void overlap_range(char *base, enum overlap_layout layout, int n, int i,
			  char **start, size_t *len)
{
	if (layout == IDENTICAL) {
		*start = base;
		*len = IDENTICAL_PAGES * page_size;
		return;
	}
	*start = base + (size_t)i * page_size;
	*len = (size_t)(2 * n - 2 * i) * page_size;
}

static size_t overlap_bytes(enum overlap_layout layout, int n)
{
	return layout == IDENTICAL ? IDENTICAL_PAGES * page_size
				   : (size_t)2 * (size_t)n * page_size;
}

static int build_overlaps(char *base, enum overlap_layout layout, int n,
			  lmm_handle_t *h, double *ns)
{
	uint64_t t0 = now_ns();

	for (int i = 0; i < n; i++) {
		char *start;
		size_t len;
		int rc;

		overlap_range(base, layout, n, i, &start, &len);
		rc = lmm_lock_area(start, len, &h[i]);
		if (rc != 0) {
			while (i-- > 0)
				lmm_unlock_area(h[i]);
			return rc;
		}
	}
	*ns = (double)(now_ns() - t0) / n;
	return 0;
}

static void teardown_overlaps(lmm_handle_t *h, int n, double *ns)
{
	uint64_t t0 = now_ns();

	for (int i = 0; i < n; i++)
		lmm_unlock_area(h[i]);
	*ns = (double)(now_ns() - t0) / n;
}

/* Unlock registration `victim` and lock the same range again, reps times. */
static int time_unlock_relock(char *start, size_t len, lmm_handle_t *victim,
			      int reps, double *unlock_ns, double *relock_ns)
{
	uint64_t unlock_total = 0, relock_total = 0;

	for (int i = 0; i < reps; i++) {
		uint64_t t0 = now_ns();
		int rc = lmm_unlock_area(*victim);
		uint64_t t1 = now_ns();

		if (rc != 0)
			return rc;
		rc = lmm_lock_area(start, len, victim);
		relock_total += now_ns() - t1;
		unlock_total += t1 - t0;
		if (rc != 0)
			return rc;
	}
	*unlock_ns = per_call_ns(unlock_total, reps);
	*relock_ns = per_call_ns(relock_total, reps);
	return 0;
}

/* The same cycle without clock reads inside the loop: the figure that the
 * O(log N) target is judged on, free of timer overhead. */
static int time_unlock_relock_pairs(char *start, size_t len,
				    lmm_handle_t *victim, int reps, double *ns)
{
	uint64_t t0 = now_ns();

	for (int i = 0; i < reps; i++) {
		int rc = lmm_unlock_area(*victim);

		if (rc == 0)
			rc = lmm_lock_area(start, len, victim);
		if (rc != 0)
			return rc;
	}
	*ns = (double)(now_ns() - t0) / reps;
	return 0;
}

/* The victim is the middle registration: its pages stay covered by the
 * outer ones, so the time is the LMM's bookkeeping, not mlock's. */
static int measure_overlap_ops(char *base, enum overlap_layout layout, int n,
			       lmm_handle_t *h, struct overlap_result *r)
{
	struct samples un = { 0 }, re = { 0 }, pair = { 0 };
	int victim = n / 2, reps = opt.small_reps / 4 + 1, rc = 0;
	char *start;
	size_t len;

	overlap_range(base, layout, n, victim, &start, &len);
	for (int run = 0; rc == 0 && run < opt.runs; run++) {
		double u = NAN, l = NAN, p = NAN;

		rc = time_unlock_relock_pairs(start, len, &h[victim], reps, &p);
		if (rc == 0)
			rc = time_unlock_relock(start, len, &h[victim], reps,
						&u, &l);
		samples_add(&pair, p);
		samples_add(&un, u);
		samples_add(&re, l);
	}
	r->pair_ns = samples_median(&pair);
	r->unlock_ns = samples_median(&un);
	r->relock_ns = samples_median(&re);
	return rc;
}

/* Build, measure and tear down the registrations over a mapped buffer. */
static int overlap_on(char *base, enum overlap_layout layout, int n,
		      lmm_handle_t *h, struct overlap_result *r)
{
	struct lmm_stats st;
	int rc = build_overlaps(base, layout, n, h, &r->build_ns);

	if (rc != 0)
		return rc;
	lmm_get_stats(&st);
	r->areas = st.areas;
	rc = measure_overlap_ops(base, layout, n, h, r);
	teardown_overlaps(h, n, &r->teardown_ns);
	return rc;
}

static int measure_overlap(enum overlap_layout layout, int n,
			   struct overlap_result *r)
{
	size_t bytes = overlap_bytes(layout, n);
	lmm_handle_t *h = calloc((size_t)n, sizeof(*h)), anchor;
	char *base = map_prefaulted(bytes);
	int rc = !h || !base ? -ENOMEM : 0;

	/* The anchor covers the whole buffer, so no page's count ever drops
	 * to zero below: no mlock/munlock, only the LMM's bookkeeping. */
	if (rc == 0)
		rc = lmm_lock_area(base, bytes, &anchor);
	if (rc == 0) {
		rc = overlap_on(base, layout, n, h, r);
		lmm_unlock_area(anchor);
	}
	if (base)
		munmap(base, bytes);
	free(h);
	return rc;
}

static void print_overlap_row(enum overlap_layout layout, int n,
			      const struct overlap_result *r)
{
	uint64_t expect = layout == NESTED ? (uint64_t)(2 * n - 1) : 1;

	printf("%-10s %6d %12.1f %13.1f %10.1f %10.1f %13.1f %8" PRIu64
	       " (%" PRIu64 ")%s\n", layout_names[layout], n, r->build_ns,
	       r->pair_ns, r->unlock_ns, r->relock_ns, r->teardown_ns, r->areas,
	       expect, r->areas == expect ? "" : "  <- unexpected LMA count");
	csv_row("overlap", layout_names[layout], (uint64_t)n,
		"unlock_relock_pair_ns", r->pair_ns);
	csv_row("overlap", layout_names[layout], (uint64_t)n, "unlock_ns",
		r->unlock_ns);
	csv_row("overlap", layout_names[layout], (uint64_t)n, "relock_ns",
		r->relock_ns);
	csv_row("overlap", layout_names[layout], (uint64_t)n,
		"build_ns_per_reg", r->build_ns);
	csv_row("overlap", layout_names[layout], (uint64_t)n,
		"teardown_ns_per_reg", r->teardown_ns);
	csv_row("overlap", layout_names[layout], (uint64_t)n, "areas",
		(double)r->areas);
}

static void run_overlap(enum overlap_layout layout, int n,
			struct overlap_result *r)
{
	int rc;

	if (!lockable(overlap_bytes(layout, n))) {
		printf("%-10s %6d  skipped: exceeds RLIMIT_MEMLOCK\n",
		       layout_names[layout], n);
		return;
	}
	rc = measure_overlap(layout, n, r);
	r->measured = rc == 0;
	if (rc != 0)
		printf("%-10s %6d  failed: %s\n", layout_names[layout], n,
		       err_text(rc));
	else
		print_overlap_row(layout, n, r);
}

static void section_overlap(void)
{
	printf("\n[3] unlock+relock the middle one of N overlapping registrations"
	       " (nested: [base+i*page, base+(2N-i)*page);\n    identical: N x "
	       "%d pages), plus one anchor over the buffer so no mlock/munlock "
	       "happens\n", IDENTICAL_PAGES);
	printf("%-10s %6s %12s %13s %10s %10s %13s %8s\n", "layout", "N",
	       "build ns/reg", "unlk+relck ns", "unlock ns", "relock ns",
	       "teardown ns/r", "LMAs (expected)");
	for (int l = 0; l < NR_LAYOUTS; l++)
		for (int i = 0; i < NR_OVERLAP; i++)
			run_overlap((enum overlap_layout)l, overlap_counts[i],
				    &overlap_results[l][i]);
}

/* ------------------------------------------------------------------ */
/* Section 4: physical contiguity of a user buffer (the SCI paper, III.A)   */

struct contiguity {
	size_t pages, contiguous_pairs, blocks, mismatches;
	unsigned flags;
};

/* Our own pagemap read, to cross-check what lmm_get_pages returned. */
static size_t count_pagemap_mismatches(char *addr, const uint64_t *pages,
				       size_t n)
{
	uint64_t *raw = calloc(n, sizeof(*raw));
	off_t off = (off_t)((uintptr_t)addr / page_size * sizeof(uint64_t));
	size_t bad = 0;

	if (!raw || pread(pagemap_fd, raw, n * sizeof(*raw), off) !=
		    (ssize_t)(n * sizeof(*raw))) {
		free(raw);
		return SIZE_MAX;
	}
	for (size_t i = 0; i < n; i++)
		bad += (raw[i] & PAGEMAP_PFN_MASK) * page_size != pages[i];
	free(raw);
	return bad;
}

static int contiguity_of(lmm_handle_t h, char *addr, struct contiguity *c)
{
	uint64_t *pages = calloc(CONTIG_PAGES + 1, sizeof(*pages));
	int rc = pages ? 0 : -ENOMEM;

	if (rc == 0)
		rc = lmm_get_pages(h, pages, CONTIG_PAGES + 1, &c->pages,
				   &c->flags);
	if (rc == 0)
		rc = lmm_get_blocks(h, NULL, 0, &c->blocks, NULL);
	for (size_t i = 1; rc == 0 && i < c->pages; i++)
		c->contiguous_pairs += pages[i] == pages[i - 1] + page_size;
	if (rc == 0 && !(c->flags & LMM_PAGES_VIRTUAL))
		c->mismatches = count_pagemap_mismatches(addr, pages, c->pages);
	free(pages);
	return rc;
}

static double contiguous_share(const struct contiguity *c)
{
	if (c->pages < 2)
		return 0;
	return 100.0 * (double)c->contiguous_pairs / (double)(c->pages - 1);
}

static void print_contiguity(int idx, const struct contiguity *c)
{
	char cas[32];

	printf("  buffer %d: %5zu pages, %5zu of %5zu neighbour pairs contiguous "
	       "(%6.2f%%), %5zu blocks", idx + 1, c->pages, c->contiguous_pairs,
	       c->pages - 1, contiguous_share(c), c->blocks);
	if (c->mismatches == SIZE_MAX)
		printf(", pagemap cross-check unavailable");
	else if (c->mismatches)
		printf(", %zu pages DIFFER from /proc/self/pagemap", c->mismatches);
	else
		printf(", matches /proc/self/pagemap");
	putchar('\n');
	snprintf(cas, sizeof(cas), "buffer%d", idx + 1);
	csv_row("contiguity", cas, CONTIG_PAGES, "contiguous_share_pct",
		contiguous_share(c));
	csv_row("contiguity", cas, CONTIG_PAGES, "blocks", (double)c->blocks);
}

/* A fresh page-aligned heap buffer kept off transparent huge pages, so the
 * statistic is about base pages as in the paper (Linux 2.4 had no THP). */
static int measure_contiguity(char *buf, struct contiguity *c)
{
	size_t len = (size_t)CONTIG_PAGES * page_size;
	lmm_handle_t h;
	int rc;

	madvise(buf, len, MADV_NOHUGEPAGE);
	prefault(buf, len);
	rc = lmm_lock_area(buf, len, &h);
	if (rc != 0)
		return rc;
	rc = contiguity_of(h, buf, c);
	lmm_unlock_area(h);
	return rc;
}

static void print_contiguity_summary(const struct contiguity *c, int n)
{
	struct samples share = { 0 };
	double lo = INFINITY, hi = 0;

	for (int i = 0; i < n; i++) {
		double x = contiguous_share(&c[i]);

		samples_add(&share, x);
		lo = fmin(lo, x);
		hi = fmax(hi, x);
	}
	printf("  median %.2f%% contiguous (min %.2f%%, max %.2f%%) over %d "
	       "buffers; the SCI paper saw < 1%% on Linux 2.4\n",
	       samples_median(&share), lo, hi, n);
	csv_row("contiguity", "median", CONTIG_PAGES, "contiguous_share_pct",
		samples_median(&share));
}

static void print_not_measurable(int rc, const struct contiguity *c)
{
	if (!lockable((size_t)CONTIG_PAGES * page_size))
		puts("  not measurable: the buffer exceeds RLIMIT_MEMLOCK and there"
		     " is no CAP_IPC_LOCK");
	else if (rc != 0)
		printf("  not measurable: %s\n", err_text(rc));
	else if (c->flags & LMM_PAGES_VIRTUAL)
		puts("  not measurable: lmm_get_pages returned virtual addresses"
		     " (LMM_PAGES_VIRTUAL): the kernel hides\n  physical frame "
		     "numbers in /proc/self/pagemap from processes without "
		     "CAP_SYS_ADMIN; run as root");
}

#define CONTIG_BUFFERS 5

static void section_contiguity(void)
{
	size_t len = (size_t)CONTIG_PAGES * page_size;
	char *bufs[CONTIG_BUFFERS] = { 0 };
	struct contiguity c[CONTIG_BUFFERS] = { 0 };
	int rc = lockable(len) ? 0 : -ENOMEM, done = 0;

	printf("\n[4] physically contiguous neighbouring pages in %d-page malloc'd"
	       " buffers (MADV_NOHUGEPAGE; the SCI paper, III.A)\n", CONTIG_PAGES);
	/* All buffers stay allocated until the end, so that none recycles
	 * another's pages through malloc's free lists. */
	for (; rc == 0 && done < CONTIG_BUFFERS; done++) {
		bufs[done] = aligned_alloc(page_size, len);
		rc = bufs[done] ? measure_contiguity(bufs[done], &c[done])
				: -ENOMEM;
		if (rc != 0 || (c[done].flags & LMM_PAGES_VIRTUAL))
			break;
		print_contiguity(done, &c[done]);
	}
	if (done == CONTIG_BUFFERS)
		print_contiguity_summary(c, done);
	else
		print_not_measurable(rc, &c[done < CONTIG_BUFFERS ? done : 0]);
	for (int i = 0; i < CONTIG_BUFFERS; i++)
		free(bufs[i]);
}

/* ------------------------------------------------------------------ */
/* Targets                                                             */

/* One line of the targets table; value NULL: not measured here (skipped
 * for RLIMIT_MEMLOCK or failed, see above), which is neither met nor not. */
static void print_target(const char *what, const char *value,
			 const char *target, bool met)
{
	printf("  %-46s %-26s %-14s %s\n", what, value ? value : "not measured",
	       target, !value ? "n/a" : met ? "met" : "NOT met");
}

/* lmm register+deregister <= 1.2x raw for every size >= 64 KiB. */
static void target_ratio(enum region_kind kind)
{
	double worst = 0;
	size_t worst_len = 0;
	char val[32];

	for (int i = 0; i < NR_SIZES; i++) {
		const struct reg_result *r = &results[kind][i];

		if ((MIN_SIZE << i) < 64 * KIB || !r->measured)
			continue;
		if (r->ratio > worst) {
			worst = r->ratio;
			worst_len = MIN_SIZE << i;
		}
	}
	snprintf(val, sizeof(val), "worst %.2fx @ ", worst);
	size_label(worst_len, val + strlen(val), sizeof(val) - strlen(val));
	print_target(case_names[kind], worst_len ? val : NULL, "<= 1.20x",
		     worst <= 1.2);
	if (worst_len)
		csv_row("targets", case_names[kind], worst_len,
			"worst_ratio_ge64k", worst);
}

/* At 4 KiB, at most 2 us above raw mlock+munlock. */
static void target_small(enum region_kind kind)
{
	const struct reg_result *r = &results[kind][0];
	double extra = r->extra / 1e3;
	char val[32];

	snprintf(val, sizeof(val), "%+.2f us", extra);
	print_target(case_names[kind], r->measured ? val : NULL, "<= +2.00 us",
		     extra <= 2.0);
	if (r->measured)
		csv_row("targets", case_names[kind], MIN_SIZE, "extra_us_4k",
			extra);
}

/* Worst hit cost over the sizes that were really cached; a size served
 * uncached (over budget, no monitor) has no hits to judge. */
static void target_cache(void)
{
	double worst_pair = 0, worst_get = 0;
	bool any = false;
	char pair[32], get[32];

	for (int i = 0; i < CACHE_SIZES; i++) {
		if (!cache_results[i].measured || !cache_results[i].cached)
			continue;
		any = true;
		worst_pair = fmax(worst_pair, cache_results[i].pair_ns);
		worst_get = fmax(worst_get, cache_results[i].get_ns);
	}
	snprintf(pair, sizeof(pair), "%.1f ns", worst_pair);
	snprintf(get, sizeof(get), "%.1f ns", worst_get);
	print_target("cache hit, get+put pair (worst cached size)",
		     any ? pair : NULL, "<= 100 ns", worst_pair <= 100);
	print_target("cache hit, get alone (worst cached size)",
		     any ? get : NULL, "<= 100 ns", worst_get <= 100);
}

/* Growth of the unlock+relock time between two entries of overlap_counts.
 * A balanced tree costs a + b*log(N); cache misses in a growing tree add
 * to that, so the judgement spans three decades rather than one. */
static double overlap_growth(enum overlap_layout layout, int from, int to)
{
	const struct overlap_result *a = &overlap_results[layout][from];
	const struct overlap_result *b = &overlap_results[layout][to];

	if (!a->measured || !b->measured)
		return NAN;
	return b->pair_ns / a->pair_ns;
}

/* From N=10 to N=10000: pure O(log N) gives log(2e4)/log(20) = 3.3x,
 * O(sqrt N) 32x, O(N) 1000x; the bound is 10x. */
static void target_overlap(enum overlap_layout layout)
{
	double total = overlap_growth(layout, 1, NR_OVERLAP - 1);
	char label[64], val[64];

	snprintf(label, sizeof(label), "unlock+relock 1 of N, %s",
		 layout_names[layout]);
	snprintf(val, sizeof(val), "x%.1f (x%.2f x%.2f x%.2f)", total,
		 overlap_growth(layout, 1, 2), overlap_growth(layout, 2, 3),
		 overlap_growth(layout, 3, 4));
	print_target(label, isnan(total) ? NULL : val, "<= x10", total <= 10);
	if (!isnan(total))
		csv_row("targets", layout_names[layout], 10000,
			"unlock_relock_growth_10_to_10000", total);
}

static void section_targets(void)
{
	printf("\n[targets] measured vs target (medians of %d runs; noisy shared"
	       " machine)\n", opt.runs);
	printf("  %-46s %-26s %-14s %s\n", "what", "measured", "target", "verdict");
	puts("  lmm register+deregister / raw mlock+munlock, sizes >= 64 KiB:");
	for (int k = 0; k < NR_REGION_KINDS; k++)
		target_ratio((enum region_kind)k);
	puts("  lmm register+deregister - raw, at 4 KiB:");
	for (int k = 0; k < NR_REGION_KINDS; k++)
		target_small((enum region_kind)k);
	target_cache();
	puts("  unlock+relock growth from N=10 to N=10000 (per decade in "
	     "brackets; O(log N) ~x3.3, O(sqrt N) x32, O(N) x1000):");
	target_overlap(NESTED);
	target_overlap(IDENTICAL);
}

/* ------------------------------------------------------------------ */
/* Main                                                                */

static void usage(FILE *out, const char *prog)
{
	fprintf(out, "usage: %s [--csv FILE] [--quick]\n"
		"  --csv FILE  write every measurement as CSV "
		"(section,case,x,metric,value)\n"
		"  --quick     fewer repetitions (smoke run, well under a minute)\n",
		prog);
}

static int parse_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!common_option(argc, argv, &i, &opt.csv_path, &opt.quick, usage)) {
			usage(stderr, argv[0]);
			return -1;
		}
	}
	return 0;
}

static void set_repetitions(void)
{
	opt.runs = opt.quick ? 5 : 11;
	opt.bytes_per_run = opt.quick ? 16 * MIB : 256 * MIB;
	opt.min_reps = opt.quick ? 3 : 10;
	opt.max_reps = opt.quick ? 200 : 2000;
	opt.small_reps = opt.quick ? 5000 : 50000;
}

int main(int argc, char **argv)
{
	if (parse_args(argc, argv) != 0)
		return 2;
	set_repetitions();
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	if (csv_open("bench_lmm", opt.csv_path) != 0)
		return 1;
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	/* The holder child inherits this: if we die first, its report on the
	 * pipe fails with EPIPE instead of killing it silently. */
	signal(SIGPIPE, SIG_IGN);
	print_context();
	section_register();
	section_cache();
	section_overlap();
	section_contiguity();
	section_targets();
	lmm_cleanup();
	return csv_close("bench_lmm") == 0 ? 0 : 1;
}
