/* SPDX-License-Identifier: MIT */
/*
 * mpi_barrier -- MPI_Barrier latency (osu_barrier style), any number of
 * ranks: a calibrating warm-up, then --runs timed runs, each started
 * after an MPI_Barrier; a run's figure is the slowest rank's mean time
 * per call (taken with MPI_Allreduce/MPI_MAX outside the timed loop).
 * One table row (size 0): the median and the minimum over runs, in us.
 *
 * Plain MPI: builds with vdcc, mpicc.openmpi, mpicc.mpich.
 */
#include "common.h"

#define MIN_ITERS 5
#define MAX_ITERS 1000000

static double barrier_run(void *arg, size_t size, long n)
{
	(void)arg;
	(void)size;
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (long i = 0; i < n; i++)
		MPI_Barrier(MPI_COMM_WORLD);
	double t = MPI_Wtime() - t0, slowest = t;
	MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return slowest;
}

int main(int argc, char **argv)
{
	struct bench_ctx b;
	const struct bench_opts defaults = {
		.min_size = 0, .max_size = 0, .run_time = 0.05, .runs = 5,
	};
	MPI_Init(&argc, &argv);
	common_init(&b, "barrier", argc, argv, &defaults);
	print_header(&b, "MPI_Barrier latency (us per call)");
	const struct timing t = { barrier_run, NULL, 100, MIN_ITERS, MAX_ITERS, 1e6, false };
	double us[MAX_RUNS];
	if (b.rank == 0)
		printf("%10s %12s %12s %10s\n", "bytes", "median us", "min us", "calls");
	long n = timed_runs(&b, 0, &t, us);
	report_runs(&b, 0, us, n, 3, false, "usec", "usec_min");
	end_row(&b);
	common_finish(&b);
	MPI_Finalize();
	return 0;
}
