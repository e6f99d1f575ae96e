/* SPDX-License-Identifier: MIT */
/*
 * MPI_ATTR_GET and MPI_ATTR_PUT, the MPI-1 attribute calls, written by
 * hand: their Fortran value is a default INTEGER, not the
 * INTEGER(KIND=MPI_ADDRESS_KIND) of the current calls (which
 * gen_bindings.py binds).  A put stores the value as C's void *; a get
 * returns it -- or, for a predefined attribute, what C's pointer points to
 * (vd_fattr_value_comm).
 */
#include "fortran_glue.h"

/* Prototypes for -Wmissing-prototypes: callers are Fortran programs. */
void pmpi_attr_put_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *ierror);
void pmpi_attr_get_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *flag,
		    MPI_Fint *ierror);

#pragma weak mpi_attr_put_ = pmpi_attr_put_
void pmpi_attr_put_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *ierror)
{
	*ierror = MPI_Comm_set_attr(*comm, *keyval, (void *)(MPI_Aint)*val);
}

#pragma weak mpi_attr_get_ = pmpi_attr_get_
void pmpi_attr_get_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *flag,
		    MPI_Fint *ierror)
{
	void *v = NULL;
	int found = 0;

	*ierror = MPI_Comm_get_attr(*comm, *keyval, &v, &found);
	*flag = *ierror == MPI_SUCCESS && found;
	if (*flag)
		*val = (MPI_Fint)vd_fattr_value_comm(*keyval, v);
}
