/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the Fortran 90 parameterised types -- MPI_Type_create_f90_
 * integer, _real and _complex.  Each hands back the predefined Fortran type
 * of the smallest kind that meets the asked precision and decimal range
 * (what SELECTED_INT_KIND / SELECTED_REAL_KIND pick with gfortran), so the
 * result is a predefined handle: it needs no commit and must not be freed.
 * No kind fits: MPI_ERR_ARG.
 */
#include "dtype_impl.h"

/* A real kind: its decimal precision and exponent range (PRECISION() and
 * RANGE() of the Fortran kind), with the types that hold it. */
struct real_kind {
	int precision, range;
	MPI_Datatype real, complex;
};

static const struct real_kind real_kinds[] = {
	{ 6, 37, MPI_REAL4, MPI_COMPLEX },
	{ 15, 307, MPI_REAL8, MPI_DOUBLE_COMPLEX },
};

/* An integer kind: RANGE() of it. */
static const struct {
	int range;
	MPI_Datatype type;
} int_kinds[] = {
	{ 2, MPI_INTEGER1 }, { 4, MPI_INTEGER2 }, { 9, MPI_INTEGER4 }, { 18, MPI_INTEGER8 },
};

/* The real kind for p and r (either may be MPI_UNDEFINED, not both), or
 * NULL. */
static const struct real_kind *real_kind_for(int p, int r)
{
	if (p == MPI_UNDEFINED && r == MPI_UNDEFINED)
		return NULL;
	for (size_t i = 0; i < sizeof(real_kinds) / sizeof(real_kinds[0]); i++) {
		const struct real_kind *k = &real_kinds[i];

		if ((p == MPI_UNDEFINED || p <= k->precision) &&
		    (r == MPI_UNDEFINED || r <= k->range))
			return k;
	}
	return NULL;
}

static int f90_real(int p, int r, bool complex, MPI_Datatype *newtype, const char *fn)
{
	const struct real_kind *k;

	VD_MPI_CHECK_RUNNING(fn);
	if (!newtype || !(k = real_kind_for(p, r)))
		return dt_raise(MPI_ERR_ARG, fn);
	*newtype = complex ? k->complex : k->real;
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_create_f90_real = PMPI_Type_create_f90_real
int PMPI_Type_create_f90_real(int p, int r, MPI_Datatype *newtype)
{
	VD_API_GUARD();
	return f90_real(p, r, false, newtype, "MPI_Type_create_f90_real");
}

#pragma weak MPI_Type_create_f90_complex = PMPI_Type_create_f90_complex
int PMPI_Type_create_f90_complex(int p, int r, MPI_Datatype *newtype)
{
	VD_API_GUARD();
	return f90_real(p, r, true, newtype, "MPI_Type_create_f90_complex");
}

#pragma weak MPI_Type_create_f90_integer = PMPI_Type_create_f90_integer
int PMPI_Type_create_f90_integer(int r, MPI_Datatype *newtype)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_create_f90_integer";

	VD_MPI_CHECK_RUNNING(fn);
	if (!newtype || r == MPI_UNDEFINED)
		return dt_raise(MPI_ERR_ARG, fn);
	for (size_t i = 0; i < sizeof(int_kinds) / sizeof(int_kinds[0]); i++) {
		if (r <= int_kinds[i].range) {
			*newtype = int_kinds[i].type;
			return MPI_SUCCESS;
		}
	}
	return dt_raise(MPI_ERR_ARG, fn);
}
