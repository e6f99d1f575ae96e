/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the schedules behind the nonblocking collectives (see
 * nbc.h): building them, and running them from the progress engine.
 *
 * A started schedule sits on the active list until its last step is done;
 * vd_progress (every Test, Wait and blocking call) advances each one as
 * far as it can go.  Its request then completes like any other, so Wait,
 * Test and their any/all/some forms take it as they are.
 *
 * Steps hold the datatype objects, retained, and a user op's function,
 * not only their handles: the user may free a type or an op while the
 * collective is pending.  So transfers go as bytes (MPI_BYTE), packed
 * into or unpacked from scratch memory when the type is not contiguous,
 * and predefined ops on derived types run on the builtin elements.
 */
#include <limits.h>
#include <stdlib.h>

#include "engine.h"
#include "nbc.h"

enum step_kind { ST_SEND, ST_RECV, ST_OP, ST_COPY, ST_FENCE };

struct step {
	enum step_kind kind;
	const void *src;                /* send, op's in, copy's source */
	void *dst;                      /* receive, op's inout, copy's target */
	int count, dcount;              /* dcount: copy's target count */
	MPI_Datatype dt, ddt;           /* ddt: copy's target type */
	int peer;
	MPI_Op op;
	MPI_User_function *ufn;         /* op's, if a user op */
	struct vd_dtype *t, *dt_t;      /* dt's and ddt's objects, retained */
};

/* A transfer in flight; a non-contiguous one goes through tmp. */
struct posted {
	MPI_Request h;
	void *tmp;
	const struct step *unpack;      /* a receive to unpack from tmp */
};

struct vd_nbc {
	struct vd_comm *c;
	int tag;
	struct step *steps;
	int nsteps, cap, next;          /* next: the first step not run */
	struct posted *posted;          /* transfers of the current round */
	int nposted, pcap;
	void **scratch;
	int nscratch, scap;
	int err;                        /* first MPI error */
	struct vd_req *req;
	struct vd_nbc *next_active;
};

static struct vd_nbc *active;           /* started, not finished */
static bool advancing;                  /* no re-entry from a user op */

/* ---- building ------------------------------------------------------------------- */

/* arr (of *cap elements of size sz) with room for one more than n:
 * arr itself, a larger copy, or NULL (arr unchanged) when out of memory. */
static void *room(void *arr, int *cap, int n, size_t sz)
{
	void *na;
	int ncap;

	if (n < *cap)
		return arr;
	ncap = *cap ? 2 * *cap : 16;
	if (!(na = realloc(arr, (size_t)ncap * sz)))
		return NULL;
	*cap = ncap;
	return na;
}

struct vd_nbc *vd_nbc_new(struct vd_comm *c)
{
	struct vd_nbc *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->c = c;
	c->refs++;
	/* A tag range of their own on the collective context (see
	 * VD_NBC_TAG_FIRST); it wraps after 2^31 - 2^16 collectives. */
	s->tag = VD_NBC_TAG_FIRST +
		 (int)(c->nbc_seq++ % (uint32_t)(INT_MAX - VD_NBC_TAG_FIRST));
	return s;
}

static void nbc_free(struct vd_nbc *s)
{
	for (int i = 0; i < s->nscratch; i++)
		free(s->scratch[i]);
	for (int i = 0; i < s->nsteps; i++) {
		if (s->steps[i].t)
			vd_dtype_release(s->steps[i].t);
		if (s->steps[i].dt_t)
			vd_dtype_release(s->steps[i].dt_t);
	}
	free(s->scratch);
	free(s->steps);
	free(s->posted);
	vd_comm_release(s->c);
	free(s);
}

void vd_nbc_fail(struct vd_nbc *s, int err)
{
	if (!s->err)
		s->err = err;
}

static struct step *add(struct vd_nbc *s, enum step_kind kind)
{
	struct step *ns;

	if (s->err)
		return NULL;
	if (!(ns = room(s->steps, &s->cap, s->nsteps, sizeof(*ns)))) {
		vd_nbc_fail(s, MPI_ERR_NO_MEM);
		return NULL;
	}
	s->steps = ns;
	s->steps[s->nsteps] = (struct step){ .kind = kind };
	return &s->steps[s->nsteps++];
}

static struct vd_dtype *retain(MPI_Datatype dt)
{
	struct vd_dtype *t = vd_dtype_get(dt);

	vd_dtype_retain(t);
	return t;
}

static void transfer(struct vd_nbc *s, enum step_kind kind, const void *buf, int count,
		     MPI_Datatype dt, int peer)
{
	struct step *st;

	if (!s->err && (size_t)count * (size_t)vd_dtype_get(dt)->size > INT_MAX)
		vd_nbc_fail(s, MPI_ERR_COUNT);  /* travels as bytes */
	if (!(st = add(s, kind)))
		return;
	st->t = retain(dt);
	st->src = buf;
	st->dst = (void *)buf;
	st->count = count;
	st->dt = dt;
	st->peer = peer;
}

void vd_nbc_send(struct vd_nbc *s, const void *buf, int count, MPI_Datatype dt, int peer)
{
	transfer(s, ST_SEND, buf, count, dt, peer);
}

void vd_nbc_recv(struct vd_nbc *s, void *buf, int count, MPI_Datatype dt, int peer)
{
	transfer(s, ST_RECV, buf, count, dt, peer);
}

void vd_nbc_op(struct vd_nbc *s, MPI_Op op, const void *in, void *inout, int count,
	       MPI_Datatype dt)
{
	struct step *st = add(s, ST_OP);

	if (st)
		*st = (struct step){ .kind = ST_OP, .src = in, .dst = inout, .count = count,
				     .dt = dt, .op = op, .ufn = vd_op_user_fn(op),
				     .t = retain(dt) };
}

void vd_nbc_copy(struct vd_nbc *s, const void *src, int sc, MPI_Datatype sdt, void *dst,
		 int rc, MPI_Datatype rdt)
{
	struct step *st = add(s, ST_COPY);

	if (st)
		*st = (struct step){ .kind = ST_COPY, .src = src, .dst = dst, .count = sc,
				     .dcount = rc, .dt = sdt, .ddt = rdt, .t = retain(sdt),
				     .dt_t = retain(rdt) };
}

void vd_nbc_fence(struct vd_nbc *s)
{
	/* Two fences in a row, or one first, wait for nothing. */
	if (s->nsteps && s->steps[s->nsteps - 1].kind != ST_FENCE)
		add(s, ST_FENCE);
}

/* Keep mem (NULL: out of memory) to free with s; returns mem, or NULL
 * with the error recorded. */
static void *own(struct vd_nbc *s, void *mem)
{
	void **ns = mem ? room(s->scratch, &s->scap, s->nscratch, sizeof(*ns)) : NULL;

	if (!ns) {
		free(mem);
		vd_nbc_fail(s, MPI_ERR_NO_MEM);
		return NULL;
	}
	s->scratch = ns;
	s->scratch[s->nscratch++] = mem;
	return mem;
}

void *vd_nbc_bytes(struct vd_nbc *s, size_t bytes)
{
	return s->err ? NULL : own(s, malloc(bytes ? bytes : 1));
}

void *vd_nbc_scratch(struct vd_nbc *s, MPI_Datatype dt, int count)
{
	void *mem = NULL, *buf;

	if (s->err)
		return NULL;
	if (!(buf = vd_dtype_scratch(vd_dtype_get(dt), count, &mem))) {
		vd_nbc_fail(s, MPI_ERR_NO_MEM);
		return NULL;
	}
	return own(s, mem) ? buf : NULL;
}

/* ---- running ---------------------------------------------------------------------- */

/* Post a transfer as bytes: straight from / into the buffer for a
 * contiguous type, else through tmp (packed now for a send; unpacked
 * when the round ends for a receive). */
static int post(struct vd_nbc *s, const struct step *st)
{
	struct vd_comm *c = s->c;
	size_t bytes = (size_t)st->count * (size_t)st->t->size;
	struct posted *p = room(s->posted, &s->pcap, s->nposted, sizeof(*p));
	void *data = st->dst;
	int r;

	if (!p)
		return MPI_ERR_NO_MEM;
	s->posted = p;
	p += s->nposted;
	*p = (struct posted){ MPI_REQUEST_NULL, NULL, NULL };
	if (!st->t->contig && bytes) {
		if (!(p->tmp = data = malloc(bytes)))
			return MPI_ERR_NO_MEM;
		if (st->kind == ST_SEND)
			vd_dtype_pack(st->t, st->src, st->count, data);
		else
			p->unpack = st;
	}
	s->nposted++;                   /* reaped (tmp freed) even if posting fails */
	if (st->kind == ST_SEND)
		r = vd_isend(data, (int)bytes, MPI_BYTE, st->peer, s->tag, c, c->ctx + 1,
			     VD_SEND_STD, &p->h);
	else
		r = vd_irecv(data, (int)bytes, MPI_BYTE, st->peer, s->tag, c, c->ctx + 1, &p->h);
	return r ? vd_mpi_errno(r) : MPI_SUCCESS;
}

/* inout = in op inout without the handles (see above); a user function
 * still sees the user's datatype handle, as the blocking forms give it. */
static int run_op(const struct step *st)
{
	const struct vd_dtype *t = st->t;
	int n = st->count * (int)t->basic_count, err;
	size_t bytes = (size_t)st->count * (size_t)t->size;
	char *tmp;

	if (st->ufn) {
		int len = st->count;
		MPI_Datatype d = st->dt;

		st->ufn((void *)st->src, st->dst, &len, &d);
		return MPI_SUCCESS;
	}
	if (t->builtin || !t->basic)
		return vd_op_apply(st->op, st->src, st->dst, st->count, st->dt);
	if (t->contig)
		return vd_op_apply(st->op, st->src, st->dst, n, t->basic);
	if (!(tmp = malloc(2 * bytes + 1)))
		return MPI_ERR_NO_MEM;
	vd_dtype_pack(t, st->src, st->count, tmp);
	vd_dtype_pack(t, st->dst, st->count, tmp + bytes);
	err = vd_op_apply(st->op, tmp, tmp + bytes, n, t->basic);
	vd_dtype_unpack(t, tmp + bytes, bytes, st->dst);
	free(tmp);
	return err;
}

static int run_step(struct vd_nbc *s, const struct step *st)
{
	switch (st->kind) {
	case ST_SEND:
	case ST_RECV:
		return post(s, st);
	case ST_OP:
		return run_op(st);
	case ST_COPY:
		return vd_coll_local_copy(st->src, st->count, st->t, st->dst, st->dcount,
					  st->dt_t);
	case ST_FENCE:
		break;
	}
	return MPI_SUCCESS;
}

/* Whether every transfer posted so far is done; if so they are reaped
 * (their first error kept). */
static bool round_done(struct vd_nbc *s)
{
	for (int i = 0; i < s->nposted; i++) {
		struct vd_req *r = vd_req_get(s->posted[i].h);

		if (r && !r->done)
			return false;
	}
	for (int i = 0; i < s->nposted; i++) {
		struct posted *p = &s->posted[i];
		MPI_Status st;
		int e = vd_wait(&p->h, &st);

		vd_nbc_fail(s, e);
		if (!e && p->unpack)
			vd_dtype_unpack(p->unpack->t, p->tmp, (size_t)st.vd_count_lo, p->unpack->dst);
		free(p->tmp);
	}
	s->nposted = 0;
	return true;
}

/* Run steps until one must wait; true when the schedule is finished.
 * After an error nothing new starts, but what is posted still has to
 * end: it uses the user's buffers. */
static bool advance(struct vd_nbc *s, int *moved)
{
	while (s->next < s->nsteps && !s->err) {
		const struct step *st = &s->steps[s->next];

		if (st->kind == ST_FENCE && !round_done(s))
			return false;
		vd_nbc_fail(s, run_step(s, st));
		s->next++;
		(*moved)++;
	}
	return round_done(s);
}

static void finish(struct vd_nbc *s)
{
	struct vd_req *r = s->req;
	int err = s->err;

	r->st.MPI_SOURCE = MPI_ANY_SOURCE;
	r->st.MPI_TAG = MPI_ANY_TAG;
	r->nbc = NULL;
	nbc_free(s);
	vd_req_complete(r, err);
}

int vd_nbc_progress(void)
{
	int moved = 0;

	if (advancing || !active)
		return 0;
	advancing = true;
	for (struct vd_nbc **pp = &active; *pp;) {
		struct vd_nbc *s = *pp;

		if (!advance(s, &moved)) {
			pp = &s->next_active;
			continue;
		}
		*pp = s->next_active;
		finish(s);
		moved++;
	}
	advancing = false;
	return moved;
}

int vd_nbc_start(struct vd_nbc *s, MPI_Comm comm, MPI_Request *req)
{
	struct vd_req *r;
	int err = s->err;

	*req = MPI_REQUEST_NULL;
	if (!err && !(r = vd_req_new(VD_REQ_COLL)))
		err = MPI_ERR_NO_MEM;
	if (err) {
		nbc_free(s);
		return err;
	}
	r->comm = comm;
	r->nbc = s;
	s->req = r;
	*req = (MPI_Request)r->id;
	s->next_active = active;
	active = s;
	vd_nbc_progress();
	return MPI_SUCCESS;
}
