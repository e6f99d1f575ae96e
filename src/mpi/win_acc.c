/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the accumulate family (Accumulate, Get_accumulate,
 * Fetch_and_op, Compare_and_swap and their request forms), and Put/Get on
 * dynamic windows, as active messages.
 *
 * Atomicity: the target executes every accumulate itself, in its progress
 * engine, one message at a time, and a rank's own accumulates on its own
 * window run through the same code at the call (the library is entered
 * by one thread at a time).  So no two accumulates on a window ever
 * interleave, whoever the origins are, and accumulates from one origin
 * to one target are applied in the order issued (messages between a pair
 * of ranks arrive in order) -- the ordering MPI asks for by default.
 * RDMA cannot offer that: VIA has no remote atomics, and a read-modify-
 * write by RDMA under a lock would cost two round trips and the lock.
 * The price: the target must enter MPI now and then (any call progresses,
 * a barrier or MPI_Win_free too).
 *
 * A message carries the pieces of the target datatype (offset and length,
 * split at element boundaries of the basic type so no element is cut) and
 * the packed origin data; the target checks every piece against its
 * window (or the attached regions of a dynamic window) before touching
 * anything, and answers with the old contents (Get_accumulate) or just
 * the status.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "typeop.h"
#include "util/copy.h"
#include "win.h"

#define AM_BLOCKS_MAX 256
#define AM_DATA_MAX 16384

enum am_kind { AM_ACC = 1, AM_GACC = 2, AM_CAS = 3 };

struct am_head {
	uint8_t kind;
	uint8_t pad[3];
	int32_t op;
	int32_t basic;
	uint32_t nblocks;
	uint64_t result_off;            /* the first piece's place in the result */
	uint64_t data_len;              /* origin bytes that follow the pieces */
};

struct am_piece {
	uint64_t off;                   /* from the window's base, or an address
	                                 * (dynamic windows) */
	uint64_t len;
};

struct am_reply {
	int32_t err;
	uint32_t pad;
	uint64_t result_off;
	uint64_t len;                   /* result bytes that follow */
};

_Static_assert(sizeof(struct am_head) + AM_BLOCKS_MAX * sizeof(struct am_piece) +
	       AM_DATA_MAX + VD_MSG_SHORT <= VIADUCT_RING_MAX_MSG, "one ring message");

/* ---- origin: building the messages ---------------------------------------------- */

struct am_builder {
	struct vd_req *r;
	struct vd_win *w;
	int target;
	struct am_head head;
	size_t bsize;                   /* bytes of one basic element */
	const uint8_t *data;            /* packed origin data, or NULL */
	uint64_t next_result;           /* packed offset of the next piece */
	size_t len;                     /* bytes of the pieces so far */
	struct am_piece piece[AM_BLOCKS_MAX];
	uint8_t msg[sizeof(struct am_head) + AM_BLOCKS_MAX * sizeof(struct am_piece) +
		    AM_DATA_MAX];
};

static int am_send(struct vd_win *w, int target, uint32_t sreq, const void *payload,
		   size_t len)
{
	struct vd_msg m = { .version = VD_MSG_VERSION, .type = VD_MSG_RMA, .ctx = w->ctx,
			    .src = w->rank, .tag = VD_WIN_AM, .sreq = sreq, .len = len };

	if (target == w->rank) {
		vd_win_am_arrived(w, w->rank, &m, payload, len);
		return 0;
	}
	return vd_wire_send(w->c->world[target], &m, payload, len);
}

static int am_flush(struct am_builder *b)
{
	size_t plen = b->head.nblocks * sizeof(struct am_piece);
	size_t dlen = !b->data ? 0 : b->head.kind == AM_CAS ? 2 * b->len : b->len;
	uint8_t *p = b->msg;
	int err;

	if (!b->head.nblocks)
		return 0;
	b->head.data_len = dlen;
	memcpy(p, &b->head, sizeof(b->head));
	memcpy(p + sizeof(b->head), b->piece, plen);
	if (dlen)
		memcpy(p + sizeof(b->head) + plen, b->data + b->head.result_off, dlen);
	b->r->rma->parts++;
	err = am_send(b->w, b->target, b->r->id, p, sizeof(b->head) + plen + dlen);
	if (err)
		b->r->rma->parts--;
	b->head.nblocks = 0;
	b->head.result_off = b->next_result;
	b->len = 0;
	return err;
}

/* A run of the target datatype: into the message, split where it is full
 * (at whole basic elements). */
static int am_piece(void *vb, MPI_Aint toff, size_t poff, size_t len)
{
	struct am_builder *b = vb;
	int err;

	(void)poff;                     /* runs come in packed order */
	while (len) {
		size_t room = (AM_DATA_MAX - b->len) / b->bsize * b->bsize;
		if (!room || b->head.nblocks == AM_BLOCKS_MAX) {
			if ((err = am_flush(b)))
				return err;
			continue;
		}
		size_t n = len < room ? len : room;
		b->piece[b->head.nblocks++] = (struct am_piece){ (uint64_t)toff, n };
		b->len += n;
		b->next_result += n;
		toff += (MPI_Aint)n;
		len -= n;
	}
	return 0;
}

static int am_issue(struct vd_req *r, enum am_kind kind, MPI_Op op, MPI_Datatype basic,
		    const void *data, MPI_Aint disp, int tcount, const struct vd_dtype *tt)
{
	struct vd_rma_op *o = r->rma;
	struct am_builder *b = calloc(1, sizeof(*b));
	MPI_Aint off = disp * (MPI_Aint)o->w->peers[o->target].disp_unit;
	int err;

	if (!b)
		return -ENOMEM;
	b->r = r;
	b->w = o->w;
	b->target = o->target;
	b->head = (struct am_head){ .kind = (uint8_t)kind, .op = op, .basic = basic };
	b->bsize = (size_t)vd_dtype_get(basic)->size;
	b->data = data;
	err = vd_win_blocks(tt, tcount, off, am_piece, b);
	if (!err)
		err = am_flush(b);
	free(b);
	return err;
}

int vd_win_am_put(struct vd_req *r, const void *data, size_t bytes, MPI_Aint disp,
		  int tcount, struct vd_dtype *tt)
{
	(void)bytes;
	return am_issue(r, AM_ACC, MPI_REPLACE, MPI_BYTE, data, disp, tcount, tt);
}

int vd_win_am_get(struct vd_req *r, size_t bytes, MPI_Aint disp, int tcount,
		  struct vd_dtype *tt)
{
	(void)bytes;
	return am_issue(r, AM_GACC, MPI_NO_OP, MPI_BYTE, NULL, disp, tcount, tt);
}

/* ---- target: executing them --------------------------------------------------------- */

/* The bytes a piece names in this rank's window, or NULL: outside it. */
static uint8_t *piece_mem(const struct vd_win *w, const struct am_piece *p)
{
	if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
		for (const struct vd_win_region *g = w->regions; g; g = g->next)
			if (p->off >= g->lo && p->len <= g->hi - p->off && p->off < g->hi)
				return (uint8_t *)(uintptr_t)p->off;
		return NULL;
	}
	if (p->off > (uint64_t)w->bytes || p->len > (uint64_t)w->bytes - p->off || !w->bytes)
		return NULL;
	return (uint8_t *)w->base + p->off;
}

static void reply(struct vd_win *w, int origin, uint32_t sreq, struct am_reply *rh,
		  const uint8_t *result)
{
	struct vd_msg m = { .version = VD_MSG_VERSION, .type = VD_MSG_RMA, .ctx = w->ctx,
			    .src = w->rank, .tag = VD_WIN_AM_REPLY, .sreq = sreq };
	size_t len = sizeof(*rh) + (size_t)rh->len;
	uint8_t *buf = malloc(len);

	if (!buf)
		vd_pmi_abort(MPI_ERR_NO_MEM, "viaduct MPI: out of memory for a window reply");
	memcpy(buf, rh, sizeof(*rh));
	if (rh->len)
		memcpy(buf + sizeof(*rh), result, (size_t)rh->len);
	m.len = len;
	if (origin == w->rank)
		vd_win_am_reply(w, &m, buf, len);
	else if (vd_wire_send(w->c->world[origin], &m, buf, len))
		vd_pmi_abort(MPI_ERR_NO_MEM, "viaduct MPI: out of memory for a window reply");
	free(buf);
}

static int am_cas(uint8_t *mem, const struct am_piece *p, const uint8_t *data,
		  uint8_t *result)
{
	memcpy(result, mem, (size_t)p->len);
	if (!memcmp(mem, data + p->len, (size_t)p->len))
		memcpy(mem, data, (size_t)p->len);
	return MPI_SUCCESS;
}

/* Every piece checked first: a message either applies whole or not at all. */
static int am_apply(struct vd_win *w, const struct am_head *h, const struct am_piece *pc,
		    const uint8_t *data, uint8_t *result)
{
	size_t bsize = (size_t)vd_dtype_get(h->basic)->size, at = 0;

	for (uint32_t i = 0; i < h->nblocks; i++)
		if (!piece_mem(w, &pc[i]) || pc[i].len % bsize)
			return MPI_ERR_RMA_RANGE;
	if (h->kind == AM_CAS)
		return h->nblocks == 1 ? am_cas(piece_mem(w, pc), pc, data, result) : MPI_ERR_ARG;
	for (uint32_t i = 0; i < h->nblocks; i++) {
		uint8_t *mem = piece_mem(w, &pc[i]);
		size_t n = (size_t)pc[i].len;
		int err;
		if (result)
			vd_copy(result + at, mem, n);
		if (h->op != MPI_NO_OP &&
		    (err = vd_op_apply(h->op, data + at, mem, (int)(n / bsize), h->basic)))
			return err;
		at += n;
	}
	return MPI_SUCCESS;
}

static size_t pieces_len(const struct am_piece *pc, uint32_t n)
{
	size_t len = 0;

	for (uint32_t i = 0; i < n; i++)
		len += (size_t)pc[i].len;
	return len;
}

static bool basic_ok(int32_t basic)
{
	struct vd_dtype *t = vd_dtype_get(basic);

	return t && t->builtin && t->size > 0;
}

void vd_win_am_arrived(struct vd_win *w, int origin, const struct vd_msg *m,
		       const void *payload, size_t plen)
{
	struct am_head h;
	const struct am_piece *pc;
	struct am_reply rh = { 0 };
	uint8_t *result = NULL;
	size_t need, total;

	if (plen < sizeof(h))
		return;
	memcpy(&h, payload, sizeof(h));
	need = sizeof(h) + (size_t)h.nblocks * sizeof(*pc);
	if (h.nblocks > AM_BLOCKS_MAX || plen < need || plen - need < h.data_len ||
	    !basic_ok(h.basic))
		return;                         /* malformed: drop */
	pc = (const struct am_piece *)((const uint8_t *)payload + sizeof(h));
	total = pieces_len(pc, h.nblocks);
	if (h.kind != AM_GACC && h.kind != AM_CAS && h.kind != AM_ACC)
		return;
	if ((h.kind == AM_CAS ? 2 * total : h.op == MPI_NO_OP ? 0 : total) > h.data_len)
		return;
	rh.result_off = h.result_off;
	if (h.kind != AM_ACC && total && !(result = malloc(total)))
		vd_pmi_abort(MPI_ERR_NO_MEM, "viaduct MPI: out of memory for a window reply");
	rh.err = am_apply(w, &h, pc, (const uint8_t *)payload + need, result);
	rh.len = rh.err || !result ? 0 : total;
	reply(w, origin, m->sreq, &rh, result);
	free(result);
}

void vd_win_am_reply(struct vd_win *w, const struct vd_msg *m, const void *payload,
		     size_t plen)
{
	struct vd_req *r = vd_req_get((MPI_Request)m->sreq);
	struct vd_rma_op *op = r && r->kind == VD_REQ_RMA ? r->rma : NULL;
	struct am_reply rh;

	if (!op || op->w != w || plen < sizeof(rh))
		return;
	memcpy(&rh, payload, sizeof(rh));
	if (rh.len && (rh.len > plen - sizeof(rh) || rh.result_off > op->dest_len ||
		       rh.len > op->dest_len - rh.result_off))
		rh.err = rh.err ? rh.err : MPI_ERR_INTERN;
	else if (rh.len)
		vd_copy(op->dest + rh.result_off, (const uint8_t *)payload + sizeof(rh),
		       (size_t)rh.len);
	vd_rma_part_done(r, rh.err);
}

/* ---- the API ------------------------------------------------------------------------ */

struct acc_call {
	struct vd_rma_args a;
	MPI_Op op;
	void *rbuf;                     /* Get_accumulate's result */
	int rcount;
	struct vd_dtype *rt;
	const void *compare;            /* Compare_and_swap */
	enum am_kind kind;
};

/* The basic type both sides are made of (or MPI_BYTE for a replace or a
 * plain fetch, which need no arithmetic). */
static int acc_basic(const struct acc_call *k, MPI_Datatype *basic)
{
	MPI_Datatype tb = k->a.tt->basic, ob = k->a.ot->basic;

	if (k->op != MPI_NO_OP && k->a.ocount && ob != tb)
		*basic = 0;
	else
		*basic = tb;
	if (!*basic && (k->op == MPI_REPLACE || k->op == MPI_NO_OP))
		*basic = MPI_BYTE;
	if (!*basic)
		return MPI_ERR_TYPE;
	return vd_op_check(k->op, *basic);
}

/* The origin (unless MPI_NO_OP ignores it), the result and the compare
 * buffers hold data: never NULL (but MPI_BOTTOM with absolute types) nor
 * MPI_IN_PLACE. */
static int acc_check_buffers(const struct acc_call *k)
{
	if (k->op != MPI_NO_OP && !vd_dtype_buf_ok(k->a.ot, k->a.obuf, k->a.ocount))
		return MPI_ERR_BUFFER;
	if (k->kind != AM_ACC && !vd_dtype_buf_ok(k->rt, k->rbuf, k->rcount))
		return MPI_ERR_BUFFER;
	if (k->kind == AM_CAS && !vd_dtype_buf_ok(k->a.tt, k->compare, 1))
		return MPI_ERR_BUFFER;
	return MPI_SUCCESS;
}

static int acc_check(const struct acc_call *k)
{
	if (!vd_op_valid(k->op) || k->op < MPI_MAX || k->op > MPI_NO_OP)
		return MPI_ERR_OP;      /* predefined operations only */
	if (k->kind == AM_GACC && (k->rcount < 0 || !k->rt))
		return k->rcount < 0 ? MPI_ERR_COUNT : MPI_ERR_TYPE;
	if (k->kind == AM_GACC &&
	    (size_t)k->rcount * (size_t)k->rt->size != (size_t)k->a.tcount * (size_t)k->a.tt->size)
		return MPI_ERR_TYPE;
	if (k->kind == AM_CAS && !k->a.tt->builtin)
		return MPI_ERR_TYPE;
	return acc_check_buffers(k);
}

/* The origin data packed (CAS: origin then compare). */
static int acc_data(const struct acc_call *k, uint8_t **data)
{
	size_t bytes = (size_t)k->a.ocount * (size_t)k->a.ot->size;

	*data = NULL;
	if (k->op == MPI_NO_OP || !bytes)
		return 0;
	if (!(*data = malloc(k->kind == AM_CAS ? 2 * bytes : bytes)))
		return -ENOMEM;
	vd_dtype_pack(k->a.ot, k->a.obuf, k->a.ocount, *data);
	if (k->kind == AM_CAS)
		memcpy(*data + bytes, k->compare, bytes);
	return 0;
}

/* a is the first member of its acc_call. */
static int acc_start(struct vd_req *r, const struct vd_rma_args *a)
{
	const struct acc_call *k = (const struct acc_call *)a;
	MPI_Datatype basic;
	uint8_t *data;
	int err = acc_basic(k, &basic);

	if (err)
		return -EINVAL;         /* acc_api checked it */
	if (k->kind != AM_ACC && (err = vd_rma_landing(r->rma, k->rbuf, k->rcount, k->rt)))
		return err;
	if ((err = acc_data(k, &data)))
		return err;
	err = am_issue(r, k->kind, k->kind == AM_CAS ? MPI_REPLACE : k->op, basic, data,
		       a->disp, a->tcount, a->tt);
	free(data);
	return err;
}

static int acc_api(struct acc_call *k, MPI_Win win, const char *fn)
{
	int err;
	struct vd_win *w = vd_win_arg(win, fn, &err);

	if (!w)
		return err;
	if (k->a.request)
		*k->a.request = MPI_REQUEST_NULL;
	if (k->op == MPI_NO_OP && k->kind == AM_GACC) {
		k->a.ot = k->a.tt;      /* the origin is ignored */
		k->a.ocount = k->a.tcount;
	}
	if (k->a.ot && k->a.tt && (err = acc_check(k)))
		return vd_win_raise(w, err, fn);
	if (k->a.ot && k->a.tt && k->a.target != MPI_PROC_NULL) {
		MPI_Datatype basic;
		if ((err = acc_basic(k, &basic)))
			return vd_win_raise(w, err, fn);
	}
	return vd_rma_start(w, &k->a, acc_start, fn);
}

#pragma weak MPI_Accumulate = PMPI_Accumulate
int PMPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
		    int target_rank, MPI_Aint target_disp, int target_count,
		    MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
	VD_API_GUARD();
	struct acc_call k = { { origin_addr, origin_count, vd_dtype_comm(origin_datatype),
				target_rank, target_disp, target_count,
				vd_dtype_comm(target_datatype), NULL },
			      op, NULL, 0, NULL, NULL, AM_ACC };

	return acc_api(&k, win, "MPI_Accumulate");
}

#pragma weak MPI_Raccumulate = PMPI_Raccumulate
int PMPI_Raccumulate(const void *origin_addr, int origin_count,
		     MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
		     int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
		     MPI_Request *request)
{
	VD_API_GUARD();
	struct acc_call k = { { origin_addr, origin_count, vd_dtype_comm(origin_datatype),
				target_rank, target_disp, target_count,
				vd_dtype_comm(target_datatype), request },
			      op, NULL, 0, NULL, NULL, AM_ACC };

	if (!request)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Raccumulate");
	return acc_api(&k, win, "MPI_Raccumulate");
}

#pragma weak MPI_Get_accumulate = PMPI_Get_accumulate
int PMPI_Get_accumulate(const void *origin_addr, int origin_count,
			MPI_Datatype origin_datatype, void *result_addr, int result_count,
			MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
			int target_count, MPI_Datatype target_datatype, MPI_Op op,
			MPI_Win win)
{
	VD_API_GUARD();
	struct acc_call k = { { origin_addr, origin_count, vd_dtype_comm(origin_datatype),
				target_rank, target_disp, target_count,
				vd_dtype_comm(target_datatype), NULL },
			      op, result_addr, result_count, vd_dtype_comm(result_datatype),
			      NULL, AM_GACC };

	return acc_api(&k, win, "MPI_Get_accumulate");
}

#pragma weak MPI_Rget_accumulate = PMPI_Rget_accumulate
int PMPI_Rget_accumulate(const void *origin_addr, int origin_count,
			 MPI_Datatype origin_datatype, void *result_addr, int result_count,
			 MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
			 int target_count, MPI_Datatype target_datatype, MPI_Op op,
			 MPI_Win win, MPI_Request *request)
{
	VD_API_GUARD();
	struct acc_call k = { { origin_addr, origin_count, vd_dtype_comm(origin_datatype),
				target_rank, target_disp, target_count,
				vd_dtype_comm(target_datatype), request },
			      op, result_addr, result_count, vd_dtype_comm(result_datatype),
			      NULL, AM_GACC };

	if (!request)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Rget_accumulate");
	return acc_api(&k, win, "MPI_Rget_accumulate");
}

#pragma weak MPI_Fetch_and_op = PMPI_Fetch_and_op
int PMPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
		      int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
	VD_API_GUARD();
	struct vd_dtype *t = vd_dtype_comm(datatype);
	struct acc_call k = { { origin_addr, 1, t, target_rank, target_disp, 1, t, NULL },
			      op, result_addr, 1, t, NULL, AM_GACC };

	if (t && !t->builtin)
		k.a.ot = k.a.tt = NULL; /* predefined datatypes only */
	return acc_api(&k, win, "MPI_Fetch_and_op");
}

#pragma weak MPI_Compare_and_swap = PMPI_Compare_and_swap
int PMPI_Compare_and_swap(const void *origin_addr, const void *compare_addr,
			  void *result_addr, MPI_Datatype datatype, int target_rank,
			  MPI_Aint target_disp, MPI_Win win)
{
	VD_API_GUARD();
	struct vd_dtype *t = vd_dtype_comm(datatype);
	struct acc_call k = { { origin_addr, 1, t, target_rank, target_disp, 1, t, NULL },
			      MPI_REPLACE, result_addr, 1, t, compare_addr, AM_CAS };

	if (t && !t->builtin)
		k.a.ot = k.a.tt = NULL;
	return acc_api(&k, win, "MPI_Compare_and_swap");
}
