/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: datatypes that pick part of an n-dimensional array
 * (MPI_Type_create_subarray, MPI_Type_create_darray).
 *
 * Both come down to the same thing: in every dimension a sorted list of
 * the indices taken; the typemap visits the chosen elements in array order
 * (last index fastest in C order, first in Fortran order), and the type
 * spans the whole array (lb 0, extent = all its elements), as the standard
 * defines them through MPI_Type_create_resized.
 */
#include <stdlib.h>

#include "dtype_impl.h"

#define DT_MAX_DIMS 32

/* The chosen indices of every dimension, in the order the dimensions
 * vary: dim 0 the slowest. */
struct grid {
	int ndims;
	MPI_Aint *idx[DT_MAX_DIMS];     /* indices of dim d (sorted) */
	MPI_Aint n[DT_MAX_DIMS];        /* how many */
	MPI_Aint stride[DT_MAX_DIMS];   /* bytes between neighbours in dim d */
};

static void grid_free(struct grid *G)
{
	for (int d = 0; d < G->ndims; d++)
		free(G->idx[d]);
}

/* Dimension k of the array in the order the dims vary, slowest first. */
static int dim_at(int ndims, int order, int k)
{
	return order == MPI_ORDER_C ? k : ndims - 1 - k;
}

/* Byte strides of each varying-order dim; MPI_ERR_ARG when the array does
 * not fit in an address. */
static int grid_strides(struct grid *G, const int *sizes, int order, MPI_Aint extent,
			MPI_Aint *total)
{
	MPI_Aint s = extent;

	for (int k = G->ndims - 1; k >= 0; k--) {
		G->stride[k] = s;
		if (__builtin_mul_overflow(s, (MPI_Aint)sizes[dim_at(G->ndims, order, k)], &s))
			return MPI_ERR_ARG;
	}
	*total = s;
	return MPI_SUCCESS;
}

/* Place the inner dim's indices at base, runs of consecutive indices as
 * one placement. */
static int place_inner(struct builder *B, const struct vd_dtype *old,
		       const struct grid *G, MPI_Aint base)
{
	int k = G->ndims - 1, err = MPI_SUCCESS;
	const MPI_Aint *ix = G->idx[k];

	for (MPI_Aint i = 0, j; i < G->n[k] && !err; i = j) {
		for (j = i + 1; j < G->n[k] && ix[j] == ix[j - 1] + 1; j++)
			;
		err = dt_bld_place(B, old, base + ix[i] * G->stride[k], j - i);
	}
	return err;
}

/* Visit every combination of the outer dims' indices (odometer). */
static int grid_place(struct builder *B, const struct vd_dtype *old, const struct grid *G)
{
	MPI_Aint pos[DT_MAX_DIMS] = { 0 };
	int outer = G->ndims - 1, err = MPI_SUCCESS;

	for (int d = 0; d < G->ndims; d++)
		if (G->n[d] == 0)
			return MPI_SUCCESS;
	for (;;) {
		MPI_Aint base = 0;
		int d;

		for (d = 0; d < outer; d++)
			base += G->idx[d][pos[d]] * G->stride[d];
		if ((err = place_inner(B, old, G, base)))
			return err;
		for (d = outer - 1; d >= 0 && ++pos[d] == G->n[d]; d--)
			pos[d] = 0;
		if (d < 0)
			return MPI_SUCCESS;
	}
}

/* Build the type: the grid's elements, lb 0, extent the whole array. */
static int grid_make(struct grid *G, const int *sizes, int order, MPI_Datatype oldtype,
		     const struct dt_args *A, MPI_Datatype *newtype)
{
	struct builder B = { .fixed = true, .fix_marked = true };
	struct vd_dtype *old;
	int err;

	if (!(err = dt_check_old_new(oldtype, newtype, &old)) &&
	    !(err = grid_strides(G, sizes, order, old->extent, &B.fix_extent)) &&
	    !(err = grid_place(&B, old, G)))
		return dt_make(&B, A, newtype);
	free(B.b);
	return err;
}

/* Dim k (varying order) takes the n indices first, first + 1, ... */
static int grid_range(struct grid *G, int k, MPI_Aint first, MPI_Aint n)
{
	if (!(G->idx[k] = malloc((size_t)(n ? n : 1) * sizeof(MPI_Aint))))
		return MPI_ERR_NO_MEM;
	for (MPI_Aint i = 0; i < n; i++)
		G->idx[k][i] = first + i;
	G->n[k] = n;
	return MPI_SUCCESS;
}

static bool order_ok(int order)
{
	return order == MPI_ORDER_C || order == MPI_ORDER_FORTRAN;
}

static int subarray_check(int ndims, const int *sizes, const int *subsizes,
			  const int *starts, int order)
{
	if (ndims < 1 || ndims > DT_MAX_DIMS || !sizes || !subsizes || !starts ||
	    !order_ok(order))
		return MPI_ERR_ARG;
	for (int d = 0; d < ndims; d++)
		if (sizes[d] < 1 || subsizes[d] < 0 || subsizes[d] > sizes[d] ||
		    starts[d] < 0 || starts[d] > sizes[d] - subsizes[d])
			return MPI_ERR_ARG;
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_create_subarray = PMPI_Type_create_subarray
int PMPI_Type_create_subarray(int ndims, const int sizes[], const int subsizes[],
			      const int starts[], int order, MPI_Datatype oldtype,
			      MPI_Datatype *newtype)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_create_subarray";
	struct dt_args A = { .combiner = MPI_COMBINER_SUBARRAY, .nd = 1, .types = &oldtype };
	struct grid G = { 0 };
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if ((err = subarray_check(ndims, sizes, subsizes, starts, order)))
		return dt_raise(err, fn);
	for (int k = 0; k < ndims && !err; k++, G.ndims++) {
		int d = dim_at(ndims, order, k);

		err = grid_range(&G, k, starts[d], subsizes[d]);
	}
	dt_args_ints(&A, &ndims, 1);
	dt_args_ints(&A, sizes, ndims);
	dt_args_ints(&A, subsizes, ndims);
	dt_args_ints(&A, starts, ndims);
	dt_args_ints(&A, &order, 1);
	if (!err)
		err = grid_make(&G, sizes, order, oldtype, &A, newtype);
	grid_free(&G);
	return dt_raise(err, fn);
}

/* ---- darray ------------------------------------------------------------------ */

/* Block size of one dimension's distribution; 0 for bad arguments. */
static MPI_Aint darray_block(int distrib, int darg, int gsize, int psize)
{
	switch (distrib) {
	case MPI_DISTRIBUTE_NONE:
		return psize == 1 ? gsize : 0;
	case MPI_DISTRIBUTE_BLOCK:
		if (darg == MPI_DISTRIBUTE_DFLT_DARG)
			return (gsize + psize - 1) / psize;
		return darg >= 1 && (MPI_Aint)darg * psize >= gsize ? darg : 0;
	case MPI_DISTRIBUTE_CYCLIC:
		if (darg == MPI_DISTRIBUTE_DFLT_DARG)
			return 1;
		return darg >= 1 ? darg : 0;
	default:
		return 0;
	}
}

static int darray_check(int size, int rank, int ndims, const int *gsizes,
			const int *distribs, const int *dargs, const int *psizes, int order)
{
	MPI_Aint nprocs = 1;

	if (size < 1 || rank < 0 || rank >= size || ndims < 1 || ndims > DT_MAX_DIMS ||
	    !gsizes || !distribs || !dargs || !psizes || !order_ok(order))
		return MPI_ERR_ARG;
	for (int d = 0; d < ndims; d++) {
		if (gsizes[d] < 1 || psizes[d] < 1 ||
		    !darray_block(distribs[d], dargs[d], gsizes[d], psizes[d]))
			return MPI_ERR_ARG;
		nprocs *= psizes[d];
		if (nprocs > size)
			return MPI_ERR_ARG;
	}
	return nprocs == size ? MPI_SUCCESS : MPI_ERR_ARG;
}

/* Dim k (varying order) gets the indices coordinate c owns of gsize,
 * blocks of b dealt round p processes (block: one round). */
static int darray_dim(struct grid *G, int k, MPI_Aint gsize, MPI_Aint b, MPI_Aint p,
		      MPI_Aint c)
{
	MPI_Aint n = 0;

	if (!(G->idx[k] = malloc((size_t)(gsize / p + b + 1) * sizeof(MPI_Aint))))
		return MPI_ERR_NO_MEM;
	for (MPI_Aint start = c * b; start < gsize; start += p * b)
		for (MPI_Aint i = start; i < start + b && i < gsize; i++)
			G->idx[k][n++] = i;
	G->n[k] = n;
	return MPI_SUCCESS;
}

/* The process grid is row-major whatever the array order. */
static void darray_coords(int rank, int ndims, const int *psizes, int *coords)
{
	for (int d = ndims - 1; d >= 0; d--) {
		coords[d] = rank % psizes[d];
		rank /= psizes[d];
	}
}

#pragma weak MPI_Type_create_darray = PMPI_Type_create_darray
int PMPI_Type_create_darray(int size, int rank, int ndims, const int gsizes[],
			    const int distribs[], const int dargs[], const int psizes[],
			    int order, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_create_darray";
	struct dt_args A = { .combiner = MPI_COMBINER_DARRAY, .nd = 1, .types = &oldtype };
	int head[3] = { size, rank, ndims }, coords[DT_MAX_DIMS];
	struct grid G = { 0 };
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if ((err = darray_check(size, rank, ndims, gsizes, distribs, dargs, psizes, order)))
		return dt_raise(err, fn);
	darray_coords(rank, ndims, psizes, coords);
	for (int k = 0; k < ndims && !err; k++, G.ndims++) {
		int d = dim_at(ndims, order, k);
		MPI_Aint b = darray_block(distribs[d], dargs[d], gsizes[d], psizes[d]);

		err = darray_dim(&G, k, gsizes[d], b, psizes[d], coords[d]);
	}
	dt_args_ints(&A, head, 3);
	dt_args_ints(&A, gsizes, ndims);
	dt_args_ints(&A, distribs, ndims);
	dt_args_ints(&A, dargs, ndims);
	dt_args_ints(&A, psizes, ndims);
	dt_args_ints(&A, &order, 1);
	if (!err)
		err = grid_make(&G, gsizes, order, oldtype, &A, newtype);
	grid_free(&G);
	return dt_raise(err, fn);
}
