/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: schedules of the nonblocking collectives that synchronise
 * or reduce -- the algorithms of coll.c written as steps instead of run:
 * dissemination barrier, binomial bcast and reduce, recursive doubling
 * for allreduce and (ex)scan, reduce-then-scatter for reduce_scatter.
 *
 * Partial results combine in rank order (the lower ranks' part as the
 * left operand), so non-commutative ops get the order they need.  Which
 * scratch buffer holds what is decided here, while building: the steps
 * then only name buffers.
 */
#include <stdlib.h>

#include "nbc.h"

static void swap_ptr(char **a, char **b)
{
	char *t = *a;

	*a = *b;
	*b = t;
}

/* ceil(log2 n) rounds; in round k every rank signals rank + 2^k and hears
 * from rank - 2^k. */
void vd_nbc_barrier(struct vd_nbc *s, struct vd_comm *c)
{
	int n = c->size, me = c->rank;
	char *b = vd_nbc_bytes(s, 2);   /* empty messages, but real addresses */

	for (int k = 1; b && k < n; k <<= 1) {
		vd_nbc_recv(s, b, 0, MPI_BYTE, (me - k + n) % n);
		vd_nbc_send(s, b + 1, 0, MPI_BYTE, (me + k) % n);
		vd_nbc_fence(s);
	}
}

/* Binomial tree: from the parent (vr with its lowest set bit cleared),
 * then to every child at once. */
void vd_nbc_bcast(struct vd_nbc *s, void *buf, int count, MPI_Datatype dt, int root,
		  struct vd_comm *c)
{
	int n = c->size, vr = (c->rank - root + n) % n, mask = 1;

	if (n == 1 || count == 0)
		return;
	while (mask < n) {
		if (vr & mask) {
			vd_nbc_recv(s, buf, count, dt, (vr - mask + root) % n);
			vd_nbc_fence(s);
			break;
		}
		mask <<= 1;
	}
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (vr + mask < n)
			vd_nbc_send(s, buf, count, dt, (vr + mask + root) % n);
}

/* A leaf of the reduction tree sends its input as it is; the root, if
 * not the tree's, gets the result from there. */
static void reduce_leaf(struct vd_nbc *s, const void *in, void *out, int count,
			MPI_Datatype dt, int root, int troot, struct vd_comm *c)
{
	int n = c->size, me = c->rank, vr = (me - troot + n) % n;

	vd_nbc_send(s, in, count, dt, (vr - 1 + troot) % n);
	if (me == root && me != troot)
		vd_nbc_recv(s, out, count, dt, troot);
}

/* Binomial tree rooted at root for a commutative op, else at 0 (whose
 * combination order is rank order), 0 then handing the result to root.
 * Each node combines acc (its lower ranks) op child's part. */
void vd_nbc_reduce(struct vd_nbc *s, const void *in, void *out, int count, MPI_Datatype dt,
		   MPI_Op op, int root, struct vd_comm *c)
{
	int n = c->size, me = c->rank;
	int troot = vd_op_commutative(op) ? root : 0, vr = (me - troot + n) % n;
	char *acc, *tmp;

	if (n == 1) {
		vd_nbc_copy(s, in, count, dt, out, count, dt);
		return;
	}
	if (vr & 1) {
		reduce_leaf(s, in, out, count, dt, root, troot, c);
		return;
	}
	acc = me == root ? out : vd_nbc_scratch(s, dt, count);
	tmp = vd_nbc_scratch(s, dt, count);
	if (!acc || !tmp)
		return;
	vd_nbc_copy(s, in, count, dt, acc, count, dt);
	for (int mask = 1; mask < n; mask <<= 1) {
		if (vr & mask) {
			vd_nbc_send(s, acc, count, dt, (vr - mask + troot) % n);
			break;
		}
		if ((vr | mask) >= n)
			continue;
		vd_nbc_recv(s, tmp, count, dt, ((vr | mask) + troot) % n);
		vd_nbc_fence(s);
		vd_nbc_op(s, op, acc, tmp, count, dt);         /* tmp = acc op tmp */
		swap_ptr(&acc, &tmp);
	}
	if (vr == 0 && me == root)
		vd_nbc_copy(s, acc, count, dt, out, count, dt);
	else if (vr == 0)
		vd_nbc_send(s, acc, count, dt, root);
	if (me == root && vr != 0)
		vd_nbc_recv(s, out, count, dt, troot);
}

/* ---- Allreduce: recursive doubling ------------------------------------------------ */

/* With n = pof2 + rem, ranks 0..2rem-1 pair up first (even gives its part
 * to odd), leaving pof2 participants in rank order ("new ranks"); at the
 * end the odd ones hand the result back. */
struct rd_ranks {
	int pof2, rem;
	int newrank;                    /* -1: an even rank that sits out */
};

static struct rd_ranks rd_ranks(const struct vd_comm *c)
{
	int pof2 = 1, me = c->rank, rem;

	while (pof2 <= c->size / 2)
		pof2 <<= 1;
	rem = c->size - pof2;
	return (struct rd_ranks){ pof2, rem, me < 2 * rem ? (me % 2 ? me / 2 : -1) : me - rem };
}

static int rd_rank(const struct rd_ranks *g, int nr)
{
	return nr < g->rem ? 2 * nr + 1 : nr + g->rem;
}

static void rd_fold_in(struct vd_nbc *s, const struct rd_ranks *g, void *out, char *tmp,
		       int count, MPI_Datatype dt, MPI_Op op, int me)
{
	if (me >= 2 * g->rem)
		return;
	if (g->newrank < 0) {
		vd_nbc_send(s, out, count, dt, me + 1);
	} else {
		vd_nbc_recv(s, tmp, count, dt, me - 1);
		vd_nbc_fence(s);
		vd_nbc_op(s, op, tmp, out, count, dt);         /* out = even op out */
	}
	vd_nbc_fence(s);
}

static void rd_fold_out(struct vd_nbc *s, const struct rd_ranks *g, void *out, int count,
			MPI_Datatype dt, int me)
{
	if (me >= 2 * g->rem)
		return;
	if (g->newrank < 0)
		vd_nbc_recv(s, out, count, dt, me + 1);
	else
		vd_nbc_send(s, out, count, dt, me - 1);
}

void vd_nbc_allreduce(struct vd_nbc *s, const void *in, void *out, int count,
		      MPI_Datatype dt, MPI_Op op, struct vd_comm *c)
{
	struct rd_ranks g = rd_ranks(c);
	char *acc = out, *tmp;

	vd_nbc_copy(s, in, count, dt, out, count, dt);
	if (c->size == 1 || count == 0 || !(tmp = vd_nbc_scratch(s, dt, count)))
		return;
	rd_fold_in(s, &g, out, tmp, count, dt, op, c->rank);
	for (int mask = 1; g.newrank >= 0 && mask < g.pof2; mask <<= 1) {
		int dst = rd_rank(&g, g.newrank ^ mask);

		vd_nbc_recv(s, tmp, count, dt, dst);
		vd_nbc_send(s, acc, count, dt, dst);
		vd_nbc_fence(s);
		if (dst < c->rank) {
			vd_nbc_op(s, op, tmp, acc, count, dt);  /* acc = tmp op acc */
		} else {
			vd_nbc_op(s, op, acc, tmp, count, dt);  /* tmp = acc op tmp */
			swap_ptr(&acc, &tmp);
		}
	}
	vd_nbc_copy(s, acc, count, dt, out, count, dt);
	rd_fold_out(s, &g, out, count, dt, c->rank);
}

/* ---- Scan / Exscan: recursive doubling ---------------------------------------------- */

/* In round `mask` a rank swaps with rank ^ mask the reduction of its
 * aligned block of `mask` ranks (part); a partner below contributes to
 * the result.  Exclusive: rank 0 gets nothing, the others take the first
 * lower part as it is. */
void vd_nbc_scan(struct vd_nbc *s, const void *in, void *out, int count, MPI_Datatype dt,
		 MPI_Op op, struct vd_comm *c, bool exclusive)
{
	int n = c->size, me = c->rank;
	bool have = !exclusive;
	char *part = vd_nbc_scratch(s, dt, count), *tmp = vd_nbc_scratch(s, dt, count);

	if (!part || !tmp)
		return;
	vd_nbc_copy(s, in, count, dt, part, count, dt);        /* in may be out */
	if (!exclusive)
		vd_nbc_copy(s, in, count, dt, out, count, dt);
	for (int mask = 1; mask < n; mask <<= 1) {
		int dst = me ^ mask;

		if (dst >= n)
			continue;
		vd_nbc_recv(s, tmp, count, dt, dst);
		vd_nbc_send(s, part, count, dt, dst);
		vd_nbc_fence(s);
		if (dst < me) {
			if (have)
				vd_nbc_op(s, op, tmp, out, count, dt);
			else
				vd_nbc_copy(s, tmp, count, dt, out, count, dt);
			have = true;
			vd_nbc_op(s, op, tmp, part, count, dt);
		} else {
			vd_nbc_op(s, op, part, tmp, count, dt);
			swap_ptr(&part, &tmp);
		}
	}
}

/* ---- Reduce_scatter(_block): reduce to 0, then scatter ------------------------------- */

void vd_nbc_reduce_scatter(struct vd_nbc *s, const void *in, void *out, const int *counts,
			   int total, MPI_Datatype dt, MPI_Op op, struct vd_comm *c)
{
	struct vd_dtype *t = vd_dtype_get(dt);
	struct vd_coll_side S = { .count = counts[0], .dt = dt, .t = t };
	struct vd_coll_side R = { .buf = out, .count = counts[c->rank], .dt = dt, .t = t };
	int n = c->size, *displs;

	for (int i = 1; i < n; i++)
		S.vec = S.vec || counts[i] != counts[0];
	if (c->rank == 0 && !(S.buf = vd_nbc_scratch(s, dt, total)))
		return;
	if (!(displs = vd_nbc_bytes(s, (size_t)n * sizeof(int))))
		return;
	for (int i = 0, d = 0; i < n; d += counts[i++])
		displs[i] = d;
	S.displs = displs;
	S.counts = counts;
	vd_nbc_reduce(s, in, (void *)S.buf, total, dt, op, 0, c);
	vd_nbc_fence(s);                /* in may be out */
	vd_nbc_scatter(s, &S, &R, 0, c);
}
