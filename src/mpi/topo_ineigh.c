/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the nonblocking neighbourhood collectives --
 * Ineighbor_allgather(v) and Ineighbor_alltoall(v,w).
 *
 * The arguments are checked and cut into one piece per neighbour exactly
 * as the blocking forms do (vd_neigh_run, topo_neigh.c); the pieces then
 * become one round of a nonblocking-collective schedule (nbc_sched.c):
 * every receive, then every send.  The request completes through any
 * Wait or Test, progressed like every other nonblocking collective.
 *
 * A schedule has one tag, so messages between two processes pair up in
 * the order they are posted.  Where a Cartesian dimension has the same
 * process on both sides (size 1 or 2, periodic), what it sends to its +1
 * side must meet our receive of the -1 side, which we post first: so the
 * sends of each dimension go +1 side first, the receives -1 side first.
 */
#include "nbc.h"
#include "topo.h"

/* The out-slot the k-th send uses: Cartesian pairs swapped (see above). */
static int send_slot(const struct vd_neighbours *nb, int k)
{
	return nb->cart ? k ^ 1 : k;
}

/* Where the schedule starts: the communicator's handle and the request. */
struct start_at {
	MPI_Comm comm;
	MPI_Request *req;
};

/* Build the schedule of one exchange and start it (arg: a start_at). */
static int schedule(struct vd_comm *c, const struct vd_neighbours *nb,
		    const struct vd_piece *rp, const struct vd_piece *sp, void *arg)
{
	const struct start_at *at = arg;
	struct vd_nbc *s = vd_nbc_new(c);

	if (!s)
		return MPI_ERR_NO_MEM;
	for (int k = 0; k < nb->nin; k++)
		if (nb->in[k] != MPI_PROC_NULL)
			vd_nbc_recv(s, rp[k].buf, rp[k].count, rp[k].dt, nb->in[k]);
	for (int i = 0; i < nb->nout; i++) {
		int k = send_slot(nb, i);

		if (nb->out[k] != MPI_PROC_NULL)
			vd_nbc_send(s, sp[k].buf, sp[k].count, sp[k].dt, nb->out[k]);
	}
	return vd_nbc_start(s, at->comm, at->req);
}

/* The common part: request checked and reset, then the run. */
static int ineigh_run(MPI_Comm comm, const struct vd_layout *s, const struct vd_layout *r,
		      bool same_block, MPI_Request *req, const char *fn)
{
	struct start_at at = { comm, req };
	struct vd_neigh_how how = { .fn = fn, .deliver = schedule, .arg = &at };

	VD_MPI_CHECK_RUNNING(fn);
	if (!req)
		return vd_mpi_raise(vd_comm_get(comm) ? comm : MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	*req = MPI_REQUEST_NULL;
	return vd_neigh_run(comm, s, r, same_block, &how);
}

#pragma weak MPI_Ineighbor_allgather = PMPI_Ineighbor_allgather
int PMPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			     void *recvbuf, int recvcount, MPI_Datatype recvtype,
			     MPI_Comm comm, MPI_Request *request)
{
	VD_API_GUARD();
	struct vd_layout s = { .buf = sendbuf, .count = sendcount, .dt = sendtype };
	struct vd_layout r = { .buf = recvbuf, .count = recvcount, .dt = recvtype };

	return ineigh_run(comm, &s, &r, true, request, "MPI_Ineighbor_allgather");
}

#pragma weak MPI_Ineighbor_allgatherv = PMPI_Ineighbor_allgatherv
int PMPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			      void *recvbuf, const int recvcounts[], const int displs[],
			      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
	VD_API_GUARD();
	struct vd_layout s = { .buf = sendbuf, .count = sendcount, .dt = sendtype };
	struct vd_layout r = { .form = VD_LAYOUT_VECTOR, .buf = recvbuf, .counts = recvcounts,
			       .displs = displs, .dt = recvtype };

	return ineigh_run(comm, &s, &r, true, request, "MPI_Ineighbor_allgatherv");
}

#pragma weak MPI_Ineighbor_alltoall = PMPI_Ineighbor_alltoall
int PMPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			    void *recvbuf, int recvcount, MPI_Datatype recvtype,
			    MPI_Comm comm, MPI_Request *request)
{
	VD_API_GUARD();
	struct vd_layout s = { .buf = sendbuf, .count = sendcount, .dt = sendtype };
	struct vd_layout r = { .buf = recvbuf, .count = recvcount, .dt = recvtype };

	return ineigh_run(comm, &s, &r, false, request, "MPI_Ineighbor_alltoall");
}

#pragma weak MPI_Ineighbor_alltoallv = PMPI_Ineighbor_alltoallv
int PMPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
			     MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
			     const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
			     MPI_Request *request)
{
	VD_API_GUARD();
	struct vd_layout s = { .form = VD_LAYOUT_VECTOR, .buf = sendbuf, .counts = sendcounts,
			       .displs = sdispls, .dt = sendtype };
	struct vd_layout r = { .form = VD_LAYOUT_VECTOR, .buf = recvbuf, .counts = recvcounts,
			       .displs = rdispls, .dt = recvtype };

	return ineigh_run(comm, &s, &r, false, request, "MPI_Ineighbor_alltoallv");
}

#pragma weak MPI_Ineighbor_alltoallw = PMPI_Ineighbor_alltoallw
int PMPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[],
			     const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
			     void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
			     const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request)
{
	VD_API_GUARD();
	struct vd_layout s = { .form = VD_LAYOUT_W, .buf = sendbuf, .counts = sendcounts,
			       .bdispls = sdispls, .types = sendtypes };
	struct vd_layout r = { .form = VD_LAYOUT_W, .buf = recvbuf, .counts = recvcounts,
			       .bdispls = rdispls, .types = recvtypes };

	return ineigh_run(comm, &s, &r, false, request, "MPI_Ineighbor_alltoallw");
}
