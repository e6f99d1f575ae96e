/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the other ways to make a communicator -- from a group
 * (Comm_create, collective over the parent; Comm_create_group, collective
 * over the group only), by host (Comm_split_type), nonblocking or with
 * hints (Comm_idup, Comm_dup_with_info) -- the hints themselves, and the
 * questions about intercommunicators.
 *
 * Context ids follow comm.c's rule: the new id is above every member's
 * next_ctx.  Comm_create hands one id to all the (disjoint) groups, like
 * Comm_split; Comm_create_group agrees among the group's members alone.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "comm_arg.h"
#include "engine.h"
#include "typeop.h"

/* This process's rank in g, or MPI_UNDEFINED. */
static int my_rank_in(const struct vd_group *g)
{
	for (int i = 0; i < g->size; i++)
		if (g->world[i] == vd_mpi.rank)
			return i;
	return MPI_UNDEFINED;
}

/* The rank in c of world rank w (among the ranks c's p2p names), or -1. */
static int comm_rank_of(const struct vd_comm *c, int w)
{
	for (int i = 0; i < c->size; i++)
		if (c->world[i] == w)
			return i;
	return -1;
}

/* Whether every member of g is in c. */
static bool group_within(const struct vd_group *g, const struct vd_comm *c)
{
	for (int i = 0; i < g->size; i++)
		if (comm_rank_of(c, g->world[i]) < 0)
			return false;
	return true;
}

/* A valid intracommunicator: MPI_SUCCESS, else raised. */
static int intra_arg(MPI_Comm comm, const void *out, const char *fn, struct vd_comm **c)
{
	int err = vd_comm_arg(comm, out, fn, c);

	if (!err && (*c)->inter)
		err = vd_mpi_raise_msg(comm, MPI_ERR_COMM, fn,
				       "not supported on an intercommunicator");
	return err;
}

/* The communicator of g's members with context ctx, or MPI_COMM_NULL for
 * a process outside g.  MPI code. */
static int build_from_group(const struct vd_comm *c, const struct vd_group *g, uint32_t ctx,
			    MPI_Comm *newcomm)
{
	int me = my_rank_in(g);

	*newcomm = MPI_COMM_NULL;
	if (me == MPI_UNDEFINED)
		return MPI_SUCCESS;
	return vd_mpi_errno(vd_comm_new(g->world, g->size, me, ctx, c->errh, newcomm));
}

/* Every member contributes its next_ctx and whether its group is good, so
 * a bad group on one process fails the call everywhere instead of leaving
 * the others waiting. */
#pragma weak MPI_Comm_create = PMPI_Comm_create
int PMPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_create";
	struct vd_comm *c;
	struct vd_group *g;
	unsigned mine[2], all[2] = { 0, 0 };
	uint32_t ctx;
	int rc = intra_arg(comm, newcomm, fn, &c);

	if (rc)
		return rc;
	g = vd_group_get(group);
	mine[0] = vd_ctx_next();
	mine[1] = !g || !group_within(g, c);
	rc = vd_coll_code(vd_coll_allreduce(mine, all, 2, MPI_UNSIGNED, MPI_MAX, c));
	if (rc == MPI_SUCCESS && all[1])
		rc = MPI_ERR_GROUP;
	if (rc == MPI_SUCCESS && vd_ctx_reserve(all[0], 1, &ctx))
		rc = MPI_ERR_INTERN;
	if (rc == MPI_SUCCESS)
		rc = build_from_group(c, g, ctx, newcomm);
	return vd_mpi_raise(comm, rc, fn);
}

/* Comm_create_group's messages go on the parent's collective context with
 * a negative tag made from the user's, so they meet neither user traffic
 * nor the collectives (tag VD_COLL_TAG); only tags INT_MAX and INT_MAX - 1
 * share one. */
static int create_group_tag(int tag)
{
	int t = INT_MIN + tag;

	return t == MPI_ANY_TAG ? t - 1 : t;
}

static int xfer(struct vd_comm *c, int prank, int tag, unsigned *v, bool send)
{
	MPI_Request req;
	int err = send ? vd_isend(v, 1, MPI_UNSIGNED, prank, tag, c, c->ctx + 1, VD_SEND_STD,
				  &req)
		       : vd_irecv(v, 1, MPI_UNSIGNED, prank, tag, c, c->ctx + 1, &req);

	return err ? vd_mpi_errno(err) : vd_wait(&req, MPI_STATUS_IGNORE);
}

/* The maximum of the group members' next_ctx, gathered at and sent back
 * from the group's rank 0 (in parent c).  MPI code. */
static int group_max_ctx(struct vd_comm *c, const struct vd_group *g, int me, int tag,
			 unsigned *max)
{
	int root = comm_rank_of(c, g->world[0]), rc = MPI_SUCCESS;
	unsigned v = 0;

	*max = vd_ctx_next();
	if (me != 0) {
		rc = xfer(c, root, tag, max, true);
		return rc ? rc : xfer(c, root, tag, max, false);
	}
	for (int i = 1; i < g->size && !rc; i++) {
		rc = xfer(c, comm_rank_of(c, g->world[i]), tag, &v, false);
		if (v > *max)
			*max = v;
	}
	for (int i = 1; i < g->size && !rc; i++)
		rc = xfer(c, comm_rank_of(c, g->world[i]), tag, max, true);
	return rc;
}

#pragma weak MPI_Comm_create_group = PMPI_Comm_create_group
int PMPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_create_group";
	struct vd_comm *c;
	struct vd_group *g;
	unsigned max;
	uint32_t ctx;
	int rc = intra_arg(comm, newcomm, fn, &c), me;

	if (rc)
		return rc;
	if (!(g = vd_group_get(group)) || !group_within(g, c))
		return vd_mpi_raise(comm, MPI_ERR_GROUP, fn);
	if (tag < 0)
		return vd_mpi_raise(comm, MPI_ERR_TAG, fn);
	*newcomm = MPI_COMM_NULL;
	if ((me = my_rank_in(g)) == MPI_UNDEFINED)
		return MPI_SUCCESS;
	rc = group_max_ctx(c, g, me, create_group_tag(tag), &max);
	if (rc == MPI_SUCCESS && vd_ctx_reserve(max, 1, &ctx))
		rc = MPI_ERR_INTERN;
	if (rc == MPI_SUCCESS)
		rc = build_from_group(c, g, ctx, newcomm);
	return vd_mpi_raise(comm, rc, fn);
}

/* MPI_COMM_TYPE_SHARED: the ranks of one host share memory.  The hint
 * argument is accepted and not used. */
#pragma weak MPI_Comm_split_type = PMPI_Comm_split_type
int PMPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
			 MPI_Comm *newcomm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_split_type";
	struct vd_comm *c;
	int rc = intra_arg(comm, newcomm, fn, &c);

	(void)info;
	if (rc)
		return rc;
	if (split_type != MPI_COMM_TYPE_SHARED && split_type != MPI_UNDEFINED)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	return PMPI_Comm_split(comm,
			       split_type == MPI_UNDEFINED ? MPI_UNDEFINED
							   : vd_place_node(c->world[c->rank]),
			       key, newcomm);
}

/* The duplicate is made at once; the request is born complete. */
#pragma weak MPI_Comm_idup = PMPI_Comm_idup
int PMPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_idup";
	struct vd_comm *c;
	struct vd_req *r;
	int rc = vd_comm_arg(comm, newcomm, fn, &c);

	if (rc)
		return rc;
	if (!request)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	if ((rc = PMPI_Comm_dup(comm, newcomm)) != MPI_SUCCESS)
		return rc;
	if (!(r = vd_req_new(VD_REQ_DONE))) {
		PMPI_Comm_free(newcomm);
		return vd_mpi_raise(comm, MPI_ERR_NO_MEM, fn);
	}
	r->comm = comm;
	r->st.MPI_SOURCE = MPI_ANY_SOURCE;
	r->st.MPI_TAG = MPI_ANY_TAG;
	vd_req_complete(r, MPI_SUCCESS);
	*request = (MPI_Request)r->id;
	return MPI_SUCCESS;
}

/* info: MPI_INFO_NULL or valid (then copied to *copy).  MPI code. */
static int info_arg(MPI_Info info, MPI_Info *copy)
{
	int err = vd_info_copy(info, copy);

	return err == -EINVAL ? MPI_ERR_INFO : vd_mpi_errno(err);
}

#pragma weak MPI_Comm_dup_with_info = PMPI_Comm_dup_with_info
int PMPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_dup_with_info";
	struct vd_comm *c, *n;
	MPI_Info copy = MPI_INFO_NULL;
	int rc = vd_comm_arg(comm, newcomm, fn, &c);

	if (rc)
		return rc;
	if ((rc = info_arg(info, &copy)) != MPI_SUCCESS)
		return vd_mpi_raise(comm, rc, fn);
	if ((rc = PMPI_Comm_dup(comm, newcomm)) != MPI_SUCCESS) {
		vd_info_release(&copy);
		return rc;
	}
	/* The hints given replace the parent's (MPI-4.0 7.4.2). */
	n = vd_comm_get(*newcomm);
	vd_info_release(&n->info);
	n->info = copy;
	return MPI_SUCCESS;
}

#pragma weak MPI_Comm_set_info = PMPI_Comm_set_info
int PMPI_Comm_set_info(MPI_Comm comm, MPI_Info info)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_set_info";
	struct vd_comm *c;
	MPI_Info copy = MPI_INFO_NULL;
	int rc = vd_comm_arg(comm, &info, fn, &c);

	if (rc)
		return rc;
	if (info == MPI_INFO_NULL)
		return vd_mpi_raise(comm, MPI_ERR_INFO, fn);
	if ((rc = info_arg(info, &copy)) != MPI_SUCCESS)
		return vd_mpi_raise(comm, rc, fn);
	vd_info_release(&c->info);
	c->info = copy;
	return MPI_SUCCESS;
}

/* A new info with the hints as set (none is used, so all are returned). */
#pragma weak MPI_Comm_get_info = PMPI_Comm_get_info
int PMPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_get_info";
	struct vd_comm *c;
	int rc = vd_comm_arg(comm, info_used, fn, &c);

	if (rc)
		return rc;
	return vd_mpi_raise(comm, vd_mpi_errno(vd_info_copy(c->info, info_used)), fn);
}

#pragma weak MPI_Comm_test_inter = PMPI_Comm_test_inter
int PMPI_Comm_test_inter(MPI_Comm comm, int *flag)
{
	VD_API_GUARD();
	struct vd_comm *c;
	int rc = vd_comm_arg(comm, flag, "MPI_Comm_test_inter", &c);

	if (!rc)
		*flag = c->inter;
	return rc;
}

/* An intercommunicator: MPI_SUCCESS, else raised. */
static int inter_arg(MPI_Comm comm, const void *out, const char *fn, struct vd_comm **c)
{
	int rc = vd_comm_arg(comm, out, fn, c);

	if (!rc && !(*c)->inter)
		rc = vd_mpi_raise_msg(comm, MPI_ERR_COMM, fn, "not an intercommunicator");
	return rc;
}

#pragma weak MPI_Comm_remote_size = PMPI_Comm_remote_size
int PMPI_Comm_remote_size(MPI_Comm comm, int *size)
{
	VD_API_GUARD();
	struct vd_comm *c;
	int rc = inter_arg(comm, size, "MPI_Comm_remote_size", &c);

	if (!rc)
		*size = c->size;
	return rc;
}

#pragma weak MPI_Comm_remote_group = PMPI_Comm_remote_group
int PMPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_remote_group";
	struct vd_comm *c;
	int rc = inter_arg(comm, group, fn, &c);

	if (rc)
		return rc;
	return vd_mpi_raise(comm, vd_mpi_errno(vd_group_new(c->world, c->size, group)), fn);
}
