/* SPDX-License-Identifier: MIT */
/*
 * The profiling interface, used as a tool uses it: this program defines
 * MPI_Send, MPI_Isend, MPI_Irecv and MPI_Allreduce itself,
 * counts the calls and passes them on to PMPI_.  Every call the program
 * makes must reach the tool once; calls the library makes on its own
 * (MPI_Sendrecv, MPI_Recv and MPI_Comm_split inside, through PMPI_) must
 * not.
 */
#include "mpitest.h"

static int n_send, n_isend, n_irecv, n_allreduce;

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	n_send++;
	return PMPI_Send(buf, count, dt, dest, tag, comm);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
	      MPI_Request *req)
{
	n_isend++;
	return PMPI_Isend(buf, count, dt, dest, tag, comm, req);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
	      MPI_Request *req)
{
	n_irecv++;
	return PMPI_Irecv(buf, count, dt, src, tag, comm, req);
}

int MPI_Allreduce(const void *in, void *out, int count, MPI_Datatype dt, MPI_Op op,
		  MPI_Comm comm)
{
	n_allreduce++;
	return PMPI_Allreduce(in, out, count, dt, op, comm);
}

int main(int argc, char **argv)
{
	int rank, size, x = 0, sum = 0, peer;
	MPI_Comm split;

	mt_init(&argc, &argv, 60);
	mt_phase = "pmpi";
	MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
	MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
	peer = (rank + 1) % size;
	/* The library's own: Sendrecv (Irecv + Isend inside), Recv (Irecv
	 * inside), Comm_split (Allgather / Allreduce inside). */
	MPI_OK(MPI_Sendrecv(&rank, 1, MPI_INT, peer, 1, &x, 1, MPI_INT,
			    (rank + size - 1) % size, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &split));
	MPI_OK(MPI_Comm_free(&split));
	CHECK(n_send == 0 && n_isend == 0 && n_irecv == 0 && n_allreduce == 0,
	      "library calls reached the tool: send %d isend %d irecv %d allreduce %d",
	      n_send, n_isend, n_irecv, n_allreduce);
	/* The program's own, each once. */
	if (size > 1 && rank == 0)
		MPI_OK(MPI_Send(&rank, 1, MPI_INT, 1, 2, MPI_COMM_WORLD));
	if (size > 1 && rank == 1)
		MPI_OK(MPI_Recv(&x, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	MPI_OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	CHECK(sum == size * (size - 1) / 2, "allreduce %d", sum);
	CHECK(n_send == (size > 1 && rank == 0) && n_irecv == 0 && n_allreduce == 1,
	      "the program's calls: send %d irecv %d allreduce %d", n_send, n_irecv,
	      n_allreduce);
	return mt_finish("pmpi");
}
