/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the block constructors of datatypes (contiguous, vector,
 * indexed and their byte-displacement and fixed-block forms), struct,
 * resized and dup.  Each flattens its typemap with the builder of dtype.c
 * and records its recipe for MPI_Type_get_contents.
 */
#include <stdlib.h>

#include "dtype_impl.h"

/* Where block i starts: displacements in elements of old (edispl), in
 * bytes (bdispl), or a stride in elements or bytes. */
struct layout {
	int count;
	bool varlen;                    /* block i is lens[i] elements, else len */
	const int *lens;
	int len;
	const int *edispl;
	const MPI_Aint *bdispl;
	MPI_Aint stride;
	bool stride_bytes;
};

static bool block_disp(const struct layout *L, int i, MPI_Aint extent, MPI_Aint *d)
{
	if (L->bdispl) {
		*d = L->bdispl[i];
		return true;
	}
	if (L->edispl)
		return !__builtin_mul_overflow((MPI_Aint)L->edispl[i], extent, d);
	if (L->stride_bytes)
		return !__builtin_mul_overflow((MPI_Aint)i, L->stride, d);
	return !__builtin_mul_overflow((MPI_Aint)i * L->stride, extent, d);
}

static int build_layout(const struct vd_dtype *old, const struct layout *L,
			const struct dt_args *A, MPI_Datatype *newtype)
{
	struct builder B = { 0 };
	int err = MPI_SUCCESS;

	for (int i = 0; i < L->count && !err; i++) {
		MPI_Aint disp;

		if (!block_disp(L, i, old->extent, &disp))
			err = MPI_ERR_ARG;
		else
			err = dt_bld_place(&B, old, disp, L->varlen ? L->lens[i] : L->len);
	}
	if (!err)
		return dt_make(&B, A, newtype);
	free(B.b);
	return err;
}

static bool lens_ok(int count, const int *lens)
{
	if (count > 0 && !lens)
		return false;
	for (int i = 0; i < count; i++)
		if (lens[i] < 0)
			return false;
	return true;
}

#pragma weak MPI_Type_contiguous = PMPI_Type_contiguous
int PMPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_contiguous";
	struct layout L = { .count = 1, .len = count };
	struct dt_args A = { .combiner = MPI_COMBINER_CONTIGUOUS, .nd = 1, .types = &oldtype };
	struct vd_dtype *old;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (count < 0)
		return dt_raise(MPI_ERR_COUNT, fn);
	dt_args_ints(&A, &count, 1);
	if (!(err = dt_check_old_new(oldtype, newtype, &old)))
		err = build_layout(old, &L, &A, newtype);
	return dt_raise(err, fn);
}

static int vector(int count, int blocklength, MPI_Aint stride, bool bytes,
		  MPI_Datatype oldtype, MPI_Datatype *newtype, const char *fn)
{
	struct layout L = { .count = count, .len = blocklength, .stride = stride,
			    .stride_bytes = bytes };
	struct dt_args A = { .nd = 1, .types = &oldtype };
	int ints[3] = { count, blocklength, (int)stride };
	struct vd_dtype *old;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (count < 0)
		return dt_raise(MPI_ERR_COUNT, fn);
	if (blocklength < 0)
		return dt_raise(MPI_ERR_ARG, fn);
	A.combiner = bytes ? MPI_COMBINER_HVECTOR : MPI_COMBINER_VECTOR;
	dt_args_ints(&A, ints, bytes ? 2 : 3);
	if (bytes) {
		A.na = 1;
		A.aints = &stride;
	}
	if (!(err = dt_check_old_new(oldtype, newtype, &old)))
		err = build_layout(old, &L, &A, newtype);
	return dt_raise(err, fn);
}

#pragma weak MPI_Type_vector = PMPI_Type_vector
int PMPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
		    MPI_Datatype *newtype)
{
	VD_API_GUARD();
	return vector(count, blocklength, stride, false, oldtype, newtype, "MPI_Type_vector");
}

#pragma weak MPI_Type_create_hvector = PMPI_Type_create_hvector
int PMPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride,
			     MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	VD_API_GUARD();
	return vector(count, blocklength, stride, true, oldtype, newtype,
		      "MPI_Type_create_hvector");
}

/* indexed, hindexed, indexed_block, hindexed_block: L says which. */
static int indexed(struct layout *L, MPI_Datatype oldtype, MPI_Datatype *newtype,
		   const char *fn)
{
	struct dt_args A = { .nd = 1, .types = &oldtype };
	struct vd_dtype *old;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (L->count < 0)
		return dt_raise(MPI_ERR_COUNT, fn);
	if ((L->count > 0 && !L->edispl && !L->bdispl) ||
	    (L->varlen ? !lens_ok(L->count, L->lens) : L->len < 0))
		return dt_raise(MPI_ERR_ARG, fn);
	A.combiner = L->varlen ? (L->bdispl ? MPI_COMBINER_HINDEXED : MPI_COMBINER_INDEXED)
			       : (L->bdispl ? MPI_COMBINER_HINDEXED_BLOCK
					    : MPI_COMBINER_INDEXED_BLOCK);
	dt_args_ints(&A, &L->count, 1);
	dt_args_ints(&A, L->varlen ? L->lens : &L->len, L->varlen ? L->count : 1);
	if (L->edispl)
		dt_args_ints(&A, L->edispl, L->count);
	A.na = L->bdispl ? L->count : 0;
	A.aints = L->bdispl;
	if (!(err = dt_check_old_new(oldtype, newtype, &old)))
		err = build_layout(old, L, &A, newtype);
	return dt_raise(err, fn);
}

#pragma weak MPI_Type_indexed = PMPI_Type_indexed
int PMPI_Type_indexed(int count, const int blocklengths[], const int displacements[],
		     MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	VD_API_GUARD();
	struct layout L = { .count = count, .varlen = true, .lens = blocklengths,
			    .edispl = displacements };

	return indexed(&L, oldtype, newtype, "MPI_Type_indexed");
}

#pragma weak MPI_Type_create_hindexed = PMPI_Type_create_hindexed
int PMPI_Type_create_hindexed(int count, const int blocklengths[],
			      const MPI_Aint displacements[], MPI_Datatype oldtype,
			      MPI_Datatype *newtype)
{
	VD_API_GUARD();
	struct layout L = { .count = count, .varlen = true, .lens = blocklengths,
			    .bdispl = displacements };

	return indexed(&L, oldtype, newtype, "MPI_Type_create_hindexed");
}

#pragma weak MPI_Type_create_indexed_block = PMPI_Type_create_indexed_block
int PMPI_Type_create_indexed_block(int count, int blocklength, const int displacements[],
				   MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	VD_API_GUARD();
	struct layout L = { .count = count, .len = blocklength, .edispl = displacements };

	return indexed(&L, oldtype, newtype, "MPI_Type_create_indexed_block");
}

#pragma weak MPI_Type_create_hindexed_block = PMPI_Type_create_hindexed_block
int PMPI_Type_create_hindexed_block(int count, int blocklength,
				    const MPI_Aint displacements[], MPI_Datatype oldtype,
				    MPI_Datatype *newtype)
{
	VD_API_GUARD();
	struct layout L = { .count = count, .len = blocklength, .bdispl = displacements };

	return indexed(&L, oldtype, newtype, "MPI_Type_create_hindexed_block");
}

/* ---- struct ------------------------------------------------------------------ */

static int struct_check(int count, const int *lens, const MPI_Aint *displs,
			const MPI_Datatype *types, const MPI_Datatype *newtype)
{
	if (count < 0)
		return MPI_ERR_COUNT;
	if (!lens_ok(count, lens) || (count > 0 && (!displs || !types)) || !newtype)
		return MPI_ERR_ARG;
	for (int i = 0; i < count; i++)
		if (!vd_dtype_get(types[i]))
			return MPI_ERR_TYPE;
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_create_struct = PMPI_Type_create_struct
int PMPI_Type_create_struct(int count, const int blocklengths[],
			    const MPI_Aint displacements[], const MPI_Datatype types[],
			    MPI_Datatype *newtype)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_create_struct";
	struct builder B = { .pad = true };
	struct dt_args A = { .combiner = MPI_COMBINER_STRUCT, .na = count, .nd = count,
			     .aints = displacements, .types = types };
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if ((err = struct_check(count, blocklengths, displacements, types, newtype)))
		return dt_raise(err, fn);
	dt_args_ints(&A, &count, 1);
	dt_args_ints(&A, blocklengths, count);
	for (int i = 0; i < count && !err; i++)
		err = dt_bld_place(&B, vd_dtype_get(types[i]), displacements[i],
				   blocklengths[i]);
	if (!err)
		return dt_raise(dt_make(&B, &A, newtype), fn);
	free(B.b);
	return dt_raise(err, fn);
}

/* ---- resized and dup ----------------------------------------------------------- */

/* One element of old with the bounds given (lb, extent, marked). */
static int rebound(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, bool marked,
		   const struct dt_args *A, MPI_Datatype *newtype)
{
	struct builder B = { .fixed = true, .fix_lb = lb, .fix_extent = extent,
			     .fix_marked = marked };
	struct vd_dtype *old;
	int err;

	if ((err = dt_check_old_new(oldtype, newtype, &old)))
		return err;
	if (!(err = dt_bld_place(&B, old, 0, 1)))
		return dt_make(&B, A, newtype);
	free(B.b);
	return err;
}

#pragma weak MPI_Type_create_resized = PMPI_Type_create_resized
int PMPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
			     MPI_Datatype *newtype)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_create_resized";
	MPI_Aint bounds[2] = { lb, extent };
	struct dt_args A = { .combiner = MPI_COMBINER_RESIZED, .na = 2, .nd = 1,
			     .aints = bounds, .types = &oldtype };

	VD_MPI_CHECK_RUNNING(fn);
	/* Negative extents are not supported: elements never run backwards. */
	if (extent < 0)
		return dt_raise(MPI_ERR_ARG, fn);
	return dt_raise(rebound(oldtype, lb, extent, true, &A, newtype), fn);
}

#pragma weak MPI_Type_dup = PMPI_Type_dup
int PMPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_dup";
	struct dt_args A = { .combiner = MPI_COMBINER_DUP, .nd = 1, .types = &oldtype };
	struct vd_dtype *old = vd_dtype_get(oldtype);
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!old)
		return dt_raise(MPI_ERR_TYPE, fn);
	err = rebound(oldtype, old->lb, old->extent, dt_obj_of(old)->marked, &A, newtype);
	if (err)
		return dt_raise(err, fn);
	vd_dtype_get(*newtype)->committed = old->committed;     /* as old is */
	/* The attributes go through their copy callbacks; when one fails,
	 * so does the duplicate (those already copied are deleted). */
	if ((err = vd_type_attr_copy(oldtype, *newtype)) != MPI_SUCCESS) {
		PMPI_Type_free(newtype);
		*newtype = MPI_DATATYPE_NULL;
	}
	return dt_raise(err, fn);
}
