/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: MPI_Pack, MPI_Unpack, MPI_Pack_size.  The packed form is
 * the typemap's bytes back to back, the same the wire carries, so a
 * buffer packed here can be sent as MPI_PACKED and received with the
 * type (and the other way round).
 */
#include <limits.h>
#include <stdint.h>

#include "dtype_impl.h"

/* The checks both directions share: comm, count, committed type,
 * position inside a buffer of `size` bytes. */
static int pack_check(MPI_Comm comm, int count, MPI_Datatype dt, const int *position,
		      int size, struct vd_dtype **t)
{
	if (!vd_comm_get(comm))
		return MPI_ERR_COMM;
	if (count < 0 || size < 0)
		return MPI_ERR_COUNT;
	if (!(*t = vd_dtype_comm(dt)))
		return MPI_ERR_TYPE;
	if (!position || *position < 0 || *position > size)
		return MPI_ERR_ARG;
	return MPI_SUCCESS;
}

/* Bytes of count elements of t, if they fit in the `room` left. */
static int pack_room(const struct vd_dtype *t, int count, int room, MPI_Aint *bytes)
{
	if (__builtin_mul_overflow((MPI_Aint)count, t->size, bytes))
		return MPI_ERR_COUNT;
	return *bytes > room ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
}

#pragma weak MPI_Pack = PMPI_Pack
int PMPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf,
	      int outsize, int *position, MPI_Comm comm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Pack";
	struct vd_dtype *t;
	MPI_Aint bytes;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if ((err = pack_check(comm, incount, datatype, position, outsize, &t)) ||
	    (err = pack_room(t, incount, outsize - *position, &bytes)))
		return vd_mpi_raise(vd_comm_get(comm) ? comm : MPI_COMM_WORLD, err, fn);
	if (bytes && (!vd_dtype_buf_ok(t, inbuf, incount) || !outbuf))
		return vd_mpi_raise(comm, MPI_ERR_BUFFER, fn);
	vd_dtype_pack(t, inbuf, incount, (char *)outbuf + *position);
	*position += (int)bytes;
	return MPI_SUCCESS;
}

#pragma weak MPI_Unpack = PMPI_Unpack
int PMPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
		MPI_Datatype datatype, MPI_Comm comm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Unpack";
	struct vd_dtype *t;
	MPI_Aint bytes;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if ((err = pack_check(comm, outcount, datatype, position, insize, &t)) ||
	    (err = pack_room(t, outcount, insize - *position, &bytes)))
		return vd_mpi_raise(vd_comm_get(comm) ? comm : MPI_COMM_WORLD, err, fn);
	if (bytes && (!vd_dtype_buf_ok(t, outbuf, outcount) || !inbuf))
		return vd_mpi_raise(comm, MPI_ERR_BUFFER, fn);
	vd_dtype_unpack(t, (const char *)inbuf + *position, (size_t)bytes, outbuf);
	*position += (int)bytes;
	return MPI_SUCCESS;
}

#pragma weak MPI_Pack_size = PMPI_Pack_size
int PMPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Pack_size";
	struct vd_dtype *t;
	MPI_Aint bytes;

	VD_MPI_CHECK_RUNNING(fn);
	if (!vd_comm_get(comm))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_COMM, fn);
	if (incount < 0)
		return vd_mpi_raise(comm, MPI_ERR_COUNT, fn);
	if (!(t = vd_dtype_comm(datatype)))
		return vd_mpi_raise(comm, MPI_ERR_TYPE, fn);
	if (!size)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	if (__builtin_mul_overflow((MPI_Aint)incount, t->size, &bytes) || bytes > INT_MAX)
		return vd_mpi_raise(comm, MPI_ERR_COUNT, fn);
	*size = (int)bytes;
	return MPI_SUCCESS;
}
