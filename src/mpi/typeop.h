/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: what dtype.c, op.c and coll*.c share beyond the contract of
 * mpi_internal.h (owned by the "types" helper; nothing else needs these).
 */
#ifndef VIADUCT_MPI_TYPEOP_H
#define VIADUCT_MPI_TYPEOP_H

#include "mpi_internal.h"

/* The C layouts of the pair types (MPI_FLOAT_INT ...): MPI defines them as
 * these structs, so their extents include the compiler's padding. */
struct vd_pair_fi { float v; int i; };
struct vd_pair_di { double v; int i; };
struct vd_pair_li { long v; int i; };
struct vd_pair_ii { int v; int i; };
struct vd_pair_si { short v; int i; };
struct vd_pair_ldi { long double v; int i; };
/* Fortran's pairs hold the index in the value's type. */
struct vd_pair_ff { float v; float i; };
struct vd_pair_dd { double v; double i; };

/* Keep t alive while a request uses it (MPI_Type_free may come first);
 * release frees it after the last user. */

/* Bytes [*lo, *hi) relative to the buffer address touched by count
 * elements of t (the true bounds, not lb/extent). */
void vd_dtype_span(const struct vd_dtype *t, int count, MPI_Aint *lo, MPI_Aint *hi);
/* A scratch buffer able to hold count elements of t in t's own layout;
 * returns the address to use as the buffer, *mem what to free().  NULL
 * when out of memory (or for count <= 0: then a valid 1-byte buffer). */
void *vd_dtype_scratch(const struct vd_dtype *t, int count, void **mem);
/* Copy count elements of t from src to dst, both laid out as t (only the
 * typemap's bytes are written). */
void vd_dtype_copy(const struct vd_dtype *t, const void *src, void *dst, int count);
/* The blocks of one element (a builtin's single block lives in *one). */
const struct vd_block *vd_dtype_blocks(const struct vd_dtype *t, struct vd_block *one,
				       int *n);

/* MPI_SUCCESS when op is valid and defined on dt (committed or not),
 * MPI_ERR_TYPE for an invalid dt, else MPI_ERR_OP. */
int vd_op_check(MPI_Op op, MPI_Datatype dt);
/* A user op's function (NULL for a predefined op), for a pending
 * operation that must outlive MPI_Op_free. */
MPI_User_function *vd_op_user_fn(MPI_Op op);
/* One of the predefined ops (MPI_SUM ... MPI_NO_OP). */
bool vd_op_builtin(MPI_Op op);

/* Error code of a vd_coll_* or vd_wait* result: negative errno -> MPI_ERR_*. */
static inline int vd_coll_code(int r)
{
	return r < 0 ? vd_mpi_errno(r) : r;
}

/* ---- collectives (coll.c, coll_move.c) ---------------------------------- *
 * Internal forms: the arguments are checked, MPI_IN_PLACE resolved where
 * the comment says so; MPI error codes come back, not raised. */
int vd_coll_isend(const void *buf, int count, MPI_Datatype dt, int dest,
		  struct vd_comm *c, MPI_Request *req);
int vd_coll_irecv(void *buf, int count, MPI_Datatype dt, int src, struct vd_comm *c,
		  MPI_Request *req);
int vd_coll_waitall(int n, MPI_Request *reqs);
int vd_coll_check_buf(const void *buf, int count, MPI_Datatype dt, struct vd_dtype **t);
int vd_coll_local_copy(const void *s, int sc, struct vd_dtype *st, void *r, int rc,
		       struct vd_dtype *rt);
struct vd_comm *vd_coll_comm(MPI_Comm comm, const char *fn, int *err);
int vd_coll_barrier(struct vd_comm *c);
int vd_coll_bcast(void *buf, int count, MPI_Datatype dt, int root, struct vd_comm *c);
/* The binomial tree over point to point, whatever the communicator. */
int vd_coll_bcast_tree(void *buf, int count, MPI_Datatype dt, int root, struct vd_comm *c);
/* in: the input (never MPI_IN_PLACE); out: significant at root. */
int vd_coll_reduce(const void *in, void *out, int count, MPI_Datatype dt, MPI_Op op,
		   int root, struct vd_comm *c);
int vd_coll_allreduce(const void *in, void *out, int count, MPI_Datatype dt, MPI_Op op,
		      struct vd_comm *c);
/* The reductions' checks: sbuf (or, in place, rbuf) holds count elements;
 * rbuf receives rcount of them here, -1: rbuf unused (Reduce off root). */
int vd_coll_check_reduce(const void *sbuf, const void *rbuf, int count, int rcount,
			 MPI_Datatype dt, MPI_Op op, struct vd_dtype **t);

/* coll_hier.c: the node-aware versions, for a communicator that spans
 * nodes with several members on some (vd_coll_hier: NULL otherwise).
 * Reductions: commutative ops only. */
struct vd_hier *vd_coll_hier(struct vd_comm *c);
int vd_hier_barrier(struct vd_hier *h);
int vd_hier_bcast(struct vd_hier *h, void *buf, int count, MPI_Datatype dt, int root,
		  const struct vd_comm *c);
int vd_hier_reduce(struct vd_hier *h, const void *in, void *out, int count,
		   MPI_Datatype dt, MPI_Op op, int root, const struct vd_comm *c);
int vd_hier_allreduce(struct vd_hier *h, const void *in, void *out, int count,
		      MPI_Datatype dt, MPI_Op op);

struct vd_coll_side;
/* Allgather with every rank's own piece already in place in R (uniform:
 * -ENOTSUP when the sizes do not fit the node-aware algorithm, which
 * changes nothing; the caller goes flat). */
int vd_hier_allgather(struct vd_hier *h, const struct vd_coll_side *R, const struct vd_comm *c);
int vd_coll_allgather_flat(const struct vd_coll_side *R, struct vd_comm *c);

/* One side (send or receive) of a collective that moves pieces (rank i's
 * piece: counts[i] elements at displs[i], or `count` at i * count).  t is
 * set by the argument checks, wherever the side is used. */
struct vd_coll_side {
	const void *buf;
	bool vec;                       /* per-rank counts[] and displs[] */
	const int *counts, *displs;
	int count;
	MPI_Datatype dt;
	struct vd_dtype *t;
};
/* S: the pieces, significant at root; R: this rank's own buffer, which
 * may be MPI_IN_PLACE at root (its piece stays in S).  scatter: S uniform;
 * scatterv: S a vector. */
int vd_coll_scatter(const struct vd_coll_side *S, const struct vd_coll_side *R, int root,
		    struct vd_comm *c);
int vd_coll_scatterv(const struct vd_coll_side *S, const struct vd_coll_side *R, int root,
		     struct vd_comm *c);
/* Argument checks (coll_move.c), setting each used side's t: one side;
 * Gather(v)/Scatter(v) with V the root's pieces and L every rank's own
 * buffer; Allgather(v)/Alltoall(v) (S may be MPI_IN_PLACE). */
int vd_coll_check_side(struct vd_coll_side *s, int n);
int vd_coll_rooted_args(struct vd_coll_side *V, struct vd_coll_side *L, int root,
			const struct vd_comm *c);
int vd_coll_all_args(struct vd_coll_side *S, struct vd_coll_side *R, int root,
		     const struct vd_comm *c);

#endif /* VIADUCT_MPI_TYPEOP_H */
