/* SPDX-License-Identifier: MIT */
/*
 * Generalized requests (MPI_Grequest_start / _complete): a request whose
 * operation the user runs; the library only calls back.  query_fn fills
 * the status when a wait, test or MPI_Request_get_status sees it
 * complete; free_fn runs once, when the request is both complete and
 * released (by a wait/test, or by MPI_Request_free -- then at
 * MPI_Grequest_complete if that comes later); cancel_fn runs for
 * MPI_Cancel.  Also the status setters such callbacks use.
 */
#include <stdlib.h>

#include "engine.h"

struct vd_greq {
	MPI_Grequest_query_function *query_fn;
	MPI_Grequest_free_function *free_fn;
	MPI_Grequest_cancel_function *cancel_fn;
	void *extra_state;
};

#pragma weak MPI_Grequest_start = PMPI_Grequest_start
int PMPI_Grequest_start(MPI_Grequest_query_function *query_fn,
			MPI_Grequest_free_function *free_fn,
			MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
			MPI_Request *req)
{
	VD_API_GUARD();
	struct vd_greq *g;
	struct vd_req *r;

	VD_MPI_CHECK_RUNNING("MPI_Grequest_start");
	if (!req || !query_fn || !free_fn || !cancel_fn)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Grequest_start");
	g = malloc(sizeof(*g));
	r = g ? vd_req_new(VD_REQ_GREQ) : NULL;
	if (!r) {
		free(g);
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, "MPI_Grequest_start");
	}
	*g = (struct vd_greq){ query_fn, free_fn, cancel_fn, extra_state };
	r->greq = g;
	r->comm = MPI_COMM_WORLD;
	*req = (MPI_Request)r->id;
	return MPI_SUCCESS;
}

/* free_fn, then the request itself; free_fn's error, if any. */
static int greq_destroy(struct vd_req *r)
{
	int err = r->greq->free_fn(r->greq->extra_state);

	vd_req_release(r);
	return err;
}

/* The request handle stays the user's until a wait or test returns it,
 * so completing does not free it -- unless MPI_Request_free came first. */
#pragma weak MPI_Grequest_complete = PMPI_Grequest_complete
int PMPI_Grequest_complete(MPI_Request req)
{
	VD_API_GUARD();
	struct vd_req *r = vd_req_get(req);

	VD_MPI_CHECK_RUNNING("MPI_Grequest_complete");
	if (!r || r->kind != VD_REQ_GREQ || r->done)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Grequest_complete");
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	vd_lock_progressed();           /* a thread may wait for it */
	if (r->freed)
		return vd_mpi_raise(MPI_COMM_WORLD, greq_destroy(r), "MPI_Grequest_complete");
	return MPI_SUCCESS;
}

void vd_greq_release(struct vd_req *r)
{
	free(r->greq);
	r->greq = NULL;
}

/* query_fn's status (starting from an empty one) and its error. */
int vd_greq_peek(struct vd_req *r, MPI_Status *st)
{
	MPI_Status s;
	int err;

	vd_empty_status(&s);
	err = r->greq->query_fn(r->greq->extra_state, &s);
	s.MPI_ERROR = err;
	if (st != MPI_STATUS_IGNORE)
		*st = s;
	return err;
}

int vd_greq_finish(MPI_Request *req, struct vd_req *r, MPI_Status *st)
{
	int err = vd_greq_peek(r, st);
	int ferr = greq_destroy(r);

	*req = MPI_REQUEST_NULL;
	return err ? err : ferr;
}

int vd_greq_cancel(struct vd_req *r)
{
	return r->greq->cancel_fn(r->greq->extra_state, r->done);
}

int vd_greq_free(struct vd_req *r)
{
	if (r->done)
		return greq_destroy(r);
	r->freed = true;                /* destroyed at MPI_Grequest_complete */
	return MPI_SUCCESS;
}

/* ---- status setters ------------------------------------------------------------------- */

/* Bytes of `count` elements of t: basic elements when t is made of one
 * builtin (what MPI_Get_elements counts), whole elements otherwise. */
static int elements_bytes(struct vd_dtype *t, MPI_Count count, MPI_Count *bytes)
{
	MPI_Count each = t->size;

	if (!t->builtin && t->basic && t->basic_count > 0)
		each = t->size / t->basic_count;
	if (count < 0 || (each && count > INT64_MAX / each))
		return MPI_ERR_COUNT;
	*bytes = count * each;
	return MPI_SUCCESS;
}

static int set_elements(MPI_Status *st, MPI_Datatype dt, MPI_Count count, const char *fn)
{
	struct vd_dtype *t = vd_dtype_get(dt);
	MPI_Count bytes = 0;
	int e = MPI_SUCCESS;

	if (!st || st == MPI_STATUS_IGNORE)
		e = MPI_ERR_ARG;
	else if (!t)
		e = MPI_ERR_TYPE;
	else
		e = elements_bytes(t, count, &bytes);
	if (e)
		return vd_mpi_raise(MPI_COMM_WORLD, e, fn);
	vd_status_set_bytes(st, bytes);
	return MPI_SUCCESS;
}

#pragma weak MPI_Status_set_elements_x = PMPI_Status_set_elements_x
int PMPI_Status_set_elements_x(MPI_Status *st, MPI_Datatype dt, MPI_Count count)
{
	VD_API_GUARD();
	return set_elements(st, dt, count, "MPI_Status_set_elements_x");
}

#pragma weak MPI_Status_set_elements = PMPI_Status_set_elements
int PMPI_Status_set_elements(MPI_Status *st, MPI_Datatype dt, int count)
{
	VD_API_GUARD();
	return set_elements(st, dt, count, "MPI_Status_set_elements");
}

#pragma weak MPI_Status_set_cancelled = PMPI_Status_set_cancelled
int PMPI_Status_set_cancelled(MPI_Status *st, int flag)
{
	VD_API_GUARD();
	if (!st || st == MPI_STATUS_IGNORE)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Status_set_cancelled");
	st->vd_count_hi_cancelled = (st->vd_count_hi_cancelled & ~1) | (flag != 0);
	return MPI_SUCCESS;
}
