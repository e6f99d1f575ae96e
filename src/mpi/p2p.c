/* SPDX-License-Identifier: MIT */
/*
 * Point to point: argument checks, the internal vd_isend/vd_irecv/vd_wait
 * the collectives also use, and the MPI functions built on them.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "util/sys.h"


/* ---- waiting ---------------------------------------------------------------------- */

/* How long a blocking wait polls before it sleeps in the CQs
 * (VIADUCT_MPI_SPIN_US).  Time, not a count of polls: a poll costs tens
 * of nanoseconds over shm and a system call or more over a fabric.  By
 * default 20 us -- a reply that comes within a round trip is caught
 * without a wake-up -- but 1 us when this host's ranks outnumber the
 * CPUs they may use: then the rank waited for needs our CPU, and
 * spinning only delays it (4 ranks on 2 CPUs: an allreduce over the
 * fabric took 2.4x as long with a 64-poll spin, about 300 us of system
 * calls). */
/* The CPUs this host's ranks share: our own set joined with our
 * launcher's (the parent: vdrun, its proxy, Hydra's or Slurm's), over
 * whose set a launcher that pins spreads its ranks -- a rank pinned to
 * one core is not by itself a sign of more ranks than cores. */
static int host_cpus(void)
{
	cpu_set_t own, parent;

	if (sched_getaffinity(0, sizeof(own), &own))
		return 1;
	if (sched_getaffinity(getppid(), sizeof(parent), &parent) == 0)
		CPU_OR(&own, &own, &parent);
	return CPU_COUNT(&own);
}

/* This host's ranks outnumber the CPUs they share. */
static bool host_crowded(void)
{
	return vd_place_local_ranks() > host_cpus();
}

/* The caches below are plain: below MPI_THREAD_MULTIPLE one thread
 * calls, and at MULTIPLE the library's lock is held (every caller
 * computes the same value in any case). */
static uint64_t spin_ns(void)
{
	static int64_t cached = -1;
	uint64_t us = 20;

	if (cached < 0) {
		if (host_crowded())
			us = 1;
		(void)viaduct_param_uint("VIADUCT_MPI_SPIN_US", us, &us);      /* checked at init */
		cached = (int64_t)us * 1000;
	}
	return (uint64_t)cached;
}

uint64_t vd_spin_budget_ns(void)
{
	return spin_ns();
}

/* A node-local collective waits for members on this host only: when
 * they outnumber the CPUs, the one waited for needs our CPU, so the wait
 * yields at once instead of spinning first (4 ranks on 2 CPUs, median
 * of 5 runs: 8-byte Allreduce 7.3 -> 5.6 us).  VIADUCT_MPI_SPIN_US,
 * when given, is obeyed. */
uint64_t vd_coll_spin_budget_ns(void)
{
	static int crowded = -1;
	uint64_t given = UINT64_MAX;

	if (crowded < 0) {
		/* UINT64_MAX, above the parameter's bound: not given (an
		 * empty value counts as not given, as for spin_ns). */
		(void)viaduct_param_uint("VIADUCT_MPI_SPIN_US", UINT64_MAX, &given);
		crowded = host_crowded() && given == UINT64_MAX;
	}
	return crowded ? 0 : spin_ns();
}

/* For a while after a message came from another host
 * (VIADUCT_MPI_SPIN_XFER_US, default 1 ms), and VD_XFER_MOVING times as
 * long without a completion while a transfer across hosts is under way
 * (moving_spin_ns).  A transfer's data comes in pieces as the fabric
 * delivers them, and over tcp each piece moves only while someone polls
 * (manual progress): a rank that slept after 20 us woke thousands of
 * times a second, each wake-up a scheduler round trip (4 MiB windowed
 * bandwidth between two namespace hosts: 2.2 against 3.0 GB/s).  And a
 * round trip over tcp takes 10-40 us: a rank that slept after 20 us paid
 * a wake-up through the fabric's epoll, on a vCPU the hypervisor may have
 * descheduled, on many replies (8-byte half round trip between two
 * namespace hosts: 37 us when every wait sleeps, 12 when none does).
 * Not more than the plain budget on an oversubscribed host. */
static uint64_t xfer_spin_ns(void)
{
	static int64_t cached = -1;

	if (cached < 0) {
		uint64_t us = host_crowded() ? spin_ns() / 1000 : 1000;

		(void)viaduct_param_uint("VIADUCT_MPI_SPIN_XFER_US", us, &us);
		cached = (int64_t)us * 1000;
	}
	return (uint64_t)cached;
}

/* A transfer under way ends in completions that come in bursts: in a
 * window of 1 MiB gets between two namespace hosts, a third of the gaps
 * between them were 1-8 ms (the fabric serves several reads at once).
 * A wait that slept after 1 ms of them woke on every piece of data
 * that came in (5000 times a second). */
#define VD_XFER_MOVING 8u

/* VD_XFER_MOVING times the transfer budget; the plain budget on an
 * oversubscribed host, as xfer_spin_ns. */
static uint64_t moving_spin_ns(void)
{
	static int64_t cached = -1;

	if (cached < 0)
		cached = (int64_t)(xfer_spin_ns() * (host_crowded() ? 1 : VD_XFER_MOVING));
	return (uint64_t)cached;
}

/* A wait that has polled for `spun` ns (since anything last arrived or
 * completed) goes on polling. */
static bool keep_polling(uint64_t now, uint64_t spun)
{
	uint64_t xfer = xfer_spin_ns();

	if (spun < spin_ns())
		return true;
	if (vd_wire_moving())
		return spun < moving_spin_ns();
	return spun < xfer && now > xfer && vd_wire_heard_since(now - xfer);
}

/* One step of a blocking wait: poll; once nothing has come for the spin
 * budget, sleep in the CQs.  The clock is read every 8th idle poll. */
void vd_wait_step(struct vd_idle *idle)
{
	bool block = idle->sleeping;

	if (!block && idle->polls && !(idle->polls & 7)) {
		uint64_t now = vd_now_ns();
		if (!idle->since_ns)
			idle->since_ns = now;
		else
			block = idle->sleeping = !keep_polling(now, now - idle->since_ns);
	}
	if (vd_progress(block))
		*idle = (struct vd_idle){ 0 };
	else
		idle->polls++;
}

/* ---- internal send / receive -------------------------------------------------------- */

static void set_proc_null_status(struct vd_req *r)
{
	r->st.MPI_SOURCE = MPI_PROC_NULL;
	r->st.MPI_TAG = MPI_ANY_TAG;
	r->st.vd_count_lo = 0;
	vd_req_complete(r, MPI_SUCCESS);
}

/* Counts and statuses hold 31 bits of byte count (docs/mpi.md, "Known
 * limits"): a larger message is refused rather than sent and received
 * short.  count >= 0. */
static bool length_ok(int count, const struct vd_dtype *t)
{
	size_t bytes;

	return !__builtin_mul_overflow((size_t)count, (size_t)t->size, &bytes) &&
	       bytes <= INT_MAX;
}

int vd_isend_type(const void *buf, int count, struct vd_dtype *t, int dest, int tag,
		  struct vd_comm *comm, uint32_t ctx, enum vd_send_mode mode,
		  MPI_Request *req)
{
	struct vd_req *r = vd_req_new(VD_REQ_SEND);
	int err;

	if (!r)
		return -ENOMEM;
	*req = (MPI_Request)r->id;
	if (dest == MPI_PROC_NULL) {
		set_proc_null_status(r);
		return 0;
	}
	r->t = t;
	r->bytes = (size_t)count * (size_t)r->t->size;
	r->peer = comm->world[dest];
	r->mode = mode;
	r->hdr.ctx = ctx;
	r->hdr.src = comm->rank;
	r->hdr.tag = tag;
	if (!length_ok(count, t))       /* a collective's own send (length_ok) */
		return vd_req_complete(r, MPI_ERR_COUNT), 0;
	if (r->t->contig || !r->bytes) {
		r->data = (void *)buf;
	} else {
		r->tmp = malloc(r->bytes);
		if (!r->tmp)
			return vd_req_complete(r, MPI_ERR_NO_MEM), 0;
		vd_dtype_pack(r->t, buf, count, r->tmp);
		r->data = r->tmp;
	}
	err = vd_proto_send(r);
	if (err)
		vd_req_complete(r, vd_mpi_errno(err));
	return 0;
}

int vd_isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
	     struct vd_comm *comm, uint32_t ctx, enum vd_send_mode mode,
	     MPI_Request *req)
{
	return vd_isend_type(buf, count, vd_dtype_get(dt), dest, tag, comm, ctx, mode, req);
}

/* Ranks in the messages are comm ranks: the receive needs only ctx. */
int vd_irecv_type(void *buf, int count, struct vd_dtype *t, int source, int tag,
		  uint32_t ctx, MPI_Request *req)
{
	struct vd_req *r = vd_req_new(VD_REQ_RECV);
	struct vd_unexp *u;

	if (!r)
		return -ENOMEM;
	*req = (MPI_Request)r->id;
	if (source == MPI_PROC_NULL) {
		set_proc_null_status(r);
		return 0;
	}
	r->ctx = ctx;
	r->src = source;
	r->tag = tag;
	r->buf = buf;
	r->count = count;
	r->t = t;
	vd_dtype_retain(r->t);          /* MPI_Type_free may come first */
	r->bytes = (size_t)count * (size_t)r->t->size;
	vd_recv_open(r);
	u = vd_unexp_find(ctx, source, tag, true);
	if (!u) {
		vd_post_recv(r);
		return 0;
	}
	vd_proto_match_unexp(r, u);
	return 0;
}

int vd_irecv(void *buf, int count, MPI_Datatype dt, int source, int tag,
	     struct vd_comm *comm, uint32_t ctx, MPI_Request *req)
{
	(void)comm;
	return vd_irecv_type(buf, count, vd_dtype_get(dt), source, tag, ctx, req);
}

void vd_req_status(const struct vd_req *r, MPI_Status *st)
{
	if (st == MPI_STATUS_IGNORE)
		return;
	*st = r->st;
	st->MPI_ERROR = r->err;
}

/* Hand back a finished request: status, error, handle reset -- except
 * for a persistent request, which stays allocated (inactive). */
int vd_req_finish(MPI_Request *req, struct vd_req *r, MPI_Status *st)
{
	int err = r->err;

	if (r->kind == VD_REQ_PERSIST)
		return vd_persist_finish(r, st);
	if (r->kind == VD_REQ_GREQ)
		return vd_greq_finish(req, r, st);
	vd_req_status(r, st);
	vd_req_release(r);
	*req = MPI_REQUEST_NULL;
	return err;
}

void vd_empty_status(MPI_Status *st)
{
	if (st == MPI_STATUS_IGNORE)
		return;
	st->MPI_SOURCE = MPI_ANY_SOURCE;
	st->MPI_TAG = MPI_ANY_TAG;
	st->MPI_ERROR = MPI_SUCCESS;
	st->vd_count_lo = 0;
	st->vd_count_hi_cancelled = 0;
}

int vd_wait(MPI_Request *req, MPI_Status *st)
{
	struct vd_req *r;
	struct vd_idle idle = { 0 };

	if (*req == MPI_REQUEST_NULL) {
		vd_empty_status(st);
		return MPI_SUCCESS;
	}
	r = vd_req_get(*req);
	if (!r)
		return MPI_ERR_REQUEST;
	while (!vd_req_ready(r))
		vd_wait_step(&idle);
	return vd_req_finish(req, r, st);
}

void vd_wait_until(bool (*pred)(void *), void *arg)
{
	struct vd_idle idle = { 0 };

	while (!pred(arg))
		vd_wait_step(&idle);
}

/* ---- checks ------------------------------------------------------------------------- */

/* *t: dt's type, for the caller to use without looking it up again. */
static int check_common(struct vd_comm *c, const void *buf, int count, MPI_Datatype dt,
			struct vd_dtype **t)
{
	*t = NULL;
	if (!c)
		return MPI_ERR_COMM;
	if (count < 0)
		return MPI_ERR_COUNT;
	if (!(*t = vd_dtype_comm(dt)))
		return MPI_ERR_TYPE;
	if (!vd_dtype_buf_ok(*t, buf, count))
		return MPI_ERR_BUFFER;
	return MPI_SUCCESS;
}

/* check_send without a word on stderr (send_fast: the general path
 * that follows says it). */
static int check_send_quiet(struct vd_comm *c, const void *buf, int count, MPI_Datatype dt,
			    int dest, int tag, struct vd_dtype **t)
{
	int e = check_common(c, buf, count, dt, t);

	if (e)
		return e;
	if (dest != MPI_PROC_NULL && !length_ok(count, *t))
		return MPI_ERR_COUNT;
	if (dest != MPI_PROC_NULL && (dest < 0 || dest >= c->size))
		return MPI_ERR_RANK;
	if (tag < 0)
		return MPI_ERR_TAG;
	return MPI_SUCCESS;
}

static int check_send(struct vd_comm *c, const void *buf, int count, MPI_Datatype dt,
		      int dest, int tag, struct vd_dtype **t)
{
	int e = check_send_quiet(c, buf, count, dt, dest, tag, t);

	if (e == MPI_ERR_COUNT && count >= 0)
		fprintf(stderr, "viaduct MPI: rank %d: a message of %d elements of %zu bytes: "
			"messages of more than %d bytes are not supported\n", vd_mpi.rank,
			count, (size_t)(*t)->size, INT_MAX);
	return e;
}

int vd_p2p_check_send(struct vd_comm *c, const void *buf, int count, MPI_Datatype dt,
		      int dest, int tag)
{
	struct vd_dtype *t;

	return check_send(c, buf, count, dt, dest, tag, &t);
}

/* Source and tag of a receive or probe (wildcards allowed). */
int vd_p2p_check_source(struct vd_comm *c, int src, int tag)
{
	if (!c)
		return MPI_ERR_COMM;
	if (src != MPI_PROC_NULL && src != MPI_ANY_SOURCE && (src < 0 || src >= c->size))
		return MPI_ERR_RANK;
	if (tag < 0 && tag != MPI_ANY_TAG)
		return MPI_ERR_TAG;
	return MPI_SUCCESS;
}

static int check_recv(struct vd_comm *c, const void *buf, int count, MPI_Datatype dt,
		      int src, int tag, struct vd_dtype **t)
{
	int e = check_common(c, buf, count, dt, t);

	return e ? e : vd_p2p_check_source(c, src, tag);
}

int vd_p2p_check_recv(struct vd_comm *c, const void *buf, int count, MPI_Datatype dt,
		      int src, int tag)
{
	struct vd_dtype *t;

	return check_recv(c, buf, count, dt, src, tag, &t);
}

/* ---- MPI: sends and receives --------------------------------------------------------- */

static int isend_api(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		     MPI_Comm comm, enum vd_send_mode mode, MPI_Request *req,
		     const char *fn)
{
	struct vd_comm *c = vd_comm_get(comm);
	struct vd_dtype *t;
	int e;

	VD_MPI_CHECK_RUNNING(fn);
	e = check_send(c, buf, count, dt, dest, tag, &t);
	if (!e && !req)
		e = MPI_ERR_ARG;
	if (!e && vd_isend_type(buf, count, t, dest, tag, c, c->ctx, mode, req))
		e = MPI_ERR_NO_MEM;
	if (!e)
		vd_req_get(*req)->comm = comm;
	return vd_mpi_raise(comm, e, fn);
}

/* A standard send of a contiguous eager message to another rank: no
 * request, no wait.  -1 when it does not apply (including every error,
 * which the general path then reports).  `queue`: a message the ring
 * cannot take now is copied into the wire's queue (MPI_Send returns at
 * once); without it (MPI_Isend) it takes a request, and waits in the
 * queue by reference -- no copy, no allocation of its size. */
static int send_fast(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		     MPI_Comm comm, bool queue, const char *fn)
{
	struct vd_comm *c = vd_comm_get(comm);
	struct vd_dtype *t;
	int peer, err;

	if (__atomic_load_n(&vd_mpi.phase, __ATOMIC_RELAXED) != VD_MPI_RUNNING ||
	    check_send_quiet(c, buf, count, dt, dest, tag, &t) || dest == MPI_PROC_NULL)
		return -1;
	peer = c->world[dest];
	if (!t->contig || peer == vd_mpi.rank)
		return -1;
	err = vd_proto_eager_now(peer, c->ctx, c->rank, tag, buf,
				 (size_t)count * (size_t)t->size, queue);
	if (err == -EAGAIN)
		return -1;
	return vd_mpi_raise(comm, err ? vd_mpi_errno(err) : MPI_SUCCESS, fn);
}

static int send_api(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		    MPI_Comm comm, enum vd_send_mode mode, const char *fn)
{
	MPI_Request req;
	int e = mode == VD_SEND_STD ? send_fast(buf, count, dt, dest, tag, comm, true, fn) : -1;

	if (e >= 0)
		return e;
	e = isend_api(buf, count, dt, dest, tag, comm, mode, &req, fn);

	if (e)
		return e;
	return vd_mpi_raise(comm, vd_wait(&req, MPI_STATUS_IGNORE), fn);
}

#pragma weak MPI_Send = PMPI_Send
int PMPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	VD_API_GUARD();
	return send_api(buf, count, dt, dest, tag, comm, VD_SEND_STD, "MPI_Send");
}

#pragma weak MPI_Ssend = PMPI_Ssend
int PMPI_Ssend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	VD_API_GUARD();
	return send_api(buf, count, dt, dest, tag, comm, VD_SEND_SYNC, "MPI_Ssend");
}

/* A ready send may be sent as a standard one. */
#pragma weak MPI_Rsend = PMPI_Rsend
int PMPI_Rsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	VD_API_GUARD();
	return send_api(buf, count, dt, dest, tag, comm, VD_SEND_STD, "MPI_Rsend");
}

#pragma weak MPI_Isend = PMPI_Isend
int PMPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
	      MPI_Comm comm, MPI_Request *req)
{
	VD_API_GUARD();
	int e = req ? send_fast(buf, count, dt, dest, tag, comm, false, "MPI_Isend") : -1;

	if (e == MPI_SUCCESS)
		*req = VD_REQ_SENT;     /* complete: the message is in the ring */
	else if (e > 0)
		*req = MPI_REQUEST_NULL;
	if (e >= 0)
		return e;
	return isend_api(buf, count, dt, dest, tag, comm, VD_SEND_STD, req, "MPI_Isend");
}

#pragma weak MPI_Issend = PMPI_Issend
int PMPI_Issend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
	       MPI_Comm comm, MPI_Request *req)
{
	VD_API_GUARD();
	return isend_api(buf, count, dt, dest, tag, comm, VD_SEND_SYNC, req, "MPI_Issend");
}

/* A ready send may be sent as a standard one. */
#pragma weak MPI_Irsend = PMPI_Irsend
int PMPI_Irsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
	       MPI_Comm comm, MPI_Request *req)
{
	VD_API_GUARD();
	return isend_api(buf, count, dt, dest, tag, comm, VD_SEND_STD, req, "MPI_Irsend");
}

#pragma weak MPI_Irecv = PMPI_Irecv
int PMPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag,
	      MPI_Comm comm, MPI_Request *req)
{
	VD_API_GUARD();
	struct vd_comm *c = vd_comm_get(comm);
	struct vd_dtype *t;
	int e;

	VD_MPI_CHECK_RUNNING("MPI_Irecv");
	e = check_recv(c, buf, count, dt, source, tag, &t);
	if (!e && !req)
		e = MPI_ERR_ARG;
	if (!e && vd_irecv_type(buf, count, t, source, tag, c->ctx, req))
		e = MPI_ERR_NO_MEM;
	if (!e)
		vd_req_get(*req)->comm = comm;
	return vd_mpi_raise(comm, e, "MPI_Irecv");
}

#pragma weak MPI_Recv = PMPI_Recv
int PMPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
	     MPI_Status *st)
{
	VD_API_GUARD();
	MPI_Request req;
	int e = PMPI_Irecv(buf, count, dt, source, tag, comm, &req);

	if (e)
		return e;
	return vd_mpi_raise(comm, vd_wait(&req, st), "MPI_Recv");
}

#pragma weak MPI_Sendrecv = PMPI_Sendrecv
int PMPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype sdt, int dest, int stag,
		 void *rbuf, int rcount, MPI_Datatype rdt, int source, int rtag,
		 MPI_Comm comm, MPI_Status *st)
{
	VD_API_GUARD();
	struct vd_comm *c = vd_comm_get(comm);
	MPI_Request r[2];
	int e;

	VD_MPI_CHECK_RUNNING("MPI_Sendrecv");
	/* Both halves checked before either starts: a receive posted for a
	 * send that then fails its checks would wait for a message the
	 * peer, failing the same way, never sends. */
	e = vd_p2p_check_send(c, sbuf, scount, sdt, dest, stag);
	if (!e)
		e = vd_p2p_check_recv(c, rbuf, rcount, rdt, source, rtag);
	if (e)
		return vd_mpi_raise(comm, e, "MPI_Sendrecv");
	e = PMPI_Irecv(rbuf, rcount, rdt, source, rtag, comm, &r[0]);
	if (e)
		return e;
	e = PMPI_Isend(sbuf, scount, sdt, dest, stag, comm, &r[1]);
	if (e) {
		/* Unmatched, the receive goes; matched, it ends as it may. */
		PMPI_Cancel(&r[0]);
		vd_wait(&r[0], MPI_STATUS_IGNORE);
		return e;
	}
	e = vd_wait(&r[0], st);
	int e2 = vd_wait(&r[1], MPI_STATUS_IGNORE);
	return vd_mpi_raise(comm, e ? e : e2, "MPI_Sendrecv");
}

#pragma weak MPI_Sendrecv_replace = PMPI_Sendrecv_replace
int PMPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int stag,
			 int source, int rtag, MPI_Comm comm, MPI_Status *st)
{
	VD_API_GUARD();
	struct vd_dtype *t = vd_dtype_comm(dt);
	struct vd_comm *c = vd_comm_get(comm);
	void *copy;
	int e;

	VD_MPI_CHECK_RUNNING("MPI_Sendrecv_replace");
	/* buf is packed before Sendrecv could check it. */
	e = vd_p2p_check_send(c, buf, count, dt, dest, stag);
	if (!e)
		e = vd_p2p_check_source(c, source, rtag);
	if (e)
		return vd_mpi_raise(comm, e, "MPI_Sendrecv_replace");
	copy = malloc((size_t)count * (size_t)t->size + 1);
	if (!copy)
		return vd_mpi_raise(comm, MPI_ERR_NO_MEM, "MPI_Sendrecv_replace");
	vd_dtype_pack(t, buf, count, copy);
	e = PMPI_Sendrecv(copy, (int)((size_t)count * (size_t)t->size), MPI_BYTE, dest, stag,
			 buf, count, dt, source, rtag, comm, st);
	free(copy);
	return e;
}

/* ---- MPI: probe -------------------------------------------------------------------------- */

static void probe_status(const struct vd_unexp *u, MPI_Status *st)
{
	if (st == MPI_STATUS_IGNORE)
		return;
	st->MPI_SOURCE = u->hdr.src;
	st->MPI_TAG = u->hdr.tag;
	st->MPI_ERROR = MPI_SUCCESS;
	/* Beyond 31 bits only from a peer that ignores length_ok. */
	st->vd_count_lo = u->hdr.len > INT_MAX ? INT_MAX : (int)u->hdr.len;
	st->vd_count_hi_cancelled = 0;
}

#pragma weak MPI_Iprobe = PMPI_Iprobe
int PMPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *st)
{
	VD_API_GUARD();
	struct vd_comm *c = vd_comm_get(comm);
	struct vd_unexp *u;
	int e;

	VD_MPI_CHECK_RUNNING("MPI_Iprobe");
	e = vd_p2p_check_source(c, src, tag);
	if (!e && !flag)
		e = MPI_ERR_ARG;
	if (e)
		return vd_mpi_raise(comm, e, "MPI_Iprobe");
	if (src == MPI_PROC_NULL) {
		*flag = 1;
		vd_empty_status(st);
		if (st != MPI_STATUS_IGNORE)
			st->MPI_SOURCE = MPI_PROC_NULL;
		return MPI_SUCCESS;
	}
	vd_progress(false);
	u = vd_unexp_find(c->ctx, src, tag, false);
	*flag = u != NULL;
	if (u)
		probe_status(u, st);
	return MPI_SUCCESS;
}

#pragma weak MPI_Probe = PMPI_Probe
int PMPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *st)
{
	VD_API_GUARD();
	struct vd_idle idle = { 0 };
	int flag = 0, e;

	while ((e = PMPI_Iprobe(src, tag, comm, &flag, st)) == MPI_SUCCESS && !flag)
		vd_wait_step(&idle);
	return e;
}

/* ---- helpers for the collectives ------------------------------------------------------------ */

int vd_coll_send(const void *buf, int count, MPI_Datatype dt, int dest, struct vd_comm *c)
{
	MPI_Request r;

	if (vd_isend(buf, count, dt, dest, VD_COLL_TAG, c, c->ctx + 1, VD_SEND_STD, &r))
		return MPI_ERR_NO_MEM;
	return vd_wait(&r, MPI_STATUS_IGNORE);
}

int vd_coll_recv(void *buf, int count, MPI_Datatype dt, int src, struct vd_comm *c)
{
	MPI_Request r;

	if (vd_irecv(buf, count, dt, src, VD_COLL_TAG, c, c->ctx + 1, &r))
		return MPI_ERR_NO_MEM;
	return vd_wait(&r, MPI_STATUS_IGNORE);
}

int vd_coll_sendrecv(const void *sbuf, int scount, MPI_Datatype sdt, int dest,
		     void *rbuf, int rcount, MPI_Datatype rdt, int src, struct vd_comm *c)
{
	MPI_Request r[2];

	if (vd_irecv(rbuf, rcount, rdt, src, VD_COLL_TAG, c, c->ctx + 1, &r[0]))
		return MPI_ERR_NO_MEM;
	if (vd_isend(sbuf, scount, sdt, dest, VD_COLL_TAG, c, c->ctx + 1, VD_SEND_STD, &r[1])) {
		vd_wait(&r[0], MPI_STATUS_IGNORE);
		return MPI_ERR_NO_MEM;
	}
	return vd_waitall(2, r, MPI_STATUSES_IGNORE) ? MPI_ERR_OTHER : MPI_SUCCESS;
}
