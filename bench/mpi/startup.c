/* SPDX-License-Identifier: MIT */
/*
 * bench/mpi/startup.c -- what start-up costs a rank: the wall time of
 * MPI_Init and of MPI_Finalize, and the peak RSS, with nothing in between
 * ("init") or one ring exchange ("ring": each rank sends to its right
 * neighbour and receives from its left one).  Every rank prints one line
 * after MPI_Finalize:
 *     startup MODE RANK SIZE INIT_US FINALIZE_US TOTAL_US MAXRSS_KB
 * (TOTAL: from before MPI_Init to after MPI_Finalize).  Plain MPI, so it
 * builds with any mpicc; bench/mpi/startup.sh runs and summarizes it.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 && !strcmp(argv[1], "ring") ? "ring" : "init";
	double t0 = now_us(), t1, t2, t3;
	int rank, size;
	struct rusage ru;

	MPI_Init(&argc, &argv);
	t1 = now_us();
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (!strcmp(mode, "ring") && size > 1) {
		int out = rank, in = -1;
		MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, 0, &in, 1, MPI_INT,
			     (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (in != (rank + size - 1) % size)
			fprintf(stderr, "startup: rank %d: got %d\n", rank, in);
	}
	t2 = now_us();
	MPI_Finalize();
	t3 = now_us();
	getrusage(RUSAGE_SELF, &ru);
	printf("startup %s %d %d %.0f %.0f %.0f %ld\n", mode, rank, size, t1 - t0, t3 - t2,
	       t3 - t0, ru.ru_maxrss);
	return 0;
}
