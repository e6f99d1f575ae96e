/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: what the datatype files (dtype*.c) share among themselves.
 *
 * A type is its flattened typemap (struct vd_dtype's blocks) plus the
 * recipe it was built from (combiner, integers, addresses, datatypes), which
 * MPI_Type_get_contents hands back and MPI_Get_elements walks.  The recipe
 * holds references on the types it names, so a derived type keeps the types
 * it was built from alive after the user frees them.
 */
#ifndef VIADUCT_MPI_DTYPE_IMPL_H
#define VIADUCT_MPI_DTYPE_IMPL_H

#include "typeop.h"

struct dt_recipe {
	int combiner;                   /* MPI_COMBINER_* */
	int ni, na, nd;
	int *ints;
	MPI_Aint *aints;
	struct vd_dtype **types;
};

/* Our object: the contract's struct plus what only the datatype files use. */
struct dt_obj {
	struct vd_dtype pub;            /* first: vd_dtype * <-> dt_obj * */
	MPI_Aint tlb, tub;              /* true bounds: first and last byte + 1 */
	MPI_Count nelems;               /* basic elements in one element */
	MPI_Aint pair_vsize;            /* predefined pairs: bytes before the int */
	int align;                      /* largest alignment of its basic types */
	bool marked;                    /* lb/ub set explicitly (resized, subarray,
	                                 * darray, or built from such a type) */
	struct dt_recipe *recipe;       /* NULL for predefined types */
	char name[MPI_MAX_OBJECT_NAME];
};

static inline struct dt_obj *dt_obj_of(const struct vd_dtype *t)
{
	return (struct dt_obj *)t;
}

/* A typemap under construction. */
struct builder {
	struct vd_block *b;
	int n, cap;
	bool any, any_marked;           /* bounds seen: of plain / marked types */
	MPI_Aint lb, ub, mlb, mub;
	MPI_Aint size;
	MPI_Count nelems;
	MPI_Datatype basic;             /* common basic type so far, 0: mixed */
	MPI_Aint basic_count;
	bool basic_set;
	int align;
	bool pad;                       /* round the extent up to align (struct) */
	bool fixed;                     /* lb/extent/marked given below */
	MPI_Aint fix_lb, fix_extent;
	bool fix_marked;
};

/* Place cnt consecutive elements of old starting at byte disp. */
int dt_bld_place(struct builder *B, const struct vd_dtype *old, MPI_Aint disp, MPI_Aint cnt);

/* The recipe a constructor records: integers come in up to DT_ISEGS
 * pieces (count, arrays, order ...) which are concatenated. */
#define DT_ISEGS 8
struct dt_args {
	int combiner;
	int nseg;
	const int *iseg[DT_ISEGS];
	int ilen[DT_ISEGS];
	int na, nd;
	const MPI_Aint *aints;
	const MPI_Datatype *types;
};
/* Append n integers at p to A's integers. */
void dt_args_ints(struct dt_args *A, const int *p, int n);

/* Turn B into a new uncommitted type with recipe A; frees B's blocks in
 * every case.  MPI error code. */
int dt_make(struct builder *B, const struct dt_args *A, MPI_Datatype *newtype);
/* The handle of a predefined type. */
MPI_Datatype dt_builtin_handle(const struct vd_dtype *t);
/* A further handle on an existing object (one more reference). */
int dt_handle_share(struct vd_dtype *t, MPI_Datatype *h);

/* Raise code on MPI_COMM_WORLD (datatypes belong to no communicator). */
static inline int dt_raise(int code, const char *fn)
{
	return vd_mpi_raise(MPI_COMM_WORLD, code, fn);
}

/* oldtype valid and newtype not NULL (the checks every constructor ends
 * with). */
int dt_check_old_new(MPI_Datatype oldtype, const MPI_Datatype *newtype,
		     struct vd_dtype **old);

#endif /* VIADUCT_MPI_DTYPE_IMPL_H */
