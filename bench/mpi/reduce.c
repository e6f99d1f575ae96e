/* SPDX-License-Identifier: MIT */
/*
 * mpi_reduce -- MPI_Reduce latency against message size
 * (osu_reduce style): MPI_SUM over MPI_FLOAT to rank 0, 4 B .. 1 MiB, any number
 * of ranks.  Per size: one call whose result rank 0 checks against the
 * hand-computed sum, a calibrating warm-up, then --runs timed runs, each
 * started after an MPI_Barrier; a run's figure is the slowest rank's
 * mean time per call (taken with MPI_Allreduce/MPI_MAX outside the timed
 * loop).  The table shows the median and the minimum over runs, in us.
 *
 * Plain MPI: builds with vdcc, mpicc.openmpi, mpicc.mpich.
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

#define MIN_ITERS 5
#define MAX_ITERS 1000000

struct reduce {
	struct bench_ctx *b;
	float *in, *out;
};

static double reduce_loop(const struct reduce *r, int count, long n)
{
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (long i = 0; i < n; i++)
		MPI_Reduce(r->in, r->out, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
	double t = MPI_Wtime() - t0, slowest = t;
	MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return slowest;
}

/* in[i] = rank + 1 + i % 7 on every rank, so out[i] is
 * size (size + 1) / 2 + size (i % 7): small integers, exact in float. */
static void checked_call(const struct reduce *r, int count)
{
	struct bench_ctx *b = r->b;
	for (int i = 0; i < count; i++) {
		r->in[i] = (float)(b->rank + 1 + i % 7);
		r->out[i] = -1.0f;
	}
	MPI_Reduce(r->in, r->out, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
	for (int i = 0; b->rank == 0 && i < count; i++) {
		float want = (float)(b->size * (b->size + 1) / 2 + b->size * (i % 7));
		if (r->out[i] != want) {
			fprintf(stderr, "mpi_reduce (%s): rank %d: element %d of %d is %g, "
				"not %g\n", b->o.label, b->rank, i, count, (double)r->out[i],
				(double)want);
			MPI_Abort(MPI_COMM_WORLD, 4);
		}
	}
}

static double reduce_run(void *arg, size_t size, long n)
{
	return reduce_loop(arg, (int)(size / sizeof(float)), n);
}

static void measure(void *arg, size_t size)
{
	const struct reduce *r = arg;
	/* Microseconds per call. */
	const struct timing t = { reduce_run, arg, size >= 65536 ? 10 : 100,
				  MIN_ITERS, MAX_ITERS, 1e6, false };
	double us[MAX_RUNS];
	checked_call(r, (int)(size / sizeof(float)));
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
	common_init(&b, "reduce", argc, argv, &defaults);
	if (b.o.min_size < sizeof(float))
		b.o.min_size = sizeof(float);
	print_header(&b, "MPI_Reduce latency (MPI_SUM, MPI_FLOAT, to rank 0, us per call)");
	struct reduce r = { &b, bench_alloc(b.o.max_size), bench_alloc(b.o.max_size) };
	if (b.rank == 0)
		printf("%10s %12s %12s %10s\n", "bytes", "median us", "min us", "calls");
	for_each_size(&b, measure, &r);
	common_finish(&b);
	MPI_Finalize();
	return 0;
}
