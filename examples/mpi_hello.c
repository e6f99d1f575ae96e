/* SPDX-License-Identifier: MIT */
/* The smallest MPI program: every rank says hello, rank 0 sums the ranks. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int rank, size, sum = 0, len;
	char name[MPI_MAX_PROCESSOR_NAME];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(name, &len);
	printf("hello from rank %d of %d on %s\n", rank, size, name);
	MPI_Reduce(&rank, &sum, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("sum of ranks: %d (expected %d)\n", sum, size * (size - 1) / 2);
	MPI_Finalize();
	return 0;
}
