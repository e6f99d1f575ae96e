/* SPDX-License-Identifier: MIT */
/*
 * What the generated Fortran wrappers (mpi_fortran.c) share: the mapping of
 * Fortran's sentinels to C's, and of Fortran strings (blank padded, length
 * passed apart) to C strings.  gfortran's conventions: a trailing
 * underscore on external names, string lengths as size_t after the last
 * argument, .TRUE. == 1.
 */
#ifndef VIADUCT_FORTRAN_GLUE_H
#define VIADUCT_FORTRAN_GLUE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static inline void *vd_fbuf(void *p)
{
	if (p == (void *)vd_mpi_fbottom_)
		return MPI_BOTTOM;
	if (p == (void *)vd_mpi_finplace_)
		return MPI_IN_PLACE;
	return p;
}

/* A weights array of the distributed graph functions. */
static inline int *vd_fweights(MPI_Fint *p)
{
	if (p == vd_mpi_funweighted_)
		return MPI_UNWEIGHTED;
	if (p == vd_mpi_fweights_empty_)
		return MPI_WEIGHTS_EMPTY;
	return (int *)p;
}

/* MPI_Status is MPI_STATUS_SIZE ints in both languages. */
static inline MPI_Status *vd_fstatus(MPI_Fint *p)
{
	if (p == MPI_F_STATUS_IGNORE || p == MPI_F_STATUSES_IGNORE)
		return MPI_STATUS_IGNORE;
	return (MPI_Status *)(void *)p;
}

static inline MPI_Status *vd_fstatuses(MPI_Fint *p)
{
	if (p == MPI_F_STATUS_IGNORE || p == MPI_F_STATUSES_IGNORE)
		return MPI_STATUSES_IGNORE;
	return (MPI_Status *)(void *)p;
}

/* An attribute as Fortran sees it: the value itself.  C hands the
 * predefined attributes out as pointers to their values (MPI_WIN_BASE as
 * the base itself), and any other attribute as the pointer it was set to
 * (from Fortran: the value). */
static inline MPI_Aint vd_fattr_value_comm(int keyval, void *v)
{
	if (keyval >= MPI_TAG_UB && keyval <= MPI_APPNUM)
		return *(int *)v;
	return (MPI_Aint)(intptr_t)v;
}

static inline MPI_Aint vd_fattr_value_type(int keyval, void *v)
{
	(void)keyval;
	return (MPI_Aint)(intptr_t)v;
}

static inline MPI_Aint vd_fattr_value_win(int keyval, void *v)
{
	switch (keyval) {
	case MPI_WIN_SIZE:
		return *(MPI_Aint *)v;
	case MPI_WIN_DISP_UNIT:
	case MPI_WIN_CREATE_FLAVOR:
	case MPI_WIN_MODEL:
		return *(int *)v;
	default:
		return (MPI_Aint)(intptr_t)v;
	}
}

/* A C copy of a Fortran input string without its trailing blanks (the
 * caller frees it); NULL when out of memory. */
static inline char *vd_fstr_in(const char *f, size_t len)
{
	while (len > 0 && f[len - 1] == ' ')
		len--;
	char *c = malloc(len + 1);
	if (c) {
		memcpy(c, f, len);
		c[len] = '\0';
	}
	return c;
}

/* A C buffer for an output string: the Fortran length, and at least the
 * longest string any MPI call writes. */
#define VD_FSTR_MIN 4096
static inline char *vd_fstr_buf(size_t len)
{
	return calloc(1, (len > VD_FSTR_MIN ? len : VD_FSTR_MIN) + 1);
}

/* Copy a C result into a Fortran string, blank padded (cut at its length). */
static inline void vd_fstr_out(char *f, size_t len, const char *c)
{
	if (!c)
		return;
	size_t n = strlen(c);
	if (n > len)
		n = len;
	memcpy(f, c, n);
	memset(f + n, ' ', len - n);
}

#endif /* VIADUCT_FORTRAN_GLUE_H */
