// SPDX-License-Identifier: MIT
/*
 * limits.c -- what the machine allows before any VIPL code runs: the
 * busy-poll ping-pong on one shared cache line (the floor for a half
 * round trip between two processes), raw process_vm_writev from one
 * process into another's buffer (the floor for the "DMA" path), and
 * memcpy inside one process.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bench_vipl.h"

#define SPINS_PER_CHECK (1u << 16)
#define MAX_LIMIT_SIZE (16 * MIB)
#define MIN_REPS 8

/* ---- busy-poll ping-pong ---------------------------------------------------- */

/* Spin until sh->ping holds `want`.  No pause instruction: this is the
 * floor, the fastest two processes can hand a cache line back and forth. */
static bool spin_for(uint64_t want)
{
	for (unsigned n = 1;; n++) {
		/* Acquire: pairs with the other side's release store below. */
		if (atomic_load_explicit(&sh->ping, memory_order_acquire) == want)
			return true;
		if (n % SPINS_PER_CHECK == 0 && should_stop())
			return false;
	}
}

double busy_ping(enum role role, uint64_t *seq, int iters)
{
	uint64_t t0 = now_ns();

	for (int i = 0; i < iters; i++) {
		if (role == ROLE_CLIENT) {
			/* Release: pairs with the acquire in spin_for(). */
			atomic_store_explicit(&sh->ping, *seq + 1,
					      memory_order_release);
			if (!spin_for(*seq + 2))
				return NAN;
		} else {
			if (!spin_for(*seq + 1))
				return NAN;
			/* Release: pairs with the client's spin_for(). */
			atomic_store_explicit(&sh->ping, *seq + 2,
					      memory_order_release);
		}
		*seq += 2;
	}
	if (role == ROLE_SERVER)
		return 0;
	return (double)(now_ns() - t0) / iters / 2;
}

struct floor_out {
	struct samples half_ns;
};

static int floor_side(enum role role)
{
	struct floor_out *out = (struct floor_out *)sh->result;
	int iters = opt.lat_iters * 4; /* cheap: run longer than a VIPL run */
	uint64_t seq = 0;

	busy_ping(role, &seq, iters / 4); /* warm-up */
	for (int run = 0; run < opt.runs; run++) {
		double half = busy_ping(role, &seq, iters);

		if (isnan(half))
			return -1;
		if (role == ROLE_CLIENT)
			samples_add(&out->half_ns, half);
	}
	return 0;
}

static int floor_server(void *arg)
{
	(void)arg;
	return floor_side(ROLE_SERVER);
}

static int floor_client(void *arg)
{
	(void)arg;
	return floor_side(ROLE_CLIENT);
}

static void limit_floor(void)
{
	struct floor_out *out = (struct floor_out *)sh->result;

	memset(out, 0, sizeof(*out));
	res.floor_ns = NAN;
	puts("\n[1a] busy-poll ping-pong on one shared cache line (MAP_SHARED, "
	     "atomic store / spin on load)");
	if (pair_run(floor_server, floor_client, NULL, 120) != 0)
		return;
	res.floor_ns = samples_median(&out->half_ns);
	printf("  half round trip: %.1f ns  (median of %d runs of %d round "
	       "trips; min %.1f)\n", res.floor_ns, out->half_ns.n,
	       opt.lat_iters * 4, samples_min(&out->half_ns));
	csv_row("limits", "busy_poll", 0, "half_rtt_ns", res.floor_ns);
}

/* ---- bandwidth of process_vm_writev and memcpy ----------------------------- */

static char *target;            /* the parent's buffer, mapped before fork */

static char *map_prefaulted(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0x5a, len);
	return p;
}

static int reps_for(size_t size)
{
	size_t reps = opt.bw_bytes / size;

	return reps < MIN_REPS ? MIN_REPS : (int)reps;
}

struct bw_samples {
	struct samples mbs[MAX_SIZES];
	char err[128];
};

/* One run: `reps` writes of `size` bytes into the parent's buffer. */
static int pvw_run(char *src, size_t size, double *mbs)
{
	pid_t parent = getppid();
	int reps = reps_for(size);
	uint64_t t0 = now_ns();

	for (int i = 0; i < reps; i++) {
		struct iovec l = { src, size }, r = { target, size };
		ssize_t n = process_vm_writev(parent, &l, 1, &r, 1, 0);

		if (n != (ssize_t)size)
			return n < 0 ? -errno : -EIO;
	}
	*mbs = (double)size * reps / (double)(now_ns() - t0) * 1e3;
	return 0;
}

static int pvw_client(void *arg)
{
	struct bw_samples *out = (struct bw_samples *)sh->result;
	char *src = map_prefaulted(MAX_LIMIT_SIZE);
	double mbs = 0;

	(void)arg;
	if (!src)
		return fail("out of memory");
	for (int s = 0; s < nr_sizes; s++) {
		for (int run = 0; run < opt.bw_runs; run++) {
			int rc = pvw_run(src, sizes[s], &mbs);

			if (rc != 0)
				return fail("process_vm_writev: %s", strerror(-rc));
			samples_add(&out->mbs[s], mbs);
		}
	}
	return 0;
}

/* The target only has to exist: the writer does all the work. */
static int pvw_server(void *arg)
{
	(void)arg;
	return 0;
}

static double memcpy_run(char *dst, const char *src, size_t size)
{
	int reps = reps_for(size);
	uint64_t t0 = now_ns();

	for (int i = 0; i < reps; i++) {
		memcpy(dst, src, size);
		/* The copy must happen although nothing reads dst. */
		__asm__ volatile("" : : "r"(dst) : "memory");
	}
	return (double)size * reps / (double)(now_ns() - t0) * 1e3;
}

static void measure_memcpy(char *src)
{
	for (int s = 0; s < nr_sizes; s++) {
		struct samples m = { 0 };

		for (int run = 0; run < opt.bw_runs; run++)
			samples_add(&m, memcpy_run(target, src, sizes[s]));
		res.memcpy_mbs[s] = samples_median(&m);
	}
}

static void print_bw_limits(bool pvw_ok)
{
	char label[32];

	printf("  %-10s %16s %16s\n", "size", "pvw MB/s", "memcpy MB/s");
	for (int s = 0; s < nr_sizes; s++) {
		size_label(sizes[s], label, sizeof(label));
		printf("  %-10s %16.0f %16.0f\n", label,
		       pvw_ok ? res.pvw_mbs[s] : NAN, res.memcpy_mbs[s]);
		if (pvw_ok)
			csv_row("limits", "pvw", sizes[s], "mb_per_s",
				res.pvw_mbs[s]);
		csv_row("limits", "memcpy", sizes[s], "mb_per_s",
			res.memcpy_mbs[s]);
	}
}

static void limit_bandwidth(void)
{
	struct bw_samples *out = (struct bw_samples *)sh->result;
	char *src;
	bool ok;

	printf("\n[1b] raw process_vm_writev (child writes %zu MiB per run and "
	       "size, at least %d calls,\n     into the parent's pre-faulted "
	       "buffer)\n[1c] memcpy in one process; MB/s = 10^6 bytes/s, "
	       "median of %d runs\n", opt.bw_bytes / MIB, MIN_REPS, opt.bw_runs);
	target = map_prefaulted(MAX_LIMIT_SIZE);
	src = map_prefaulted(MAX_LIMIT_SIZE);
	if (!target || !src) {
		puts("  failed: out of memory");
		return;
	}
	/* Under Yama ptrace_scope 1 a child may not write into its parent
	 * unless the parent says so. */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY);
	memset(out, 0, sizeof(*out));
	ok = pair_run(pvw_server, pvw_client, NULL, 300) == 0;
	for (int s = 0; ok && s < nr_sizes; s++)
		res.pvw_mbs[s] = samples_median(&out->mbs[s]);
	measure_memcpy(src);
	print_bw_limits(ok);
	munmap(target, MAX_LIMIT_SIZE);
	munmap(src, MAX_LIMIT_SIZE);
}

void section_limits(void)
{
	limit_floor();
	limit_bandwidth();
}
