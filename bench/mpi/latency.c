/* SPDX-License-Identifier: MIT */
/*
 * mpi_latency -- ping-pong latency between ranks 0 and 1 (osu_latency
 * style): MPI_Send / MPI_Recv of one message back and forth; the latency
 * is half the round trip.  Sizes 0 B .. 4 MiB.
 *
 * Per size: one checked exchange (the data really moves), a warm-up that
 * also calibrates how many round trips fill one run of --time seconds,
 * then --runs timed runs; the table shows the median and the minimum over
 * runs of (run time) / (2 x round trips), in microseconds.
 *
 * The last column is the ping-pong bandwidth, size / half round trip (the
 * way the MPICH-PM/CLUMP paper's Table 4 derives bandwidth and half-bandwidth point).
 *
 * Plain MPI: builds with vdcc, mpicc.openmpi, mpicc.mpich.  Exactly two
 * ranks.
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

#define TAG 1
#define WARM_ITERS 200  /* small messages; large ones use fewer */
#define MIN_ITERS 10
#define MAX_ITERS 1000000

struct pingpong {
	struct bench_ctx *b;
	unsigned char *sbuf, *rbuf;
};

/* n round trips of `size` bytes; returns rank 0's elapsed seconds. */
static double pingpong(const struct pingpong *pp, size_t size, long n)
{
	int peer = 1 - pp->b->rank, cnt = (int)size;
	double t0 = MPI_Wtime();
	for (long i = 0; i < n; i++) {
		if (pp->b->rank == 0) {
			MPI_Send(pp->sbuf, cnt, MPI_BYTE, peer, TAG, MPI_COMM_WORLD);
			MPI_Recv(pp->rbuf, cnt, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(pp->rbuf, cnt, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(pp->sbuf, cnt, MPI_BYTE, peer, TAG, MPI_COMM_WORLD);
		}
	}
	return MPI_Wtime() - t0;
}

/* One round trip with patterns checked at both ends, and the received
 * count checked: a library that moves nothing cannot post figures. */
static void checked_exchange(const struct pingpong *pp, size_t size)
{
	struct bench_ctx *b = pp->b;
	int peer = 1 - b->rank, cnt = (int)size;
	MPI_Status st;
	pattern_fill(pp->sbuf, size, (unsigned)(size + 1 + (size_t)b->rank));
	memset(pp->rbuf, 0, size);
	if (b->rank == 0)
		MPI_Send(pp->sbuf, cnt, MPI_BYTE, peer, TAG, MPI_COMM_WORLD);
	MPI_Recv(pp->rbuf, cnt, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, &st);
	if (b->rank == 1)
		MPI_Send(pp->sbuf, cnt, MPI_BYTE, peer, TAG, MPI_COMM_WORLD);
	check_received(b, pp->rbuf, size, &st, (unsigned)(size + 1 + (size_t)peer));
}

static double pingpong_run(void *arg, size_t size, long n)
{
	return pingpong(arg, size, n);
}

static void measure(void *arg, size_t size)
{
	const struct pingpong *pp = arg;
	/* Half the round trip, in microseconds. */
	const struct timing t = { pingpong_run, arg, size >= 65536 ? 20 : WARM_ITERS,
				  MIN_ITERS, MAX_ITERS, 1e6 / 2, false, NULL };
	double us[MAX_RUNS];
	checked_exchange(pp, size);
	long n = timed_runs(pp->b, size, &t, us);
	double med = report_runs(pp->b, size, us, n, 3, false, "half_rtt_us", "half_rtt_min_us");
	if (pp->b->rank == 0)
		printf(" %12.1f", size ? (double)size / med : 0.0);
	end_row(pp->b);
}

int main(int argc, char **argv)
{
	struct bench_ctx b;
	const struct bench_opts defaults = {
		.min_size = 0, .max_size = 4u << 20, .run_time = 0.05, .runs = 5,
	};
	MPI_Init(&argc, &argv);
	common_init(&b, "latency", argc, argv, &defaults);
	require_two_ranks(&b, "mpi_latency");
	print_header(&b, "ping-pong latency (half round trip, MPI_Send/MPI_Recv)");
	struct pingpong pp = { &b, bench_alloc(&b, b.o.max_size), bench_alloc(&b, b.o.max_size) };
	if (b.rank == 0)
		printf("%10s %12s %12s %10s %12s\n", "bytes", "median us", "min us",
		       "round trips", "MB/s");
	for_each_size(&b, measure, &pp);
	common_finish(&b);
	MPI_Finalize();
	return 0;
}
