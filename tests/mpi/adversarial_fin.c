/* SPDX-License-Identifier: MIT */
/*
 * MPI_Finalize with requests left behind: an inactive persistent
 * request, started ones nobody matches, a pending synchronous send and a
 * pending receive, all on derived datatypes the program already freed,
 * and a persistent request on a communicator already freed.
 * Finalize must return (no hang, no crash) and, under LeakSanitizer,
 * free what those requests held.
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
	static int buf[16], rbuf[16], pbuf[16];
	MPI_Request idle, started, ssend, recv, orphan;
	MPI_Datatype strided;
	MPI_Comm dup;
	int right, left;

	mt_init(&argc, &argv, 30);
	right = (mt_rank + 1) % mt_size;
	left = (mt_rank + mt_size - 1) % mt_size;
	MPI_OK(MPI_Type_vector(4, 1, 2, MPI_INT, &strided));
	MPI_OK(MPI_Type_commit(&strided));
	MPI_OK(MPI_Recv_init(pbuf, 1, strided, left, 11, MPI_COMM_WORLD, &idle));
	MPI_OK(MPI_Send_init(buf, 1, strided, right, 12, MPI_COMM_WORLD, &started));
	MPI_OK(MPI_Start(&started));
	MPI_OK(MPI_Issend(buf, 1, strided, right, 13, MPI_COMM_WORLD, &ssend));
	MPI_OK(MPI_Irecv(rbuf, 1, strided, left, 14, MPI_COMM_WORLD, &recv));
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	MPI_OK(MPI_Recv_init(rbuf, 1, strided, left, 15, dup, &orphan));
	MPI_OK(MPI_Comm_free(&dup));
	MPI_OK(MPI_Type_free(&strided));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_OK(MPI_Finalize());
	if (mt_rank == 0)
		printf("adversarial_fin: %d ranks: ok\n", mt_size);
	return 0;
}
