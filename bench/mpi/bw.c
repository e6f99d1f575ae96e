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
#define MIN_ITERS 2
#define MAX_ITERS 100000

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
static double stream(struct stream *st, size_t size, long n)
{
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
	int got = -1;
	if (b->rank == 0) {
		pattern_fill(st->sbuf, size, salt);
		MPI_Send(st->sbuf, (int)size, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
		return;
	}
	memset(st->rbuf, 0, size);
	MPI_Recv(st->rbuf, (int)size, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &status);
	MPI_Get_count(&status, MPI_BYTE, &got);
	if (got != (int)size)
		pattern_fail(b, size, (size_t)got + 1);
	size_t bad = pattern_check(st->rbuf, size, salt);
	if (bad)
		pattern_fail(b, size, bad);
}

static void measure(struct stream *st, size_t size)
{
	struct bench_ctx *b = st->b;
	long warm = size >= 65536 ? 2 : 16;
	checked_message(st, size);
	double t = stream(st, size, warm);
	long n = calibrate(b, t, warm, MIN_ITERS, MAX_ITERS);
	double mbs[MAX_RUNS];
	for (int r = 0; r < b->o.runs; r++)
		mbs[r] = (double)size * WINDOW * (double)n / stream(st, size, n) / MB;
	if (b->rank != 0)
		return;
	double med = stat_median(mbs, b->o.runs), max = stat_max(mbs, b->o.runs);
	printf("%10zu %12.1f %12.1f %10ld\n", size, med, max, n);
	fflush(stdout);
	csv_row(b, size, "mb_per_s", med);
	csv_row(b, size, "mb_per_s_max", max);
	csv_row(b, size, "iters", (double)n);
}

int main(int argc, char **argv)
{
	struct bench_ctx b;
	const struct bench_opts defaults = {
		.min_size = 1, .max_size = 4u << 20, .run_time = 0.1, .runs = 3,
	};
	MPI_Init(&argc, &argv);
	common_init(&b, "bw", argc, argv, &defaults);
	if (b.size != 2) {
		if (b.rank == 0)
			fprintf(stderr, "mpi_bw: needs exactly 2 ranks\n");
		MPI_Finalize();
		return 2;
	}
	print_header(&b, "windowed bandwidth rank 0 -> 1 (64 x MPI_Isend, MB/s)");
	size_t big = b.o.max_size > 4 ? b.o.max_size : 4;
	struct stream st = { .b = &b, .sbuf = bench_alloc(big), .rbuf = bench_alloc(big) };
	if (b.rank == 0)
		printf("%10s %12s %12s %10s\n", "bytes", "median MB/s", "best MB/s", "windows");
	size_t s = b.o.min_size;
	do {
		measure(&st, s);
		s = next_size(&b, s);
	} while (s != 0);
	common_finish(&b);
	MPI_Finalize();
	return 0;
}
