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

/* comm.c: context ids.  The next id this process could take; reserve
 * `ids` consecutive ids (steps of four contexts) from the agreed maximum
 * `max` of the members' vd_ctx_next() -- 0 or -ENOSPC; agree on one id
 * with every member of the intracommunicator parent -- MPI code. */
uint32_t vd_ctx_next(void);
int vd_ctx_reserve(uint32_t max, unsigned ids, uint32_t *ctx);
int vd_ctx_agree(MPI_Comm parent, uint32_t *ctx);
/* A new intracommunicator of the n world ranks in world[] (copied), this
 * process being `rank`, in a handle: 0 or -ENOMEM. */
int vd_comm_new(const int *world, int n, int rank, uint32_t ctx, MPI_Errhandler errh,
		MPI_Comm *out);
/* Invalidate handle h and drop its reference (no attribute callbacks). */
void vd_comm_drop(MPI_Comm h);
/* attr.c: free c's attributes without callbacks. */
void vd_attr_discard(struct vd_comm *c);
/* intercomm.c: Comm_dup of an intercommunicator (no attributes yet).
 * MPI code. */
int vd_intercomm_dup(MPI_Comm comm, struct vd_comm *c, MPI_Comm *newcomm);

/* group.c.  As vd_comm_arg, for a group: MPI_ERR_OTHER, MPI_ERR_GROUP,
 * MPI_ERR_ARG, raised on MPI_COMM_WORLD. */
int vd_group_arg(MPI_Group group, const void *out, const char *fn, struct vd_group **g);
/* A new group of the n world ranks in world[] (copied).  n == 0 gives
 * MPI_GROUP_EMPTY.  0 or -ENOMEM. */
int vd_group_new(const int *world, int n, MPI_Group *out);
/* MPI_SUCCESS if ranks[0..n) are distinct ranks of g, else the class
 * (MPI_ERR_ARG, MPI_ERR_RANK, MPI_ERR_NO_MEM); not raised. */
int vd_group_check_ranks(const struct vd_group *g, int n, const int ranks[]);

#endif /* VIADUCT_MPI_COMM_ARG_H */
