/* SPDX-License-Identifier: MIT */
/*
 * mpi_bcast -- MPI_Bcast latency against message size (osu_bcast style):
 * bytes from rank 0, 1 B .. 1 MiB, any number of ranks.  Per size: one
 * call whose data every rank checks, a calibrating warm-up, then --runs
 * timed runs, each started after an MPI_Barrier; a run's figure is the
 * slowest rank's mean time per call (taken with MPI_Allreduce/MPI_MAX
 * outside the timed loop).  The table shows the median and the minimum
 * over runs, in us.
 *
 * Plain MPI: builds with vdcc, mpicc.openmpi, mpicc.mpich.
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

#define MIN_ITERS 5
#define MAX_ITERS 1000000

struct bcast {
	struct bench_ctx *b;
	unsigned char *buf;
};

static double bcast_run(void *arg, size_t size, long n)
{
	const struct bcast *r = arg;

	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (long i = 0; i < n; i++)
		MPI_Bcast(r->buf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
	double t = MPI_Wtime() - t0, slowest = t;
	MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return slowest;
}

static void checked_call(const struct bcast *r, size_t size)
{
	if (r->b->rank == 0)
		pattern_fill(r->buf, size, 7);
	else
		memset(r->buf, 0, size);
	MPI_Bcast(r->buf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
	size_t bad = pattern_check(r->buf, size, 7);
	if (bad)
		pattern_fail(r->b, size, bad - 1);
}

static void measure(void *arg, size_t size)
{
	const struct bcast *r = arg;
	const struct timing t = { bcast_run, arg, size >= 65536 ? 10 : 100,
				  MIN_ITERS, MAX_ITERS, 1e6, false };
	double us[MAX_RUNS];

	checked_call(r, size);
	long n = timed_runs(r->b, size, &t, us);
	report_runs(r->b, size, us, n, 3, false, "usec", "usec_min");
	end_row(r->b);
}

int main(int argc, char **argv)
{
	struct bench_ctx b;
	const struct bench_opts defaults = {
		.min_size = 4, .max_size = 1u << 20, .run_time = 0.05, .runs = 5,
	};
	MPI_Init(&argc, &argv);
	common_init(&b, "bcast", argc, argv, &defaults);
	print_header(&b, "MPI_Bcast latency (MPI_BYTE from rank 0, us per call)");
	struct bcast r = { &b, bench_alloc(b.o.max_size) };
	if (b.rank == 0)
		printf("%10s %12s %12s %10s\n", "bytes", "median us", "min us", "calls");
	for_each_size(&b, measure, &r);
	common_finish(&b);
	MPI_Finalize();
	return 0;
}
