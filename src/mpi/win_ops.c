/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: MPI_Put and MPI_Get (and their request forms) as origin.
 *
 * On windows with fixed memory (created, allocated, shared) the origin
 * checks the access against the target's window first -- displacement,
 * datatype span, size, all known from the allgather at creation -- and
 * then moves the bytes with RDMA writes or reads into the target's
 * registration, one per contiguous piece of the target datatype (a
 * non-contiguous origin buffer is packed first, or read into a packed
 * copy and unpacked at the end).  The target's NIC checks every access
 * once more against the handle, so a freed window (revoked handle) or a
 * wrong address moves nothing.  On a dynamic window the origin cannot know
 * what is attached: the target's CPU does the copy (win_acc.c) and checks.
 *
 * Each operation is a request (VD_REQ_RMA) counting its pieces in flight;
 * the window counts operations per target, which flush, unlock, complete
 * and fence wait for.  RDMA completions are remote completions here (the
 * shm provider copies at post time, the ofi provider completes when the
 * target says DONE), so a finished piece is in the target's memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "typeop.h"
#include "win.h"

#define RDMA_CHUNK ((size_t)1 << 30)    /* the VIs' MaxTransferSize */

struct vd_req *vd_rma_op_new(struct vd_win *w, int target, bool user)
{
	struct vd_req *r = vd_req_new(VD_REQ_RMA);
	struct vd_rma_op *op = r ? calloc(1, sizeof(*op)) : NULL;

	if (!op) {
		if (r)
			vd_req_release(r);
		return NULL;
	}
	op->w = w;
	op->target = target;
	op->user = user;
	op->parts = 1;                  /* held while the pieces are issued */
	r->rma = op;
	r->win = w->handle;
	r->freed = !user;               /* internal: gone when it completes */
	w->pending[target]++;
	w->pending_all++;
	return r;
}

static void op_finish(struct vd_req *r)
{
	struct vd_rma_op *op = r->rma;
	struct vd_win *w = op->w;
	int err = op->err;

	if (op->reg)
		vd_regcache_put(w->c->world[op->target], op->reg_addr, op->reg_mh);
	if (op->ubuf) {
		if (!err)
			vd_dtype_unpack(op->ut, op->dest, op->dest_len, op->ubuf);
		vd_dtype_release(op->ut);
	}
	free(op->tmp);
	w->pending[op->target]--;
	w->pending_all--;
	if (err && !op->user && !w->deferred_err)
		w->deferred_err = err;  /* reported by the call that waits */
	free(op);
	r->rma = NULL;
	vd_req_complete(r, err);
}

void vd_rma_part_done(struct vd_req *r, int err)
{
	struct vd_rma_op *op = r->rma;

	if (err && !op->err)
		op->err = err;
	if (--op->parts == 0)
		op_finish(r);
}

void vd_win_rdma_done(struct vd_req *r, int err)
{
	if (r->rma)
		vd_rma_part_done(r, err ? MPI_ERR_OTHER : MPI_SUCCESS);
}

/* Where the fetched bytes land: the user's buffer when contiguous, else a
 * packed copy unpacked into it at the end. */
int vd_rma_landing(struct vd_rma_op *op, void *buf, int count, struct vd_dtype *t)
{
	op->dest_len = (size_t)count * (size_t)t->size;
	if (t->contig || !op->dest_len) {
		op->dest = buf;
		return 0;
	}
	op->tmp = malloc(op->dest_len);
	if (!op->tmp)
		return -ENOMEM;
	op->dest = op->tmp;
	op->ubuf = buf;
	op->ut = t;
	vd_dtype_retain(t);
	return 0;
}

/* ---- contiguous pieces of the target datatype --------------------------------- */

int vd_win_blocks(const struct vd_dtype *t, int count, MPI_Aint base, vd_win_block_fn fn,
		  void *ctx)
{
	struct vd_block one;
	int nb, err;
	const struct vd_block *b = vd_dtype_blocks(t, &one, &nb);
	MPI_Aint run = 0;
	size_t run_len = 0, run_p = 0, p = 0;

	for (int i = 0; i < count; i++) {
		for (int k = 0; k < nb; k++) {
			MPI_Aint off = base + (MPI_Aint)i * t->extent + b[k].off;
			size_t len = (size_t)b[k].len;
			if (!len)
				continue;
			if (run_len && off == run + (MPI_Aint)run_len) {
				run_len += len;
			} else {
				if (run_len && (err = fn(ctx, run, run_p, run_len)))
					return err;
				run = off;
				run_p = p;
				run_len = len;
			}
			p += len;
		}
	}
	return run_len ? fn(ctx, run, run_p, run_len) : 0;
}

/* ---- checks ---------------------------------------------------------------------- */

bool vd_win_may_access(const struct vd_win *w, int target)
{
	if (w->fence_epoch || w->lock_all || w->locked[target])
		return true;
	for (int i = 0; w->access && i < w->naccess; i++)
		if (w->access[i] == target)
			return true;
	return false;
}

/* The target's bytes [disp * unit + lo, disp * unit + hi) lie in its window. */
static int check_range(const struct vd_win *w, int target, MPI_Aint disp, int count,
		       const struct vd_dtype *t)
{
	const struct vd_win_peer *p = &w->peers[target];
	MPI_Aint lo, hi, off;

	if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC || !count || !t->size)
		return MPI_SUCCESS;     /* dynamic: the target checks */
	vd_dtype_span(t, count, &lo, &hi);
	if (__builtin_mul_overflow(disp, (MPI_Aint)p->disp_unit, &off) ||
	    __builtin_add_overflow(off, lo, &lo) || __builtin_add_overflow(off, hi, &hi))
		return MPI_ERR_RMA_RANGE;
	return lo < 0 || hi > (MPI_Aint)p->size ? MPI_ERR_RMA_RANGE : MPI_SUCCESS;
}

/* Checks shared by every one-sided operation; *skip for MPI_PROC_NULL. */
int vd_rma_check(struct vd_win *w, const struct vd_rma_args *a, bool *skip)
{
	*skip = false;
	if (a->ocount < 0 || a->tcount < 0)
		return MPI_ERR_COUNT;
	if (!a->ot || !a->tt)
		return MPI_ERR_TYPE;
	if (a->target == MPI_PROC_NULL) {
		*skip = true;
		return MPI_SUCCESS;
	}
	if (a->target < 0 || a->target >= w->size)
		return MPI_ERR_RANK;
	if ((size_t)a->ocount * (size_t)a->ot->size != (size_t)a->tcount * (size_t)a->tt->size)
		return MPI_ERR_TYPE;    /* the type signatures cannot match */
	if (!vd_win_may_access(w, a->target))
		return MPI_ERR_RMA_SYNC;
	if (a->request && !w->lock_all && !w->locked[a->target])
		return MPI_ERR_RMA_SYNC;        /* request forms: passive target only */
	return check_range(w, a->target, a->disp, a->tcount, a->tt);
}

/* ---- RDMA -------------------------------------------------------------------------- */

struct rdma_ctx {
	struct vd_req *r;
	bool write;
	int peer;                       /* world rank */
	uint8_t *local;                 /* packed data */
	VIP_MEM_HANDLE lmh, rmh;
	uint64_t rbase;
};

static int rdma_piece(void *vc, MPI_Aint toff, size_t poff, size_t len)
{
	struct rdma_ctx *c = vc;
	struct vd_rma_op *op = c->r->rma;

	for (size_t done = 0; done < len;) {
		size_t n = len - done < RDMA_CHUNK ? len - done : RDMA_CHUNK;
		uint64_t raddr = c->rbase + (uint64_t)toff + done;
		uint8_t *l = c->local + poff + done;
		int err = c->write ? vd_wire_rdma_write(c->peer, c->r, l, c->lmh, raddr, c->rmh, n)
				   : vd_wire_rdma_read(c->peer, c->r, l, c->lmh, raddr, c->rmh, n);
		if (err)
			return err;
		op->parts++;
		done += n;
	}
	return 0;
}

/* Copies between this rank's own window and the packed data. */
static int local_piece(void *vc, MPI_Aint toff, size_t poff, size_t len)
{
	struct rdma_ctx *c = vc;
	uint8_t *mine = (uint8_t *)c->r->rma->w->base + toff;

	if (c->write)
		memmove(mine, c->local + poff, len);
	else
		memmove(c->local + poff, mine, len);
	return 0;
}

static int rdma_issue(struct vd_req *r, bool write, void *local, size_t bytes,
		      const struct vd_rma_args *a)
{
	struct vd_rma_op *op = r->rma;
	struct vd_win *w = op->w;
	MPI_Aint off = a->disp * (MPI_Aint)w->peers[a->target].disp_unit;
	struct rdma_ctx c = { r, write, w->c->world[a->target], local, 0, 0,
			      w->peers[a->target].base };
	int err;

	if (a->target == w->rank)
		return vd_win_blocks(a->tt, a->tcount, off, local_piece, &c);
	c.rmh = w->peers[a->target].mh[vd_place_via(c.peer)];
	if ((err = vd_regcache_get(c.peer, local, bytes, &c.lmh)))
		return err;
	op->reg = true;
	op->reg_addr = local;
	op->reg_mh = c.lmh;
	return vd_win_blocks(a->tt, a->tcount, off, rdma_piece, &c);
}

/* Pieces so small that one RDMA each would cost more than the target's
 * copying them out of a message (over a fabric each RDMA is a round trip
 * of its own). */
#define RDMA_PIECE_MIN 256

static bool through_target(const struct vd_win *w, const struct vd_rma_args *a)
{
	const struct vd_dtype *tt = a->tt;

	if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC)
		return true;            /* only the target knows what is attached */
	return a->target != w->rank && !tt->contig && tt->nblocks > 1 &&
	       tt->size / tt->nblocks < RDMA_PIECE_MIN;
}

static int put_start(struct vd_req *r, const struct vd_rma_args *a)
{
	struct vd_rma_op *op = r->rma;
	size_t bytes = (size_t)a->ocount * (size_t)a->ot->size;
	void *data = (void *)a->obuf;

	if (!bytes)
		return 0;
	if (!a->ot->contig) {
		if (!(op->tmp = malloc(bytes)))
			return -ENOMEM;
		vd_dtype_pack(a->ot, a->obuf, a->ocount, op->tmp);
		data = op->tmp;
	}
	if (through_target(op->w, a))
		return vd_win_am_put(r, data, bytes, a->disp, a->tcount, a->tt);
	return rdma_issue(r, true, data, bytes, a);
}

static int get_start(struct vd_req *r, const struct vd_rma_args *a)
{
	struct vd_rma_op *op = r->rma;
	int err = vd_rma_landing(op, (void *)a->obuf, a->ocount, a->ot);

	if (err || !op->dest_len)
		return err;
	if (through_target(op->w, a))
		return vd_win_am_get(r, op->dest_len, a->disp, a->tcount, a->tt);
	return rdma_issue(r, false, op->dest, op->dest_len, a);
}

/* Check, start, and hand out the request (or forget it). */
int vd_rma_start(struct vd_win *w, const struct vd_rma_args *a, vd_rma_start_fn start,
		 const char *fn)
{
	bool skip;
	int err = vd_rma_check(w, a, &skip);
	struct vd_req *r;

	if (err)
		return vd_win_raise(w, err, fn);
	if (!(r = skip ? vd_req_new(VD_REQ_RMA) : vd_rma_op_new(w, a->target, a->request)))
		return vd_win_raise(w, MPI_ERR_NO_MEM, fn);
	if (skip) {
		vd_req_complete(r, MPI_SUCCESS);
	} else {
		err = start(r, a);
		vd_rma_part_done(r, err ? vd_mpi_errno(err) : MPI_SUCCESS);
	}
	if (a->request)
		*a->request = (MPI_Request)r->id;
	else if (skip)
		vd_req_release(r);
	return MPI_SUCCESS;
}

static int put_get(const void *obuf, int ocount, MPI_Datatype odt, int target,
		   MPI_Aint disp, int tcount, MPI_Datatype tdt, MPI_Win win,
		   MPI_Request *req, bool put, const char *fn)
{
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);
	struct vd_rma_args a = { obuf, ocount, vd_dtype_comm(odt), target, disp, tcount,
				 vd_dtype_comm(tdt), req };

	if (!w)
		return err;
	if (req)
		*req = MPI_REQUEST_NULL;
	if (a.ot && !vd_dtype_buf_ok(a.ot, obuf, ocount))
		return vd_win_raise(w, MPI_ERR_BUFFER, fn);
	return vd_rma_start(w, &a, put ? put_start : get_start, fn);
}

#pragma weak MPI_Put = PMPI_Put
int PMPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
	     int target_rank, MPI_Aint target_disp, int target_count,
	     MPI_Datatype target_datatype, MPI_Win win)
{
	VD_API_GUARD();
	return put_get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
		       target_count, target_datatype, win, NULL, true, "MPI_Put");
}

#pragma weak MPI_Get = PMPI_Get
int PMPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
	     int target_rank, MPI_Aint target_disp, int target_count,
	     MPI_Datatype target_datatype, MPI_Win win)
{
	VD_API_GUARD();
	return put_get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
		       target_count, target_datatype, win, NULL, false, "MPI_Get");
}

#pragma weak MPI_Rput = PMPI_Rput
int PMPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
	      int target_rank, MPI_Aint target_disp, int target_count,
	      MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
	VD_API_GUARD();
	if (!request)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Rput");
	return put_get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
		       target_count, target_datatype, win, request, true, "MPI_Rput");
}

#pragma weak MPI_Rget = PMPI_Rget
int PMPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
	      int target_rank, MPI_Aint target_disp, int target_count,
	      MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
	VD_API_GUARD();
	if (!request)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Rget");
	return put_get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
		       target_count, target_datatype, win, request, false, "MPI_Rget");
}
