/* SPDX-License-Identifier: MIT */
/*
 * Matched probe: MPI_Mprobe / MPI_Improbe take the first matching
 * message out of the unexpected queue into an MPI_Message handle, so no
 * other receive or probe can see it; MPI_Mrecv / MPI_Imrecv match a
 * receive against exactly that message.  What the queue holds is the
 * message's header (eager: with its payload; get and rendezvous: the
 * sender's RTS, the sender waiting for our answer), so the receive runs
 * the ordinary protocol machinery whatever the size.
 */
#include <stdlib.h>

#include "engine.h"

#define MSG_FIRST 2                     /* handles below are predefined */

struct vd_message {
	struct vd_unexp *u;             /* NULL: slot free */
	MPI_Comm comm;
};

static struct vd_message *msgs;
static int nmsgs;

/* A handle for u: the lowest free slot, growing the table if needed. */
static int message_new(struct vd_unexp *u, MPI_Comm comm, MPI_Message *out)
{
	int i = 0;

	while (i < nmsgs && msgs[i].u)
		i++;
	if (i == nmsgs) {
		int ncap = nmsgs ? nmsgs * 2 : 16;
		struct vd_message *nm = realloc(msgs, (size_t)ncap * sizeof(*nm));
		if (!nm)
			return MPI_ERR_NO_MEM;
		for (int k = nmsgs; k < ncap; k++)
			nm[k].u = NULL;
		msgs = nm;
		nmsgs = ncap;
	}
	msgs[i].u = u;
	msgs[i].comm = comm;
	*out = (MPI_Message)(i + MSG_FIRST);
	return MPI_SUCCESS;
}

static struct vd_message *message_get(MPI_Message m)
{
	int i = (int)m - MSG_FIRST;

	return i >= 0 && i < nmsgs && msgs[i].u ? &msgs[i] : NULL;
}

void vd_message_finalize(void)
{
	for (int i = 0; i < nmsgs; i++) {
		if (!msgs[i].u)
			continue;
		vd_payload_free(msgs[i].u->payload);
		free(msgs[i].u);
	}
	free(msgs);
	msgs = NULL;
	nmsgs = 0;
}

/* ---- probing ------------------------------------------------------------------------ */

static void proc_null_status(MPI_Status *st)
{
	vd_empty_status(st);
	if (st != MPI_STATUS_IGNORE)
		st->MPI_SOURCE = MPI_PROC_NULL;
}

static void message_status(const struct vd_unexp *u, MPI_Status *st)
{
	if (st == MPI_STATUS_IGNORE)
		return;
	vd_empty_status(st);
	st->MPI_SOURCE = u->hdr.src;
	st->MPI_TAG = u->hdr.tag;
	vd_status_set_bytes(st, (MPI_Count)u->hdr.len);
}

#pragma weak MPI_Improbe = PMPI_Improbe
int PMPI_Improbe(int src, int tag, MPI_Comm comm, int *flag, MPI_Message *msg,
		 MPI_Status *st)
{
	VD_API_GUARD();
	struct vd_comm *c = vd_comm_get(comm);
	struct vd_unexp *u;
	int e;

	VD_MPI_CHECK_RUNNING("MPI_Improbe");
	e = vd_p2p_check_source(c, src, tag);
	if (!e && (!flag || !msg))
		e = MPI_ERR_ARG;
	if (e)
		return vd_mpi_raise(comm, e, "MPI_Improbe");
	if (src == MPI_PROC_NULL) {
		*flag = 1;
		*msg = MPI_MESSAGE_NO_PROC;
		proc_null_status(st);
		return MPI_SUCCESS;
	}
	vd_progress(false);
	u = vd_unexp_find(c->ctx, src, tag, false);
	*flag = u != NULL;
	if (!u)
		return MPI_SUCCESS;
	e = message_new(u, comm, msg);
	if (e)
		return vd_mpi_raise(comm, e, "MPI_Improbe");
	vd_unexp_find(c->ctx, src, tag, true);  /* the same one: now ours */
	message_status(u, st);
	return MPI_SUCCESS;
}

struct probe_key {
	uint32_t ctx;
	int src, tag;
};

static bool message_waiting(void *arg)
{
	const struct probe_key *k = arg;

	return vd_unexp_find(k->ctx, k->src, k->tag, false) != NULL;
}

#pragma weak MPI_Mprobe = PMPI_Mprobe
int PMPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *msg, MPI_Status *st)
{
	VD_API_GUARD();
	int flag = 0, e;

	/* The first call checks the arguments; then wait (sleeping when
	 * idle) until a match has arrived, and take it. */
	while ((e = PMPI_Improbe(src, tag, comm, &flag, msg, st)) == MPI_SUCCESS && !flag) {
		struct probe_key k = { vd_comm_get(comm)->ctx, src, tag };
		vd_wait_until(message_waiting, &k);
	}
	return e;
}

/* ---- receiving ------------------------------------------------------------------------ */

/* A receive request matched at once against u (which it consumes). */
static int recv_matched(void *buf, int count, struct vd_dtype *t, struct vd_unexp *u,
			MPI_Comm comm, MPI_Request *req)
{
	struct vd_req *r = vd_req_new(VD_REQ_RECV);

	if (!r)
		return MPI_ERR_NO_MEM;
	r->comm = comm;
	r->ctx = u->hdr.ctx;
	r->src = u->hdr.src;
	r->tag = u->hdr.tag;
	r->buf = buf;
	r->count = count;
	r->t = t;
	vd_dtype_retain(t);
	r->bytes = (size_t)count * (size_t)t->size;
	*req = (MPI_Request)r->id;
	vd_recv_open(r);
	vd_proto_match_unexp(r, u);
	return MPI_SUCCESS;
}

/* A request already complete with MPI_PROC_NULL's status. */
static int recv_no_proc(MPI_Comm comm, MPI_Request *req)
{
	struct vd_req *r = vd_req_new(VD_REQ_RECV);

	if (!r)
		return MPI_ERR_NO_MEM;
	r->comm = comm;
	r->st.MPI_SOURCE = MPI_PROC_NULL;
	r->st.MPI_TAG = MPI_ANY_TAG;
	vd_req_complete(r, MPI_SUCCESS);
	*req = (MPI_Request)r->id;
	return MPI_SUCCESS;
}

/* Checks of a matched receive's arguments; the communicator of errors
 * is the message's. */
static int check_mrecv(const void *buf, int count, MPI_Datatype dt, const MPI_Message *msg,
		       MPI_Comm *comm)
{
	struct vd_message *m;

	*comm = MPI_COMM_WORLD;
	if (!msg)
		return MPI_ERR_ARG;
	if (*msg == MPI_MESSAGE_NO_PROC)
		return count < 0 ? MPI_ERR_COUNT : !vd_dtype_comm(dt) ? MPI_ERR_TYPE : MPI_SUCCESS;
	if (!(m = message_get(*msg)))
		return MPI_ERR_REQUEST;
	*comm = m->comm;
	if (count < 0)
		return MPI_ERR_COUNT;
	if (!vd_dtype_comm(dt))
		return MPI_ERR_TYPE;
	if (!buf && count > 0 && vd_dtype_get(dt)->size > 0)
		return MPI_ERR_BUFFER;
	return MPI_SUCCESS;
}

static int imrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *msg,
		  MPI_Request *req, MPI_Comm *comm)
{
	struct vd_message *m;
	int e = check_mrecv(buf, count, dt, msg, comm);

	if (!e && !req)
		e = MPI_ERR_ARG;
	if (e)
		return e;
	if (*msg == MPI_MESSAGE_NO_PROC) {
		e = recv_no_proc(*comm, req);
	} else {
		m = message_get(*msg);
		e = recv_matched(buf, count, vd_dtype_get(dt), m->u, m->comm, req);
		if (!e)
			m->u = NULL;            /* the slot is free again */
	}
	if (!e)
		*msg = MPI_MESSAGE_NULL;
	return e;
}

#pragma weak MPI_Imrecv = PMPI_Imrecv
int PMPI_Imrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *msg, MPI_Request *req)
{
	VD_API_GUARD();
	MPI_Comm comm;
	int e;

	VD_MPI_CHECK_RUNNING("MPI_Imrecv");
	e = imrecv(buf, count, dt, msg, req, &comm);
	return vd_mpi_raise(comm, e, "MPI_Imrecv");
}

#pragma weak MPI_Mrecv = PMPI_Mrecv
int PMPI_Mrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *msg, MPI_Status *st)
{
	VD_API_GUARD();
	MPI_Request req;
	MPI_Comm comm;
	int e;

	VD_MPI_CHECK_RUNNING("MPI_Mrecv");
	e = imrecv(buf, count, dt, msg, &req, &comm);
	if (!e)
		e = vd_wait(&req, st);
	return vd_mpi_raise(comm, e, "MPI_Mrecv");
}
