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
