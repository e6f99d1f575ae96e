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
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll_shm.h"
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


/* ---- pieces ------------------------------------------------------------------ */

/* Where rank i's piece of side s lies, and how many elements. */
static char *side_at(const struct vd_coll_side *s, int i)
{
	return at(s->buf, s->vec ? s->displs[i] : (long)i * s->count, s->t);
}

static int side_count(const struct vd_coll_side *s, int i)
{
	return s->vec ? s->counts[i] : s->count;
}

static size_t piece_bytes(const struct vd_coll_side *s)
{
	return (size_t)s->count * (size_t)s->t->size;
}

/* Gather(v) moves the pieces up to the root, Scatter(v) down from it.  A
 * rank posts a transfer with a rank below it (a child in the tree, any
 * other rank for the root of the linear forms): a receive going up, a
 * send going down. */
static int post_below(bool up, const void *buf, int count, MPI_Datatype dt, int peer,
		      struct vd_comm *c, MPI_Request *req)
{
	return up ? vd_coll_irecv((void *)buf, count, dt, peer, c, req)
		  : vd_coll_isend(buf, count, dt, peer, c, req);
}

/* Wait for the nreq requests posted, also after posting failed with err:
 * the first error. */
static int wait_posted(int err, int nreq, MPI_Request *req)
{
	int werr = vd_coll_waitall(nreq, req);

	return err ? err : werr;
}

/* The root's own piece moves locally between its slot in V (the root's
 * pieces) and L (its own buffer, unless MPI_IN_PLACE). */
static int own_piece(const struct vd_coll_side *V, const struct vd_coll_side *L, int root,
		     bool up)
{
	if (L->buf == MPI_IN_PLACE)
		return MPI_SUCCESS;
	if (up)
		return vd_coll_local_copy(L->buf, L->count, L->t, side_at(V, root),
					  side_count(V, root), V->t);
	return vd_coll_local_copy(side_at(V, root), side_count(V, root), V->t, (void *)L->buf,
				  L->count, L->t);
}

/* ---- Gather / Scatter: binomial tree ------------------------------------------ */

/* This rank's place in the tree over ranks relative to the root (vr):
 * its subtree spans `sub` ranks, its children are vr + mask for the masks
 * below `low`. */
struct btree {
	int n, root, vr, sub, low, parent;
	size_t blk;                     /* bytes of one rank's piece */
	bool direct;                    /* the root's pieces travel from / to
					 * the user's buffer as they are */
};

/* What every rank of the tree does first: find its place, and at the
 * root move the root's own piece (V: the pieces, L: its own buffer). */
static int btree_start(struct btree *T, const struct vd_coll_side *V,
		       const struct vd_coll_side *L, int root, bool up, struct vd_comm *c)
{
	bool at_root = c->rank == root;

	T->n = c->size;
	T->root = root;
	T->vr = (c->rank - root + c->size) % c->size;
	T->sub = subtree(T->vr, T->n);
	T->low = T->vr ? (T->vr & -T->vr) : T->n;
	T->parent = (T->vr - T->low + root) % T->n;
	T->blk = piece_bytes(at_root ? V : L);
	/* Root 0 with a contiguous type: the pieces are in rank order. */
	T->direct = at_root && root == 0 && V->t->contig;
	return at_root ? own_piece(V, L, root, up) : MPI_SUCCESS;
}

/* The subtree's pieces packed, rank vr + i's at i * blk: the user's
 * buffer when direct, else malloc'd. */
static int btree_buf(const struct btree *T, const void *user, char **tmp)
{
	if (T->blk * (size_t)T->sub > INT_MAX)
		return MPI_ERR_COUNT;
	*tmp = T->direct ? (char *)user : malloc(T->blk * (size_t)T->sub);
	return *tmp ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* Move every child's subtree of pieces, all transfers at once; going
 * down, the largest subtree first: it has the most forwarding left. */
static int btree_children(const struct btree *T, char *tmp, bool up, struct vd_comm *c)
{
	MPI_Request req[32];
	int nkids = 0, nreq = 0, err = MPI_SUCCESS;

	while ((1 << nkids) < T->low && T->vr + (1 << nkids) < T->n)
		nkids++;
	for (int k = 0; k < nkids && !err; k++) {
		int mask = 1 << (up ? k : nkids - 1 - k), kid = T->vr + mask;

		err = post_below(up, tmp + mask * T->blk, (int)(subtree(kid, T->n) * T->blk),
				 MPI_BYTE, (kid + T->root) % T->n, c, &req[nreq++]);
	}
	return wait_posted(err, nreq, req);
}

/* At the root, the other ranks' pieces between V and tmp: unpacked after
 * a Gather, packed before a Scatter. */
static void btree_root_pieces(const struct btree *T, const struct vd_coll_side *V, char *tmp,
			      bool up)
{
	for (int r = 1; r < T->n && !T->direct; r++) {
		char *piece = side_at(V, (r + T->root) % T->n);

		if (up)
			vd_dtype_unpack(V->t, tmp + r * T->blk, T->blk, piece);
		else
			vd_dtype_pack(V->t, piece, V->count, tmp + r * T->blk);
	}
}

/* An inner node of a Gather: its own piece and its children's go up to
 * the parent in one message; the root unpacks them instead. */
static int gather_node(const struct btree *T, const struct vd_coll_side *V,
		       const struct vd_coll_side *L, char *tmp, struct vd_comm *c)
{
	int err;

	if (T->vr)
		vd_dtype_pack(L->t, L->buf, L->count, tmp);
	err = btree_children(T, tmp, true, c);
	if (!err && T->vr)
		err = vd_coll_send(tmp, (int)(T->sub * T->blk), MPI_BYTE, T->parent, c);
	if (!err && !T->vr)
		btree_root_pieces(T, V, tmp, true);
	return err;
}

/* An inner node of a Scatter: the subtree's pieces come from the parent
 * (the root packs them), go on to the children, and one stays. */
static int scatter_node(const struct btree *T, const struct vd_coll_side *V,
			const struct vd_coll_side *L, char *tmp, struct vd_comm *c)
{
	int err = MPI_SUCCESS;

	if (!T->vr)
		btree_root_pieces(T, V, tmp, false);
	else
		err = vd_coll_recv(tmp, (int)(T->sub * T->blk), MPI_BYTE, T->parent, c);
	if (!err)
		err = btree_children(T, tmp, false, c);
	if (!err && T->vr)
		vd_dtype_unpack(L->t, tmp, T->blk, (void *)L->buf);
	return err;
}

/* Gather (up) or Scatter: V holds the pieces at the root, L is this
 * rank's own. */
static int rooted_tree(const struct vd_coll_side *V, const struct vd_coll_side *L, int root,
		       bool up, struct vd_comm *c)
{
	struct btree T;
	char *tmp;
	int err;

	if ((err = btree_start(&T, V, L, root, up, c)) || c->size == 1)
		return err;
	if (T.sub == 1)                 /* a leaf: its own piece only */
		return up ? vd_coll_send(L->buf, L->count, L->dt, T.parent, c)
			  : vd_coll_recv((void *)L->buf, L->count, L->dt, T.parent, c);
	if ((err = btree_buf(&T, V->buf, &tmp)))
		return err;
	err = up ? gather_node(&T, V, L, tmp, c) : scatter_node(&T, V, L, tmp, c);
	if (!T.direct)
		free(tmp);
	return err;
}

static int gather_tree(const struct vd_coll_side *S, const struct vd_coll_side *R, int root,
		       struct vd_comm *c)
{
	return rooted_tree(R, S, root, true, c);
}

int vd_coll_scatter(const struct vd_coll_side *S, const struct vd_coll_side *R, int root,
		    struct vd_comm *c)
{
	return rooted_tree(S, R, root, false, c);
}

/* ---- Gatherv / Scatterv: linear ------------------------------------------------- */

/* The root moves every other rank's piece of V itself, all transfers
 * posted at once; the others move their L with it. */
static int rooted_linear(const struct vd_coll_side *V, const struct vd_coll_side *L, int root,
			 bool up, struct vd_comm *c)
{
	int n = c->size, me = c->rank, err, nreq = 0;
	MPI_Request *req;

	if (me != root)
		return up ? vd_coll_send(L->buf, L->count, L->dt, root, c)
			  : vd_coll_recv((void *)L->buf, L->count, L->dt, root, c);
	if ((err = own_piece(V, L, root, up)))
		return err;
	if (!(req = malloc((size_t)n * sizeof(*req))))
		return MPI_ERR_NO_MEM;
	for (int i = 0; i < n && !err; i++)
		if (i != me)
			err = post_below(up, side_at(V, i), side_count(V, i), V->dt, i, c,
					 &req[nreq++]);
	err = wait_posted(err, nreq, req);
	free(req);
	return err;
}

static int gatherv_linear(const struct vd_coll_side *S, const struct vd_coll_side *R,
			  int root, struct vd_comm *c)
{
	return rooted_linear(R, S, root, true, c);
}

int vd_coll_scatterv(const struct vd_coll_side *S, const struct vd_coll_side *R, int root,
		     struct vd_comm *c)
{
	return rooted_linear(S, R, root, false, c);
}

/* ---- Allgather(v) ------------------------------------------------------------------ */

/* Ring: in step i pass on the piece received in step i - 1 (first our
 * own), to the right, while taking the next from the left. */
static int allgather_ring(const struct vd_coll_side *R, struct vd_comm *c)
{
	int n = c->size, me = c->rank, err = MPI_SUCCESS;

	for (int i = 0; i < n - 1 && !err; i++) {
		int sb = (me - i + n) % n, rb = (me - i - 1 + n) % n;

		err = vd_coll_sendrecv(side_at(R, sb), side_count(R, sb), R->dt, (me + 1) % n,
				       side_at(R, rb), side_count(R, rb), R->dt, (me - 1 + n) % n,
				       c);
	}
	return err;
}

/* Power of two: in round `mask` swap the aligned block of `mask` pieces
 * we hold for the partner's. */
static int allgather_rd(const struct vd_coll_side *R, struct vd_comm *c)
{
	int n = c->size, me = c->rank, rc = R->count, err = MPI_SUCCESS;

	for (int mask = 1; mask < n && !err; mask <<= 1) {
		int partner = me ^ mask;
		long mine = (long)(me & ~(mask - 1)) * rc, theirs = (long)(partner & ~(mask - 1)) * rc;

		err = vd_coll_sendrecv(at(R->buf, mine, R->t), mask * rc, R->dt, partner,
				       at(R->buf, theirs, R->t), mask * rc, R->dt, partner, c);
	}
	return err;
}

/* Every piece already in place in R: the flat algorithms. */
int vd_coll_allgather_flat(const struct vd_coll_side *R, struct vd_comm *c)
{
	if (c->size == 1)
		return MPI_SUCCESS;
	if (!R->vec && is_pof2(c->size) && (long long)c->size * R->count <= INT_MAX)
		return allgather_rd(R, c);
	return allgather_ring(R, c);
}

/* This rank's piece as contiguous bytes outside R (its send buffer), or
 * NULL: others that read it there find lines its last copy did not just
 * write. */
static const void *own_bytes(const struct vd_coll_side *S, const struct vd_coll_side *R)
{
	if (S->buf == MPI_IN_PLACE || !S->t->contig ||
	    (size_t)S->count * (size_t)S->t->size != (size_t)R->count * (size_t)R->t->size)
		return NULL;
	return S->buf;
}

/* An Allgather through a node's segment begins with a signed phase:
 * one refused there fails the others too, instead of leaving them
 * waiting.  Without the segment they wait (as with other MPIs), unless
 * the error handler ends the job. */
static void allgather_refused(const struct vd_coll_side *S, const struct vd_coll_side *R,
			      struct vd_comm *c)
{
	(void)S;                        /* struct move_coll's refuse */
	if (!R->vec)
		vd_shm_refuse_turn(c);
}

static int allgather(const struct vd_coll_side *S, const struct vd_coll_side *R, int root,
		     struct vd_comm *c)
{
	struct vd_hier *h;
	struct vd_shm *s;
	int me = c->rank, err;

	(void)root;
	err = S->buf == MPI_IN_PLACE ? 0 : vd_coll_local_copy(S->buf, S->count, S->t,
							      side_at(R, me), side_count(R, me),
							      R->t);
	s = R->vec ? NULL : vd_shm_of(c);
	/* Its own piece shorter than the others expect (a longer one failed
	 * the copy): only the segment's path can still tell everyone. */
	if (!err && s && S->buf != MPI_IN_PLACE &&
	    (size_t)S->count * (size_t)S->t->size != (size_t)R->count * (size_t)R->t->size)
		err = MPI_ERR_ARG;
	if (err) {
		allgather_refused(S, R, c);     /* the others fail at the same phase */
		return err;
	}
	if (s)
		return vd_coll_code(vd_shm_allgather(s, (void *)R->buf, R->count, R->t,
						     own_bytes(S, R)));
	if (!R->vec && (h = vd_coll_hier(c)) && (err = vd_hier_allgather(h, R, c)) != -ENOTSUP)
		return err;
	return vd_coll_allgather_flat(R, c);
}

/* ---- Alltoall(v) ---------------------------------------------------------------------- */

static int alltoall_pairwise(const struct vd_coll_side *S, const struct vd_coll_side *R,
			     struct vd_comm *c)
{
	int n = c->size, me = c->rank;
	int err = vd_coll_local_copy(side_at(S, me), side_count(S, me), S->t, side_at(R, me),
				     side_count(R, me), R->t);

	/* On after a failed exchange (a block larger than its receive, in an
	 * erroneous program): every message is still sent and received, so
	 * none is left over to mislead the next collective. */
	for (int i = 1; i < n; i++) {
		int dst = is_pof2(n) ? me ^ i : (me + i) % n;
		int src = is_pof2(n) ? me ^ i : (me - i + n) % n;
		int e = vd_coll_sendrecv(side_at(S, dst), side_count(S, dst), S->dt, dst,
					 side_at(R, src), side_count(R, src), R->dt, src, c);

		err = err ? err : e;
	}
	return err;
}

/* In place: the circle method pairs every two ranks exactly once in
 * N - 1 rounds (N = n rounded up to even; a partner >= n is a bye), and
 * each pair swaps the blocks meant for each other. */
static int alltoall_inplace(const struct vd_coll_side *R, struct vd_comm *c)
{
	int n = c->size, me = c->rank, N = n + (n & 1), maxc = 0, err = MPI_SUCCESS;
	void *mem;
	char *tmp;

	for (int i = 0; i < n; i++)
		maxc = side_count(R, i) > maxc ? side_count(R, i) : maxc;
	if (!(tmp = vd_dtype_scratch(R->t, maxc, &mem)))
		return MPI_ERR_NO_MEM;
	for (int r = 0; r < N - 1 && !err; r++) {
		int p = me == N - 1 ? r : me == r ? N - 1 : ((2 * r - me) % (N - 1) + N - 1) % (N - 1);

		if (p >= n)
			continue;
		vd_dtype_copy(R->t, side_at(R, p), tmp, side_count(R, p));
		err = vd_coll_sendrecv(tmp, side_count(R, p), R->dt, p, side_at(R, p),
				       side_count(R, p), R->dt, p, c);
	}
	free(mem);
	return err;
}

/* An Alltoall that would take the segment's path begins with a signed
 * phase: a member whose own arguments are wrong takes it refused, so
 * that the others fail there too instead of waiting for it. */
static void alltoall_refused(const struct vd_coll_side *S, const struct vd_coll_side *R,
			     struct vd_comm *c)
{
	struct vd_shm *s;

	if (S->buf != MPI_IN_PLACE && !S->vec && !R->vec && c->size > 1 && (s = vd_shm_of(c)))
		(void)vd_shm_alltoall_refused(s);
}

static int alltoall(const struct vd_coll_side *S, const struct vd_coll_side *R, int root,
		    struct vd_comm *c)
{
	struct vd_shm *s;

	(void)root;
	if (S->buf == MPI_IN_PLACE)
		return alltoall_inplace(R, c);
	/* The same choice at every member: Alltoall (not v) on a node's
	 * communicator, whatever the types. */
	if (!S->vec && !R->vec && (s = vd_shm_of(c))) {
		int err = vd_shm_alltoall(s, S->buf, S->count, S->t, (void *)R->buf, R->count,
					  R->t);
		if (err != -ENOTSUP)
			return vd_coll_code(err);
	}
	return alltoall_pairwise(S, R, c);
}

/* ---- argument checks ------------------------------------------------------------------- */

/* A vector side: counts, displacements, type, and a buffer wherever some
 * count is not zero. */
static int check_vec(struct vd_coll_side *s, int n)
{
	bool data = false;

	if (!s->counts || !s->displs)
		return MPI_ERR_ARG;
	for (int i = 0; i < n; i++) {
		if (s->counts[i] < 0)
			return MPI_ERR_COUNT;
		data = data || s->counts[i] > 0;
	}
	if (!(s->t = vd_dtype_comm(s->dt)))
		return MPI_ERR_TYPE;
	return data && !vd_dtype_buf_ok(s->t, s->buf, 1) ? MPI_ERR_BUFFER : MPI_SUCCESS;
}

int vd_coll_check_side(struct vd_coll_side *s, int n)
{
	return s->vec ? check_vec(s, n) : vd_coll_check_buf(s->buf, s->count, s->dt, &s->t);
}

/* Giving the same buffer twice is what MPI_IN_PLACE is for. */
static bool aliased(const struct vd_coll_side *L, const struct vd_coll_side *V)
{
	return L->buf == V->buf && (V->vec || V->count > 0);
}

/* Gather(v) and Scatter(v): V, the root's pieces, is checked at the root
 * only; L, every rank's own buffer, may be MPI_IN_PLACE at the root only. */
int vd_coll_rooted_args(struct vd_coll_side *V, struct vd_coll_side *L, int root,
			const struct vd_comm *c)
{
	int err;

	if (root < 0 || root >= c->size)
		return MPI_ERR_ROOT;
	if (c->rank == root) {
		if ((err = vd_coll_check_side(V, c->size)))
			return err;
		if (aliased(L, V))
			return MPI_ERR_BUFFER;
	} else if (L->buf == MPI_IN_PLACE) {
		return MPI_ERR_BUFFER;
	}
	if (L->buf != MPI_IN_PLACE)
		return vd_coll_check_buf(L->buf, L->count, L->dt, &L->t);
	return MPI_SUCCESS;
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

/* Allgather(v) and Alltoall(v): the send side may be MPI_IN_PLACE. */
int vd_coll_all_args(struct vd_coll_side *S, struct vd_coll_side *R, int root,
		     const struct vd_comm *c)
{
	int err = vd_coll_check_side(R, c->size);

	(void)root;
	if (!err && S->buf != MPI_IN_PLACE)
		err = vd_coll_check_side(S, c->size);
	if (!err && aliased(S, R))
		err = MPI_ERR_BUFFER;
	return err;
}

/* ---- the API: one entry point per collective, one path for all ------------------------- */

/* What tells the eight collectives apart: name, checks, algorithm. */
struct move_coll {
	const char *fn;
	int (*check)(struct vd_coll_side *S, struct vd_coll_side *R, int root,
		     const struct vd_comm *c);
	int (*run)(const struct vd_coll_side *S, const struct vd_coll_side *R, int root,
		   struct vd_comm *c);
	/* For a member whose own arguments are wrong, or NULL: its turn
	 * taken refused, where the others would otherwise wait for it. */
	void (*refuse)(const struct vd_coll_side *S, const struct vd_coll_side *R,
		       struct vd_comm *c);
};

static int move_api(const struct move_coll *m, struct vd_coll_side S, struct vd_coll_side R,
		    int root, MPI_Comm comm)
{
	struct vd_comm *c;
	int err;

	VD_MPI_CHECK_RUNNING(m->fn);
	if (!(c = vd_coll_comm(comm, m->fn, &err)))
		return err;
	if (!(err = m->check(&S, &R, root, c)))
		err = m->run(&S, &R, root, c);
	else if (m->refuse)
		m->refuse(&S, &R, c);
	return vd_mpi_raise(comm, err, m->fn);
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

#pragma weak MPI_Gather = PMPI_Gather
int PMPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
	       int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	VD_API_GUARD();
	static const struct move_coll m = { "MPI_Gather", gather_args, gather_tree, NULL };

	return move_api(&m, uniform(sendbuf, sendcount, sendtype),
			uniform(recvbuf, recvcount, recvtype), root, comm);
}

#pragma weak MPI_Gatherv = PMPI_Gatherv
int PMPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		const int recvcounts[], const int displs[], MPI_Datatype recvtype,
		int root, MPI_Comm comm)
{
	VD_API_GUARD();
	static const struct move_coll m = { "MPI_Gatherv", gather_args, gatherv_linear, NULL };

	return move_api(&m, uniform(sendbuf, sendcount, sendtype),
			vector(recvbuf, recvcounts, displs, recvtype), root, comm);
}

#pragma weak MPI_Scatter = PMPI_Scatter
int PMPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	VD_API_GUARD();
	static const struct move_coll m = { "MPI_Scatter", scatter_args, vd_coll_scatter, NULL };

	return move_api(&m, uniform(sendbuf, sendcount, sendtype),
			uniform(recvbuf, recvcount, recvtype), root, comm);
}

#pragma weak MPI_Scatterv = PMPI_Scatterv
int PMPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
		 MPI_Datatype sendtype, void *recvbuf, int recvcount,
		 MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	VD_API_GUARD();
	static const struct move_coll m = { "MPI_Scatterv", scatter_args, vd_coll_scatterv, NULL };

	return move_api(&m, vector(sendbuf, sendcounts, displs, sendtype),
			uniform(recvbuf, recvcount, recvtype), root, comm);
}

#pragma weak MPI_Allgather = PMPI_Allgather
int PMPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		  void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	VD_API_GUARD();
	static const struct move_coll m = { "MPI_Allgather", vd_coll_all_args, allgather,
					    allgather_refused };

	return move_api(&m, uniform(sendbuf, sendcount, sendtype),
			uniform(recvbuf, recvcount, recvtype), 0, comm);
}

#pragma weak MPI_Allgatherv = PMPI_Allgatherv
int PMPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		   void *recvbuf, const int recvcounts[], const int displs[],
		   MPI_Datatype recvtype, MPI_Comm comm)
{
	VD_API_GUARD();
	static const struct move_coll m = { "MPI_Allgatherv", vd_coll_all_args, allgather, NULL };

	return move_api(&m, uniform(sendbuf, sendcount, sendtype),
			vector(recvbuf, recvcounts, displs, recvtype), 0, comm);
}

#pragma weak MPI_Alltoall = PMPI_Alltoall
int PMPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	VD_API_GUARD();
	static const struct move_coll m = { "MPI_Alltoall", vd_coll_all_args, alltoall,
					    alltoall_refused };

	return move_api(&m, uniform(sendbuf, sendcount, sendtype),
			uniform(recvbuf, recvcount, recvtype), 0, comm);
}

#pragma weak MPI_Alltoallv = PMPI_Alltoallv
int PMPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
		  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
		  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
	VD_API_GUARD();
	static const struct move_coll m = { "MPI_Alltoallv", vd_coll_all_args, alltoall, NULL };

	return move_api(&m, vector(sendbuf, sendcounts, sdispls, sendtype),
			vector(recvbuf, recvcounts, rdispls, recvtype), 0, comm);
}
