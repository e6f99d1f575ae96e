/* SPDX-License-Identifier: MIT */
/*
 * mpi_bw -- windowed unidirectional bandwidth, rank 0 -> rank 1
 * (osu_bw style).  One iteration: rank 0 posts a window of 64 MPI_Isend
 * of one buffer and waits for them all; rank 1 posts 64 MPI_Irecv into
 * one buffer, waits for them all, and answers with a 4-byte MPI_Send that
 * rank 0 receives before the next iteration.  Bandwidth = bytes sent /
 * rank 0's elapsed time, in MB/s (10^6 bytes/s).  Sizes 1 B .. 4 MiB.
 *
 * As in osu_bw the 64 receives of a window share one buffer: the figure
 * is the transport's, not the memory system's for 64 distinct buffers.
 * Per size: one checked message, a calibrating warm-up, --runs timed runs
 * of about --time seconds; median and best are printed.
 *
 * Plain MPI: builds with vdcc, mpicc.openmpi, mpicc.mpich.  2 ranks.
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

#ifndef WINDOW
#define WINDOW 64 /* messages in flight, as OSU; -DWINDOW=N to explore */
#endif
#define TAG 2
#define TAG_ACK 3

struct stream {
	struct bench_ctx *b;
	unsigned char *sbuf, *rbuf;
	MPI_Request req[WINDOW];
	MPI_Status stat[WINDOW]; /* as osu_bw: real statuses, filled by Waitall */
};

static void window_send(struct stream *st, int cnt)
{
	for (int w = 0; w < WINDOW; w++)
		MPI_Isend(st->sbuf, cnt, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, &st->req[w]);
	MPI_Waitall(WINDOW, st->req, st->stat);
	MPI_Recv(st->rbuf, 4, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void window_recv(struct stream *st, int cnt)
{
	for (int w = 0; w < WINDOW; w++)
		MPI_Irecv(st->rbuf, cnt, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &st->req[w]);
	MPI_Waitall(WINDOW, st->req, st->stat);
	MPI_Send(st->sbuf, 4, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
}

/* n windows of `size`-byte messages; rank 0's elapsed seconds. */
static double stream(void *arg, size_t size, long n)
{
	struct stream *st = arg;
	double t0 = MPI_Wtime();
	for (long i = 0; i < n; i++) {
		if (st->b->rank == 0)
			window_send(st, (int)size);
		else
			window_recv(st, (int)size);
	}
	return MPI_Wtime() - t0;
}

static void checked_message(struct stream *st, size_t size)
{
	struct bench_ctx *b = st->b;
	unsigned salt = (unsigned)(size * 3 + 1);
	MPI_Status status;
	if (b->rank == 0) {
		pattern_fill(st->sbuf, size, salt);
		MPI_Send(st->sbuf, (int)size, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
		return;
	}
	memset(st->rbuf, 0, size);
	MPI_Recv(st->rbuf, (int)size, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &status);
	check_received(b, st->rbuf, size, &status, salt);
}

static void measure(void *arg, size_t size)
{
	struct stream *st = arg;
	checked_message(st, size);
	measure_bandwidth(st->b, size, (double)size * WINDOW, stream, st);
}

int main(int argc, char **argv)
{
	struct bench_ctx b;
	const struct bench_opts defaults = {
		.min_size = 1, .max_size = 4u << 20, .run_time = 0.1, .runs = 3,
	};
	MPI_Init(&argc, &argv);
	common_init(&b, "bw", argc, argv, &defaults);
	require_two_ranks(&b, "mpi_bw");
	print_header(&b, "windowed bandwidth rank 0 -> 1 (64 x MPI_Isend, MB/s)");
	size_t big = b.o.max_size > 4 ? b.o.max_size : 4;
	struct stream st = { .b = &b, .sbuf = bench_alloc(&b, big), .rbuf = bench_alloc(&b, big) };
	bw_table_head(&b);
	for_each_size(&b, measure, &st);
	common_finish(&b);
	MPI_Finalize();
	return 0;
}
