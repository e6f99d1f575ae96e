/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the check that API functions about a communicator share
 * (comm.c, group.c, errh.c).
 */
#ifndef VIADUCT_MPI_COMM_ARG_H
#define VIADUCT_MPI_COMM_ARG_H

#include "mpi_internal.h"

/* MPI running, comm valid (its object in *c) and out -- where the caller
 * stores its result -- not NULL: MPI_SUCCESS; else the first of
 * MPI_ERR_OTHER, MPI_ERR_COMM, MPI_ERR_ARG that applies, raised. */
int vd_comm_arg(MPI_Comm comm, const void *out, const char *fn, struct vd_comm **c);

#endif /* VIADUCT_MPI_COMM_ARG_H */
