/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the collectives that move data without reducing it --
 * Gather(v), Scatter(v), Allgather(v), Alltoall(v).
 *
 * Algorithms:
 *  - Gather / Scatter: binomial trees over ranks relative to the root;
 *    inner nodes carry their subtree's pieces packed (MPI_BYTE) in a
 *    temporary buffer, leaves send / receive their own buffer directly.
 *  - Gatherv / Scatterv: linear at the root (all receives / sends posted
 *    at once).  With per-rank counts a tree would have to ship the counts
 *    too; the root's n - 1 transfers are what it must move anyway.
 *  - Allgather: recursive doubling for a power-of-two size, a ring
 *    otherwise; Allgatherv: ring.
 *  - Alltoall(v): pairwise exchange, n - 1 rounds: partner rank ^ i for a
 *    power-of-two size, else send to rank + i while receiving from
 *    rank - i.  In place: a round-robin tournament, each round swapping
 *    one block with one partner through a temporary buffer.
 * Packed temporaries count bytes in an int: a subtree carrying more than
 * INT_MAX bytes fails with MPI_ERR_COUNT.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "typeop.h"

/* Ranks in the binomial subtree of relative rank vr (vr 0: all n). */
static int subtree(int vr, int n)
{
	int low = vr ? (vr & -vr) : n;

	return low < n - vr ? low : n - vr;
}

static bool is_pof2(int n)
{
	return (n & (n - 1)) == 0;
}

static char *at(const void *buf, long idx, const struct vd_dtype *t)
{
	return (char *)buf + idx * t->extent;
}

/* ---- Gather ------------------------------------------------------------------ */

static int gather_tree(const void *sbuf, int sc, MPI_Datatype sdt, void *rbuf, int rc,
		       MPI_Datatype rdt, int root, struct vd_comm *c)
{
	struct vd_dtype *st = vd_dtype_get(sdt), *rt = vd_dtype_get(rdt);
	int n = c->size, me = c->rank, vr = (me - root + n) % n, sub = subtree(vr, n);
	int low = vr ? (vr & -vr) : n, nreq = 0, err = MPI_SUCCESS;
	size_t blk = me == root ? (size_t)rc * (size_t)rt->size : (size_t)sc * (size_t)st->size;
	MPI_Request req[32];
	bool direct = me == root && root == 0 && rt->contig;
	char *tmp;

	if (me == root && sbuf != MPI_IN_PLACE &&
	    (err = vd_coll_local_copy(sbuf, sc, st, at(rbuf, (long)root * rc, rt), rc, rt)))
		return err;
	if (n == 1)
		return MPI_SUCCESS;
	if (sub == 1)                   /* a leaf: its own piece only */
		return vd_coll_send(sbuf, sc, sdt, (vr - low + root) % n, c);
	if (blk * (size_t)sub > INT_MAX)
		return MPI_ERR_COUNT;
	/* Root 0 with a contiguous type: the pieces land in place. */
	tmp = direct ? rbuf : malloc(blk * (size_t)sub);
	if (!tmp)
		return MPI_ERR_NO_MEM;
	if (me != root)
		vd_dtype_pack(st, sbuf, sc, tmp);
	for (int mask = 1; mask < low && vr + mask < n && !err; mask <<= 1)
		err = vd_coll_irecv(tmp + mask * blk, (int)(subtree(vr + mask, n) * blk), MPI_BYTE,
				    (vr + mask + root) % n, c, &req[nreq++]);
	if (!err)
		err = vd_coll_waitall(nreq, req);
	else
		vd_coll_waitall(nreq, req);
	if (!err && me != root)
		err = vd_coll_send(tmp, (int)(sub * blk), MPI_BYTE, (vr - low + root) % n, c);
	for (int r = 1; !err && !direct && me == root && r < n; r++)
		vd_dtype_unpack(rt, tmp + r * blk, blk, at(rbuf, (long)((r + root) % n) * rc, rt));
	if (!direct)
		free(tmp);
	return err;
}

/* Argument checks shared by the rooted collectives, Gather(v) and
 * Scatter(v).  root_err is the root's check of the buffer only the root
 * uses (made by the caller, at the root only); `aliased` whether that
 * buffer is also the other one; `leaf` is the buffer every rank passes,
 * which only the root may give as MPI_IN_PLACE. */
static int rooted_args(struct vd_comm *c, int root, int root_err, bool aliased,
		       const void *leaf, int lcount, MPI_Datatype ltype)
{
	struct vd_dtype *t;

	if (root < 0 || root >= c->size)
		return MPI_ERR_ROOT;
	if (c->rank == root) {
		if (root_err)
			return root_err;
		if (aliased)
			return MPI_ERR_BUFFER;
	} else if (leaf == MPI_IN_PLACE) {
		return MPI_ERR_BUFFER;
	}
	if (leaf != MPI_IN_PLACE)
		return vd_coll_check_buf(leaf, lcount, ltype, &t);
	return MPI_SUCCESS;
}

static bool is_root(const struct vd_comm *c, int root)
{
	return root >= 0 && root < c->size && c->rank == root;
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
	       int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	static const char fn[] = "MPI_Gather";
	struct vd_comm *c;
	struct vd_dtype *t;
	int err, root_err = MPI_SUCCESS;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_coll_comm(comm, fn, &err)))
		return err;
	if (is_root(c, root))
		root_err = vd_coll_check_buf(recvbuf, recvcount, recvtype, &t);
	err = rooted_args(c, root, root_err, sendbuf == recvbuf && recvcount > 0, sendbuf, sendcount, sendtype);
	if (err)
		return vd_mpi_raise(comm, err, fn);
	return vd_mpi_raise(comm, gather_tree(sendbuf, sendcount, sendtype, recvbuf, recvcount,
					      recvtype, root, c), fn);
}

/* ---- Gatherv: linear --------------------------------------------------------------- */

static int gatherv_linear(const void *sbuf, int sc, MPI_Datatype sdt, void *rbuf,
			  const int *rcounts, const int *displs, MPI_Datatype rdt, int root,
			  struct vd_comm *c)
{
	struct vd_dtype *st = vd_dtype_get(sdt), *rt = vd_dtype_get(rdt);
	int n = c->size, me = c->rank, err = MPI_SUCCESS, nreq = 0;
	MPI_Request *req;

	if (me != root)
		return vd_coll_send(sbuf, sc, sdt, root, c);
	if (sbuf != MPI_IN_PLACE &&
	    (err = vd_coll_local_copy(sbuf, sc, st, at(rbuf, displs[me], rt), rcounts[me], rt)))
		return err;
	if (!(req = malloc((size_t)n * sizeof(*req))))
		return MPI_ERR_NO_MEM;
	for (int i = 0; i < n && !err; i++)
		if (i != me)
			err = vd_coll_irecv(at(rbuf, displs[i], rt), rcounts[i], rdt, i, c,
					    &req[nreq++]);
	err = err ? (vd_coll_waitall(nreq, req), err) : vd_coll_waitall(nreq, req);
	free(req);
	return err;
}

/* The vector side of a v-collective: counts, displacements, type, and a
 * buffer wherever some count is not zero. */
static int check_vec(const void *buf, const int *counts, const int *displs,
		     MPI_Datatype dt, int n, struct vd_dtype **t)
{
	bool data = false;

	if (!counts || !displs)
		return MPI_ERR_ARG;
	for (int i = 0; i < n; i++) {
		if (counts[i] < 0)
			return MPI_ERR_COUNT;
		data = data || counts[i] > 0;
	}
	if (!(*t = vd_dtype_comm(dt)))
		return MPI_ERR_TYPE;
	return !buf && data && (*t)->size > 0 ? MPI_ERR_BUFFER : MPI_SUCCESS;
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		const int recvcounts[], const int displs[], MPI_Datatype recvtype,
		int root, MPI_Comm comm)
{
	static const char fn[] = "MPI_Gatherv";
	struct vd_comm *c;
	struct vd_dtype *t;
	int err, root_err = MPI_SUCCESS;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_coll_comm(comm, fn, &err)))
		return err;
	if (is_root(c, root))
		root_err = check_vec(recvbuf, recvcounts, displs, recvtype, c->size, &t);
	err = rooted_args(c, root, root_err, sendbuf == recvbuf, sendbuf, sendcount, sendtype);
	if (err)
		return vd_mpi_raise(comm, err, fn);
	return vd_mpi_raise(comm, gatherv_linear(sendbuf, sendcount, sendtype, recvbuf,
						 recvcounts, displs, recvtype, root, c), fn);
}

/* ---- Scatter ------------------------------------------------------------------------ */

int vd_coll_scatter(const void *sbuf, int sc, MPI_Datatype sdt, void *rbuf, int rc,
		    MPI_Datatype rdt, int root, struct vd_comm *c)
{
	struct vd_dtype *st = vd_dtype_get(sdt), *rt = vd_dtype_get(rdt);
	int n = c->size, me = c->rank, vr = (me - root + n) % n, sub = subtree(vr, n);
	int low = vr ? (vr & -vr) : n, nreq = 0, top = 1, err = MPI_SUCCESS;
	size_t blk = me == root ? (size_t)sc * (size_t)st->size : (size_t)rc * (size_t)rt->size;
	bool direct = me == root && root == 0 && st->contig;
	MPI_Request req[32];
	char *tmp;

	if (me == root && rbuf != MPI_IN_PLACE &&
	    (err = vd_coll_local_copy(at(sbuf, (long)root * sc, st), sc, st, rbuf, rc, rt)))
		return err;
	if (n == 1)
		return MPI_SUCCESS;
	if (sub == 1)                   /* a leaf: its own piece only */
		return vd_coll_recv(rbuf, rc, rdt, (vr - low + root) % n, c);
	if (blk * (size_t)sub > INT_MAX)
		return MPI_ERR_COUNT;
	/* Root 0 with a contiguous type sends straight from sbuf. */
	tmp = direct ? (char *)sbuf : malloc(blk * (size_t)sub);
	if (!tmp)
		return MPI_ERR_NO_MEM;
	if (me == root && !direct)
		for (int r = 1; r < n; r++)
			vd_dtype_pack(st, at(sbuf, (long)((r + root) % n) * sc, st), sc,
				      tmp + r * blk);
	if (me != root)
		err = vd_coll_recv(tmp, (int)(sub * blk), MPI_BYTE, (vr - low + root) % n, c);
	/* Children vr + mask for the masks below `top`; largest subtree
	 * first: it has the most forwarding left to do. */
	while (top < low && vr + top < n)
		top <<= 1;
	for (int mask = top >> 1; mask > 0 && !err; mask >>= 1)
		err = vd_coll_isend(tmp + mask * blk, (int)(subtree(vr + mask, n) * blk),
				    MPI_BYTE, (vr + mask + root) % n, c, &req[nreq++]);
	err = err ? (vd_coll_waitall(nreq, req), err) : vd_coll_waitall(nreq, req);
	if (!err && me != root)
		vd_dtype_unpack(rt, tmp, blk, rbuf);
	if (!direct)
		free(tmp);
	return err;
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	static const char fn[] = "MPI_Scatter";
	struct vd_comm *c;
	struct vd_dtype *t;
	int err, root_err = MPI_SUCCESS;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_coll_comm(comm, fn, &err)))
		return err;
	if (is_root(c, root))
		root_err = vd_coll_check_buf(sendbuf, sendcount, sendtype, &t);
	err = rooted_args(c, root, root_err, sendbuf == recvbuf && sendcount > 0, recvbuf, recvcount, recvtype);
	if (err)
		return vd_mpi_raise(comm, err, fn);
	return vd_mpi_raise(comm, vd_coll_scatter(sendbuf, sendcount, sendtype, recvbuf,
						  recvcount, recvtype, root, c), fn);
}

/* ---- Scatterv: linear ------------------------------------------------------------------ */

int vd_coll_scatterv(const void *sbuf, const int *scounts, const int *displs,
		     MPI_Datatype sdt, void *rbuf, int rc, MPI_Datatype rdt, int root,
		     struct vd_comm *c)
{
	struct vd_dtype *st = vd_dtype_get(sdt), *rt = vd_dtype_get(rdt);
	int n = c->size, me = c->rank, err = MPI_SUCCESS, nreq = 0;
	MPI_Request *req;

	if (me != root)
		return vd_coll_recv(rbuf, rc, rdt, root, c);
	if (rbuf != MPI_IN_PLACE &&
	    (err = vd_coll_local_copy(at(sbuf, displs[me], st), scounts[me], st, rbuf, rc, rt)))
		return err;
	if (!(req = malloc((size_t)n * sizeof(*req))))
		return MPI_ERR_NO_MEM;
	for (int i = 0; i < n && !err; i++)
		if (i != me)
			err = vd_coll_isend(at(sbuf, displs[i], st), scounts[i], sdt, i, c,
					    &req[nreq++]);
	err = err ? (vd_coll_waitall(nreq, req), err) : vd_coll_waitall(nreq, req);
	free(req);
	return err;
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
		 MPI_Datatype sendtype, void *recvbuf, int recvcount,
		 MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	static const char fn[] = "MPI_Scatterv";
	struct vd_comm *c;
	struct vd_dtype *t;
	int err, root_err = MPI_SUCCESS;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_coll_comm(comm, fn, &err)))
		return err;
	if (is_root(c, root))
		root_err = check_vec(sendbuf, sendcounts, displs, sendtype, c->size, &t);
	err = rooted_args(c, root, root_err, sendbuf == recvbuf, recvbuf, recvcount, recvtype);
	if (err)
		return vd_mpi_raise(comm, err, fn);
	return vd_mpi_raise(comm, vd_coll_scatterv(sendbuf, sendcounts, displs, sendtype,
						   recvbuf, recvcount, recvtype, root, c), fn);
}

/* ---- Allgather(v) ------------------------------------------------------------------------ */

/* Ring: in step i pass on the piece received in step i - 1 (first our
 * own), to the right, while taking the next from the left. */
static int allgather_ring(void *rbuf, const int *counts, const int *displs, int rc,
			  MPI_Datatype rdt, struct vd_comm *c)
{
	struct vd_dtype *rt = vd_dtype_get(rdt);
	int n = c->size, me = c->rank, err = MPI_SUCCESS;

	for (int i = 0; i < n - 1 && !err; i++) {
		int sb = (me - i + n) % n, rb = (me - i - 1 + n) % n;
		long so = displs ? displs[sb] : (long)sb * rc, ro = displs ? displs[rb] : (long)rb * rc;

		err = vd_coll_sendrecv(at(rbuf, so, rt), counts ? counts[sb] : rc, rdt,
				       (me + 1) % n, at(rbuf, ro, rt), counts ? counts[rb] : rc,
				       rdt, (me - 1 + n) % n, c);
	}
	return err;
}

/* Power of two: in round `mask` swap the aligned block of `mask` pieces
 * we hold for the partner's. */
static int allgather_rd(void *rbuf, int rc, MPI_Datatype rdt, struct vd_comm *c)
{
	struct vd_dtype *rt = vd_dtype_get(rdt);
	int n = c->size, me = c->rank, err = MPI_SUCCESS;

	for (int mask = 1; mask < n && !err; mask <<= 1) {
		int partner = me ^ mask;
		long mine = (long)(me & ~(mask - 1)) * rc, theirs = (long)(partner & ~(mask - 1)) * rc;

		err = vd_coll_sendrecv(at(rbuf, mine, rt), mask * rc, rdt, partner,
				       at(rbuf, theirs, rt), mask * rc, rdt, partner, c);
	}
	return err;
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		  void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	static const char fn[] = "MPI_Allgather";
	struct vd_comm *c;
	struct vd_dtype *st, *rt;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_coll_comm(comm, fn, &err)))
		return err;
	if ((err = vd_coll_check_buf(recvbuf, recvcount, recvtype, &rt)) ||
	    (sendbuf != MPI_IN_PLACE &&
	     (err = vd_coll_check_buf(sendbuf, sendcount, sendtype, &st))))
		return vd_mpi_raise(comm, err, fn);
	if (sendbuf == recvbuf && recvcount > 0)
		return vd_mpi_raise(comm, MPI_ERR_BUFFER, fn);
	if (sendbuf != MPI_IN_PLACE &&
	    (err = vd_coll_local_copy(sendbuf, sendcount, st,
				      at(recvbuf, (long)c->rank * recvcount, rt), recvcount, rt)))
		return vd_mpi_raise(comm, err, fn);
	if (c->size == 1)
		return MPI_SUCCESS;
	if (is_pof2(c->size) && (long long)c->size * recvcount <= INT_MAX)
		err = allgather_rd(recvbuf, recvcount, recvtype, c);
	else
		err = allgather_ring(recvbuf, NULL, NULL, recvcount, recvtype, c);
	return vd_mpi_raise(comm, err, fn);
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		   void *recvbuf, const int recvcounts[], const int displs[],
		   MPI_Datatype recvtype, MPI_Comm comm)
{
	static const char fn[] = "MPI_Allgatherv";
	struct vd_comm *c;
	struct vd_dtype *st, *rt;
	int err, me;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_coll_comm(comm, fn, &err)))
		return err;
	me = c->rank;
	if ((err = check_vec(recvbuf, recvcounts, displs, recvtype, c->size, &rt)) ||
	    (sendbuf != MPI_IN_PLACE &&
	     (err = vd_coll_check_buf(sendbuf, sendcount, sendtype, &st))))
		return vd_mpi_raise(comm, err, fn);
	if (sendbuf == recvbuf)
		return vd_mpi_raise(comm, MPI_ERR_BUFFER, fn);
	if (sendbuf != MPI_IN_PLACE &&
	    (err = vd_coll_local_copy(sendbuf, sendcount, st, at(recvbuf, displs[me], rt),
				      recvcounts[me], rt)))
		return vd_mpi_raise(comm, err, fn);
	return vd_mpi_raise(comm, allgather_ring(recvbuf, recvcounts, displs, 0, recvtype, c),
			    fn);
}

/* ---- Alltoall(v) ---------------------------------------------------------------------------- */

/* One side of an all-to-all: where piece i is and how big. */
struct a2a_side {
	const void *buf;
	const int *counts, *displs;     /* NULL: uniform `count` */
	int count;
	MPI_Datatype dt;
	struct vd_dtype *t;
};

static char *a2a_at(const struct a2a_side *s, int i)
{
	return at(s->buf, s->displs ? s->displs[i] : (long)i * s->count, s->t);
}

static int a2a_count(const struct a2a_side *s, int i)
{
	return s->counts ? s->counts[i] : s->count;
}

static int alltoall_pairwise(const struct a2a_side *S, const struct a2a_side *R,
			     struct vd_comm *c)
{
	int n = c->size, me = c->rank;
	int err = vd_coll_local_copy(a2a_at(S, me), a2a_count(S, me), S->t, a2a_at(R, me),
				     a2a_count(R, me), R->t);

	for (int i = 1; i < n && !err; i++) {
		int dst = is_pof2(n) ? me ^ i : (me + i) % n;
		int src = is_pof2(n) ? me ^ i : (me - i + n) % n;

		err = vd_coll_sendrecv(a2a_at(S, dst), a2a_count(S, dst), S->dt, dst,
				       a2a_at(R, src), a2a_count(R, src), R->dt, src, c);
	}
	return err;
}

/* In place: the circle method pairs every two ranks exactly once in
 * N - 1 rounds (N = n rounded up to even; a partner >= n is a bye), and
 * each pair swaps the blocks meant for each other. */
static int alltoall_inplace(const struct a2a_side *R, struct vd_comm *c)
{
	int n = c->size, me = c->rank, N = n + (n & 1), maxc = 0, err = MPI_SUCCESS;
	void *mem;
	char *tmp;

	for (int i = 0; i < n; i++)
		maxc = a2a_count(R, i) > maxc ? a2a_count(R, i) : maxc;
	if (!(tmp = vd_dtype_scratch(R->t, maxc, &mem)))
		return MPI_ERR_NO_MEM;
	for (int r = 0; r < N - 1 && !err; r++) {
		int p = me == N - 1 ? r : me == r ? N - 1 : ((2 * r - me) % (N - 1) + N - 1) % (N - 1);

		if (p >= n)
			continue;
		vd_dtype_copy(R->t, a2a_at(R, p), tmp, a2a_count(R, p));
		err = vd_coll_sendrecv(tmp, a2a_count(R, p), R->dt, p, a2a_at(R, p),
				       a2a_count(R, p), R->dt, p, c);
	}
	free(mem);
	return err;
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	static const char fn[] = "MPI_Alltoall";
	struct a2a_side S = { sendbuf, NULL, NULL, sendcount, sendtype, NULL };
	struct a2a_side R = { recvbuf, NULL, NULL, recvcount, recvtype, NULL };
	struct vd_comm *c;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_coll_comm(comm, fn, &err)))
		return err;
	if ((err = vd_coll_check_buf(recvbuf, recvcount, recvtype, &R.t)) ||
	    (sendbuf != MPI_IN_PLACE &&
	     (err = vd_coll_check_buf(sendbuf, sendcount, sendtype, &S.t))))
		return vd_mpi_raise(comm, err, fn);
	if (sendbuf == recvbuf && recvcount > 0)
		return vd_mpi_raise(comm, MPI_ERR_BUFFER, fn);
	err = sendbuf == MPI_IN_PLACE ? alltoall_inplace(&R, c) : alltoall_pairwise(&S, &R, c);
	return vd_mpi_raise(comm, err, fn);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
		  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
		  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
	static const char fn[] = "MPI_Alltoallv";
	struct a2a_side S = { sendbuf, sendcounts, sdispls, 0, sendtype, NULL };
	struct a2a_side R = { recvbuf, recvcounts, rdispls, 0, recvtype, NULL };
	struct vd_comm *c;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_coll_comm(comm, fn, &err)))
		return err;
	if ((err = check_vec(recvbuf, recvcounts, rdispls, recvtype, c->size, &R.t)) ||
	    (sendbuf != MPI_IN_PLACE &&
	     (err = check_vec(sendbuf, sendcounts, sdispls, sendtype, c->size, &S.t))))
		return vd_mpi_raise(comm, err, fn);
	if (sendbuf == recvbuf)
		return vd_mpi_raise(comm, MPI_ERR_BUFFER, fn);
	err = sendbuf == MPI_IN_PLACE ? alltoall_inplace(&R, c) : alltoall_pairwise(&S, &R, c);
	return vd_mpi_raise(comm, err, fn);
}
