/* SPDX-License-Identifier: MIT */
/*
 * Oversubscription: many ranks on few cores run 1000 barrier + allreduce
 * iterations (argv[1] overrides the count).  Waiting ranks must yield or
 * sleep, or this takes minutes instead of seconds; the runner times it.
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
	int iters = 1000;
	double t0;

	mt_init(&argc, &argv, 120);
	if (argc > 1)
		iters = atoi(argv[1]);
	mt_phase = "oversub";
	t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++) {
		int v = mt_rank + i, s = -1, e = mt_size * (mt_size - 1) / 2 + mt_size * i;

		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
		MPI_OK(MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
		if (!CHECK(s == e, "iteration %d: Allreduce %d, expected %d", i, s, e))
			break;
	}
	if (mt_rank == 0)
		printf("oversub: %d ranks, %d iterations in %.3f s\n", mt_size, iters,
		       MPI_Wtime() - t0);
	return mt_finish("oversub");
}
