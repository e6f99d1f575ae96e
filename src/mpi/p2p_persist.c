/* SPDX-License-Identifier: MIT */
/*
 * Persistent requests: MPI_Send_init and its kin record an operation,
 * MPI_Start runs it.  The persistent request holds the recorded arguments
 * (its datatype and communicator retained, so MPI_Type_free and
 * MPI_Comm_free cannot pull them away) and, while active, the handle of
 * an ordinary engine request doing the transfer.  Completing it (wait or test) hands back that request's
 * status and leaves the persistent one allocated but inactive.
 */

#include "engine.h"

/* ---- creation ---------------------------------------------------------------------- */

static int persist_new(void *buf, int count, MPI_Datatype dt, int peer, int tag,
		       MPI_Comm comm, enum vd_persist_op op, MPI_Request *req)
{
	struct vd_req *r = vd_req_new(VD_REQ_PERSIST);

	if (!r)
		return MPI_ERR_NO_MEM;
	r->pcomm = vd_comm_get(comm);
	r->pcomm->refs++;
	r->buf = buf;
	r->count = count;
	r->t = vd_dtype_get(dt);
	vd_dtype_retain(r->t);
	r->src = peer;
	r->tag = tag;
	r->comm = comm;
	r->pop = op;
	r->done = true;                 /* inactive: a wait returns at once */
	*req = (MPI_Request)r->id;
	return MPI_SUCCESS;
}

static int send_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		     MPI_Comm comm, MPI_Request *req, enum vd_persist_op op, const char *fn)
{
	int e;

	VD_MPI_CHECK_RUNNING(fn);
	e = vd_p2p_check_send(vd_comm_get(comm), buf, count, dt, dest, tag);
	if (!e && !req)
		e = MPI_ERR_ARG;
	if (!e)
		e = persist_new((void *)buf, count, dt, dest, tag, comm, op, req);
	return vd_mpi_raise(comm, e, fn);
}

#pragma weak MPI_Send_init = PMPI_Send_init
int PMPI_Send_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		   MPI_Comm comm, MPI_Request *req)
{
	VD_API_GUARD();
	return send_init(buf, count, dt, dest, tag, comm, req, VD_P_SEND, "MPI_Send_init");
}

#pragma weak MPI_Ssend_init = PMPI_Ssend_init
int PMPI_Ssend_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		    MPI_Comm comm, MPI_Request *req)
{
	VD_API_GUARD();
	return send_init(buf, count, dt, dest, tag, comm, req, VD_P_SSEND, "MPI_Ssend_init");
}

/* A ready send may be sent as a standard one. */
#pragma weak MPI_Rsend_init = PMPI_Rsend_init
int PMPI_Rsend_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		    MPI_Comm comm, MPI_Request *req)
{
	VD_API_GUARD();
	return send_init(buf, count, dt, dest, tag, comm, req, VD_P_SEND, "MPI_Rsend_init");
}

#pragma weak MPI_Bsend_init = PMPI_Bsend_init
int PMPI_Bsend_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		    MPI_Comm comm, MPI_Request *req)
{
	VD_API_GUARD();
	return send_init(buf, count, dt, dest, tag, comm, req, VD_P_BSEND, "MPI_Bsend_init");
}

#pragma weak MPI_Recv_init = PMPI_Recv_init
int PMPI_Recv_init(void *buf, int count, MPI_Datatype dt, int source, int tag,
		   MPI_Comm comm, MPI_Request *req)
{
	VD_API_GUARD();
	int e;

	VD_MPI_CHECK_RUNNING("MPI_Recv_init");
	e = vd_p2p_check_recv(vd_comm_get(comm), buf, count, dt, source, tag);
	if (!e && !req)
		e = MPI_ERR_ARG;
	if (!e)
		e = persist_new(buf, count, dt, source, tag, comm, VD_P_RECV, req);
	return vd_mpi_raise(comm, e, "MPI_Recv_init");
}

/* ---- starting ---------------------------------------------------------------------- */

/* Run r's operation.  The request keeps its communicator alive, so it
 * still works after MPI_Comm_free of the handle (the standard lets it
 * outlive the handle), and never runs on a newer communicator that
 * reuses the handle. */
static int start_one(struct vd_req *r)
{
	struct vd_comm *c = r->pcomm;
	int err;

	r->inner = MPI_REQUEST_NULL;
	switch (r->pop) {
	case VD_P_RECV:
		err = vd_irecv_type(r->buf, r->count, r->t, r->src, r->tag, c->ctx, &r->inner);
		break;
	case VD_P_BSEND:
		err = vd_bsend(r->buf, r->count, r->t, r->src, r->tag, c);
		if (err)
			return err;
		break;
	default:
		err = vd_isend_type(r->buf, r->count, r->t, r->src, r->tag, c, c->ctx,
				    r->pop == VD_P_SSEND ? VD_SEND_SYNC : VD_SEND_STD,
				    &r->inner);
		break;
	}
	if (err)
		return MPI_ERR_NO_MEM;
	if (r->inner != MPI_REQUEST_NULL)
		vd_req_get(r->inner)->comm = r->comm;
	r->active = true;
	r->done = false;
	return MPI_SUCCESS;
}

/* MPI_ERR_REQUEST unless req is an inactive persistent request. */
static int check_startable(MPI_Request req, struct vd_req **out)
{
	struct vd_req *r = vd_req_get(req);

	if (!r || r->kind != VD_REQ_PERSIST || r->active)
		return MPI_ERR_REQUEST;
	*out = r;
	return MPI_SUCCESS;
}

#pragma weak MPI_Start = PMPI_Start
int PMPI_Start(MPI_Request *req)
{
	VD_API_GUARD();
	struct vd_req *r = NULL;
	int e;

	VD_MPI_CHECK_RUNNING("MPI_Start");
	if (!req)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Start");
	e = check_startable(*req, &r);
	if (e)
		return vd_mpi_raise(MPI_COMM_WORLD, e, "MPI_Start");
	return vd_mpi_raise(r->comm, start_one(r), "MPI_Start");
}

/* Every request is checked before any starts, so a bad handle leaves
 * nothing half started. */
#pragma weak MPI_Startall = PMPI_Startall
int PMPI_Startall(int n, MPI_Request reqs[])
{
	VD_API_GUARD();
	struct vd_req *r = NULL;
	int e = MPI_SUCCESS;

	VD_MPI_CHECK_RUNNING("MPI_Startall");
	if (n < 0 || (n && !reqs))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Startall");
	for (int i = 0; i < n && !e; i++) {
		e = check_startable(reqs[i], &r);
		for (int j = 0; j < i && !e; j++)
			if (reqs[j] == reqs[i])
				e = MPI_ERR_REQUEST;    /* the same request twice */
	}
	if (e)
		return vd_mpi_raise(MPI_COMM_WORLD, e, "MPI_Startall");
	for (int i = 0; i < n; i++) {
		r = vd_req_get(reqs[i]);
		if ((e = start_one(r)) != MPI_SUCCESS)
			return vd_mpi_raise(r->comm, e, "MPI_Startall");
	}
	return MPI_SUCCESS;
}

/* ---- completion (p2p.c's waits and tests call these) --------------------------------- */

/* The operation's own request; NULL when there is none (inactive, or a
 * buffered send, complete once its data was copied). */
static struct vd_req *inner_of(const struct vd_req *r)
{
	return r->active && r->inner != MPI_REQUEST_NULL ? vd_req_get(r->inner) : NULL;
}

bool vd_persist_ready(struct vd_req *r)
{
	struct vd_req *in = inner_of(r);

	return !in || in->done;
}

int vd_persist_peek(struct vd_req *r, MPI_Status *st)
{
	struct vd_req *in = inner_of(r);

	if (!r->active) {
		vd_empty_status(st);
		return MPI_SUCCESS;
	}
	if (!in) {                      /* buffered send: nothing to report */
		vd_empty_status(st);
		return MPI_SUCCESS;
	}
	vd_req_status(in, st);
	return in->err;
}

int vd_persist_finish(struct vd_req *r, MPI_Status *st)
{
	struct vd_req *in = inner_of(r);
	int err = vd_persist_peek(r, st);

	if (in)
		vd_req_release(in);
	r->inner = MPI_REQUEST_NULL;
	r->active = false;
	r->done = true;
	return err;
}

/* Cancelling an inactive persistent request is erroneous: there is no
 * operation to cancel. */
int vd_persist_cancel(struct vd_req *r)
{
	struct vd_req *in = inner_of(r);
	MPI_Request h = r->inner;

	if (!r->active)
		return MPI_ERR_REQUEST;
	return in ? PMPI_Cancel(&h) : MPI_SUCCESS;
}

/* Freeing an active request lets its operation finish unobserved, as
 * MPI_Request_free of any pending request does. */
void vd_persist_free(struct vd_req *r)
{
	struct vd_req *in = inner_of(r);

	if (in && in->done)
		vd_req_release(in);
	else if (in)
		in->freed = true;
	vd_req_release(r);
}
