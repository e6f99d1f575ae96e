/* SPDX-License-Identifier: MIT */
/*
 * The three protocols of the MPICH-PM/CLUMP paper over VIPL:
 *   eager       header + data through a pre-posted receive buffer (the
 *               VI's flow control makes the posted buffers the credits);
 *   get         the sender exposes its buffer (RTS with address and
 *               memory handle), the receiver RDMA-reads it -- one copy,
 *               process_vm_readv underneath -- and answers DONE;
 *   rendezvous  the receiver registers its buffer and answers CTS, the
 *               sender RDMA-writes with immediate data, which completes
 *               the receive (zero copy across nodes once a network
 *               provider exists).
 *   split       (auto, from VIADUCT_MPI_SPLIT_MIN bytes) get and rendezvous
 *               at once: the receiver reads the first half while the
 *               sender writes the second, so two cores copy -- unless
 *               the sender has receives of its own open (vd_recv_busy:
 *               posted, or matched and still being read): their copies
 *               will keep its core busy (both directions at once ran
 *               at 0.7-0.8x of plain get from 256 KiB to 1 MiB; with
 *               only unmatched receives counted, a peer's RTS that
 *               matched them first let split back in: 512 KiB-2 MiB
 *               12-14 against 15-16 GB/s).
 *   pipelined   (auto, up to VIADUCT_MPI_PIPELINE_MAX inside a host and
 *               VIADUCT_MPI_NET_PIPELINE_MAX across hosts)
 *               eager in parts (pipe_part: 16 KiB inside a host, a
 *               whole ring message to another), one ring message
 *               each: the receiver copies a part out while the sender
 *               copies the next in, so two cores copy, as with split,
 *               without a system call or a round trip -- unless,
 *               inside a host, the sender has receives of its own
 *               open, as split: then both cores copy anyway, and
 *               get's single copy wins (both directions at once at
 *               32-128 KiB: 14 GB/s pipelined against 15-19 with get).
 * Inside a host the ring (eager, pipelined) carries messages only up to
 * the size MPI_Init measured it still wins against get (tune.c).
 * VIADUCT_MPI_PROTOCOL=eager|get|rndv|auto forces one (eager only up to
 * the eager buffer size), VIADUCT_MPI_EAGER_MAX sets the switch point and
 * VIADUCT_MPI_LARGE=get|rndv the protocol above it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "util/copy.h"

enum proto { P_EAGER, P_GET, P_RNDV, P_PIPE };

/* A pipelined message's part: small enough that the receiver starts
 * copying soon, large enough that a part's fixed costs stay small. */
#define VD_PIPE_PART (16u * 1024)
/* The most a peer may announce as one pipelined message: the receiver
 * allocates that much for it when it is unexpected.  The upper bound of
 * VIADUCT_MPI_PIPELINE_MAX in src/util/params.c is the same. */
#define VD_PIPE_LIMIT (16u << 20)

static enum proto forced = P_EAGER;
static int forcing = -1;                /* -1 unknown, 0 auto, 1 forced */
static enum proto large = P_GET;
static bool large_given;                /* VIADUCT_MPI_LARGE is set */
static size_t split_min = 256 * 1024;   /* measured: docs/bench-mpi.md */
static size_t pipe_max = 128 * 1024;    /* measured: docs/bench-mpi.md */
static size_t net_pipe_max = 64 * 1024; /* likewise */
static size_t net_turn_max = 64 * 1024; /* likewise */
static size_t net_get_max = 1 << 20;    /* likewise */
/* Inside a host, the largest message the ring carries (eager or
 * pipelined) before get takes over: measured at MPI_Init (tune.c). */
static size_t shm_ring_max = SIZE_MAX;
static enum vd_proto_force force_now;   /* tune.c's measurement */

/* VIADUCT_DEBUG=1: the protocols this rank's sends took, outside the
 * switch-point measurement (vd_proto_finalize prints them). */
static struct {
	unsigned long eager, pipe, get, split, rndv;
} sent;

static void count_sent(enum proto p, bool split)
{
	if (force_now)
		return;
	if (p == P_EAGER)
		sent.eager++;
	else if (p == P_PIPE)
		sent.pipe++;
	else if (p == P_GET)
		sent.get++;
	else
		sent.rndv++;
	sent.split += split;
}
static void read_env(void);

void vd_proto_ring_max(size_t max)
{
	shm_ring_max = max;
}

void vd_proto_force(enum vd_proto_force f)
{
	force_now = f;
}

void vd_proto_split_min(size_t min)
{
	if (forcing < 0)
		read_env();
	split_min = min;
}

/* What tune.c times: the ring as far as it goes, get, or split. */
static enum proto choose_forced(int peer, size_t len)
{
	if (force_now == VD_FORCE_GET || force_now == VD_FORCE_SPLIT)
		return P_GET;
	return len <= vd_eager_max(peer) ? P_EAGER : P_PIPE;
}

/* The registry checked every value at MPI_Init: these reads succeed.
 * VIADUCT_MPI_PROTOCOL: auto|eager|get|rndv|rendezvous (indices 0-4);
 * VIADUCT_MPI_LARGE: get|rndv|rendezvous (0-2). */
static void read_env(void)
{
	uint64_t p = 0, l = 0, sm = split_min, pm = pipe_max, npm = net_pipe_max;
	uint64_t ntm = net_turn_max, ngm = net_get_max;

	(void)viaduct_param_uint("VIADUCT_MPI_PROTOCOL", 0, &p);
	(void)viaduct_param_uint("VIADUCT_MPI_LARGE", 0, &l);
	(void)viaduct_param_uint("VIADUCT_MPI_SPLIT_MIN", split_min, &sm);
	split_min = (size_t)sm;                 /* 0: never split */
	(void)viaduct_param_uint("VIADUCT_MPI_PIPELINE_MAX", pipe_max, &pm);
	pipe_max = (size_t)pm;                  /* 0: never pipeline */
	(void)viaduct_param_uint("VIADUCT_MPI_NET_PIPELINE_MAX", net_pipe_max, &npm);
	net_pipe_max = (size_t)npm;
	(void)viaduct_param_uint("VIADUCT_MPI_NET_PIPELINE_TURN_MAX", net_turn_max, &ntm);
	net_turn_max = (size_t)ntm;
	(void)viaduct_param_uint("VIADUCT_MPI_NET_GET_MAX", net_get_max, &ngm);
	net_get_max = (size_t)ngm;              /* 0: never get across hosts */
	forcing = p != 0;
	forced = p == 1 ? P_EAGER : p == 2 ? P_GET : P_RNDV;
	if (l >= 1)
		large = P_RNDV;
	large_given = getenv("VIADUCT_MPI_LARGE") != NULL;
}

/* Above the eager size: get inside a host (one copy, two cores when
 * split), get or rendezvous to another host (below) -- but pipelined up to pipe_max
 * inside a host and net_pipe_max across: between two namespace hosts,
 * a 32 KiB message in two parts took 29 us against rendezvous's 45 (six
 * hops), at the same windowed bandwidth; from 64 KiB rendezvous moves
 * more (1.69 against 1.41 GB/s: pipelined parts are copied twice at
 * the receiver, and the ring's credit holds back a window of them).
 * Inside a host a sender with receives of its own posted uses get (its
 * core will be busy copying those in, and get copies once); across
 * hosts the alternative is rendezvous's six hops, so it pipelines all
 * the same: both directions at once at 32 KiB 1.24 -> 1.42 GB/s, a
 * 2-rank MPI_Allreduce of 64 KiB 117 -> 90 us.  Over the fabric the
 * receiver's RDMA read waits for the sender's progress engine to serve it, the
 * sender's RDMA write does not: between two namespace hosts over
 * tcp;rxm, half round trips of 2.7-3.8 ms with get against 0.1 ms with
 * rendezvous at 32-128 KiB.  Across hosts a message that answers the
 * peer's (a ping-pong's turn: nothing sent since the peer's last message
 * began) is pipelined up to net_turn_max: at 64 KiB the half round trip
 * took 31-33 against 42-51 us; in a stream of sends rendezvous still
 * moved more (64 KiB windowed 2.6-2.7 against 1.5-2.3 GB/s pipelined)
 * until parts to another host took a whole ring message (pipe_part):
 * then 64 KiB windowed moved 1.31 against get's 1.18 GB/s (median of
 * five alternations), hence net_pipe_max 64 KiB.
 * Above that, across hosts, get up to net_get_max: its RTS carries the
 * sender's buffer and the receiver's provider asks the sender's for it,
 * two hops before the data where rendezvous's RTS, CTS, the write's
 * request and the read it makes take four; the sender polls while its
 * get is out (vd_wire_moving), so its provider serves it at once when
 * the sender waits in MPI.  Half
 * round trips at 256 KiB-1 MiB 73-85 -> 64-73 us and 290-326 -> 229-305
 * us, windowed and both ways 128 KiB-2 MiB mostly 5-20% more.  At 4 MiB
 * get took 1.5-2x rendezvous's time, so rendezvous stays above; get is
 * never split across hosts (splitting lost at 256 KiB).
 * VIADUCT_MPI_LARGE, when given, is obeyed for every peer. */
static enum proto choose(int peer, size_t len, bool sync)
{
	enum vd_transport via;

	if (forcing < 0)
		read_env();
	if (len == 0)
		return P_EAGER;
	if (force_now)
		return choose_forced(peer, len);
	if (forcing && forced != P_EAGER)
		return forced;
	via = vd_place_via(peer);
	if (len <= vd_eager_max(peer) && (via != VD_T_SHM || len <= shm_ring_max))
		return P_EAGER;
	if (!forcing && !large_given && !sync &&
	    (via == VD_T_SHM ? len <= pipe_max && len <= shm_ring_max && !vd_recv_busy() :
	     len <= net_pipe_max || (len <= net_turn_max && vd_wire_answered(peer))))
		return P_PIPE;
	if (large_given || via != VD_T_OFI)
		return large;
	return len <= net_get_max ? P_GET : P_RNDV;
}

static struct vd_msg msg_for(const struct vd_req *r, enum vd_msg_type type)
{
	struct vd_msg m = r->hdr;

	m.version = VD_MSG_VERSION;
	m.type = (uint8_t)type;
	return m;
}

/* ---- sending ------------------------------------------------------------------ */

/* The payload is read from the request's buffer when it goes out, so the
 * request completes then: at once when the ring has room, else when the
 * wire drains its queue (a synchronous send on the receiver's ack). */
static int send_eager(struct vd_req *r)
{
	bool sync = r->mode == VD_SEND_SYNC;
	struct vd_msg m = msg_for(r, sync ? VD_MSG_EAGER : VD_MSG_EAGER_TINY);
	int err;

	m.len = r->bytes;
	m.sreq = r->id;
	if (sync)
		m.flags |= VD_MSGF_SYNC;
	err = vd_wire_send_ref(r->peer, &m, r->data, r->bytes, sync ? NULL : r);
	if (err == 0 && !sync)
		vd_req_complete(r, MPI_SUCCESS);
	return err < 0 ? err : 0;
}

/* A part's size: 16 KiB inside a host, where the sender's copy of one
 * overlaps the receiver's of the last on the other core; to another host
 * a whole ring message (the eager limit, 32 KiB by default), since every
 * part costs a system call at each end and the copies are cheap beside
 * the wire (48 KiB windowed between two namespace hosts 0.69-1.11 ->
 * 1.34-1.56 GB/s, a 64 KiB half round trip 67-104 -> 53-61 us).
 * vd_eager_max is at most VD_EAGER_LIMIT (wire.c): a part and its EAGER
 * or PART header fill one ring message at most. */
static size_t pipe_part(int peer)
{
	size_t emax = vd_eager_max(peer);

	return vd_place_via(peer) == VD_T_OFI && emax > VD_PIPE_PART ? emax : VD_PIPE_PART;
}

/* Pipelined: the first part as an EAGER announcing the whole length, the
 * rest as PARTs, back to back.  Nothing else to that peer comes between
 * them: the MPI lock is held, vd_wire_send_ref does not progress, and the
 * wire keeps one queue per peer that a later message never overtakes.
 * Read from the user's buffer when each part goes out; the request
 * completes with the last.  Once a part has gone, a failure cannot be
 * undone (the receiver holds half a message, the queue points into the
 * buffer): it ends the job. */
static int send_pipelined(struct vd_req *r)
{
	struct vd_msg m = msg_for(r, VD_MSG_EAGER);
	const char *data = r->data;
	size_t off = 0;
	int err = 0;

	m.len = r->bytes;
	m.sreq = r->id;
	m.flags |= VD_MSGF_MORE;
	size_t part = pipe_part(r->peer);

	while (off < r->bytes) {
		size_t n = r->bytes - off < part ? r->bytes - off : part;
		bool last = off + n == r->bytes;

		err = vd_wire_send_ref(r->peer, &m, data + off, n, last ? r : NULL);
		if (err < 0 && off)
			vd_pmi_abort(vd_mpi_errno(err), "viaduct MPI: a message sent in parts "
				     "could not be sent whole");
		if (err < 0)
			return err;
		m = (struct vd_msg){ .version = VD_MSG_VERSION, .type = VD_MSG_PART };
		off += n;
	}
	if (err == 0)
		vd_req_complete(r, MPI_SUCCESS);
	return 0;
}

/* A get's RTS asks for split: tune.c's forcing decides while it
 * measures, the automatic rule otherwise. */
static bool split_wanted(const struct vd_req *r)
{
	if (force_now)
		return force_now == VD_FORCE_SPLIT;
	return !forcing && split_min && r->bytes >= split_min && r->bytes <= UINT32_MAX &&
	       (large_given || vd_place_via(r->peer) == VD_T_SHM) && !vd_recv_busy();
}

static int send_rts(struct vd_req *r, enum proto p)
{
	struct vd_msg m = msg_for(r, p == P_GET ? VD_MSG_RTS_GET : VD_MSG_RTS_RNDV);
	int err = vd_regcache_get(r->peer, r->data, r->bytes, &r->mh);

	if (err)
		return err;
	r->own_mh = true;
	m.len = r->bytes;
	m.sreq = r->id;
	m.addr = (uint64_t)(uintptr_t)r->data;
	m.mh = p == P_GET ? r->mh : 0;
	if (p == P_GET && split_wanted(r))
		m.flags |= VD_MSGF_SPLIT;
	if ((err = vd_wire_send(r->peer, &m, NULL, 0)) < 0)
		return err;
	count_sent(p, m.flags & VD_MSGF_SPLIT);
	/* Sent or queued: the sender polls until the get ends, as the peer
	 * reads through this rank's provider (send_part_done). */
	if (p == P_GET && vd_place_via(r->peer) == VD_T_OFI) {
		r->get_out = true;
		vd_wire_get_out(1);
	}
	return err;
}

/* A message to ourselves: straight into the matching machinery. */
static int send_self(struct vd_req *r)
{
	struct vd_msg m = msg_for(r, VD_MSG_EAGER);

	m.len = r->bytes;
	m.sreq = r->id;
	if (r->mode == VD_SEND_SYNC)
		m.flags |= VD_MSGF_SYNC;        /* completes on the match's ack */
	vd_proto_arrived(vd_mpi.rank, &m, r->data, r->bytes);
	if (r->mode != VD_SEND_SYNC)
		vd_req_complete(r, MPI_SUCCESS);
	return 0;
}

/* MPI_Send's short cut: a contiguous eager message needs no request --
 * the ring copies it (or the wire queues a copy) before we return. */
int vd_proto_eager_now(int peer, uint32_t ctx, int src, int tag, const void *data,
		       size_t bytes, bool queue)
{
	struct vd_msg m = { .version = VD_MSG_VERSION, .type = VD_MSG_EAGER_TINY, .ctx = ctx,
			    .src = src, .tag = tag, .len = bytes };
	int err;

	if (choose(peer, bytes, false) != P_EAGER)
		return -EAGAIN;
	err = queue ? vd_wire_send(peer, &m, data, bytes) :
		      vd_wire_send_direct(peer, &m, data, bytes);
	if (err >= 0)
		count_sent(P_EAGER, false);
	return err;
}

int vd_proto_send(struct vd_req *r)
{
	enum proto p = choose(r->peer, r->bytes, r->mode == VD_SEND_SYNC);
	int err;

	if (r->peer == vd_mpi.rank)
		return send_self(r);
	if (p == P_PIPE && r->bytes <= pipe_part(r->peer))
		p = P_EAGER;    /* one part (a low eager limit): plain eager */
	if (p == P_GET || p == P_RNDV)
		return send_rts(r, p);  /* counts itself: it knows the split */
	err = p == P_PIPE ? send_pipelined(r) : send_eager(r);
	if (err == 0)
		count_sent(p, false);
	return err;
}

static void release_mh(struct vd_req *r)
{
	if (r->own_mh) {
		vd_regcache_put(r->peer, r->data, r->mh);
		r->own_mh = false;
	}
}

/* One part of r's transfer ended (err: it failed).  True when it was the
 * last: a split transfer has two (`parts`), any other one. */
static bool last_part(struct vd_req *r, int err)
{
	if (err)
		r->err = MPI_ERR_OTHER;
	return !(r->parts > 0 && --r->parts > 0);
}

/* A split transfer's send ends with both its write and the receiver's
 * DONE (the receiver has finished reading the other half). */
static void send_part_done(struct vd_req *r, int err)
{
	if (!last_part(r, err))
		return;
	if (r->get_out) {
		r->get_out = false;
		vd_wire_get_out(-1);
	}
	release_mh(r);
	vd_req_complete(r, r->err);
}

void vd_proto_write_done(struct vd_req *r, int err)
{
	if (r->kind == VD_REQ_RMA) {
		vd_win_rdma_done(r, err);
		return;
	}
	send_part_done(r, err);
}

static void got_cts(const struct vd_msg *m)
{
	struct vd_req *r = vd_req_get((MPI_Request)m->sreq);
	uint64_t off = 0, len;

	if (!r || r->kind != VD_REQ_SEND || r->done)
		return;
	len = m->len < r->bytes ? m->len : r->bytes;
	if (m->flags & VD_MSGF_SPLIT) {
		if (m->off > r->bytes || m->len > r->bytes - m->off)
			return;         /* malformed: not ours to write */
		off = m->off;
		len = m->len;
		r->parts = 2;   /* this write and the receiver's DONE */
	}
	if (vd_wire_rdma_write_imm(r->peer, r, (uint8_t *)r->data + off, r->mh,
				   m->addr, m->mh, len, m->rreq))
		send_part_done(r, -ENOMEM);
}

static void got_done(const struct vd_msg *m)
{
	struct vd_req *r = vd_req_get((MPI_Request)m->sreq);

	if (!r || r->kind != VD_REQ_SEND || r->done)
		return;
	send_part_done(r, 0);
}

/* ---- receiving ----------------------------------------------------------------- */

/* Where the bytes land: the user's buffer, or a packed copy to unpack. */
static int recv_target(struct vd_req *r, size_t len)
{
	if (r->t->contig || !len) {
		r->data = r->buf;
		return 0;
	}
	r->tmp = malloc(len);
	r->data = r->tmp;
	return r->tmp ? 0 : -ENOMEM;
}

static void recv_finish(struct vd_req *r, int err)
{
	release_mh(r);
	if (r->tmp) {
		if (!err)
			vd_dtype_unpack(r->t, r->tmp, (size_t)r->st.vd_count_lo, r->buf);
		free(r->tmp);
		r->tmp = NULL;
	}
	if (err)
		r->err = MPI_ERR_OTHER;
	vd_req_complete(r, r->err);
}

static void match_eager(struct vd_req *r, int peer, const struct vd_msg *m,
			const void *payload)
{
	size_t n = (size_t)r->st.vd_count_lo;

	if (n && r->t->contig)
		vd_copy(r->buf, payload, n);
	else if (n)
		vd_dtype_unpack(r->t, payload, n, r->buf);
	if (m->flags & VD_MSGF_SYNC) {
		struct vd_msg ack = { .version = VD_MSG_VERSION, .type = VD_MSG_SYNC_ACK,
				      .sreq = m->sreq };
		if (peer == vd_mpi.rank)
			vd_proto_arrived(peer, &ack, NULL, 0);
		else
			vd_wire_send(peer, &ack, NULL, 0);
	}
	vd_req_complete(r, r->err);
}

/* Split: ask the sender to write [k, n) into our buffer while we read
 * [0, k).  Returns k, or n when the CTS could not go (we read it all). */
static size_t split_start(struct vd_req *r, int peer, size_t n)
{
	size_t k = (n / 2) & ~(size_t)4095;
	struct vd_msg cts = { .version = VD_MSG_VERSION, .type = VD_MSG_CTS,
			      .flags = VD_MSGF_SPLIT, .sreq = r->hdr.sreq, .rreq = r->id,
			      .len = n - k, .off = (uint32_t)k, .mh = r->mh,
			      .addr = (uint64_t)(uintptr_t)r->data + k };

	if (vd_wire_send(peer, &cts, NULL, 0))
		return n;
	r->parts = 2;           /* our read and the sender's write */
	return k;
}

/* later: the receive is being posted (see vd_wire_rdma_read_later). */
static void match_get(struct vd_req *r, int peer, const struct vd_msg *m, bool later)
{
	size_t n = (size_t)r->st.vd_count_lo;

	r->peer = peer;
	r->hdr.sreq = m->sreq;
	/* On failure the sender still gets its DONE: its send completes and
	 * only this receive reports the error, instead of the sender waiting
	 * for an answer that never comes. */
	if (recv_target(r, n) || vd_regcache_get(r->peer, r->data, n, &r->mh)) {
		vd_proto_read_done(r, -ENOMEM);
		return;
	}
	r->own_mh = true;
	if ((m->flags & VD_MSGF_SPLIT) && n >= 8192)
		n = split_start(r, peer, n);
	if (later ? vd_wire_rdma_read_later(peer, r, r->data, r->mh, m->addr, m->mh, n)
		  : vd_wire_rdma_read(peer, r, r->data, r->mh, m->addr, m->mh, n))
		vd_proto_read_done(r, -ENOMEM);
}

/* A split receive ends when both halves are in: our read and the
 * sender's write (its immediate).  Then the sender may reuse its buffer. */
static void recv_part_done(struct vd_req *r, int err)
{
	struct vd_msg done = { .version = VD_MSG_VERSION, .type = VD_MSG_DONE,
			       .sreq = r->hdr.sreq };

	if (!last_part(r, err))
		return;
	vd_wire_send(r->peer, &done, NULL, 0);
	recv_finish(r, r->err == MPI_ERR_OTHER ? -EIO : 0);
}

void vd_proto_read_done(struct vd_req *r, int err)
{
	if (r->kind == VD_REQ_RMA) {
		vd_win_rdma_done(r, err);
		return;
	}
	recv_part_done(r, err);
}

static void match_rndv(struct vd_req *r, int peer, const struct vd_msg *m)
{
	size_t n = (size_t)r->st.vd_count_lo;
	struct vd_msg cts = { .version = VD_MSG_VERSION, .type = VD_MSG_CTS,
			      .sreq = m->sreq, .rreq = r->id, .len = n };

	r->peer = peer;
	r->hdr.sreq = m->sreq;
	/* As for get: a receiver that cannot take the data releases the
	 * sender with DONE (its send completes without writing). */
	if (recv_target(r, n) || vd_regcache_get(r->peer, r->data, n, &r->mh)) {
		vd_proto_read_done(r, -ENOMEM);
		return;
	}
	r->own_mh = true;
	cts.addr = (uint64_t)(uintptr_t)r->data;
	cts.mh = r->mh;
	if (vd_wire_send(peer, &cts, NULL, 0))
		vd_proto_read_done(r, -ENOMEM);
}

void vd_proto_rdma_written(uint32_t rreq)
{
	struct vd_req *r = vd_req_get((MPI_Request)rreq);

	if (!r || r->kind != VD_REQ_RECV || r->done)
		return;
	if (r->parts > 0)
		recv_part_done(r, 0);   /* the sender's half of a split */
	else
		recv_finish(r, 0);      /* rendezvous: the whole message */
}

static void match_status(struct vd_req *r, const struct vd_msg *m)
{
	size_t len = (size_t)m->len, n = len < r->bytes ? len : r->bytes;

	/* Beyond 31 bits only from a peer that ignores p2p.c's length_ok: its
	 * excess counts as truncated. */
	if (n > INT_MAX)
		n = INT_MAX;
	r->st.MPI_SOURCE = m->src;
	r->st.MPI_TAG = m->tag;
	r->err = len > n ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
	r->st.vd_count_lo = (int)n;
	r->st.vd_count_hi_cancelled = 0;
}

/* ---- pipelined messages, arriving ------------------------------------------- */

/* The message a peer is sending in parts: at most one at a time, since
 * its parts follow each other in the peer's ring.  They land in a matched
 * receive (r) or in an unexpected message's payload (u). */
struct inbound {
	struct vd_req *r;
	struct vd_unexp *u;
	size_t off, len;                /* bytes arrived, of len */
};
static struct inbound *inbound;         /* per world rank, at first use */

static struct inbound *inbound_of(int peer)
{
	if (!inbound && !(inbound = calloc((size_t)vd_mpi.size, sizeof(*inbound))))
		vd_pmi_abort(MPI_ERR_NO_MEM, "viaduct MPI: out of memory for a message");
	return &inbound[peer];
}

/* Bytes of the message at `off`: into r's buffer up to what it holds (a
 * longer message is truncated), or into u's copy. */
static void inbound_put(struct inbound *in, const void *data, size_t n)
{
	struct vd_req *r;

	if (n > in->len - in->off)
		n = in->len - in->off;          /* a peer's excess: dropped */
	if (in->u) {
		vd_copy((char *)in->u->payload + in->off, data, n);
	} else {
		size_t cap = (size_t)in->r->st.vd_count_lo;
		if (in->off < cap)
			vd_copy((char *)in->r->data + in->off, data,
				n < cap - in->off ? n : cap - in->off);
	}
	in->off += n;
	if (in->off < in->len)
		return;
	r = in->r;
	*in = (struct inbound){ 0 };    /* before completing: r's hooks may
	                                 * progress */
	if (r)
		recv_finish(r, 0);
}

/* r takes the message: the bytes land in its buffer, or in a packed copy
 * when its type is not contiguous (recv_finish unpacks it). */
static void inbound_to_req(struct inbound *in, struct vd_req *r, const struct vd_msg *m)
{
	match_status(r, m);
	if (recv_target(r, (size_t)r->st.vd_count_lo)) {
		r->err = MPI_ERR_NO_MEM;
		r->st.vd_count_lo = 0;          /* parts arrive, and are dropped */
	}
	in->r = r;
	in->u = NULL;
}

/* A peer broke the pipelined protocol (only a faulty or hostile one can):
 * carrying on would merge its messages, so the job ends, naming it. */
static void __attribute__((noreturn)) pipelined_broken(int peer, const char *what)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "viaduct MPI: rank %d sent a malformed message: %s",
		 peer, what);
	vd_pmi_abort(MPI_ERR_INTERN, msg);
}

/* EAGER with VD_MSGF_MORE: the first part. */
static void pipelined_begin(int peer, const struct vd_msg *m, const void *payload, size_t plen)
{
	struct inbound *in = inbound_of(peer);
	struct vd_req *r;

	if (in->len)
		pipelined_broken(peer, "a message in parts inside another");
	if (!plen || plen >= m->len || m->len > VD_PIPE_LIMIT || (m->flags & VD_MSGF_SYNC))
		pipelined_broken(peer, "a message in parts of an impossible length or kind");
	in->len = (size_t)m->len;
	r = vd_match_posted(m->ctx, m->src, m->tag);
	if (r) {
		inbound_to_req(in, r, m);
	} else {
		in->u = vd_unexp_add(peer, m, NULL, 0);
		if (!(in->u->payload = vd_payload_alloc(in->len)))
			vd_pmi_abort(MPI_ERR_NO_MEM, "viaduct MPI: out of memory for a message");
	}
	inbound_put(in, payload, plen);
}

static void pipelined_part(int peer, const void *payload, size_t plen)
{
	struct inbound *in = inbound_of(peer);

	if (!in->len)
		pipelined_broken(peer, "a part of no message");
	inbound_put(in, payload, plen);
}

static void report(void)
{
	uint64_t dbg = 0;

	if (viaduct_param_uint("VIADUCT_DEBUG", 0, &dbg) || !dbg)
		return;
	fprintf(stderr, "viaduct MPI: rank %d: sends: %lu eager, %lu pipelined, %lu get "
		"(%lu of them split), %lu rendezvous\n", vd_mpi.rank, sent.eager, sent.pipe,
		sent.get, sent.split, sent.rndv);
}

void vd_proto_finalize(void)
{
	report();
	free(inbound);
	inbound = NULL;
}

static void match(struct vd_req *r, int peer, const struct vd_msg *m, const void *payload,
		  bool later)
{
	match_status(r, m);
	if (m->type == VD_MSG_EAGER)
		match_eager(r, peer, m, payload);
	else if (m->type == VD_MSG_RTS_GET)
		match_get(r, peer, m, later);
	else
		match_rndv(r, peer, m);
}

void vd_proto_match_unexp(struct vd_req *r, struct vd_unexp *u)
{
	struct inbound *in = inbound ? &inbound[u->peer] : NULL;

	if (in && in->u == u) {         /* its parts still arriving */
		size_t got = in->off, cap;

		inbound_to_req(in, r, &u->hdr);
		cap = (size_t)r->st.vd_count_lo;
		vd_copy(r->data, u->payload, got < cap ? got : cap);
	} else {
		match(r, u->peer, &u->hdr, u->payload, true);
	}
	vd_payload_free(u->payload);
	free(u);
}

void vd_proto_match(struct vd_req *r, int peer, const struct vd_msg *m, const void *payload)
{
	match(r, peer, m, payload, false);
}

void vd_proto_arrived(int peer, const struct vd_msg *m, const void *payload, size_t plen)
{
	struct vd_req *r;

	switch (m->type) {
	case VD_MSG_EAGER:
		if (m->flags & VD_MSGF_MORE) {
			pipelined_begin(peer, m, payload, plen);
			break;
		}
		if (plen < m->len)
			return;         /* malformed: drop */
		/* fall through */
	case VD_MSG_RTS_GET:
	case VD_MSG_RTS_RNDV:
		r = vd_match_posted(m->ctx, m->src, m->tag);
		if (r)
			vd_proto_match(r, peer, m, payload);
		else
			vd_unexp_add(peer, m, payload, m->type == VD_MSG_EAGER ? m->len : 0);
		break;
	case VD_MSG_CTS:
		got_cts(m);
		break;
	case VD_MSG_DONE:
	case VD_MSG_SYNC_ACK:
		got_done(m);
		break;
	case VD_MSG_RMA:
		vd_win_arrived(peer, m, payload, plen);
		break;
	case VD_MSG_PART:
		pipelined_part(peer, payload, plen);
		break;
	default:
		break;
	}
}
