/* SPDX-License-Identifier: MIT */
/*
 * Conversions between C and Fortran handles and statuses.  Handles are
 * the same integers in both languages and a Fortran status has the C
 * struct's layout, so each conversion is a copy; they exist because
 * mixed-language programs call them.
 */
#include <string.h>

#include "mpi_internal.h"

/* Fortran's sentinels: mpif.h and the mpi module name these as common
 * blocks, which the program's executable then shares with this library. */
MPI_Fint vd_mpi_fbottom_[1];
MPI_Fint vd_mpi_finplace_[1];
MPI_Fint vd_mpi_funweighted_[1];
MPI_Fint vd_mpi_fweights_empty_[1];
MPI_Fint vd_mpi_fstatus_ignore_[5];
MPI_Fint vd_mpi_fstatuses_ignore_[5];

_Static_assert(sizeof(MPI_Status) == 5 * sizeof(MPI_Fint), "Fortran status layout");

#define VD_HANDLE_CONV(Kind, CType)                                           \
	MPI_Fint PMPI_##Kind##_c2f(CType h);                                  \
	CType PMPI_##Kind##_f2c(MPI_Fint h);                                  \
	_Pragma(VD_STR(weak MPI_##Kind##_c2f = PMPI_##Kind##_c2f))            \
	MPI_Fint PMPI_##Kind##_c2f(CType h) { return (MPI_Fint)h; }           \
	_Pragma(VD_STR(weak MPI_##Kind##_f2c = PMPI_##Kind##_f2c))            \
	CType PMPI_##Kind##_f2c(MPI_Fint h) { return (CType)h; }
#define VD_STR(x) #x

VD_HANDLE_CONV(Comm, MPI_Comm)
VD_HANDLE_CONV(Type, MPI_Datatype)
VD_HANDLE_CONV(Group, MPI_Group)
VD_HANDLE_CONV(Request, MPI_Request)
VD_HANDLE_CONV(Op, MPI_Op)
VD_HANDLE_CONV(Info, MPI_Info)
VD_HANDLE_CONV(Errhandler, MPI_Errhandler)
VD_HANDLE_CONV(Win, MPI_Win)
VD_HANDLE_CONV(Message, MPI_Message)

#pragma weak MPI_Status_c2f = PMPI_Status_c2f
int PMPI_Status_c2f(const MPI_Status *c_status, MPI_Fint *f_status)
{
	VD_API_GUARD();
	if (!c_status || !f_status || c_status == MPI_STATUS_IGNORE)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Status_c2f");
	memcpy(f_status, c_status, sizeof(*c_status));
	return MPI_SUCCESS;
}

#pragma weak MPI_Status_f2c = PMPI_Status_f2c
int PMPI_Status_f2c(const MPI_Fint *f_status, MPI_Status *c_status)
{
	VD_API_GUARD();
	if (!f_status || !c_status || f_status == MPI_F_STATUS_IGNORE ||
	    f_status == MPI_F_STATUSES_IGNORE || c_status == MPI_STATUS_IGNORE)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Status_f2c");
	memcpy(c_status, f_status, sizeof(*c_status));
	return MPI_SUCCESS;
}
