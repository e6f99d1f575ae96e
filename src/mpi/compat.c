/* SPDX-License-Identifier: MIT */
/*
 * Small calls that belong to no engine: MPI_Reduce_local,
 * MPI_Op_commutative, MPI_Pcontrol; and the MPI-1 names that MPI-3.0
 * removed (MPI_Attr_get, MPI_Type_extent, MPI_Address, ...) but that old
 * programs still call -- each is the current call under its old name,
 * with the old argument types where they differ.
 */
#include "typeop.h"

#pragma weak MPI_Reduce_local = PMPI_Reduce_local
int PMPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
		      MPI_Op op)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Reduce_local";
	struct vd_dtype *t;

	VD_MPI_CHECK_RUNNING(fn);
	if (count < 0)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_COUNT, fn);
	if (!(t = vd_dtype_comm(datatype)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_TYPE, fn);
	if (inbuf == MPI_IN_PLACE || inoutbuf == MPI_IN_PLACE ||
	    !vd_dtype_buf_ok(t, inbuf, count) || !vd_dtype_buf_ok(t, inoutbuf, count))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_BUFFER, fn);
	return vd_mpi_raise(MPI_COMM_WORLD, vd_op_apply(op, inbuf, inoutbuf, count, datatype),
			    fn);
}

#pragma weak MPI_Op_commutative = PMPI_Op_commutative
int PMPI_Op_commutative(MPI_Op op, int *commute)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Op_commutative";

	VD_MPI_CHECK_RUNNING(fn);
	if (!vd_op_valid(op))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_OP, fn);
	if (!commute)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	*commute = vd_op_commutative(op);
	return MPI_SUCCESS;
}

/* Profiling levels are for tools that interpose on PMPI; the library
 * itself has nothing to switch. */
#pragma weak MPI_Pcontrol = PMPI_Pcontrol
int PMPI_Pcontrol(const int level, ...)
{
	VD_API_GUARD();
	(void)level;
	return MPI_SUCCESS;
}

/* ---- MPI-1 names removed in MPI-3.0 ---------------------------------------------- */

#pragma weak MPI_Attr_get = PMPI_Attr_get
int PMPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
	VD_API_GUARD();
	return PMPI_Comm_get_attr(comm, keyval, attribute_val, flag);
}

#pragma weak MPI_Attr_put = PMPI_Attr_put
int PMPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val)
{
	VD_API_GUARD();
	return PMPI_Comm_set_attr(comm, keyval, attribute_val);
}

#pragma weak MPI_Attr_delete = PMPI_Attr_delete
int PMPI_Attr_delete(MPI_Comm comm, int keyval)
{
	VD_API_GUARD();
	return PMPI_Comm_delete_attr(comm, keyval);
}

#pragma weak MPI_Keyval_create = PMPI_Keyval_create
int PMPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn,
		       int *keyval, void *extra_state)
{
	VD_API_GUARD();
	return PMPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra_state);
}

#pragma weak MPI_Keyval_free = PMPI_Keyval_free
int PMPI_Keyval_free(int *keyval)
{
	VD_API_GUARD();
	return PMPI_Comm_free_keyval(keyval);
}

#pragma weak MPI_Errhandler_create = PMPI_Errhandler_create
int PMPI_Errhandler_create(MPI_Handler_function *function, MPI_Errhandler *errhandler)
{
	VD_API_GUARD();
	return PMPI_Comm_create_errhandler(function, errhandler);
}

#pragma weak MPI_Errhandler_set = PMPI_Errhandler_set
int PMPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler)
{
	VD_API_GUARD();
	return PMPI_Comm_set_errhandler(comm, errhandler);
}

#pragma weak MPI_Errhandler_get = PMPI_Errhandler_get
int PMPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler)
{
	VD_API_GUARD();
	return PMPI_Comm_get_errhandler(comm, errhandler);
}

#pragma weak MPI_Address = PMPI_Address
int PMPI_Address(void *location, MPI_Aint *address)
{
	VD_API_GUARD();
	return PMPI_Get_address(location, address);
}

#pragma weak MPI_Type_extent = PMPI_Type_extent
int PMPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent)
{
	VD_API_GUARD();
	MPI_Aint lb;

	if (!extent)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Type_extent");
	return PMPI_Type_get_extent(datatype, &lb, extent);
}

#pragma weak MPI_Type_lb = PMPI_Type_lb
int PMPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement)
{
	VD_API_GUARD();
	MPI_Aint extent;

	if (!displacement)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Type_lb");
	return PMPI_Type_get_extent(datatype, displacement, &extent);
}

#pragma weak MPI_Type_ub = PMPI_Type_ub
int PMPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement)
{
	VD_API_GUARD();
	MPI_Aint lb, extent;
	int err;

	if (!displacement)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Type_ub");
	if ((err = PMPI_Type_get_extent(datatype, &lb, &extent)) == MPI_SUCCESS)
		*displacement = lb + extent;
	return err;
}

#pragma weak MPI_Type_hvector = PMPI_Type_hvector
int PMPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
		      MPI_Datatype *newtype)
{
	VD_API_GUARD();
	return PMPI_Type_create_hvector(count, blocklength, stride, oldtype, newtype);
}

#pragma weak MPI_Type_hindexed = PMPI_Type_hindexed
int PMPI_Type_hindexed(int count, int blocklengths[], MPI_Aint displacements[],
		       MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	VD_API_GUARD();
	return PMPI_Type_create_hindexed(count, blocklengths, displacements, oldtype, newtype);
}

#pragma weak MPI_Type_struct = PMPI_Type_struct
int PMPI_Type_struct(int count, int blocklengths[], MPI_Aint displacements[],
		     MPI_Datatype types[], MPI_Datatype *newtype)
{
	VD_API_GUARD();
	return PMPI_Type_create_struct(count, blocklengths, displacements, types, newtype);
}
