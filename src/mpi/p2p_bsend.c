/* SPDX-License-Identifier: MIT */
/*
 * Buffered sends: MPI_Buffer_attach/detach, MPI_Bsend, MPI_Ibsend, and
 * vd_bsend, which persistent buffered sends start.
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* ---- buffered sends ------------------------------------------------------------------------ */

static struct {
	void *buf;
	int size;
	size_t used;
	MPI_Request *pending;           /* the copies' send requests */
	size_t *charged;
	int npending, cap;
} bsend;

static void bsend_reap(bool all)
{
	int k = 0;

	for (int i = 0; i < bsend.npending; i++) {
		struct vd_req *r = vd_req_get(bsend.pending[i]);
		if (all || !r || r->done) {
			vd_wait(&bsend.pending[i], MPI_STATUS_IGNORE);
			bsend.used -= bsend.charged[i];
			continue;
		}
		bsend.pending[k] = bsend.pending[i];
		bsend.charged[k++] = bsend.charged[i];
	}
	bsend.npending = k;
}

#pragma weak MPI_Buffer_attach = PMPI_Buffer_attach
int PMPI_Buffer_attach(void *buf, int size)
{
	VD_API_GUARD();
	VD_MPI_CHECK_RUNNING("MPI_Buffer_attach");
	if (bsend.buf || size < 0 || (!buf && size))
		return vd_mpi_raise(MPI_COMM_WORLD, bsend.buf ? MPI_ERR_BUFFER : MPI_ERR_ARG,
				    "MPI_Buffer_attach");
	bsend.buf = buf;
	bsend.size = size;
	bsend.used = 0;
	return MPI_SUCCESS;
}

#pragma weak MPI_Buffer_detach = PMPI_Buffer_detach
int PMPI_Buffer_detach(void *buf_addr, int *size)
{
	VD_API_GUARD();
	VD_MPI_CHECK_RUNNING("MPI_Buffer_detach");
	if (!buf_addr || !size)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Buffer_detach");
	bsend_reap(true);               /* blocks until every copy is sent */
	*(void **)buf_addr = bsend.buf;
	*size = bsend.size;
	bsend.buf = NULL;
	bsend.size = 0;
	free(bsend.pending);
	free(bsend.charged);
	memset(&bsend, 0, sizeof(bsend));
	return MPI_SUCCESS;
}

static int bsend_grow(void)
{
	int ncap = bsend.cap ? bsend.cap * 2 : 16;
	MPI_Request *np = realloc(bsend.pending, (size_t)ncap * sizeof(*np));
	size_t *nc = np ? realloc(bsend.charged, (size_t)ncap * sizeof(*nc)) : NULL;

	if (np)
		bsend.pending = np;
	if (!np || !nc)
		return MPI_ERR_NO_MEM;
	bsend.charged = nc;
	bsend.cap = ncap;
	return MPI_SUCCESS;
}

/* The message is packed into a private copy at once (accounted against
 * the attached buffer's size), so the call returns as soon as the copy is
 * made, whatever the receiver does. */
int vd_bsend(const void *buf, int count, struct vd_dtype *t, int dest, int tag,
	     struct vd_comm *c)
{
	size_t bytes = (size_t)count * (size_t)t->size, need = bytes + MPI_BSEND_OVERHEAD;
	void *copy;

	bsend_reap(false);
	if (bsend.used + need > (size_t)bsend.size)
		return MPI_ERR_BUFFER;
	if (bsend.npending == bsend.cap && bsend_grow())
		return MPI_ERR_NO_MEM;
	copy = malloc(bytes + 1);
	if (!copy)
		return MPI_ERR_NO_MEM;
	vd_dtype_pack(t, buf, count, copy);
	if (vd_isend(copy, (int)bytes, MPI_BYTE, dest, tag, c, c->ctx, VD_SEND_STD,
		     &bsend.pending[bsend.npending])) {
		free(copy);
		return MPI_ERR_NO_MEM;
	}
	/* The request owns the copy until it completes (an eager one already
	 * has: its bytes sit in a send slot). */
	struct vd_req *r = vd_req_get(bsend.pending[bsend.npending]);
	if (r->done)
		free(copy);
	else
		r->tmp = copy;
	bsend.charged[bsend.npending++] = need;
	bsend.used += need;
	return MPI_SUCCESS;
}

#pragma weak MPI_Bsend = PMPI_Bsend
int PMPI_Bsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	VD_API_GUARD();
	struct vd_comm *c = vd_comm_get(comm);
	int e;

	VD_MPI_CHECK_RUNNING("MPI_Bsend");
	e = vd_p2p_check_send(c, buf, count, dt, dest, tag);
	if (!e)
		e = vd_bsend(buf, count, vd_dtype_get(dt), dest, tag, c);
	return vd_mpi_raise(comm, e, "MPI_Bsend");
}

/* The copy into the attached buffer is the whole of a buffered send's
 * local work: the request is complete when the call returns. */
#pragma weak MPI_Ibsend = PMPI_Ibsend
int PMPI_Ibsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
	       MPI_Comm comm, MPI_Request *req)
{
	VD_API_GUARD();
	struct vd_comm *c = vd_comm_get(comm);
	struct vd_req *r;
	int e;

	VD_MPI_CHECK_RUNNING("MPI_Ibsend");
	e = vd_p2p_check_send(c, buf, count, dt, dest, tag);
	if (!e && !req)
		e = MPI_ERR_ARG;
	if (!e)
		e = vd_bsend(buf, count, vd_dtype_get(dt), dest, tag, c);
	if (!e && !(r = vd_req_new(VD_REQ_SEND)))
		e = MPI_ERR_NO_MEM;
	if (e)
		return vd_mpi_raise(comm, e, "MPI_Ibsend");
	r->comm = comm;
	vd_req_complete(r, MPI_SUCCESS);
	*req = (MPI_Request)r->id;
	return MPI_SUCCESS;
}
