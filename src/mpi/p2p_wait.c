/* SPDX-License-Identifier: MIT */
/*
 * Completion of requests: MPI_Wait, MPI_Test and their -all, -any and
 * -some forms, MPI_Request_get_status, MPI_Request_free, MPI_Cancel and
 * the statuses they fill (MPI_Test_cancelled, MPI_Get_count).
 * An error is judged by the error handler of the request it belongs to
 * (its window's or its communicator's), taken before the request
 * completes, since completion frees it.
 */
#include "engine.h"
#include "win.h"

/* Whose error handler judges a request's error: its window's for a
 * one-sided operation, else its communicator's (MPI_COMM_WORLD's when it
 * has neither).  Taken before the request completes: completion frees
 * it. */
struct req_owner {
	MPI_Comm comm;
	MPI_Win win;
};

static struct req_owner req_owner(MPI_Request req)
{
	struct vd_req *r = vd_req_get(req);
	struct req_owner o = { MPI_COMM_WORLD, MPI_WIN_NULL };

	if (r && r->kind == VD_REQ_RMA && r->win != MPI_WIN_NULL)
		o.win = r->win;
	else if (r && r->comm)
		o.comm = r->comm;
	return o;
}

static int owner_raise(struct req_owner o, int code, const char *fn)
{
	if (o.win != MPI_WIN_NULL)
		return vd_win_raise(vd_win_get(o.win), code, fn);
	return vd_mpi_raise(o.comm, code, fn);
}

/* One request of a multiple completion, waited for into st.  A failed
 * one's error goes into its status (an invalid handle's too) and *err
 * becomes MPI_ERR_IN_STATUS; *failed: the owner of the first that
 * failed, whose error handler judges it -- taken before the request
 * completes (completion frees it); requests before it may be null or
 * the shared completed send, which own nothing. */
static void complete_one(MPI_Request *req, MPI_Status *st, int *err, struct req_owner *failed)
{
	struct req_owner o = req_owner(*req);
	int e = vd_wait(req, st);

	if (e == MPI_SUCCESS)
		return;
	if (st != MPI_STATUS_IGNORE)
		st->MPI_ERROR = e;
	if (*err == MPI_SUCCESS)
		*failed = o;
	*err = MPI_ERR_IN_STATUS;
}

/* Wait for every request (complete_one). */
static int waitall_judged(int n, MPI_Request reqs[], MPI_Status *sts, struct req_owner *failed)
{
	int err = MPI_SUCCESS;

	for (int i = 0; i < n; i++)
		complete_one(&reqs[i], vd_status_at(sts, i), &err, failed);
	return err;
}

int vd_waitall(int n, MPI_Request *reqs, MPI_Status *sts)
{
	struct req_owner failed;

	return waitall_judged(n, reqs, sts, &failed);
}

#pragma weak MPI_Wait = PMPI_Wait
int PMPI_Wait(MPI_Request *req, MPI_Status *st)
{
	VD_API_GUARD();
	struct req_owner o;

	VD_MPI_CHECK_RUNNING("MPI_Wait");
	if (!req)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Wait");
	o = req_owner(*req);
	return owner_raise(o, vd_wait(req, st), "MPI_Wait");
}

#pragma weak MPI_Waitall = PMPI_Waitall
int PMPI_Waitall(int n, MPI_Request reqs[], MPI_Status *sts)
{
	VD_API_GUARD();
	VD_MPI_CHECK_RUNNING("MPI_Waitall");
	if (n < 0 || (n && !reqs))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Waitall");
	struct req_owner failed = req_owner(MPI_REQUEST_NULL);
	int e = waitall_judged(n, reqs, sts, &failed);

	return owner_raise(failed, e, "MPI_Waitall");
}

#pragma weak MPI_Test = PMPI_Test
int PMPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
	VD_API_GUARD();
	struct vd_req *r;

	VD_MPI_CHECK_RUNNING("MPI_Test");
	if (!req || !flag)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Test");
	if (*req == MPI_REQUEST_NULL) {
		*flag = 1;
		vd_empty_status(st);
		return MPI_SUCCESS;
	}
	r = vd_req_get(*req);
	if (!r)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Test");
	if (!vd_req_ready(r))
		vd_progress(false);
	*flag = vd_req_ready(r);
	if (!*flag)
		return MPI_SUCCESS;
	struct req_owner o = req_owner(*req);
	return owner_raise(o, vd_req_finish(req, r, st), "MPI_Test");
}

/* Like MPI_Test, but the request stays as it is (not freed, and a
 * persistent one stays active). */
#pragma weak MPI_Request_get_status = PMPI_Request_get_status
int PMPI_Request_get_status(MPI_Request req, int *flag, MPI_Status *st)
{
	VD_API_GUARD();
	struct vd_req *r;

	VD_MPI_CHECK_RUNNING("MPI_Request_get_status");
	if (!flag)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Request_get_status");
	if (req == MPI_REQUEST_NULL) {
		*flag = 1;
		vd_empty_status(st);
		return MPI_SUCCESS;
	}
	if (!(r = vd_req_get(req)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Request_get_status");
	if (!vd_req_ready(r))
		vd_progress(false);
	*flag = vd_req_ready(r);
	if (!*flag)
		return MPI_SUCCESS;
	int err = r->kind == VD_REQ_PERSIST ? vd_persist_peek(r, st)
		: r->kind == VD_REQ_GREQ    ? vd_greq_peek(r, st)
					    : (vd_req_status(r, st), r->err);
	return owner_raise(req_owner(req), err, "MPI_Request_get_status");
}

/* Index of a finished request among reqs (MPI_UNDEFINED if all are
 * null or inactive), or -1 if none finished yet. */
static int find_done(int n, MPI_Request reqs[])
{
	bool any = false;

	for (int i = 0; i < n; i++) {
		struct vd_req *r = vd_req_get(reqs[i]);
		if (reqs[i] == MPI_REQUEST_NULL || (r && vd_req_inactive(r)))
			continue;
		any = true;
		if (!r || vd_req_ready(r))
			return i;
	}
	return any ? -1 : MPI_UNDEFINED;
}

#pragma weak MPI_Testany = PMPI_Testany
int PMPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *st)
{
	VD_API_GUARD();
	int i;

	VD_MPI_CHECK_RUNNING("MPI_Testany");
	if (n < 0 || (n && !reqs) || !index || !flag)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Testany");
	vd_progress(false);
	i = find_done(n, reqs);
	*flag = i != -1;
	*index = i < 0 ? MPI_UNDEFINED : i;
	if (i == MPI_UNDEFINED)
		vd_empty_status(st);
	if (i < 0)
		return MPI_SUCCESS;
	struct req_owner o = req_owner(reqs[i]);
	return owner_raise(o, vd_wait(&reqs[i], st), "MPI_Testany");
}

#pragma weak MPI_Waitany = PMPI_Waitany
int PMPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *st)
{
	VD_API_GUARD();
	struct vd_idle idle = { 0 };
	int i;

	VD_MPI_CHECK_RUNNING("MPI_Waitany");
	if (n < 0 || (n && !reqs) || !index)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Waitany");
	while ((i = find_done(n, reqs)) == -1)
		vd_wait_step(&idle);
	*index = i;
	if (i == MPI_UNDEFINED) {
		vd_empty_status(st);
		return MPI_SUCCESS;
	}
	struct req_owner o = req_owner(reqs[i]);
	return owner_raise(o, vd_wait(&reqs[i], st), "MPI_Waitany");
}

#pragma weak MPI_Testall = PMPI_Testall
int PMPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status *sts)
{
	VD_API_GUARD();
	VD_MPI_CHECK_RUNNING("MPI_Testall");
	if (n < 0 || (n && !reqs) || !flag)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Testall");
	vd_progress(false);
	for (int i = 0; i < n; i++) {
		struct vd_req *r = vd_req_get(reqs[i]);
		if (reqs[i] != MPI_REQUEST_NULL && r && !vd_req_ready(r)) {
			*flag = 0;
			return MPI_SUCCESS;
		}
	}
	*flag = 1;
	struct req_owner failed = req_owner(MPI_REQUEST_NULL);
	int e = waitall_judged(n, reqs, sts, &failed);

	return owner_raise(failed, e, "MPI_Testall");
}

/* The finished ones among reqs (all, if some are finished); null and
 * inactive requests do not count.  *failed: the owner of the first that
 * failed. */
static int collect_done(int n, MPI_Request reqs[], int *outcount, int idx[],
			MPI_Status *sts, struct req_owner *failed)
{
	int k = 0, err = MPI_SUCCESS, live = 0;

	for (int i = 0; i < n; i++) {
		struct vd_req *r = vd_req_get(reqs[i]);
		if (reqs[i] == MPI_REQUEST_NULL || (r && vd_req_inactive(r)))
			continue;
		live++;
		if (r && !vd_req_ready(r))
			continue;
		complete_one(&reqs[i], vd_status_at(sts, k), &err, failed);
		idx[k++] = i;
	}
	*outcount = live ? k : MPI_UNDEFINED;
	return err;
}

#pragma weak MPI_Waitsome = PMPI_Waitsome
int PMPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status *sts)
{
	VD_API_GUARD();
	struct vd_idle idle = { 0 };
	struct req_owner failed = req_owner(MPI_REQUEST_NULL);
	int e;

	VD_MPI_CHECK_RUNNING("MPI_Waitsome");
	if (n < 0 || (n && (!reqs || !idx)) || !outcount)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Waitsome");
	while ((e = collect_done(n, reqs, outcount, idx, sts, &failed)) == MPI_SUCCESS &&
	       *outcount == 0)
		vd_wait_step(&idle);
	return owner_raise(failed, e, "MPI_Waitsome");
}

#pragma weak MPI_Testsome = PMPI_Testsome
int PMPI_Testsome(int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status *sts)
{
	VD_API_GUARD();
	struct req_owner failed = req_owner(MPI_REQUEST_NULL);
	int e;

	VD_MPI_CHECK_RUNNING("MPI_Testsome");
	if (n < 0 || (n && (!reqs || !idx)) || !outcount)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Testsome");
	vd_progress(false);
	e = collect_done(n, reqs, outcount, idx, sts, &failed);
	return owner_raise(failed, e, "MPI_Testsome");
}

#pragma weak MPI_Request_free = PMPI_Request_free
int PMPI_Request_free(MPI_Request *req)
{
	VD_API_GUARD();
	struct vd_req *r;

	VD_MPI_CHECK_RUNNING("MPI_Request_free");
	if (!req || !(r = vd_req_get(*req)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Request_free");
	/* Erroneous for a nonblocking collective (MPI 4.0, 6.12): refused,
	 * the request stays valid. */
	if (r->kind == VD_REQ_COLL)
		return vd_mpi_raise(r->comm, MPI_ERR_REQUEST, "MPI_Request_free");
	*req = MPI_REQUEST_NULL;
	if (r->kind == VD_REQ_PERSIST)
		vd_persist_free(r);
	else if (r->kind == VD_REQ_GREQ)
		return vd_mpi_raise(MPI_COMM_WORLD, vd_greq_free(r), "MPI_Request_free");
	else if (r->done)
		vd_req_release(r);
	else
		r->freed = true;        /* released when it completes */
	return MPI_SUCCESS;
}

/* Receives that have not matched can be cancelled; sends cannot (the
 * standard allows a cancel to fail: the send then completes normally).
 * A sent message may already sit in the receiver's unexpected queue, or
 * be copied out of it by a probe, so only the receiver could withdraw
 * it -- that would take a round trip the engine does not have. */
#pragma weak MPI_Cancel = PMPI_Cancel
int PMPI_Cancel(MPI_Request *req)
{
	VD_API_GUARD();
	struct vd_req *r;

	VD_MPI_CHECK_RUNNING("MPI_Cancel");
	if (!req || !(r = vd_req_get(*req)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Cancel");
	if (r->kind == VD_REQ_PERSIST)
		return owner_raise(req_owner(*req), vd_persist_cancel(r), "MPI_Cancel");
	if (r->kind == VD_REQ_GREQ)
		return owner_raise(req_owner(*req), vd_greq_cancel(r), "MPI_Cancel");
	if (r->kind == VD_REQ_COLL)     /* collectives cannot be cancelled */
		return vd_mpi_raise(r->comm, MPI_ERR_REQUEST, "MPI_Cancel");
	if (r->kind == VD_REQ_RECV && !r->done && vd_unpost_recv(r)) {
		r->cancelled = true;
		r->st.vd_count_hi_cancelled = 1;
		r->st.vd_count_lo = 0;
		vd_req_complete(r, MPI_SUCCESS);
	}
	return MPI_SUCCESS;
}

#pragma weak MPI_Test_cancelled = PMPI_Test_cancelled
int PMPI_Test_cancelled(const MPI_Status *st, int *flag)
{
	VD_API_GUARD();
	if (!st || st == MPI_STATUS_IGNORE || !flag)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Test_cancelled");
	*flag = st->vd_count_hi_cancelled & 1;
	return MPI_SUCCESS;
}

#pragma weak MPI_Get_count = PMPI_Get_count
int PMPI_Get_count(const MPI_Status *st, MPI_Datatype dt, int *count)
{
	VD_API_GUARD();
	struct vd_dtype *t = vd_dtype_get(dt);

	if (!st || st == MPI_STATUS_IGNORE || !count)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Get_count");
	if (!t)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Get_count");
	MPI_Count bytes = vd_status_bytes(st), n = t->size ? bytes / t->size : 0;

	/* A zero-size type received nothing countable: 0 (the standard's
	 * choice); a partial element or a count beyond int: MPI_UNDEFINED. */
	*count = (t->size && bytes % t->size) || n > INT_MAX ? MPI_UNDEFINED : (int)n;
	return MPI_SUCCESS;
}

