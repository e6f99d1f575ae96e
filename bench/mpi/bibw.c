/* SPDX-License-Identifier: MIT */
/*
 * mpi_bibw -- windowed bidirectional bandwidth between ranks 0 and 1
 * (osu_bibw style).  One iteration, on both ranks at once: post 64
 * MPI_Irecv from the peer into one buffer, post 64 MPI_Isend of another
 * buffer to the peer, wait for all 128.  Bandwidth = bytes moved in both
 * directions / rank 0's elapsed time, MB/s (10^6 bytes/s).
 * Sizes 1 B .. 4 MiB; median and best of --runs timed runs.
 *
 * Plain MPI: builds with vdcc, mpicc.openmpi, mpicc.mpich.  2 ranks.
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

#ifndef WINDOW
#define WINDOW 64 /* messages in flight, as OSU; -DWINDOW=N to explore */
#endif
#define TAG 4

struct exchange {
	struct bench_ctx *b;
	unsigned char *sbuf, *rbuf;
	MPI_Request req[2 * WINDOW];
	MPI_Status stat[2 * WINDOW]; /* as osu_bibw: real statuses */
};

static double exchange(void *arg, size_t size, long n)
{
	struct exchange *x = arg;
	int peer = 1 - x->b->rank, cnt = (int)size;
	double t0 = MPI_Wtime();
	for (long i = 0; i < n; i++) {
		for (int w = 0; w < WINDOW; w++)
			MPI_Irecv(x->rbuf, cnt, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
				  &x->req[w]);
		for (int w = 0; w < WINDOW; w++)
			MPI_Isend(x->sbuf, cnt, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
				  &x->req[WINDOW + w]);
		MPI_Waitall(2 * WINDOW, x->req, x->stat);
	}
	return MPI_Wtime() - t0;
}

/* Both directions at once, both checked: Sendrecv. */
static void checked_exchange(struct exchange *x, size_t size)
{
	struct bench_ctx *b = x->b;
	int peer = 1 - b->rank;
	MPI_Status st;
	pattern_fill(x->sbuf, size, (unsigned)(size * 5 + (size_t)b->rank));
	memset(x->rbuf, 0, size);
	MPI_Sendrecv(x->sbuf, (int)size, MPI_BYTE, peer, TAG, x->rbuf, (int)size,
		     MPI_BYTE, peer, TAG, MPI_COMM_WORLD, &st);
	check_received(b, x->rbuf, size, &st, (unsigned)(size * 5 + (size_t)peer));
}

static void measure(void *arg, size_t size)
{
	struct exchange *x = arg;
	checked_exchange(x, size);
	measure_bandwidth(x->b, size, 2.0 * (double)size * WINDOW, exchange, x);
}

int main(int argc, char **argv)
{
	struct bench_ctx b;
	const struct bench_opts defaults = {
		.min_size = 1, .max_size = 4u << 20, .run_time = 0.1, .runs = 3,
	};
	MPI_Init(&argc, &argv);
	common_init(&b, "bibw", argc, argv, &defaults);
	require_two_ranks(&b, "mpi_bibw");
	print_header(&b, "bidirectional bandwidth (64 x MPI_Isend each way, MB/s)");
	struct exchange x = { .b = &b, .sbuf = bench_alloc(&b, b.o.max_size),
			      .rbuf = bench_alloc(&b, b.o.max_size) };
	bw_table_head(&b);
	for_each_size(&b, measure, &x);
	common_finish(&b);
	MPI_Finalize();
	return 0;
}
