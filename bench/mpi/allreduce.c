/* SPDX-License-Identifier: MIT */
/*
 * mpi_allreduce -- MPI_Allreduce latency against message size
 * (osu_allreduce style): MPI_SUM over MPI_FLOAT, 4 B .. 1 MiB, any number
 * of ranks.  Per size: one call whose result is checked against the
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

static double allreduce_loop(const struct reduce *r, int count, long n)
{
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (long i = 0; i < n; i++)
		MPI_Allreduce(r->in, r->out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
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
	MPI_Allreduce(r->in, r->out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < count; i++) {
		float want = (float)(b->size * (b->size + 1) / 2 + b->size * (i % 7));
		if (r->out[i] != want) {
			fprintf(stderr, "mpi_allreduce (%s): rank %d: element %d of %d is %g, "
				"not %g\n", b->o.label, b->rank, i, count, (double)r->out[i],
				(double)want);
			MPI_Abort(MPI_COMM_WORLD, 4);
		}
	}
}

static void measure(const struct reduce *r, size_t size)
{
	struct bench_ctx *b = r->b;
	int count = (int)(size / sizeof(float));
	long warm = size >= 65536 ? 10 : 100;
	checked_call(r, count);
	double t = allreduce_loop(r, count, warm);
	long n = calibrate(b, t, warm, MIN_ITERS, MAX_ITERS);
	double us[MAX_RUNS];
	for (int k = 0; k < b->o.runs; k++)
		us[k] = allreduce_loop(r, count, n) * 1e6 / (double)n;
	if (b->rank != 0)
		return;
	double med = stat_median(us, b->o.runs), min = stat_min(us, b->o.runs);
	printf("%10zu %12.3f %12.3f %10ld\n", size, med, min, n);
	fflush(stdout);
	csv_row(b, size, "usec", med);
	csv_row(b, size, "usec_min", min);
	csv_row(b, size, "iters", (double)n);
}

int main(int argc, char **argv)
{
	struct bench_ctx b;
	const struct bench_opts defaults = {
		.min_size = 4, .max_size = 1u << 20, .run_time = 0.05, .runs = 5,
	};
	MPI_Init(&argc, &argv);
	common_init(&b, "allreduce", argc, argv, &defaults);
	if (b.o.min_size < sizeof(float))
		b.o.min_size = sizeof(float);
	print_header(&b, "MPI_Allreduce latency (MPI_SUM, MPI_FLOAT, us per call)");
	struct reduce r = { &b, bench_alloc(b.o.max_size), bench_alloc(b.o.max_size) };
	if (b.rank == 0)
		printf("%10s %12s %12s %10s\n", "bytes", "median us", "min us", "calls");
	size_t s = b.o.min_size;
	do {
		measure(&r, s);
		s = next_size(&b, s);
	} while (s != 0);
	common_finish(&b);
	MPI_Finalize();
	return 0;
}
