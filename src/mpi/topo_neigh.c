/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the neighbourhood collectives -- Neighbor_allgather(v) and
 * Neighbor_alltoall(v,w).
 *
 * Each is one round: every receive from an in-neighbour posted, then every
 * send to an out-neighbour, then a wait for all, on the communicator's
 * collective context.  Neighbours, in the standard's order:
 *  - Cartesian: for each dimension the -1 then the +1 neighbour, in and
 *    out alike; MPI_PROC_NULL ones (non-periodic edges) move nothing and
 *    leave their part of the receive buffer alone.
 *  - graph: Graph_neighbors of this rank, in and out alike (the graph must
 *    be symmetric, else MPI_ERR_TOPOLOGY).
 *  - distributed graph: sources in, destinations out.
 * Several edges between two processes pair up in order, since messages
 * between two processes with one tag do not overtake.  A Cartesian
 * dimension of size 1 or 2 breaks that pairing (the -1 and +1 neighbour
 * are one process, and what it sends to its +1 side arrives on our -1
 * side), so there each direction has its own tag.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo.h"
#include "typeop.h"

/* Above the tag of the other collectives on the collective context. */
#define NEIGH_TAG 0x4e00

/* The in- and out-neighbours of this process in c's topology. */
static int neighbours_get(const struct vd_comm *c, struct vd_neighbours *nb)
{
	const struct vd_topo *t = c->topo;

	memset(nb, 0, sizeof(*nb));
	if (t->kind == MPI_DIST_GRAPH) {
		nb->nin = t->indegree;
		nb->nout = t->outdegree;
		nb->in = t->sources;
		nb->out = t->destinations;
	} else if (t->kind == MPI_GRAPH) {
		int first = c->rank ? t->index[c->rank - 1] : 0;

		if (!t->symmetric)
			return MPI_ERR_TOPOLOGY;
		nb->nin = nb->nout = t->index[c->rank] - first;
		nb->in = nb->out = t->edges + first;
	} else {
		nb->mem = malloc(t->ndims > 0 ? 2 * (size_t)t->ndims * sizeof(int) : 1);
		if (!nb->mem)
			return MPI_ERR_NO_MEM;
		for (int d = 0; d < t->ndims; d++)
			vd_cart_shift(t, c->rank, d, 1, &nb->mem[2 * d], &nb->mem[2 * d + 1]);
		nb->nin = nb->nout = 2 * t->ndims;
		nb->in = nb->out = nb->mem;
		nb->cart = true;
	}
	return MPI_SUCCESS;
}

/* The tag of the message of out-slot k, and of in-slot k: a Cartesian
 * send to the -1 side (slot 2d) lands in the peer's +1 slot (2d + 1). */
static int send_tag(const struct vd_neighbours *nb, int k)
{
	return NEIGH_TAG + (nb->cart ? k ^ 1 : 0);
}

static int recv_tag(const struct vd_neighbours *nb, int k)
{
	return NEIGH_TAG + (nb->cart ? k : 0);
}

/* Post every receive then every send, wait for all.  MPI code. */
static int exchange(struct vd_comm *c, const struct vd_neighbours *nb,
		    const struct vd_piece *rp, const struct vd_piece *sp)
{
	MPI_Request *req = malloc((size_t)(nb->nin + nb->nout + 1) * sizeof(*req));
	uint32_t ctx = c->ctx + 1;
	int n = 0, r = 0, err;

	if (!req)
		return MPI_ERR_NO_MEM;
	for (int k = 0; !r && k < nb->nin; k++)
		if (nb->in[k] != MPI_PROC_NULL)
			r = vd_irecv(rp[k].buf, rp[k].count, rp[k].dt, nb->in[k], recv_tag(nb, k),
				     c, ctx, &req[n++]);
	for (int k = 0; !r && k < nb->nout; k++)
		if (nb->out[k] != MPI_PROC_NULL)
			r = vd_isend(sp[k].buf, sp[k].count, sp[k].dt, nb->out[k],
				     send_tag(nb, k), c, ctx, VD_SEND_STD, &req[n++]);
	if (r)
		n--;                    /* the failed one holds no request */
	err = vd_coll_waitall(n, req);
	free(req);
	return r ? vd_mpi_errno(r) : err;
}

/* ---- arguments ------------------------------------------------------------------ */

/* The communicator, its neighbours, and room for their pieces (*rp then
 * *sp, one allocation freed with *rp).  MPI code, not raised. */
static int neigh_begin(MPI_Comm comm, struct vd_comm **c, struct vd_neighbours *nb,
		       struct vd_piece **rp, struct vd_piece **sp)
{
	int err;

	*rp = NULL;
	memset(nb, 0, sizeof(*nb));
	if (!(*c = vd_comm_get(comm)))
		return MPI_ERR_COMM;
	if (!(*c)->topo)
		return MPI_ERR_TOPOLOGY;
	if ((err = neighbours_get(*c, nb)))
		return err;
	*rp = malloc((size_t)(nb->nin + nb->nout + 1) * sizeof(**rp));
	*sp = *rp ? *rp + nb->nin : NULL;
	return *rp ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* Deliver unless err; free what neigh_begin took; raise. */
static int neigh_end(MPI_Comm comm, int err, struct vd_comm *c, struct vd_neighbours *nb,
		     struct vd_piece *rp, struct vd_piece *sp, const struct vd_neigh_how *how)
{
	if (!err && how->deliver)
		err = how->deliver(c, nb, rp, sp, how->arg);
	else if (!err)
		err = exchange(c, nb, rp, sp);
	free(nb->mem);
	free(rp);
	return vd_mpi_raise(c ? comm : MPI_COMM_WORLD, err, how->fn);
}

static int layout_check(const struct vd_layout *l, int n)
{
	if (l->buf == MPI_IN_PLACE)
		return MPI_ERR_BUFFER;  /* not defined for these collectives */
	if (n == 0 || l->form == VD_LAYOUT_UNIFORM)
		return MPI_SUCCESS;
	if (!l->counts || (l->form == VD_LAYOUT_VECTOR && !l->displs) ||
	    (l->form == VD_LAYOUT_W && (!l->bdispls || !l->types)))
		return MPI_ERR_ARG;
	return MPI_SUCCESS;
}

/* Byte offset of piece k (of count elements of t) from the buffer. */
static MPI_Aint layout_offset(const struct vd_layout *l, int k, int count,
			      const struct vd_dtype *t)
{
	if (l->form == VD_LAYOUT_W)
		return l->bdispls[k];
	return (l->form == VD_LAYOUT_VECTOR ? l->displs[k] : (MPI_Aint)k * count) * t->extent;
}

/* The n pieces of l, each checked.  MPI code. */
static int pieces_fill(const struct vd_layout *l, int n, struct vd_piece *p)
{
	int err = layout_check(l, n);

	for (int k = 0; !err && k < n; k++) {
		MPI_Datatype dt = l->form == VD_LAYOUT_W ? l->types[k] : l->dt;
		int count = l->form == VD_LAYOUT_UNIFORM ? l->count : l->counts[k];
		struct vd_dtype *t = vd_dtype_comm(dt);

		if (count < 0)
			return MPI_ERR_COUNT;
		if (!t)
			return MPI_ERR_TYPE;
		/* Integer arithmetic: W may count from MPI_BOTTOM. */
		p[k].buf = (char *)((uintptr_t)l->buf + (uintptr_t)layout_offset(l, k, count, t));
		if (!p[k].buf && count > 0 && t->size > 0)
			return MPI_ERR_BUFFER;
		p[k].count = count;
		p[k].dt = dt;
	}
	return err;
}

/* Both sides' pieces: MPI code. */
static int both_fill(const struct vd_layout *s, const struct vd_layout *r,
		     const struct vd_neighbours *nb, struct vd_piece *sp, struct vd_piece *rp)
{
	int err = pieces_fill(s, nb->nout, sp);

	return err ? err : pieces_fill(r, nb->nin, rp);
}

int vd_neigh_run(MPI_Comm comm, const struct vd_layout *s, const struct vd_layout *r,
		 bool same_block, const struct vd_neigh_how *how)
{
	struct vd_piece *rp, *sp;
	struct vd_neighbours nb;
	struct vd_comm *c;
	int err = neigh_begin(comm, &c, &nb, &rp, &sp);

	if (!err)
		err = both_fill(s, r, &nb, sp, rp);
	for (int k = 0; same_block && !err && k < nb.nout; k++)
		sp[k].buf = (char *)s->buf;
	return neigh_end(comm, err, c, &nb, rp, sp, how);
}

/* ---- the collectives ----------------------------------------------------------- */

#pragma weak MPI_Neighbor_allgather = PMPI_Neighbor_allgather
int PMPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			    void *recvbuf, int recvcount, MPI_Datatype recvtype,
			    MPI_Comm comm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Neighbor_allgather";
	struct vd_layout s = { .buf = sendbuf, .count = sendcount, .dt = sendtype };
	struct vd_layout r = { .buf = recvbuf, .count = recvcount, .dt = recvtype };

	struct vd_neigh_how how = { .fn = fn };

	VD_MPI_CHECK_RUNNING(fn);
	return vd_neigh_run(comm, &s, &r, true, &how);
}

#pragma weak MPI_Neighbor_allgatherv = PMPI_Neighbor_allgatherv
int PMPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			     void *recvbuf, const int recvcounts[], const int displs[],
			     MPI_Datatype recvtype, MPI_Comm comm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Neighbor_allgatherv";
	struct vd_layout s = { .buf = sendbuf, .count = sendcount, .dt = sendtype };
	struct vd_layout r = { .form = VD_LAYOUT_VECTOR, .buf = recvbuf, .counts = recvcounts,
			    .displs = displs, .dt = recvtype };

	struct vd_neigh_how how = { .fn = fn };

	VD_MPI_CHECK_RUNNING(fn);
	return vd_neigh_run(comm, &s, &r, true, &how);
}

#pragma weak MPI_Neighbor_alltoall = PMPI_Neighbor_alltoall
int PMPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			   void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Neighbor_alltoall";
	struct vd_layout s = { .buf = sendbuf, .count = sendcount, .dt = sendtype };
	struct vd_layout r = { .buf = recvbuf, .count = recvcount, .dt = recvtype };

	struct vd_neigh_how how = { .fn = fn };

	VD_MPI_CHECK_RUNNING(fn);
	return vd_neigh_run(comm, &s, &r, false, &how);
}

#pragma weak MPI_Neighbor_alltoallv = PMPI_Neighbor_alltoallv
int PMPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
			    MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
			    const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Neighbor_alltoallv";
	struct vd_layout s = { .form = VD_LAYOUT_VECTOR, .buf = sendbuf, .counts = sendcounts,
			    .displs = sdispls, .dt = sendtype };
	struct vd_layout r = { .form = VD_LAYOUT_VECTOR, .buf = recvbuf, .counts = recvcounts,
			    .displs = rdispls, .dt = recvtype };

	struct vd_neigh_how how = { .fn = fn };

	VD_MPI_CHECK_RUNNING(fn);
	return vd_neigh_run(comm, &s, &r, false, &how);
}

#pragma weak MPI_Neighbor_alltoallw = PMPI_Neighbor_alltoallw
int PMPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[],
			    const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
			    void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
			    const MPI_Datatype recvtypes[], MPI_Comm comm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Neighbor_alltoallw";
	struct vd_layout s = { .form = VD_LAYOUT_W, .buf = sendbuf, .counts = sendcounts,
			    .bdispls = sdispls, .types = sendtypes };
	struct vd_layout r = { .form = VD_LAYOUT_W, .buf = recvbuf, .counts = recvcounts,
			    .bdispls = rdispls, .types = recvtypes };

	struct vd_neigh_how how = { .fn = fn };

	VD_MPI_CHECK_RUNNING(fn);
	return vd_neigh_run(comm, &s, &r, false, &how);
}
