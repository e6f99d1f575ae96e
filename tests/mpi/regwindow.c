/* SPDX-License-Identifier: MIT */
/*
 * A window of messages from and into distinct buffers, several rounds:
 * rank 0 sends NBUF messages at once, each from its own buffer, rank 1
 * receives each into its own.  Checks every byte.  Run with
 * VIADUCT_DEBUG=1 by tests/test_mpi_regcache.sh, which reads how often
 * the buffers were registered: once each, when the registration cache
 * holds the window.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUF 100
#define ROUNDS 4

static unsigned char byte_at(int round, int k, size_t i)
{
	return (unsigned char)(round * 31 + k * 7 + i % 251);
}

static int run_round(int rank, unsigned char **buf, size_t len, int round)
{
	MPI_Request req[NBUF];
	int bad = 0;

	for (int k = 0; k < NBUF; k++) {
		if (rank == 0) {
			for (size_t i = 0; i < len; i++)
				buf[k][i] = byte_at(round, k, i);
			MPI_Isend(buf[k], (int)len, MPI_BYTE, 1, k, MPI_COMM_WORLD, &req[k]);
		} else {
			memset(buf[k], 0, len);
			MPI_Irecv(buf[k], (int)len, MPI_BYTE, 0, k, MPI_COMM_WORLD, &req[k]);
		}
	}
	MPI_Waitall(NBUF, req, MPI_STATUSES_IGNORE);
	for (int k = 0; rank == 1 && k < NBUF; k++)
		for (size_t i = 0; i < len && !bad; i++)
			bad = buf[k][i] != byte_at(round, k, i);
	return bad;
}

int main(int argc, char **argv)
{
	size_t len = argc > 1 ? strtoul(argv[1], NULL, 0) : 160 * 1024;
	unsigned char *buf[NBUF];
	int rank, size, bad = 0, all;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "regwindow: needs 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (int k = 0; k < NBUF; k++)
		if (!(buf[k] = malloc(len)))
			MPI_Abort(MPI_COMM_WORLD, 3);
	for (int round = 0; round < ROUNDS; round++)
		bad |= run_round(rank, buf, len, round);
	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (rank == 1 && bad)
		fprintf(stderr, "regwindow: wrong bytes received\n");
	for (int k = 0; k < NBUF; k++)
		free(buf[k]);
	MPI_Finalize();
	return all ? 1 : 0;
}
