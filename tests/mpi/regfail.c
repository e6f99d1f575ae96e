/* SPDX-License-Identifier: MIT */
/*
 * A receiver that cannot register its buffer (RLIMIT_MEMLOCK used up by
 * MPI_Alloc_mem) while the sender can: the receive reports an error and
 * the sender's send still completes -- it is released, not left waiting
 * for an answer.  Run with a memlock limit small enough for that (the
 * runner does it as an unprivileged user).  Two ranks, every large
 * protocol in turn through VIADUCT_MPI_PROTOCOL.
 */
#include "mpitest.h"

#include <stdlib.h>
#include <string.h>

#define BIG (512 * 1024)

int main(int argc, char **argv)
{
	char *buf = malloc(BIG), *hog = NULL;
	int rc;

	mt_init(&argc, &argv, 30);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	memset(buf, 1, BIG);
	if (mt_rank == 1)
		MPI_OK(MPI_Alloc_mem(600 * 1024, MPI_INFO_NULL, &hog));
	MPI_Barrier(MPI_COMM_WORLD);
	if (mt_rank == 0) {
		rc = MPI_Send(buf, BIG, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
		CHECK(rc == MPI_SUCCESS, "the sender was not released: %d", rc);
	} else if (mt_rank == 1) {
		rc = MPI_Recv(buf, BIG, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		CHECK(rc != MPI_SUCCESS, "the receive could not register, yet succeeded");
		MPI_Free_mem(hog);
	}
	free(buf);
	return mt_finish("regfail");
}
