/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the blocking collectives that reduce or synchronise --
 * Barrier, Bcast, Reduce, Allreduce, Reduce_scatter(_block), Scan, Exscan
 * -- and the helpers every coll*.c file shares.  (Data movement without
 * reduction lives in coll_move.c.)
 *
 * Everything travels on the communicator's collective context (ctx + 1)
 * with tag VD_COLL_TAG.  Point to point is FIFO per pair and context, and
 * every rank runs the collectives of a communicator in the same order, so
 * the messages of consecutive collectives never mix.
 *
 * Reductions combine partial results in rank order (lower ranks' part as
 * the left operand), so the same algorithms serve non-commutative ops:
 * the MPI ops are all associative, which is all the order-keeping trees
 * need.  Temporary buffers use the datatype's own layout
 * (vd_dtype_scratch), so reduction kernels and user functions see what
 * they would see in the user's buffers.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll_shm.h"
#include "util/copy.h"
#include "engine.h"
#include "typeop.h"

/* ---- shared helpers ----------------------------------------------------- */

int vd_coll_isend(const void *buf, int count, MPI_Datatype dt, int dest,
		  struct vd_comm *c, MPI_Request *req)
{
	int r = vd_isend(buf, count, dt, dest, VD_COLL_TAG, c, c->ctx + 1, VD_SEND_STD, req);

	return r ? vd_mpi_errno(r) : MPI_SUCCESS;
}

int vd_coll_irecv(void *buf, int count, MPI_Datatype dt, int src, struct vd_comm *c,
		  MPI_Request *req)
{
	int r = vd_irecv(buf, count, dt, src, VD_COLL_TAG, c, c->ctx + 1, req);

	return r ? vd_mpi_errno(r) : MPI_SUCCESS;
}

/* Wait for all n (MPI_REQUEST_NULL entries allowed); the first error. */
int vd_coll_waitall(int n, MPI_Request *reqs)
{
	int err = MPI_SUCCESS;

	for (int i = 0; i < n; i++) {
		int e = vd_wait(&reqs[i], MPI_STATUS_IGNORE);

		if (e && !err)
			err = e;
	}
	return err;
}

/* The checks every (buffer, count, datatype) argument gets. */
int vd_coll_check_buf(const void *buf, int count, MPI_Datatype dt, struct vd_dtype **t)
{
	if (count < 0)
		return MPI_ERR_COUNT;
	if (!(*t = vd_dtype_comm(dt)))
		return MPI_ERR_TYPE;
	if (!vd_dtype_buf_ok(*t, buf, count))
		return MPI_ERR_BUFFER;
	return MPI_SUCCESS;
}

/* Copy sc elements of st at s into r as rc elements of rt (type
 * signatures match: only the byte counts are checked). */
int vd_coll_local_copy(const void *s, int sc, struct vd_dtype *st, void *r, int rc,
		       struct vd_dtype *rt)
{
	size_t sbytes = (size_t)sc * (size_t)st->size;
	void *tmp;

	if (sbytes > (size_t)rc * (size_t)rt->size)
		return MPI_ERR_TRUNCATE;
	if (sbytes == 0 || s == r)
		return MPI_SUCCESS;
	if (st->contig && rt->contig) {
		vd_copy(r, s, sbytes);
	} else if (st->contig) {
		vd_dtype_unpack(rt, s, sbytes, r);
	} else if (rt->contig) {
		vd_dtype_pack(st, s, sc, r);
	} else {
		if (!(tmp = malloc(sbytes)))
			return MPI_ERR_NO_MEM;
		vd_dtype_pack(st, s, sc, tmp);
		vd_dtype_unpack(rt, tmp, sbytes, r);
		free(tmp);
	}
	return MPI_SUCCESS;
}

/* The communicator, or NULL after raising MPI_ERR_COMM in *err.  The
 * algorithms here are for intracommunicators: an intercommunicator gets a
 * clear error rather than a wrong exchange. */
struct vd_comm *vd_coll_comm(MPI_Comm comm, const char *fn, int *err)
{
	struct vd_comm *c = vd_comm_get(comm);

	*err = c ? MPI_SUCCESS : vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_COMM, fn);
	if (c && c->inter) {
		*err = vd_mpi_raise_msg(comm, MPI_ERR_COMM, fn,
					"not supported on an intercommunicator");
		return NULL;
	}
	return c;
}

static void swap_ptr(char **a, char **b)
{
	char *t = *a;

	*a = *b;
	*b = t;
}

/* ---- Barrier: dissemination --------------------------------------------------- */

/* ceil(log2 n) rounds; in round k every rank signals rank + 2^k and hears
 * from rank - 2^k, so after the last round each has (transitively) heard
 * from all. */
int vd_coll_barrier(struct vd_comm *c)
{
	int n = c->size, me = c->rank, err = MPI_SUCCESS;
	char s = 0, r;                  /* empty messages, but real addresses */
	struct vd_shm *shm = vd_shm_of(c);

	if (shm)
		return vd_coll_code(vd_shm_barrier(shm));

	for (int k = 1; k < n && !err; k <<= 1)
		err = vd_coll_sendrecv(&s, 0, MPI_BYTE, (me + k) % n, &r, 0, MPI_BYTE,
				       (me - k + n) % n, c);
	return err;
}

#pragma weak MPI_Barrier = PMPI_Barrier
int PMPI_Barrier(MPI_Comm comm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Barrier";
	struct vd_comm *c;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if ((c = vd_comm_get(comm)) && c->inter)
		return vd_mpi_raise(comm, vd_intercomm_barrier(c), fn);
	if (!(c = vd_coll_comm(comm, fn, &err)))
		return err;
	struct vd_hier *h = vd_coll_hier(c);
	return vd_mpi_raise(comm, h ? vd_hier_barrier(h) : vd_coll_barrier(c), fn);
}

/* ---- Bcast: binomial tree -------------------------------------------------------- */

int vd_coll_bcast(void *buf, int count, MPI_Datatype dt, int root, struct vd_comm *c)
{
	struct vd_shm *s = vd_shm_of(c);

	if (s)
		return vd_coll_code(vd_shm_bcast(s, buf, count, vd_dtype_get(dt), root));
	return vd_coll_bcast_tree(buf, count, dt, root, c);
}

int vd_coll_bcast_tree(void *buf, int count, MPI_Datatype dt, int root, struct vd_comm *c)
{
	int n = c->size, vr = (c->rank - root + n) % n, mask = 1, err = MPI_SUCCESS;

	/* Receive from the parent: vr with its lowest set bit cleared. */
	while (mask < n) {
		if (vr & mask) {
			err = vd_coll_recv(buf, count, dt, (vr - mask + root) % n, c);
			break;
		}
		mask <<= 1;
	}
	/* Forward to the children vr + 2^k below that bit, largest subtree
	 * first (it has the most forwarding left to do). */
	for (mask >>= 1; mask > 0 && !err; mask >>= 1)
		if (vr + mask < n)
			err = vd_coll_send(buf, count, dt, (vr + mask + root) % n, c);
	return err;
}

/* A member whose buffer, count or type is wrong still takes its turn in
 * a node's segment, refused, so that the others fail there too instead
 * of waiting for it.  Without the segment they wait (as with other
 * MPIs), unless the error handler ends the job. */
static void bcast_refused(struct vd_comm *c, int root)
{
	struct vd_shm *s;

	if (c->size > 1 && !vd_coll_hier(c) && (s = vd_shm_of(c)))
		(void)vd_shm_bcast_refused(s, root);
}

#pragma weak MPI_Bcast = PMPI_Bcast
int PMPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Bcast";
	struct vd_comm *c;
	struct vd_dtype *t;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_coll_comm(comm, fn, &err)))
		return err;
	if (root < 0 || root >= c->size)
		return vd_mpi_raise(comm, MPI_ERR_ROOT, fn);
	if ((err = vd_coll_check_buf(buffer, count, datatype, &t))) {
		bcast_refused(c, root);
		return vd_mpi_raise(comm, err, fn);
	}
	if (c->size == 1)
		return MPI_SUCCESS;
	/* A zero count still takes its turn: in a node's segment one phase,
	 * so that a member that passed more finds out; without one, empty
	 * messages down the tree (a member that passed more gets them, as a
	 * shorter message, without an error); across nodes nothing moves. */
	struct vd_hier *h = vd_coll_hier(c);
	if (h && count == 0)
		return MPI_SUCCESS;
	return vd_mpi_raise(comm, h ? vd_hier_bcast(h, buffer, count, datatype, root, c)
				    : vd_coll_bcast(buffer, count, datatype, root, c), fn);
}

/* ---- Reduce: binomial tree ------------------------------------------------------------ */

/* Checks shared by the reductions: buffers, type, op.  sbuf (or, in
 * place, rbuf) holds count elements; rbuf receives rcount of them at this
 * rank, rcount -1: rbuf is not used here (Reduce off the root). */
int vd_coll_check_reduce(const void *sbuf, const void *rbuf, int count, int rcount,
			 MPI_Datatype dt, MPI_Op op, struct vd_dtype **t)
{
	int err = vd_coll_check_buf(sbuf == MPI_IN_PLACE ? rbuf : sbuf, count, dt, t);

	if (err)
		return err;
	if (rcount > 0 && !vd_dtype_buf_ok(*t, rbuf, rcount))
		return MPI_ERR_BUFFER;
	if ((err = vd_op_check(op, dt)))
		return err;
	/* The same buffer twice is what MPI_IN_PLACE is for. */
	if (rcount >= 0 && sbuf == rbuf && count > 0)
		return MPI_ERR_BUFFER;
	return MPI_SUCCESS;
}

/* On a node's segment a Reduce, Allreduce or Reduce_scatter begins with
 * a signed phase, whichever path it then takes (the segment, or point to
 * point after p2p_turn): a member whose own arguments are wrong takes
 * that phase refused (vd_shm_refuse_turn). */

/* An op as signatures see it: a user op's handle may differ from process
 * to process, so user ops sign alike. */
static uint32_t op_word(MPI_Op op)
{
	return vd_op_builtin(op) ? (uint32_t)op : 0xffffffffu;
}

/* Mixed into the signature of the turn a member takes before it goes
 * point to point (a user op or a derived type), so that it never matches
 * a member that takes the segment's path: an op, type or size that sent
 * one member the other way (an erroneous program) fails everyone at that
 * phase, where it had left them waiting. */
#define SIG_P2P 0x9292u

/* That turn, signed with the call's signature `sig`; 0 off a segment. */
static int p2p_turn(struct vd_shm *s, uint32_t sig)
{
	return s ? vd_shm_signed_phase(s, vd_shm_sig(sig, SIG_P2P)) : 0;
}

/* What tells Reduce, Allreduce, Scan and Exscan apart. */
struct reduction {
	const char *fn;
	bool rooted;                    /* Reduce: root significant */
	bool zero_meets;                /* a zero count still meets the others */
	bool signs;                     /* takes a signed first phase on a
	                                 * node's segment */
	int (*run)(const void *in, void *out, int count, MPI_Datatype dt, MPI_Op op, int root,
		   struct vd_comm *c);
};

/* The reductions from the API: checks, MPI_IN_PLACE resolved, then run. */
static int reduce_api(const struct reduction *r, const void *sendbuf, void *recvbuf,
		      int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
	struct vd_comm *c;
	struct vd_dtype *t;
	int err;

	VD_MPI_CHECK_RUNNING(r->fn);
	if (!(c = vd_coll_comm(comm, r->fn, &err)))
		return err;
	if (r->rooted && (root < 0 || root >= c->size))
		err = MPI_ERR_ROOT;
	else if (r->rooted && sendbuf == MPI_IN_PLACE && c->rank != root)
		err = MPI_ERR_BUFFER;
	else
		err = vd_coll_check_reduce(sendbuf, recvbuf, count,
				   !r->rooted || c->rank == root ? count : -1, dt, op, &t);
	if (err && r->signs)
		vd_shm_refuse_turn(c);
	if (err || (count == 0 && !r->zero_meets))
		return vd_mpi_raise(comm, err, r->fn);
	return vd_mpi_raise(comm, r->run(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf,
					 count, dt, op, root, c), r->fn);
}

/* What the members of a Reduce in a node's segment must agree on: the
 * vector's bytes, the op and the root (vd_shm_reduce says who checks). */
static uint32_t reduce_sig(int count, const struct vd_dtype *t, MPI_Op op, int root)
{
	return vd_shm_sig(vd_shm_sig(SHM_SIG_REDUCE, (uint64_t)count * (uint64_t)t->size),
			  (uint64_t)op_word(op) << 32 | (uint32_t)root);
}

static int reduce_tree(const void *in, void *out, int count, MPI_Datatype dt, MPI_Op op,
		       int root, struct vd_comm *c);

/* On a node's segment: the segment's Reduce for a predefined op and
 * type, else a signed turn, then the tree.  A zero count takes one phase
 * there, so that a member that passed more finds out; elsewhere it
 * returns at once, as with other MPIs. */
int vd_coll_reduce(const void *in, void *out, int count, MPI_Datatype dt, MPI_Op op,
		   int root, struct vd_comm *c)
{
	struct vd_dtype *t = vd_dtype_get(dt);
	struct vd_shm *s = vd_shm_of(c);
	int err;

	if (s && vd_shm_reduce_fits(t, op))
		return vd_coll_code(count ? vd_shm_reduce(s, in, out, count, dt, op, root,
							  reduce_sig(count, t, op, root))
					  : vd_shm_signed_phase(s, reduce_sig(0, t, op, root)));
	if ((err = p2p_turn(s, reduce_sig(count, t, op, root))))
		return vd_coll_code(err);
	return count ? reduce_tree(in, out, count, dt, op, root, c) : MPI_SUCCESS;
}

/* Reduce `in` (count elements of dt) over c into `out` at root.  A
 * commutative op uses the tree rooted at root; otherwise the tree rooted
 * at 0, whose combination order is rank order, then 0 hands the result to
 * root.  Each node combines acc (its lower ranks) op child's part. */
static int reduce_tree(const void *in, void *out, int count, MPI_Datatype dt, MPI_Op op,
		       int root, struct vd_comm *c)
{
	struct vd_dtype *t = vd_dtype_get(dt);
	int n = c->size, me = c->rank;
	int troot = vd_op_commutative(op) ? root : 0;
	int vr = (me - troot + n) % n, err = MPI_SUCCESS;
	void *m1 = NULL, *m2 = NULL;
	char *acc, *tmp;

	if (n == 1 || (vr & 1)) {       /* a leaf sends its input as it is */
		if (n == 1)
			vd_dtype_copy(t, in, out, count);
		else
			err = vd_coll_send(in, count, dt, (vr - 1 + troot) % n, c);
		if (!err && n > 1 && me == root && me != troot)
			err = vd_coll_recv(out, count, dt, troot, c);
		return err;
	}
	/* The root accumulates in its output buffer: one copy less. */
	acc = me == root ? out : vd_dtype_scratch(t, count, &m1);
	tmp = vd_dtype_scratch(t, count, &m2);
	if (!acc || !tmp) {
		err = MPI_ERR_NO_MEM;
		goto out;
	}
	vd_dtype_copy(t, in, acc, count);
	for (int mask = 1; mask < n && !err; mask <<= 1) {
		if (vr & mask) {
			err = vd_coll_send(acc, count, dt, (vr - mask + troot) % n, c);
			break;
		}
		if ((vr | mask) >= n)
			continue;
		err = vd_coll_recv(tmp, count, dt, ((vr | mask) + troot) % n, c);
		if (!err)
			err = vd_op_apply(op, acc, tmp, count, dt);     /* tmp = acc op tmp */
		swap_ptr(&acc, &tmp);
	}
	if (!err && vr == 0) {
		if (me == root)
			vd_dtype_copy(t, acc, out, count);  /* no-op unless swapped */
		else
			err = vd_coll_send(acc, count, dt, root, c);
	}
	if (!err && me == root && vr != 0)
		err = vd_coll_recv(out, count, dt, troot, c);
out:
	free(m1);
	free(m2);
	return err;
}

#pragma weak MPI_Reduce = PMPI_Reduce
static int reduce(const void *in, void *out, int count, MPI_Datatype dt, MPI_Op op,
		  int root, struct vd_comm *c)
{
	struct vd_hier *h = vd_op_commutative(op) ? vd_coll_hier(c) : NULL;

	if (h && count == 0)
		return MPI_SUCCESS;
	return h ? vd_hier_reduce(h, in, out, count, dt, op, root, c)
		 : vd_coll_reduce(in, out, count, dt, op, root, c);
}

int PMPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
	       MPI_Op op, int root, MPI_Comm comm)
{
	VD_API_GUARD();
	static const struct reduction r = { "MPI_Reduce", true, true, true, reduce };

	return reduce_api(&r, sendbuf, recvbuf, count, datatype, op, root, comm);
}

/* ---- Allreduce: recursive doubling ------------------------------------------------------ */

/* The largest power of two <= n. */
static int pof2_below(int n)
{
	int p = 1;

	while (p <= n / 2)
		p <<= 1;
	return p;
}

/* The allreduce algorithms work among a power of two of ranks: with
 * n = pof2 + rem, ranks 0..2rem-1 pair up first (even sends to odd, odd
 * keeps even op odd), leaving pof2 participants whose "new ranks" stay in
 * rank order; at the end the odd ranks give the result back to their
 * even partner. */
struct rd_ranks {
	int pof2, rem;
	int newrank;                    /* -1: an even rank that sits out */
};

static struct rd_ranks rd_ranks(const struct vd_comm *c)
{
	int pof2 = pof2_below(c->size), rem = c->size - pof2, me = c->rank;

	return (struct rd_ranks){ pof2, rem, me < 2 * rem ? (me % 2 ? me / 2 : -1) : me - rem };
}

/* The rank of new rank nr. */
static int rd_rank(const struct rd_ranks *g, int nr)
{
	return nr < g->rem ? 2 * nr + 1 : nr + g->rem;
}

/* The pairing before (out = even op out; tmp: scratch) ... */
static int rd_fold_in(const struct rd_ranks *g, void *out, char *tmp, int count,
		      MPI_Datatype dt, MPI_Op op, struct vd_comm *c)
{
	int me = c->rank, err;

	if (me >= 2 * g->rem)
		return MPI_SUCCESS;
	if (g->newrank < 0)
		return vd_coll_send(out, count, dt, me + 1, c);
	err = vd_coll_recv(tmp, count, dt, me - 1, c);
	return err ? err : vd_op_apply(op, tmp, out, count, dt);
}

/* ... and the handing back after. */
static int rd_fold_out(const struct rd_ranks *g, void *out, int count, MPI_Datatype dt,
		       struct vd_comm *c)
{
	int me = c->rank;

	if (me >= 2 * g->rem)
		return MPI_SUCCESS;
	return g->newrank < 0 ? vd_coll_recv(out, count, dt, me + 1, c)
			      : vd_coll_send(out, count, dt, me - 1, c);
}

/* Recursive doubling among the rd_ranks; out holds the input. */
static int allreduce_rd(void *out, int count, MPI_Datatype dt, MPI_Op op,
			struct vd_comm *c)
{
	struct vd_dtype *t = vd_dtype_get(dt);
	struct rd_ranks g = rd_ranks(c);
	int err;
	void *mem;
	char *acc = out, *tmp = vd_dtype_scratch(t, count, &mem);

	if (!tmp)
		return MPI_ERR_NO_MEM;
	err = rd_fold_in(&g, out, tmp, count, dt, op, c);
	for (int mask = 1; g.newrank >= 0 && mask < g.pof2 && !err; mask <<= 1) {
		int dst = rd_rank(&g, g.newrank ^ mask);

		err = vd_coll_sendrecv(acc, count, dt, dst, tmp, count, dt, dst, c);
		if (err)
			break;
		if (dst < c->rank) {
			err = vd_op_apply(op, tmp, acc, count, dt);     /* acc = tmp op acc */
		} else {
			err = vd_op_apply(op, acc, tmp, count, dt);     /* tmp = acc op tmp */
			swap_ptr(&acc, &tmp);
		}
	}
	if (!err && acc != (char *)out)
		vd_dtype_copy(t, acc, out, count);
	if (!err)
		err = rd_fold_out(&g, out, count, dt, c);
	free(mem);
	return err;
}

/* Large vectors, commutative op: reduce-scatter by recursive halving, then
 * allgather by recursive doubling (Rabenseifner) -- each rank moves and
 * reduces about 2 (n-1)/n of the vector instead of log2(n) whole ones.
 * The vector is cut into pof2 pieces of elements; in the halving round
 * with distance `mask` (largest first) a rank keeps the half of its
 * current window on its side of that bit and sends the other half; the
 * doubling rounds retrace the steps.  Among the rd_ranks, like
 * allreduce_rd. */
static int allreduce_rsag(void *out, int count, MPI_Datatype dt, MPI_Op op,
			  struct vd_comm *c)
{
	struct vd_dtype *t = vd_dtype_get(dt);
	struct rd_ranks g = rd_ranks(c);
	int pof2 = g.pof2, newrank = g.newrank, lo = 0, hi = pof2, err;
	void *mem;
	char *tmp = vd_dtype_scratch(t, count, &mem);

/* First element of piece i (piece pof2: the end). */
#define PIECE(i) ((long)(i) * (count / pof2) + ((i) < count % pof2 ? (i) : count % pof2))
	if (!tmp)
		return MPI_ERR_NO_MEM;
	err = rd_fold_in(&g, out, tmp, count, dt, op, c);
	for (int mask = pof2 / 2; newrank >= 0 && mask > 0 && !err; mask /= 2) {
		int dst = rd_rank(&g, newrank ^ mask);
		int mid = (lo + hi) / 2, klo = newrank & mask ? mid : lo;
		int khi = newrank & mask ? hi : mid, slo = newrank & mask ? lo : mid;
		int shi = newrank & mask ? mid : hi;
		long k0 = PIECE(klo), k1 = PIECE(khi), s0 = PIECE(slo), s1 = PIECE(shi);

		err = vd_coll_sendrecv((char *)out + s0 * t->extent, (int)(s1 - s0), dt, dst,
				       tmp + k0 * t->extent, (int)(k1 - k0), dt, dst, c);
		if (!err)
			err = vd_op_apply(op, tmp + k0 * t->extent, (char *)out + k0 * t->extent,
					  (int)(k1 - k0), dt);
		lo = klo;
		hi = khi;
	}
	for (int mask = 1; newrank >= 0 && mask < pof2 && !err; mask *= 2) {
		int dst = rd_rank(&g, newrank ^ mask);
		/* the partner's window is our window's sibling */
		int plo = newrank & mask ? lo - (hi - lo) : hi, phi = plo + (hi - lo);
		long m0 = PIECE(lo), m1 = PIECE(hi), p0 = PIECE(plo), p1 = PIECE(phi);

		err = vd_coll_sendrecv((char *)out + m0 * t->extent, (int)(m1 - m0), dt, dst,
				       (char *)out + p0 * t->extent, (int)(p1 - p0), dt, dst, c);
		lo = plo < lo ? plo : lo;
		hi = phi > hi ? phi : hi;
	}
#undef PIECE
	if (!err)
		err = rd_fold_out(&g, out, count, dt, c);
	free(mem);
	return err;
}

/* From this many bytes on, a commutative allreduce splits the vector
 * (allreduce_rsag); below, whole-vector recursive doubling has fewer
 * rounds' latency. */
#define VD_ALLREDUCE_SPLIT_MIN 16384
/* Between two ranks splitting moves no fewer bytes (half there, half
 * back, against the whole both ways at once); it only halves each one's
 * reduction, for one more round trip.  Through the fabric that round
 * trip costs more up to a few MiB: between two namespace hosts whole-vector
 * exchanges took 16 KiB 38 against 61-79 us, 256 KiB 215-232 against
 * 342-481 us, 1 MiB 668-923 against 841-1294 us; at 4 MiB splitting won
 * (4750-6326 against 6052-6758 us). */
#define VD_ALLREDUCE_NET2_SPLIT_MIN (2u << 20)

/* Every member of c on one node: the same answer at every member. */
static bool one_node(const struct vd_comm *c)
{
	int node = vd_place_node(c->world[0]);

	for (int i = 1; i < c->size; i++)
		if (vd_place_node(c->world[i]) != node)
			return false;
	return true;
}

/* Whether a commutative allreduce of count elements of t splits the
 * vector: decided alike at every member (sizes, count and node map are
 * the same everywhere). */
static bool allreduce_splits(int count, const struct vd_dtype *t, const struct vd_comm *c)
{
	size_t bytes = (size_t)count * (size_t)t->size;
	int pof2 = pof2_below(c->size);

	if (count < pof2 || bytes < VD_ALLREDUCE_SPLIT_MIN)
		return false;
	return pof2 > 2 || bytes >= VD_ALLREDUCE_NET2_SPLIT_MIN || one_node(c);
}

/* What every member of an Allreduce in a node's segment must agree on:
 * the vector's bytes and the op.  Every member waits for all at the
 * first phase, so members whose sizes differ (an erroneous program) all
 * fail there, and the segment's phases stay aligned.  A user op's
 * handle may differ from process to process: user ops sign alike. */
static uint32_t allreduce_sig(int count, const struct vd_dtype *t, MPI_Op op)
{
	return vd_shm_sig(SHM_SIG_ALLREDUCE, ((uint64_t)count * (uint64_t)t->size << 8) ^ op_word(op));
}

int vd_coll_allreduce(const void *in, void *out, int count, MPI_Datatype dt, MPI_Op op,
		      struct vd_comm *c)
{
	struct vd_dtype *t = vd_dtype_get(dt);
	struct vd_shm *s = vd_shm_of(c);
	int err;

	/* A zero count takes one phase: a member that passed more finds out. */
	if (s && vd_shm_reduce_fits(t, op))
		return vd_coll_code(count ? vd_shm_reduce(s, in, out, count, dt, op, -1,
							  allreduce_sig(count, t, op))
					  : vd_shm_signed_phase(s, allreduce_sig(0, t, op)));
	if ((err = p2p_turn(s, allreduce_sig(count, t, op))))
		return vd_coll_code(err);
	if (in != out)
		vd_dtype_copy(t, in, out, count);
	if (c->size == 1 || count == 0)
		return MPI_SUCCESS;
	if (vd_op_commutative(op) && allreduce_splits(count, t, c))
		return allreduce_rsag(out, count, dt, op, c);
	return allreduce_rd(out, count, dt, op, c);
}

static int allreduce(const void *in, void *out, int count, MPI_Datatype dt, MPI_Op op,
		     int root, struct vd_comm *c)
{
	struct vd_hier *h = vd_op_commutative(op) ? vd_coll_hier(c) : NULL;

	(void)root;
	if (h && count == 0)
		return MPI_SUCCESS;
	return h ? vd_hier_allreduce(h, in, out, count, dt, op)
		 : vd_coll_allreduce(in, out, count, dt, op, c);
}

#pragma weak MPI_Allreduce = PMPI_Allreduce
int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		  MPI_Op op, MPI_Comm comm)
{
	VD_API_GUARD();
	static const struct reduction r = { "MPI_Allreduce", false, true, true, allreduce };

	return reduce_api(&r, sendbuf, recvbuf, count, datatype, op, -1, comm);
}

/* ---- Reduce_scatter(_block): in a node's segment, else reduce to 0 and scatter ------------ */

/* What every member of a Reduce_scatter must agree on: the counts (all
 * of them: equal totals split differently are as wrong), the element
 * size and the op. */
static uint32_t reduce_scatter_sig(const int *counts, int n, const struct vd_dtype *t,
				   MPI_Op op)
{
	uint32_t h = vd_shm_sig(SHM_SIG_REDUCE_SCATTER, (uint64_t)t->size << 32 | op_word(op));

	for (int i = 0; i < n; i++)
		h = vd_shm_sig(h, (uint32_t)counts[i]);
	return h;
}

/* On a node's communicator: every member reduces its own piece from the
 * others' contributions in the shared segment.  Members whose counts
 * differ (an erroneous program) all fail at the first phase, and the
 * segment's phases stay aligned. */
static int reduce_scatter_shm(struct vd_shm *s, const void *in, void *out, const int *counts,
			      int total, MPI_Datatype dt, MPI_Op op, struct vd_comm *c)
{
	struct vd_dtype *t = vd_dtype_get(dt);
	uint32_t sig = reduce_scatter_sig(counts, c->size, t, op);
	size_t before = 0;

	if (total == 0)         /* one phase: a member with counts finds out */
		return vd_coll_code(vd_shm_signed_phase(s, sig));
	for (int i = 0; i < c->rank; i++)
		before += (size_t)counts[i];
	return vd_coll_code(vd_shm_reduce_scatter(s, in, out, (size_t)total, before,
						  before + (size_t)counts[c->rank], dt, op, sig));
}

/* The whole vector is reduced at rank 0 (in rank order, so any op works)
 * and its pieces scattered: a binomial tree for equal pieces, linear from
 * rank 0 for varying ones (as MPI_Scatterv).  On a node's segment, after
 * a signed turn (SIG_P2P). */
static int reduce_scatter(const void *in, void *out, const int *counts, int total,
			  MPI_Datatype dt, MPI_Op op, struct vd_comm *c)
{
	struct vd_dtype *t = vd_dtype_get(dt);
	struct vd_coll_side S = { .counts = counts, .count = counts[0], .dt = dt, .t = t };
	struct vd_coll_side R = { .buf = out, .count = counts[c->rank], .dt = dt, .t = t };
	int n = c->size, err, *displs = NULL;
	void *mem = NULL;
	char *whole = NULL;

	struct vd_shm *s = vd_shm_of(c);

	if (s && vd_shm_reduce_fits(t, op))
		return reduce_scatter_shm(s, in, out, counts, total, dt, op, c);
	if (c->rank == 0 && total && !(whole = vd_dtype_scratch(t, total, &mem))) {
		vd_shm_refuse_turn(c);
		return MPI_ERR_NO_MEM;
	}
	if ((err = p2p_turn(s, reduce_scatter_sig(counts, n, t, op)))) {
		free(mem);
		return vd_coll_code(err);
	}
	if (total == 0)
		return MPI_SUCCESS;
	for (int i = 1; i < n; i++)
		S.vec = S.vec || counts[i] != counts[0];
	S.buf = whole;
	err = reduce_tree(in, whole, total, dt, op, 0, c);
	if (!err && !S.vec) {
		err = vd_coll_scatter(&S, &R, 0, c);
	} else if (!err) {
		if (!(S.displs = displs = malloc((size_t)n * sizeof(int))))
			err = MPI_ERR_NO_MEM;
		for (int i = 0, d = 0; !err && i < n; d += counts[i++])
			displs[i] = d;
		if (!err)
			err = vd_coll_scatterv(&S, &R, 0, c);
	}
	free(displs);
	free(mem);
	return err;
}

/* The checks of Reduce_scatter(_block): the whole vector is the sum of
 * the counts. */
static int reduce_scatter_check(const void *sendbuf, void *recvbuf, const int *counts,
				MPI_Datatype dt, MPI_Op op, struct vd_comm *c, int *total)
{
	struct vd_dtype *t;
	long long sum = 0;

	if (!counts)
		return MPI_ERR_ARG;
	for (int i = 0; i < c->size; i++) {
		if (counts[i] < 0)
			return MPI_ERR_COUNT;
		sum += counts[i];
	}
	if (sum > INT_MAX)
		return MPI_ERR_COUNT;
	*total = (int)sum;
	return vd_coll_check_reduce(sendbuf, recvbuf, (int)sum, counts[c->rank], dt, op, &t);
}

/* Reduce_scatter(_block) from the checks on; a member whose own
 * arguments are wrong takes its turn refused. */
static int reduce_scatter_run(const void *sendbuf, void *recvbuf, const int *counts,
			      MPI_Datatype dt, MPI_Op op, struct vd_comm *c)
{
	int total = 0, err = reduce_scatter_check(sendbuf, recvbuf, counts, dt, op, c, &total);

	if (err) {
		vd_shm_refuse_turn(c);
		return err;
	}
	return reduce_scatter(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf, counts,
			      total, dt, op, c);
}

#pragma weak MPI_Reduce_scatter = PMPI_Reduce_scatter
int PMPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
		       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Reduce_scatter";
	struct vd_comm *c;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_coll_comm(comm, fn, &err)))
		return err;
	return vd_mpi_raise(comm, reduce_scatter_run(sendbuf, recvbuf, recvcounts, datatype, op,
						     c), fn);
}

#pragma weak MPI_Reduce_scatter_block = PMPI_Reduce_scatter_block
int PMPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
			     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Reduce_scatter_block";
	struct vd_comm *c;
	int err, *counts;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_coll_comm(comm, fn, &err)))
		return err;
	if (recvcount < 0 || !(counts = malloc((size_t)c->size * sizeof(int)))) {
		vd_shm_refuse_turn(c);
		return vd_mpi_raise(comm, recvcount < 0 ? MPI_ERR_COUNT : MPI_ERR_NO_MEM, fn);
	}
	for (int i = 0; i < c->size; i++)
		counts[i] = recvcount;
	err = reduce_scatter_run(sendbuf, recvbuf, counts, datatype, op, c);
	free(counts);
	return vd_mpi_raise(comm, err, fn);
}

/* ---- Scan / Exscan: recursive doubling ------------------------------------------------------ */

/* In round `mask` a rank swaps with rank ^ mask the reduction of its
 * aligned block of `mask` ranks (partial); a partner below contributes to
 * the result (out = theirs op out) and, on both sides, the lower block's
 * part goes on the left.  Exclusive: rank 0 never gets a value, the others
 * take the first lower part as is. */
static int scan_rd(const void *in, void *out, int count, MPI_Datatype dt, MPI_Op op,
		   struct vd_comm *c, bool exclusive)
{
	struct vd_dtype *t = vd_dtype_get(dt);
	int n = c->size, me = c->rank, err = MPI_SUCCESS;
	bool have = !exclusive;
	void *m1, *m2;
	char *part = vd_dtype_scratch(t, count, &m1), *tmp = vd_dtype_scratch(t, count, &m2);

	if (!part || !tmp) {
		err = MPI_ERR_NO_MEM;
		goto out;
	}
	vd_dtype_copy(t, in, part, count);      /* before out is written: in may be out */
	if (!exclusive)
		vd_dtype_copy(t, in, out, count);
	for (int mask = 1; mask < n && !err; mask <<= 1) {
		int dst = me ^ mask;

		if (dst >= n)
			continue;
		err = vd_coll_sendrecv(part, count, dt, dst, tmp, count, dt, dst, c);
		if (err)
			break;
		if (dst < me) {
			if (have)
				err = vd_op_apply(op, tmp, out, count, dt);
			else
				vd_dtype_copy(t, tmp, out, count);
			have = true;
			if (!err)
				err = vd_op_apply(op, tmp, part, count, dt);
		} else {
			err = vd_op_apply(op, part, tmp, count, dt);
			swap_ptr(&part, &tmp);
		}
	}
out:
	free(m1);
	free(m2);
	return err;
}

static int scan(const void *in, void *out, int count, MPI_Datatype dt, MPI_Op op, int root,
		struct vd_comm *c)
{
	(void)root;
	return scan_rd(in, out, count, dt, op, c, false);
}

/* Alone, Exscan has nothing to give (rank 0 gets no value). */
static int exscan(const void *in, void *out, int count, MPI_Datatype dt, MPI_Op op, int root,
		  struct vd_comm *c)
{
	(void)root;
	return c->size == 1 ? MPI_SUCCESS : scan_rd(in, out, count, dt, op, c, true);
}

#pragma weak MPI_Scan = PMPI_Scan
int PMPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
	     MPI_Op op, MPI_Comm comm)
{
	VD_API_GUARD();
	static const struct reduction r = { "MPI_Scan", false, false, false, scan };

	return reduce_api(&r, sendbuf, recvbuf, count, datatype, op, -1, comm);
}

#pragma weak MPI_Exscan = PMPI_Exscan
int PMPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
	       MPI_Op op, MPI_Comm comm)
{
	VD_API_GUARD();
	static const struct reduction r = { "MPI_Exscan", false, false, false, exscan };

	return reduce_api(&r, sendbuf, recvbuf, count, datatype, op, -1, comm);
}
