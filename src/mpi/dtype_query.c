/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: what can be asked of a datatype -- true extent, MPI_Count
 * forms of size and extent, envelope and contents, names, MPI_Get_elements
 * -- and the address helpers.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dtype_impl.h"

/* The type, or NULL after raising MPI_ERR_TYPE / MPI_ERR_ARG (out NULL). */
static struct vd_dtype *query(MPI_Datatype dt, const void *out, const char *fn, int *err)
{
	struct vd_dtype *t = vd_dtype_get(dt);

	*err = !t ? MPI_ERR_TYPE : !out ? MPI_ERR_ARG : MPI_SUCCESS;
	if (*err)
		*err = dt_raise(*err, fn);
	return *err ? NULL : t;
}

#pragma weak MPI_Type_get_true_extent = PMPI_Type_get_true_extent
int PMPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb,
			      MPI_Aint *true_extent)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_get_true_extent";
	struct vd_dtype *t;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(t = query(datatype, true_lb && true_extent ? true_lb : NULL, fn, &err)))
		return err;
	*true_lb = dt_obj_of(t)->tlb;
	*true_extent = dt_obj_of(t)->tub - dt_obj_of(t)->tlb;
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_size_x = PMPI_Type_size_x
int PMPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_size_x";
	struct vd_dtype *t;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(t = query(datatype, size, fn, &err)))
		return err;
	*size = t->size;
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_get_extent_x = PMPI_Type_get_extent_x
int PMPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_get_extent_x";
	struct vd_dtype *t;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(t = query(datatype, lb && extent ? lb : NULL, fn, &err)))
		return err;
	*lb = t->lb;
	*extent = t->extent;
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_get_true_extent_x = PMPI_Type_get_true_extent_x
int PMPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb,
				MPI_Count *true_extent)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_get_true_extent_x";
	struct vd_dtype *t;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(t = query(datatype, true_lb && true_extent ? true_lb : NULL, fn, &err)))
		return err;
	*true_lb = dt_obj_of(t)->tlb;
	*true_extent = dt_obj_of(t)->tub - dt_obj_of(t)->tlb;
	return MPI_SUCCESS;
}

/* ---- envelope and contents ------------------------------------------------------ */

#pragma weak MPI_Type_get_envelope = PMPI_Type_get_envelope
int PMPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
			   int *num_datatypes, int *combiner)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_get_envelope";
	const struct dt_recipe *R;
	struct vd_dtype *t;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(t = query(datatype,
			num_integers && num_addresses && num_datatypes ? combiner : NULL,
			fn, &err)))
		return err;
	R = dt_obj_of(t)->recipe;
	*num_integers = R ? R->ni : 0;
	*num_addresses = R ? R->na : 0;
	*num_datatypes = R ? R->nd : 0;
	*combiner = R ? R->combiner : MPI_COMBINER_NAMED;
	return MPI_SUCCESS;
}

/* A handle for a type of a recipe: predefined ones are themselves,
 * derived ones a new handle the caller frees (MPI 4.0 5.1.13). */
static int contents_type(struct vd_dtype *t, MPI_Datatype *h)
{
	if (t->builtin) {
		*h = dt_builtin_handle(t);
		return MPI_SUCCESS;
	}
	return dt_handle_share(t, h);
}

static int contents_check(const struct dt_recipe *R, int max_i, int max_a, int max_d,
			  const int *ints, const MPI_Aint *aints, const MPI_Datatype *types)
{
	if (!R)
		return MPI_ERR_TYPE;    /* predefined: no contents */
	if (max_i < R->ni || max_a < R->na || max_d < R->nd)
		return MPI_ERR_ARG;
	if ((R->ni && !ints) || (R->na && !aints) || (R->nd && !types))
		return MPI_ERR_ARG;
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_get_contents = PMPI_Type_get_contents
int PMPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
			   int max_datatypes, int integers[], MPI_Aint addresses[],
			   MPI_Datatype datatypes[])
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_get_contents";
	const struct dt_recipe *R;
	struct vd_dtype *t;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(t = vd_dtype_get(datatype)))
		return dt_raise(MPI_ERR_TYPE, fn);
	R = dt_obj_of(t)->recipe;
	if ((err = contents_check(R, max_integers, max_addresses, max_datatypes, integers,
				  addresses, datatypes)))
		return dt_raise(err, fn);
	if (R->ni)
		memcpy(integers, R->ints, (size_t)R->ni * sizeof(int));
	if (R->na)
		memcpy(addresses, R->aints, (size_t)R->na * sizeof(MPI_Aint));
	for (int i = 0; i < R->nd; i++)
		if ((err = contents_type(R->types[i], &datatypes[i]))) {
			while (i-- > 0)
				if (!R->types[i]->builtin)
					PMPI_Type_free(&datatypes[i]);
			return dt_raise(err, fn);
		}
	return MPI_SUCCESS;
}

/* ---- names --------------------------------------------------------------------------- */

#pragma weak MPI_Type_set_name = PMPI_Type_set_name
int PMPI_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_set_name";
	struct vd_dtype *t;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(t = query(datatype, type_name, fn, &err)))
		return err;
	/* Longer names are cut at MPI_MAX_OBJECT_NAME - 1 characters. */
	snprintf(dt_obj_of(t)->name, MPI_MAX_OBJECT_NAME, "%s", type_name);
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_get_name = PMPI_Type_get_name
int PMPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_get_name";
	struct vd_dtype *t;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(t = query(datatype, type_name && resultlen ? type_name : NULL, fn, &err)))
		return err;
	strcpy(type_name, dt_obj_of(t)->name);
	*resultlen = (int)strlen(type_name);
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_match_size = PMPI_Type_match_size
int PMPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype)
{
	VD_API_GUARD();
	static const struct { int cls; MPI_Datatype h; int size; } table[] = {
		{ MPI_TYPECLASS_INTEGER, MPI_SIGNED_CHAR, sizeof(signed char) },
		{ MPI_TYPECLASS_INTEGER, MPI_SHORT, sizeof(short) },
		{ MPI_TYPECLASS_INTEGER, MPI_INT, sizeof(int) },
		{ MPI_TYPECLASS_INTEGER, MPI_LONG_LONG_INT, sizeof(long long) },
		{ MPI_TYPECLASS_REAL, MPI_FLOAT, sizeof(float) },
		{ MPI_TYPECLASS_REAL, MPI_DOUBLE, sizeof(double) },
		{ MPI_TYPECLASS_REAL, MPI_LONG_DOUBLE, sizeof(long double) },
		{ MPI_TYPECLASS_COMPLEX, MPI_C_FLOAT_COMPLEX, sizeof(float _Complex) },
		{ MPI_TYPECLASS_COMPLEX, MPI_C_DOUBLE_COMPLEX, sizeof(double _Complex) },
		{ MPI_TYPECLASS_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX,
		  sizeof(long double _Complex) },
	};

	VD_MPI_CHECK_RUNNING("MPI_Type_match_size");
	if (!datatype)
		return dt_raise(MPI_ERR_ARG, "MPI_Type_match_size");
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].cls == typeclass && table[i].size == size) {
			*datatype = table[i].h;
			return MPI_SUCCESS;
		}
	return dt_raise(MPI_ERR_ARG, "MPI_Type_match_size");
}

/* ---- addresses ----------------------------------------------------------------------- */

#pragma weak MPI_Get_address = PMPI_Get_address
int PMPI_Get_address(const void *location, MPI_Aint *address)
{
	VD_API_GUARD();
	VD_MPI_CHECK_RUNNING("MPI_Get_address");
	if (!address)
		return dt_raise(MPI_ERR_ARG, "MPI_Get_address");
	*address = (MPI_Aint)(uintptr_t)location;
	return MPI_SUCCESS;
}

/* Address arithmetic wraps like the machine's (no undefined overflow). */
#pragma weak MPI_Aint_add = PMPI_Aint_add
MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp)
{
	VD_API_GUARD();
	return (MPI_Aint)((uintptr_t)base + (uintptr_t)disp);
}

#pragma weak MPI_Aint_diff = PMPI_Aint_diff
MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2)
{
	VD_API_GUARD();
	return (MPI_Aint)((uintptr_t)addr1 - (uintptr_t)addr2);
}

/* ---- MPI_Get_elements ------------------------------------------------------------------ */

static MPI_Count elems_in(const struct vd_dtype *t, MPI_Count bytes);

/* Basic elements in the first `rest` bytes (less than one element) of an
 * element of o: walk its recipe's type signature. */
static MPI_Count elems_partial(const struct dt_obj *o, MPI_Count rest)
{
	const struct dt_recipe *R = o->recipe;
	MPI_Count n = 0;

	if (!R)                         /* a pair: the value alone is one */
		return o->pair_vsize && rest == o->pair_vsize ? 1 : -1;
	if (R->combiner != MPI_COMBINER_STRUCT)
		return elems_in(R->types[0], rest);     /* a run of one type */
	for (int i = 0; i < R->nd && rest > 0; i++) {
		const struct vd_dtype *c = R->types[i];
		MPI_Count whole = (MPI_Count)R->ints[1 + i] * c->size, r;

		if (rest >= whole) {
			n += (MPI_Count)R->ints[1 + i] * dt_obj_of(c)->nelems;
			rest -= whole;
			continue;
		}
		r = elems_in(c, rest);
		return r < 0 ? -1 : n + r;
	}
	return n;
}

/* Basic elements in the first `bytes` of a run of t's; -1 when they end
 * inside a basic element. */
static MPI_Count elems_in(const struct vd_dtype *t, MPI_Count bytes)
{
	const struct dt_obj *o = dt_obj_of(t);
	MPI_Count n, r;

	if (t->size == 0)
		return 0;
	n = bytes / t->size * o->nelems;
	if (bytes % t->size == 0)
		return n;
	r = elems_partial(o, bytes % t->size);
	return r < 0 ? -1 : n + r;
}

static int get_elements(const MPI_Status *st, MPI_Datatype dt, MPI_Count *count,
			const char *fn)
{
	struct vd_dtype *t;

	VD_MPI_CHECK_RUNNING(fn);
	if (!st || st == MPI_STATUS_IGNORE || !count)
		return dt_raise(MPI_ERR_ARG, fn);
	if (!(t = vd_dtype_get(dt)))
		return dt_raise(MPI_ERR_TYPE, fn);
	*count = elems_in(t, (MPI_Count)(unsigned)st->vd_count_lo);
	return MPI_SUCCESS;
}

#pragma weak MPI_Get_elements_x = PMPI_Get_elements_x
int PMPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
	VD_API_GUARD();
	int err = get_elements(status, datatype, count, "MPI_Get_elements_x");

	if (!err && *count < 0)
		*count = MPI_UNDEFINED;
	return err;
}

#pragma weak MPI_Get_elements = PMPI_Get_elements
int PMPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
	VD_API_GUARD();
	MPI_Count n = 0;
	int err = get_elements(status, datatype, count ? &n : NULL, "MPI_Get_elements");

	if (!err)
		*count = n < 0 || n > INT_MAX ? MPI_UNDEFINED : (int)n;
	return err;
}
