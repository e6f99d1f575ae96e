/* SPDX-License-Identifier: MIT */
/*
 * The attribute calls in Fortran, written by hand: Fortran passes and
 * receives the attribute's value (an INTEGER(KIND=MPI_ADDRESS_KIND)), C a
 * pointer-sized value that, for the predefined attributes, points to the
 * value.  So a Fortran set stores the value as C's void *, and a get
 * returns it back -- or, for a predefined attribute, reads what C's
 * pointer points to (an int; MPI_WIN_SIZE an MPI_Aint; MPI_WIN_BASE is
 * the base address itself).
 */
#include "fortran_glue.h"

/* Prototypes for -Wmissing-prototypes: callers are Fortran programs. */
void pmpi_comm_set_attr_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *ierror);
void pmpi_type_set_attr_(MPI_Fint *type, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *ierror);
void pmpi_comm_get_attr_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *flag,
			 MPI_Fint *ierror);
void pmpi_type_get_attr_(MPI_Fint *type, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *flag,
			 MPI_Fint *ierror);
void pmpi_win_get_attr_(MPI_Fint *win, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *flag,
			MPI_Fint *ierror);
void pmpi_attr_put_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *ierror);
void pmpi_attr_get_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *flag,
		    MPI_Fint *ierror);
void pmpi_win_set_attr_(MPI_Fint *win, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *ierror);

static bool comm_predefined(int keyval)
{
	switch (keyval) {
	case MPI_TAG_UB: case MPI_HOST: case MPI_IO: case MPI_WTIME_IS_GLOBAL:
	case MPI_UNIVERSE_SIZE: case MPI_LASTUSEDCODE: case MPI_APPNUM:
		return true;
	default:
		return false;
	}
}

static bool win_predefined(int keyval)
{
	switch (keyval) {
	case MPI_WIN_BASE: case MPI_WIN_SIZE: case MPI_WIN_DISP_UNIT: case MPI_WIN_CREATE_FLAVOR:
	case MPI_WIN_MODEL:
		return true;
	default:
		return false;
	}
}

#pragma weak mpi_comm_set_attr_ = pmpi_comm_set_attr_
void pmpi_comm_set_attr_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *ierror)
{
	*ierror = MPI_Comm_set_attr(*comm, *keyval, (void *)*val);
}

#pragma weak mpi_type_set_attr_ = pmpi_type_set_attr_
void pmpi_type_set_attr_(MPI_Fint *type, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *ierror)
{
	*ierror = MPI_Type_set_attr(*type, *keyval, (void *)*val);
}

#pragma weak mpi_win_set_attr_ = pmpi_win_set_attr_
void pmpi_win_set_attr_(MPI_Fint *win, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *ierror)
{
	*ierror = MPI_Win_set_attr(*win, *keyval, (void *)*val);
}

#pragma weak mpi_comm_get_attr_ = pmpi_comm_get_attr_
void pmpi_comm_get_attr_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *flag,
			 MPI_Fint *ierror)
{
	void *v = NULL;
	int found = 0;

	*ierror = MPI_Comm_get_attr(*comm, *keyval, &v, &found);
	*flag = *ierror == MPI_SUCCESS && found;
	if (*flag)
		*val = comm_predefined(*keyval) ? *(int *)v : (MPI_Aint)v;
}

#pragma weak mpi_type_get_attr_ = pmpi_type_get_attr_
void pmpi_type_get_attr_(MPI_Fint *type, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *flag,
			 MPI_Fint *ierror)
{
	void *v = NULL;
	int found = 0;

	*ierror = MPI_Type_get_attr(*type, *keyval, &v, &found);
	*flag = *ierror == MPI_SUCCESS && found;
	if (*flag)
		*val = (MPI_Aint)v;
}

#pragma weak mpi_win_get_attr_ = pmpi_win_get_attr_
void pmpi_win_get_attr_(MPI_Fint *win, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *flag,
			MPI_Fint *ierror)
{
	void *v = NULL;
	int found = 0;

	*ierror = MPI_Win_get_attr(*win, *keyval, &v, &found);
	*flag = *ierror == MPI_SUCCESS && found;
	if (!*flag)
		return;
	if (*keyval == MPI_WIN_BASE || !win_predefined(*keyval))
		*val = (MPI_Aint)v;
	else if (*keyval == MPI_WIN_SIZE)
		*val = *(MPI_Aint *)v;
	else
		*val = *(int *)v;
}

/* The MPI-1 forms: the value is a default INTEGER. */
#pragma weak mpi_attr_put_ = pmpi_attr_put_
void pmpi_attr_put_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *ierror)
{
	*ierror = MPI_Comm_set_attr(*comm, *keyval, (void *)(MPI_Aint)*val);
}

#pragma weak mpi_attr_get_ = pmpi_attr_get_
void pmpi_attr_get_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *flag,
		    MPI_Fint *ierror)
{
	MPI_Aint v = 0;

	pmpi_comm_get_attr_(comm, keyval, &v, flag, ierror);
	if (*flag)
		*val = (MPI_Fint)v;
}
