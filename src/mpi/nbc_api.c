/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the nonblocking collectives of MPI 4.0 on intracommunicators
 * (Ibarrier ... Iexscan) and Alltoallw.  Each checks its arguments as its
 * blocking form does, builds a schedule (nbc_reduce.c, nbc_move.c) and
 * starts it (nbc_sched.c); the request completes through Wait/Test.
 */
#include <limits.h>
#include <stdlib.h>

#include "nbc.h"

/* What every call checks first; a raised error, or MPI_SUCCESS with *c
 * set and *req reset. */
static int begin(const char *fn, MPI_Comm comm, MPI_Request *req, struct vd_comm **c)
{
	int err;

	*c = NULL;
	VD_MPI_CHECK_RUNNING(fn);
	if (!(*c = vd_coll_comm(comm, fn, &err)))
		return err;
	if (!req)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	*req = MPI_REQUEST_NULL;
	return MPI_SUCCESS;
}

/* The schedule on c, built by the caller, started into *req. */
static int launch(struct vd_nbc *s, MPI_Comm comm, MPI_Request *req, const char *fn)
{
	return vd_mpi_raise(comm, s ? vd_nbc_start(s, comm, req) : MPI_ERR_NO_MEM, fn);
}

#pragma weak MPI_Ibarrier = PMPI_Ibarrier
int PMPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Ibarrier";
	struct vd_comm *c;
	struct vd_nbc *s;
	int err;

	if ((err = begin(fn, comm, request, &c)))
		return err;
	if ((s = vd_nbc_new(c)))
		vd_nbc_barrier(s, c);
	return launch(s, comm, request, fn);
}

#pragma weak MPI_Ibcast = PMPI_Ibcast
int PMPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
	       MPI_Request *request)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Ibcast";
	struct vd_comm *c;
	struct vd_dtype *t;
	struct vd_nbc *s;
	int err;

	if ((err = begin(fn, comm, request, &c)))
		return err;
	if ((err = vd_coll_check_buf(buffer, count, datatype, &t)))
		return vd_mpi_raise(comm, err, fn);
	if (root < 0 || root >= c->size)
		return vd_mpi_raise(comm, MPI_ERR_ROOT, fn);
	if ((s = vd_nbc_new(c)))
		vd_nbc_bcast(s, buffer, count, datatype, root, c);
	return launch(s, comm, request, fn);
}

/* ---- reductions -------------------------------------------------------------------- */

/* What tells Ireduce, Iallreduce, Iscan and Iexscan apart. */
struct nbc_reduction {
	const char *fn;
	bool rooted;                    /* Ireduce: root significant */
	void (*build)(struct vd_nbc *s, const void *in, void *out, int count, MPI_Datatype dt,
		      MPI_Op op, int root, struct vd_comm *c);
};

static int reduce_api(const struct nbc_reduction *r, const void *sendbuf, void *recvbuf,
		      int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
		      MPI_Request *req)
{
	struct vd_comm *c;
	struct vd_dtype *t;
	struct vd_nbc *s;
	int err;

	if ((err = begin(r->fn, comm, req, &c)))
		return err;
	if (r->rooted && (root < 0 || root >= c->size))
		err = MPI_ERR_ROOT;
	else if (r->rooted && sendbuf == MPI_IN_PLACE && c->rank != root)
		err = MPI_ERR_BUFFER;
	else
		err = vd_coll_check_reduce(sendbuf, recvbuf, count,
					   !r->rooted || c->rank == root ? count : -1, dt, op, &t);
	if (err)
		return vd_mpi_raise(comm, err, r->fn);
	if ((s = vd_nbc_new(c)) && count > 0)
		r->build(s, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf, count, dt, op,
			 root, c);
	return launch(s, comm, req, r->fn);
}

static void build_allreduce(struct vd_nbc *s, const void *in, void *out, int count,
			    MPI_Datatype dt, MPI_Op op, int root, struct vd_comm *c)
{
	(void)root;
	vd_nbc_allreduce(s, in, out, count, dt, op, c);
}

static void build_scan(struct vd_nbc *s, const void *in, void *out, int count,
		       MPI_Datatype dt, MPI_Op op, int root, struct vd_comm *c)
{
	(void)root;
	vd_nbc_scan(s, in, out, count, dt, op, c, false);
}

/* Alone, Exscan has nothing to give (rank 0 gets no value). */
static void build_exscan(struct vd_nbc *s, const void *in, void *out, int count,
			 MPI_Datatype dt, MPI_Op op, int root, struct vd_comm *c)
{
	(void)root;
	if (c->size > 1)
		vd_nbc_scan(s, in, out, count, dt, op, c, true);
}

#pragma weak MPI_Ireduce = PMPI_Ireduce
int PMPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		MPI_Op op, int root, MPI_Comm comm, MPI_Request *request)
{
	VD_API_GUARD();
	static const struct nbc_reduction r = { "MPI_Ireduce", true, vd_nbc_reduce };

	return reduce_api(&r, sendbuf, recvbuf, count, datatype, op, root, comm, request);
}

#pragma weak MPI_Iallreduce = PMPI_Iallreduce
int PMPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		   MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
	VD_API_GUARD();
	static const struct nbc_reduction r = { "MPI_Iallreduce", false, build_allreduce };

	return reduce_api(&r, sendbuf, recvbuf, count, datatype, op, -1, comm, request);
}

#pragma weak MPI_Iscan = PMPI_Iscan
int PMPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
	      MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
	VD_API_GUARD();
	static const struct nbc_reduction r = { "MPI_Iscan", false, build_scan };

	return reduce_api(&r, sendbuf, recvbuf, count, datatype, op, -1, comm, request);
}

#pragma weak MPI_Iexscan = PMPI_Iexscan
int PMPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
	VD_API_GUARD();
	static const struct nbc_reduction r = { "MPI_Iexscan", false, build_exscan };

	return reduce_api(&r, sendbuf, recvbuf, count, datatype, op, -1, comm, request);
}

/* Ireduce_scatter(_block) from the checks on: the whole vector is the sum
 * of the counts. */
static int reduce_scatter_api(const char *fn, const void *sendbuf, void *recvbuf,
			      const int *counts, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
			      struct vd_comm *c, MPI_Request *req)
{
	struct vd_dtype *t;
	struct vd_nbc *s;
	long long sum = 0;
	int err;

	for (int i = 0; i < c->size; i++) {
		if (counts[i] < 0)
			return vd_mpi_raise(comm, MPI_ERR_COUNT, fn);
		sum += counts[i];
	}
	if (sum > INT_MAX)
		return vd_mpi_raise(comm, MPI_ERR_COUNT, fn);
	err = vd_coll_check_reduce(sendbuf, recvbuf, (int)sum, counts[c->rank], dt, op, &t);
	if (err)
		return vd_mpi_raise(comm, err, fn);
	if ((s = vd_nbc_new(c)) && sum > 0)
		vd_nbc_reduce_scatter(s, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf,
				      counts, (int)sum, dt, op, c);
	return launch(s, comm, req, fn);
}

#pragma weak MPI_Ireduce_scatter = PMPI_Ireduce_scatter
int PMPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
			MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Ireduce_scatter";
	struct vd_comm *c;
	int err;

	if ((err = begin(fn, comm, request, &c)))
		return err;
	if (!recvcounts)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	return reduce_scatter_api(fn, sendbuf, recvbuf, recvcounts, datatype, op, comm, c,
				  request);
}

#pragma weak MPI_Ireduce_scatter_block = PMPI_Ireduce_scatter_block
int PMPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
			      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
			      MPI_Request *request)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Ireduce_scatter_block";
	struct vd_comm *c;
	int err, *counts;

	if ((err = begin(fn, comm, request, &c)))
		return err;
	if (recvcount < 0)
		return vd_mpi_raise(comm, MPI_ERR_COUNT, fn);
	if (!(counts = malloc((size_t)c->size * sizeof(int))))
		return vd_mpi_raise(comm, MPI_ERR_NO_MEM, fn);
	for (int i = 0; i < c->size; i++)
		counts[i] = recvcount;
	err = reduce_scatter_api(fn, sendbuf, recvbuf, counts, datatype, op, comm, c, request);
	free(counts);
	return err;
}

/* ---- data movement ------------------------------------------------------------------ */

/* What tells the eight movers apart: name, checks, schedule. */
struct nbc_move {
	const char *fn;
	int (*check)(struct vd_coll_side *S, struct vd_coll_side *R, int root,
		     const struct vd_comm *c);
	void (*build)(struct vd_nbc *s, const struct vd_coll_side *S,
		      const struct vd_coll_side *R, int root, struct vd_comm *c);
};

static int move_api(const struct nbc_move *m, struct vd_coll_side S, struct vd_coll_side R,
		    int root, MPI_Comm comm, MPI_Request *req)
{
	struct vd_comm *c;
	struct vd_nbc *s;
	int err;

	if ((err = begin(m->fn, comm, req, &c)))
		return err;
	if ((err = m->check(&S, &R, root, c)))
		return vd_mpi_raise(comm, err, m->fn);
	if ((s = vd_nbc_new(c)))
		m->build(s, &S, &R, root, c);
	return launch(s, comm, req, m->fn);
}

static int gather_args(struct vd_coll_side *S, struct vd_coll_side *R, int root,
		       const struct vd_comm *c)
{
	return vd_coll_rooted_args(R, S, root, c);
}

static int scatter_args(struct vd_coll_side *S, struct vd_coll_side *R, int root,
			const struct vd_comm *c)
{
	return vd_coll_rooted_args(S, R, root, c);
}

static void build_allgather(struct vd_nbc *s, const struct vd_coll_side *S,
			    const struct vd_coll_side *R, int root, struct vd_comm *c)
{
	(void)root;
	vd_nbc_allgather(s, S, R, c);
}

static void build_alltoall(struct vd_nbc *s, const struct vd_coll_side *S,
			   const struct vd_coll_side *R, int root, struct vd_comm *c)
{
	(void)root;
	vd_nbc_alltoall(s, S, R, c);
}

static struct vd_coll_side uniform(const void *buf, int count, MPI_Datatype dt)
{
	return (struct vd_coll_side){ .buf = buf, .count = count, .dt = dt };
}

static struct vd_coll_side vector(const void *buf, const int *counts, const int *displs,
				  MPI_Datatype dt)
{
	return (struct vd_coll_side){ .buf = buf, .vec = true, .counts = counts,
				      .displs = displs, .dt = dt };
}

#pragma weak MPI_Igather = PMPI_Igather
int PMPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
		MPI_Request *request)
{
	VD_API_GUARD();
	static const struct nbc_move m = { "MPI_Igather", gather_args, vd_nbc_gather };

	return move_api(&m, uniform(sendbuf, sendcount, sendtype),
			uniform(recvbuf, recvcount, recvtype), root, comm, request);
}

#pragma weak MPI_Igatherv = PMPI_Igatherv
int PMPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
		 MPI_Comm comm, MPI_Request *request)
{
	VD_API_GUARD();
	static const struct nbc_move m = { "MPI_Igatherv", gather_args, vd_nbc_gather };

	return move_api(&m, uniform(sendbuf, sendcount, sendtype),
			vector(recvbuf, recvcounts, displs, recvtype), root, comm, request);
}

#pragma weak MPI_Iscatter = PMPI_Iscatter
int PMPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
		 MPI_Request *request)
{
	VD_API_GUARD();
	static const struct nbc_move m = { "MPI_Iscatter", scatter_args, vd_nbc_scatter };

	return move_api(&m, uniform(sendbuf, sendcount, sendtype),
			uniform(recvbuf, recvcount, recvtype), root, comm, request);
}

#pragma weak MPI_Iscatterv = PMPI_Iscatterv
int PMPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
		  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
		  int root, MPI_Comm comm, MPI_Request *request)
{
	VD_API_GUARD();
	static const struct nbc_move m = { "MPI_Iscatterv", scatter_args, vd_nbc_scatter };

	return move_api(&m, vector(sendbuf, sendcounts, displs, sendtype),
			uniform(recvbuf, recvcount, recvtype), root, comm, request);
}

#pragma weak MPI_Iallgather = PMPI_Iallgather
int PMPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		   void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
		   MPI_Request *request)
{
	VD_API_GUARD();
	static const struct nbc_move m = { "MPI_Iallgather", vd_coll_all_args, build_allgather };

	return move_api(&m, uniform(sendbuf, sendcount, sendtype),
			uniform(recvbuf, recvcount, recvtype), 0, comm, request);
}

#pragma weak MPI_Iallgatherv = PMPI_Iallgatherv
int PMPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		    void *recvbuf, const int recvcounts[], const int displs[],
		    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
	VD_API_GUARD();
	static const struct nbc_move m = { "MPI_Iallgatherv", vd_coll_all_args,
					   build_allgather };

	return move_api(&m, uniform(sendbuf, sendcount, sendtype),
			vector(recvbuf, recvcounts, displs, recvtype), 0, comm, request);
}

#pragma weak MPI_Ialltoall = PMPI_Ialltoall
int PMPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
	VD_API_GUARD();
	static const struct nbc_move m = { "MPI_Ialltoall", vd_coll_all_args, build_alltoall };

	return move_api(&m, uniform(sendbuf, sendcount, sendtype),
			uniform(recvbuf, recvcount, recvtype), 0, comm, request);
}

#pragma weak MPI_Ialltoallv = PMPI_Ialltoallv
int PMPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
		   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
		   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
		   MPI_Request *request)
{
	VD_API_GUARD();
	static const struct nbc_move m = { "MPI_Ialltoallv", vd_coll_all_args, build_alltoall };

	return move_api(&m, vector(sendbuf, sendcounts, sdispls, sendtype),
			vector(recvbuf, recvcounts, rdispls, recvtype), 0, comm, request);
}

/* ---- Alltoallw ---------------------------------------------------------------------------- */

/* Per-rank counts, displacements and types, and a buffer wherever some
 * piece has data. */
static int check_wside(const struct vd_coll_wside *w, int n)
{
	bool data = false;

	if (!w->counts || !w->displs || !w->dts)
		return MPI_ERR_ARG;
	for (int i = 0; i < n; i++) {
		struct vd_dtype *t = vd_dtype_comm(w->dts[i]);

		if (w->counts[i] < 0)
			return MPI_ERR_COUNT;
		if (!t)
			return MPI_ERR_TYPE;
		data = data || (w->counts[i] > 0 && t->size > 0);
	}
	return !w->buf && data ? MPI_ERR_BUFFER : MPI_SUCCESS;
}

static int alltoallw_args(const struct vd_coll_wside *S, const struct vd_coll_wside *R,
			  const struct vd_comm *c)
{
	int err = check_wside(R, c->size);

	if (!err && S->buf != MPI_IN_PLACE)
		err = check_wside(S, c->size);
	if (!err && S->buf == R->buf && R->buf)
		err = MPI_ERR_BUFFER;   /* that is what MPI_IN_PLACE is for */
	return err;
}

static int alltoallw_start(const char *fn, const struct vd_coll_wside *S,
			   const struct vd_coll_wside *R, MPI_Comm comm, MPI_Request *req)
{
	struct vd_comm *c;
	struct vd_nbc *s;
	int err;

	if ((err = begin(fn, comm, req, &c)))
		return err;
	if ((err = alltoallw_args(S, R, c)))
		return vd_mpi_raise(comm, err, fn);
	if ((s = vd_nbc_new(c)))
		vd_nbc_alltoallw(s, S, R, c);
	return launch(s, comm, req, fn);
}

#pragma weak MPI_Ialltoallw = PMPI_Ialltoallw
int PMPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
		   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
		   const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
		   MPI_Request *request)
{
	VD_API_GUARD();
	struct vd_coll_wside S = { sendbuf, sendcounts, sdispls, sendtypes };
	struct vd_coll_wside R = { recvbuf, recvcounts, rdispls, recvtypes };

	return alltoallw_start("MPI_Ialltoallw", &S, &R, comm, request);
}

/* The blocking form: the same schedule, waited for. */
#pragma weak MPI_Alltoallw = PMPI_Alltoallw
int PMPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
		  const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
		  const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Alltoallw";
	struct vd_coll_wside S = { sendbuf, sendcounts, sdispls, sendtypes };
	struct vd_coll_wside R = { recvbuf, recvcounts, rdispls, recvtypes };
	MPI_Request req;
	int err = alltoallw_start(fn, &S, &R, comm, &req);

	if (err)
		return err;
	return vd_mpi_raise(comm, vd_wait(&req, MPI_STATUS_IGNORE), fn);
}
