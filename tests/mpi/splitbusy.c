/* SPDX-License-Identifier: MIT */
/*
 * A send while a receive of this rank is matched but not complete:
 * rank 1 sends 1 MiB with no receive of its own open, so that message
 * may split; rank 0 waits for it to arrive (MPI_Probe, or with argument
 * "mprobe" MPI_Mprobe), receives it (MPI_Irecv or MPI_Imrecv: matched
 * at once, still moving) and only then sends 1 MiB back --
 * with its receive open, that send must not split (its core will be
 * copying).  Checks every byte.  Run with VIADUCT_DEBUG=1 by
 * tests/test_mpi_split_busy.sh, which reads the protocols each rank's
 * sends took.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN (1 << 20)

static unsigned char byte_at(int from, size_t i)
{
	return (unsigned char)(from * 77 + i % 253);
}

static void fill(unsigned char *b, int from)
{
	for (size_t i = 0; i < LEN; i++)
		b[i] = byte_at(from, i);
}

static int check(const unsigned char *b, int from)
{
	for (size_t i = 0; i < LEN; i++)
		if (b[i] != byte_at(from, i))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned char *sbuf = malloc(LEN), *rbuf = calloc(1, LEN);
	MPI_Request req[2];
	MPI_Message msg;
	int rank, size, bad, all, mprobe = argc > 1 && !strcmp(argv[1], "mprobe");

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2 || !sbuf || !rbuf) {
		if (rank == 0)
			fprintf(stderr, "splitbusy: needs 2 ranks and 2 MiB\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	fill(sbuf, rank);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		MPI_Isend(sbuf, LEN, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &req[0]);
		MPI_Irecv(rbuf, LEN, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &req[1]);
	} else {
		if (mprobe) {
			MPI_Mprobe(1, 1, MPI_COMM_WORLD, &msg, MPI_STATUS_IGNORE);
			MPI_Imrecv(rbuf, LEN, MPI_BYTE, &msg, &req[1]);
		} else {
			MPI_Probe(1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Irecv(rbuf, LEN, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req[1]);
		}
		MPI_Isend(sbuf, LEN, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &req[0]);
	}
	MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
	bad = check(rbuf, 1 - rank);
	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (bad)
		fprintf(stderr, "splitbusy: rank %d received wrong bytes\n", rank);
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return all ? 1 : 0;
}
