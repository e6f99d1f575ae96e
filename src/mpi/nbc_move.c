/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: schedules of the nonblocking collectives that move data --
 * Gather(v), Scatter(v), Allgather(v), Alltoall(v,w).
 *
 *  - Gather / Scatter: binomial trees over ranks relative to the root, as
 *    coll_move.c; inner nodes carry their subtree's pieces packed
 *    (MPI_BYTE) in scratch memory.
 *  - Gatherv / Scatterv: linear at the root, every transfer in one round.
 *  - Allgather: recursive doubling for a power-of-two size, else (and for
 *    Allgatherv) a ring.
 *  - Alltoall(v,w): every transfer in one round.  In place, the receive
 *    buffer is first copied aside and serves as the send buffer.
 */
#include <limits.h>
#include <string.h>

#include "nbc.h"

static bool is_pof2(int n)
{
	return (n & (n - 1)) == 0;
}

/* Ranks in the binomial subtree of relative rank vr (vr 0: all n). */
static int subtree(int vr, int n)
{
	int low = vr ? (vr & -vr) : n;

	return low < n - vr ? low : n - vr;
}

/* The root's own piece moves locally between its slot in V and L (its
 * own buffer, unless MPI_IN_PLACE). */
static void own_piece(struct vd_nbc *s, const struct vd_coll_side *V,
		      const struct vd_coll_side *L, int root, bool up)
{
	char *slot = vd_side_at(V, root);
	int vc = vd_side_count(V, root);

	if (L->buf == MPI_IN_PLACE)
		return;
	if (up)
		vd_nbc_copy(s, L->buf, L->count, L->dt, slot, vc, V->dt);
	else
		vd_nbc_copy(s, slot, vc, V->dt, (void *)L->buf, L->count, L->dt);
}

/* ---- Gather / Scatter: binomial tree --------------------------------------------- */

struct btree {
	int n, root, vr, sub, low, parent, nkids;
	int blk;                        /* bytes of one rank's piece */
};

static struct btree btree(const struct vd_coll_side *V, const struct vd_coll_side *L,
			  int root, const struct vd_comm *c)
{
	struct btree T = { .n = c->size, .root = root };
	const struct vd_coll_side *mine = c->rank == root ? V : L;

	T.vr = (c->rank - root + T.n) % T.n;
	T.sub = subtree(T.vr, T.n);
	T.low = T.vr ? (T.vr & -T.vr) : T.n;
	T.parent = (T.vr - T.low + root) % T.n;
	while ((1 << T.nkids) < T.low && T.vr + (1 << T.nkids) < T.n)
		T.nkids++;
	T.blk = (size_t)mine->count * (size_t)mine->t->size * (size_t)T.sub > INT_MAX
			? -1 : mine->count * (int)mine->t->size;
	return T;
}

static int kid_rank(const struct btree *T, int k)
{
	return (T->vr + (1 << k) + T->root) % T->n;
}

static int kid_bytes(const struct btree *T, int k)
{
	return subtree(T->vr + (1 << k), T->n) * T->blk;
}

/* At the root, the other ranks' pieces between V and the packed tmp. */
static void root_pieces(struct vd_nbc *s, const struct btree *T,
			const struct vd_coll_side *V, char *tmp, bool up)
{
	for (int r = 1; r < T->n; r++) {
		char *piece = vd_side_at(V, (r + T->root) % T->n), *packed = tmp + r * T->blk;

		if (up)
			vd_nbc_copy(s, packed, T->blk, MPI_BYTE, piece, V->count, V->dt);
		else
			vd_nbc_copy(s, piece, V->count, V->dt, packed, T->blk, MPI_BYTE);
	}
}

static void gather_node(struct vd_nbc *s, const struct btree *T,
			const struct vd_coll_side *V, const struct vd_coll_side *L, char *tmp)
{
	if (T->vr)
		vd_nbc_copy(s, L->buf, L->count, L->dt, tmp, T->blk, MPI_BYTE);
	for (int k = 0; k < T->nkids; k++)
		vd_nbc_recv(s, tmp + (1 << k) * T->blk, kid_bytes(T, k), MPI_BYTE,
			    kid_rank(T, k));
	vd_nbc_fence(s);
	if (T->vr)
		vd_nbc_send(s, tmp, T->sub * T->blk, MPI_BYTE, T->parent);
	else
		root_pieces(s, T, V, tmp, true);
}

/* Going down, the largest subtree first: it has the most forwarding left. */
static void scatter_node(struct vd_nbc *s, const struct btree *T,
			 const struct vd_coll_side *V, const struct vd_coll_side *L, char *tmp)
{
	if (!T->vr) {
		root_pieces(s, T, V, tmp, false);
	} else {
		vd_nbc_recv(s, tmp, T->sub * T->blk, MPI_BYTE, T->parent);
		vd_nbc_fence(s);
	}
	for (int k = T->nkids - 1; k >= 0; k--)
		vd_nbc_send(s, tmp + (1 << k) * T->blk, kid_bytes(T, k), MPI_BYTE,
			    kid_rank(T, k));
	if (T->vr)
		vd_nbc_copy(s, tmp, T->blk, MPI_BYTE, (void *)L->buf, L->count, L->dt);
}

/* Gather (up) or Scatter: V holds the pieces at the root, L is this
 * rank's own. */
static void rooted_tree(struct vd_nbc *s, const struct vd_coll_side *V,
			const struct vd_coll_side *L, int root, bool up, struct vd_comm *c)
{
	struct btree T;
	char *tmp;

	if (c->rank == root)
		own_piece(s, V, L, root, up);
	if (c->size == 1)
		return;
	T = btree(V, L, root, c);
	if (T.sub == 1) {               /* a leaf: its own piece only */
		if (up)
			vd_nbc_send(s, L->buf, L->count, L->dt, T.parent);
		else
			vd_nbc_recv(s, (void *)L->buf, L->count, L->dt, T.parent);
		return;
	}
	if (T.blk < 0) {
		vd_nbc_fail(s, MPI_ERR_COUNT);
		return;
	}
	if (!(tmp = vd_nbc_bytes(s, (size_t)T.blk * (size_t)T.sub)))
		return;
	if (up)
		gather_node(s, &T, V, L, tmp);
	else
		scatter_node(s, &T, V, L, tmp);
}

/* ---- Gatherv / Scatterv: linear -------------------------------------------------------- */

static void rooted_linear(struct vd_nbc *s, const struct vd_coll_side *V,
			  const struct vd_coll_side *L, int root, bool up, struct vd_comm *c)
{
	if (c->rank != root) {
		if (up)
			vd_nbc_send(s, L->buf, L->count, L->dt, root);
		else
			vd_nbc_recv(s, (void *)L->buf, L->count, L->dt, root);
		return;
	}
	own_piece(s, V, L, root, up);
	for (int i = 0; i < c->size; i++) {
		if (i == root)
			continue;
		if (up)
			vd_nbc_recv(s, vd_side_at(V, i), vd_side_count(V, i), V->dt, i);
		else
			vd_nbc_send(s, vd_side_at(V, i), vd_side_count(V, i), V->dt, i);
	}
}

void vd_nbc_gather(struct vd_nbc *s, const struct vd_coll_side *S,
		   const struct vd_coll_side *R, int root, struct vd_comm *c)
{
	if (R->vec)
		rooted_linear(s, R, S, root, true, c);
	else
		rooted_tree(s, R, S, root, true, c);
}

void vd_nbc_scatter(struct vd_nbc *s, const struct vd_coll_side *S,
		    const struct vd_coll_side *R, int root, struct vd_comm *c)
{
	if (S->vec)
		rooted_linear(s, S, R, root, false, c);
	else
		rooted_tree(s, S, R, root, false, c);
}

/* ---- Allgather(v) ------------------------------------------------------------------------ */

/* Ring: in step i pass on the piece received in step i - 1 (first our
 * own) to the right, while taking the next from the left. */
static void allgather_ring(struct vd_nbc *s, const struct vd_coll_side *R, struct vd_comm *c)
{
	int n = c->size, me = c->rank;

	for (int i = 0; i < n - 1; i++) {
		int sb = (me - i + n) % n, rb = (me - i - 1 + n) % n;

		vd_nbc_recv(s, vd_side_at(R, rb), vd_side_count(R, rb), R->dt, (me - 1 + n) % n);
		vd_nbc_send(s, vd_side_at(R, sb), vd_side_count(R, sb), R->dt, (me + 1) % n);
		vd_nbc_fence(s);
	}
}

/* Power of two: in round `mask` swap the aligned block of `mask` pieces
 * we hold for the partner's. */
static void allgather_rd(struct vd_nbc *s, const struct vd_coll_side *R, struct vd_comm *c)
{
	int n = c->size, me = c->rank, rc = R->count;

	for (int mask = 1; mask < n; mask <<= 1) {
		int partner = me ^ mask;
		long mine = (long)(me & ~(mask - 1)) * rc, theirs = (long)(partner & ~(mask - 1)) * rc;

		vd_nbc_recv(s, (char *)R->buf + theirs * R->t->extent, mask * rc, R->dt, partner);
		vd_nbc_send(s, (char *)R->buf + mine * R->t->extent, mask * rc, R->dt, partner);
		vd_nbc_fence(s);
	}
}

void vd_nbc_allgather(struct vd_nbc *s, const struct vd_coll_side *S,
		      const struct vd_coll_side *R, struct vd_comm *c)
{
	int me = c->rank;

	if (S->buf != MPI_IN_PLACE)
		vd_nbc_copy(s, S->buf, S->count, S->dt, vd_side_at(R, me), vd_side_count(R, me),
			    R->dt);
	if (c->size == 1)
		return;
	if (!R->vec && is_pof2(c->size) && (long long)c->size * R->count <= INT_MAX)
		allgather_rd(s, R, c);
	else
		allgather_ring(s, R, c);
}

/* ---- Alltoall(v,w) -------------------------------------------------------------------------- */

/* The bytes [*lo, *hi) from base that count elements of t at byte
 * offset off touch, merged into the range so far. */
static void widen(struct vd_dtype *t, int count, MPI_Aint off, MPI_Aint *lo, MPI_Aint *hi)
{
	MPI_Aint a, b;

	if (count <= 0 || t->size == 0)
		return;
	vd_dtype_span(t, count, &a, &b);
	*lo = off + a < *lo ? off + a : *lo;
	*hi = off + b > *hi ? off + b : *hi;
}

/* In place: a copy of the receive buffer's bytes [lo, hi) taken first;
 * returns where the buffer's address maps to in the copy (NULL when out
 * of memory or too large). */
static char *copy_aside(struct vd_nbc *s, const void *buf, MPI_Aint lo, MPI_Aint hi)
{
	char *copy;

	if (hi <= lo)
		return (char *)buf;     /* nothing to send */
	if (hi - lo > INT_MAX) {
		vd_nbc_fail(s, MPI_ERR_COUNT);
		return NULL;
	}
	if (!(copy = vd_nbc_bytes(s, (size_t)(hi - lo))))
		return NULL;
	vd_nbc_copy(s, (const char *)buf + lo, (int)(hi - lo), MPI_BYTE, copy, (int)(hi - lo),
		    MPI_BYTE);
	return copy - lo;
}

/* The whole exchange: own piece locally, every other one in one round,
 * posted in the pairwise order (rank + i, rank - i) so that ranks meet
 * their partners' transfers early. */
void vd_nbc_alltoallw(struct vd_nbc *s, const struct vd_coll_wside *S,
		      const struct vd_coll_wside *R, struct vd_comm *c)
{
	int n = c->size, me = c->rank;
	const char *sbuf = S->buf;
	const struct vd_coll_wside *Sx = S->buf == MPI_IN_PLACE ? R : S;

	if (S->buf == MPI_IN_PLACE) {
		MPI_Aint lo = 0, hi = 0;

		for (int i = 0; i < n; i++)
			widen(vd_dtype_get(R->dts[i]), R->counts[i], R->displs[i], &lo, &hi);
		if (!(sbuf = copy_aside(s, R->buf, lo, hi)))
			return;
	} else {
		vd_nbc_copy(s, sbuf + S->displs[me], S->counts[me], S->dts[me],
			    (char *)R->buf + R->displs[me], R->counts[me], R->dts[me]);
	}
	for (int i = 1; i < n; i++) {
		int dst = (me + i) % n, src = (me - i + n) % n;

		vd_nbc_recv(s, (char *)R->buf + R->displs[src], R->counts[src], R->dts[src], src);
		vd_nbc_send(s, sbuf + Sx->displs[dst], Sx->counts[dst], Sx->dts[dst], dst);
	}
}

/* Alltoall(v) as Alltoallw: byte displacements, one type per side. */
void vd_nbc_alltoall(struct vd_nbc *s, const struct vd_coll_side *S,
		     const struct vd_coll_side *R, struct vd_comm *c)
{
	int n = c->size;
	int *a = vd_nbc_bytes(s, 4 * (size_t)n * sizeof(int));
	MPI_Datatype *d = vd_nbc_bytes(s, 2 * (size_t)n * sizeof(MPI_Datatype));
	bool inplace = S->buf == MPI_IN_PLACE;
	const struct vd_coll_side *Sx = inplace ? R : S;

	if (!a || !d)
		return;
	for (int i = 0; i < n; i++) {
		long soff = vd_side_at(Sx, i) - (char *)Sx->buf;
		long roff = vd_side_at(R, i) - (char *)R->buf;

		if (soff > INT_MAX || soff < INT_MIN || roff > INT_MAX || roff < INT_MIN) {
			vd_nbc_fail(s, MPI_ERR_COUNT);
			return;
		}
		a[i] = vd_side_count(Sx, i);
		a[n + i] = (int)soff;
		a[2 * n + i] = vd_side_count(R, i);
		a[3 * n + i] = (int)roff;
		d[i] = Sx->dt;
		d[n + i] = R->dt;
	}
	struct vd_coll_wside WS = { inplace ? MPI_IN_PLACE : S->buf, a, a + n, d };
	struct vd_coll_wside WR = { R->buf, a + 2 * n, a + 3 * n, d + n };
	vd_nbc_alltoallw(s, &WS, &WR, c);
}
