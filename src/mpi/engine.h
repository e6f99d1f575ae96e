/* SPDX-License-Identifier: MIT */
/*
 * The point-to-point engine's private state (p2p.c, p2p_wait.c, wire.c,
 * proto.c).
 *
 * Every pair of ranks shares one VI (reliable delivery, viaduct flow
 * control: a send waits until the peer has a receive posted, so the
 * pre-posted eager buffers are the credits).  All receive queues feed one
 * CQ, so progress costs O(1) per message whatever the job size.
 */
#ifndef VIADUCT_MPI_ENGINE_H
#define VIADUCT_MPI_ENGINE_H

#include <limits.h>
#include <string.h>

#include "mpi_internal.h"

enum vd_msg_type {
	VD_MSG_EAGER = 1,       /* header + payload */
	VD_MSG_RTS_GET = 2,     /* receiver reads [addr, len) with RDMA read */
	VD_MSG_RTS_RNDV = 3,    /* receiver answers CTS, sender RDMA-writes */
	VD_MSG_CTS = 4,         /* receiver's buffer: addr, mh, rreq */
	VD_MSG_DONE = 5,        /* receiver finished reading: sreq completes */
	VD_MSG_SYNC_ACK = 6,    /* synchronous send matched: sreq completes */
	VD_MSG_RMA = 7,         /* one-sided: ctx names the window, tag the
	                         * kind (win.h), sreq the origin's operation */
	VD_MSG_PART = 8,        /* the next part of the message an EAGER with
	                         * VD_MSGF_MORE began: payload only */
	VD_MSG_EAGER_TINY = 9,  /* an EAGER without flags in the head alone:
	                         * its length is the ring message's rest */
};

#define VD_MSG_VERSION 3
#define VD_MSGF_SYNC 0x1u               /* sender wants SYNC_ACK when matched */
#define VD_MSGF_SPLIT 0x2u              /* RTS_GET: the sender may write part
                                         * (CTS at `off`); CTS: write that part */
#define VD_MSGF_MORE 0x4u               /* EAGER: `len` is the whole message,
                                         * whose rest follows as PARTs */

/* Wire header in front of every message.  Messages travel through the
 * VIs' message rings (viaduct_ring_send), whole and in order per pair of
 * ranks, so the header needs no framing of its own; each type sends only
 * the part it uses (vd_msg_hdr_len): an EAGER_TINY the 16-byte head, so
 * that up to 40 payload bytes share one cache line with the ring's
 * 8-byte header, the address tail only RTS_GET and CTS. */
struct vd_msg {
	uint8_t type;                   /* enum vd_msg_type */
	uint8_t flags;                  /* VD_MSGF_* */
	uint8_t version;                /* VD_MSG_VERSION */
	uint8_t reserved;
	uint32_t ctx;
	int32_t src;                    /* sender's rank in the communicator */
	int32_t tag;
	uint32_t sreq, rreq;            /* request ids at sender / receiver */
	uint64_t len;                   /* message bytes (packed) */
	/* RTS_GET and CTS only */
	uint64_t addr;                  /* RTS_GET: source; CTS: destination */
	uint32_t mh;                    /* memory handle for addr */
	uint32_t off;                   /* CTS with VD_MSGF_SPLIT: the part
	                                 * [off, off + len) of the message */
};
#define VD_MSG_HEAD 16                  /* bytes of an EAGER_TINY's header */
#define VD_MSG_SHORT 32                 /* bytes of the header without the tail */
_Static_assert(sizeof(struct vd_msg) == 48, "wire header");
_Static_assert(VD_MSG_HEAD == __builtin_offsetof(struct vd_msg, sreq), "head");
_Static_assert(VD_MSG_SHORT == __builtin_offsetof(struct vd_msg, addr), "short header");

static inline size_t vd_msg_hdr_len(unsigned type)
{
	if (type == VD_MSG_EAGER_TINY)
		return VD_MSG_HEAD;
	return type == VD_MSG_RTS_GET || type == VD_MSG_CTS ? sizeof(struct vd_msg)
							    : VD_MSG_SHORT;
}

/* The header of a ring message of len bytes (untrusted: another process
 * wrote it), as long as its type says, into *m; *hlen its bytes.  False
 * when malformed: shorter than its type's header, of another version, or
 * an EAGER_TINY with flags.  An EAGER_TINY comes out as the EAGER it
 * stands for, its length the rest of the message.  The copies have fixed
 * sizes: a copy of a variable length became `rep movsq`, whose start-up
 * cost showed in every small message. */
static inline bool vd_msg_parse(const uint8_t *msg, size_t len, struct vd_msg *m, size_t *hlen)
{
	*m = (struct vd_msg){ 0 };
	if (len < VD_MSG_HEAD)
		return false;
	*hlen = vd_msg_hdr_len(msg[0]);
	if (len < *hlen)
		return false;
	memcpy(m, msg, VD_MSG_HEAD);
	if (*hlen > VD_MSG_HEAD)
		memcpy((uint8_t *)m + VD_MSG_HEAD, msg + VD_MSG_HEAD, VD_MSG_SHORT - VD_MSG_HEAD);
	if (*hlen > VD_MSG_SHORT)
		memcpy((uint8_t *)m + VD_MSG_SHORT, msg + VD_MSG_SHORT,
		       sizeof(*m) - VD_MSG_SHORT);
	if (m->version != VD_MSG_VERSION)
		return false;
	if (m->type == VD_MSG_EAGER_TINY) {
		if (m->flags)
			return false;
		m->type = VD_MSG_EAGER;
		m->len = len - *hlen;
	}
	return true;
}

/* Requests. */
enum vd_req_kind {
	VD_REQ_FREE = 0, VD_REQ_SEND, VD_REQ_RECV,
	VD_REQ_PERSIST,                 /* MPI_*_init: Start runs the operation */
	VD_REQ_GREQ,                    /* MPI_Grequest_start */
	VD_REQ_COLL,                    /* a nonblocking collective (nbc_sched.c) */
	VD_REQ_RMA,                     /* MPI_Rput ...: a one-sided operation */
	VD_REQ_DONE,                    /* born complete: operations that finish
	                                 * at once (MPI_Comm_idup) */
};

/* What MPI_Start of a persistent request does. */
enum vd_persist_op { VD_P_RECV, VD_P_SEND, VD_P_SSEND, VD_P_BSEND };

struct vd_greq;

struct vd_req {
	enum vd_req_kind kind;
	uint32_t id;                    /* handle value (index + 1) */
	bool done, freed, cancelled;
	bool recv_open;                 /* a receive counted by vd_recv_busy */
	int err;                        /* MPI error class at completion */
	MPI_Status st;
	MPI_Comm comm;                  /* for raising its errors */
	/* matching (receives) */
	uint32_t ctx;
	int src, tag;
	/* the user's buffer */
	void *buf;
	int count;
	MPI_Datatype dt;
	struct vd_dtype *t;
	size_t bytes;                   /* count * size: capacity or length */
	/* contiguous bytes actually moved: buf itself, or a packed copy */
	void *data;
	void *tmp;                      /* packed copy to free, or NULL */
	VIP_MEM_HANDLE mh;              /* registration of data, or 0 */
	bool own_mh;                    /* registered by us: deregister */
	/* sends */
	int peer;                       /* world rank */
	enum vd_send_mode mode;
	bool queued;                    /* waiting for a send slot */
	int parts;                      /* split transfer: halves still moving */
	bool get_out;                   /* a get of ours across hosts, counted
	                                 * by vd_wire_get_out until it ends */
	struct vd_msg hdr;              /* what to send once a slot frees */
	struct vd_req *next;            /* posted-receive or send queue */
	/* persistent (buf, count, t retained, src = peer's comm rank, tag
	 * and comm describe the operation) */
	enum vd_persist_op pop;
	bool active;                    /* started, not yet completed by a
	                                 * wait or test */
	MPI_Request inner;              /* the started operation, or NULL */
	struct vd_comm *pcomm;          /* persistent: its communicator, a
	                                 * reference of its own (the handle
	                                 * may be freed and reused meanwhile) */
	struct vd_greq *greq;           /* generalized: the user's callbacks */
	struct vd_nbc *nbc;             /* VD_REQ_COLL: its schedule, until done */
	struct vd_rma_op *rma;          /* VD_REQ_RMA: the one-sided operation */
	MPI_Win win;                    /* VD_REQ_RMA: its window, whose error
	                                 * handler judges its errors */
};

/* An arrived message nobody asked for yet. */
struct vd_unexp {
	struct vd_msg hdr;
	int peer;                       /* world rank it came from */
	void *payload;                  /* EAGER: a copy from vd_payload_alloc
	                                 * (freed with vd_payload_free only) */
	struct vd_unexp *next;
};

/* The handle of every send complete as it started (req.c): above any
 * index a request table could reach. */
#define VD_REQ_SENT INT_MAX

struct vd_req *vd_req_new(enum vd_req_kind kind);
struct vd_req *vd_req_get(MPI_Request handle);
void vd_req_release(struct vd_req *r);
void vd_req_complete(struct vd_req *r, int err);
/* Whether a wait on r would return at once (an inactive persistent
 * request is ready: it reports an empty status). */
bool vd_req_ready(struct vd_req *r);
/* A persistent request not started: waits and tests treat it as null. */
bool vd_req_inactive(const struct vd_req *r);

/* p2p.c: argument checks shared by the point-to-point files (MPI_ERR_*
 * class or MPI_SUCCESS). */
int vd_p2p_check_send(struct vd_comm *c, const void *buf, int count, MPI_Datatype dt,
		      int dest, int tag);
int vd_p2p_check_recv(struct vd_comm *c, const void *buf, int count, MPI_Datatype dt,
		      int src, int tag);
int vd_p2p_check_source(struct vd_comm *c, int src, int tag);
/* vd_isend / vd_irecv with the datatype object instead of its handle
 * (a persistent request keeps the object across MPI_Type_free). */
int vd_isend_type(const void *buf, int count, struct vd_dtype *t, int dest, int tag,
		  struct vd_comm *comm, uint32_t ctx, enum vd_send_mode mode,
		  MPI_Request *req);
int vd_irecv_type(void *buf, int count, struct vd_dtype *t, int source, int tag,
		  uint32_t ctx, MPI_Request *req);
/* A buffered send of comm's user context: MPI_ERR_* or MPI_SUCCESS, not
 * raised (the arguments are checked). */
int vd_bsend(const void *buf, int count, struct vd_dtype *t, int dest, int tag,
	     struct vd_comm *c);
/* Fill a status from a finished engine request (MPI_STATUS_IGNORE ok);
 * an empty one for a null or inactive request. */
void vd_req_status(const struct vd_req *r, MPI_Status *st);
void vd_empty_status(MPI_Status *st);
/* A blocking wait's state (vd_wait_step). */
struct vd_idle {
	unsigned polls;                 /* polls that found nothing */
	uint64_t since_ns;              /* when the spin began */
	bool sleeping;                  /* spun out: every step sleeps */
};
/* One step of a blocking wait: progress, and sleep once the spin is
 * over (p2p.c). */
void vd_wait_step(struct vd_idle *idle);
/* Hand back a finished request: its status and error, the handle reset
 * (a persistent request stays, inactive). */
int vd_req_finish(MPI_Request *req, struct vd_req *r, MPI_Status *st);
/* Element i of a status array, or MPI_STATUS_IGNORE. */
static inline MPI_Status *vd_status_at(MPI_Status *sts, int i)
{
	return sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &sts[i];
}
/* How long a blocking wait polls before it sleeps (VIADUCT_MPI_SPIN_US). */
uint64_t vd_spin_budget_ns(void);
/* The same for a node-local collective's wait (coll_shm.c): 0 when the
 * host's ranks outnumber its CPUs and VIADUCT_MPI_SPIN_US is not set. */
uint64_t vd_coll_spin_budget_ns(void);
/* Poll the engine until pred(arg) holds, sleeping when idle. */
void vd_wait_until(bool (*pred)(void *), void *arg);

/* p2p_persist.c: completion of persistent requests.  finish: status and
 * error of the completed operation, the request stays (inactive);
 * peek: the same without making it inactive (MPI_Request_get_status). */
bool vd_persist_ready(struct vd_req *r);
int vd_persist_finish(struct vd_req *r, MPI_Status *st);
int vd_persist_peek(struct vd_req *r, MPI_Status *st);
int vd_persist_cancel(struct vd_req *r);
void vd_persist_free(struct vd_req *r);

/* p2p_greq.c: generalized requests.  finish releases the request (free_fn
 * runs) and resets *req. */
int vd_greq_finish(MPI_Request *req, struct vd_req *r, MPI_Status *st);
int vd_greq_peek(struct vd_req *r, MPI_Status *st);
int vd_greq_cancel(struct vd_req *r);
int vd_greq_free(struct vd_req *r);
void vd_greq_release(struct vd_req *r);

/* p2p_probe.c: messages taken by MPI_Mprobe and not yet received. */
void vd_message_finalize(void);

/* place.c: where the ranks live, and the transport to each peer: shm
 * inside a node, ofi across (VIADUCT_MPI_NET).  vd_place_init
 * (collective, before the NICs open) learns the node of every rank;
 * vd_place_local records this rank's host address on a transport's NIC;
 * vd_place_exchange (collective whenever vd_place_job_net) learns the
 * fabric addresses of the remote peers. */
enum vd_transport { VD_T_SHM, VD_T_OFI, VD_T_N };
int vd_place_init(void);
enum vd_transport vd_place_via(int rank);
int vd_place_node(int rank);            /* node number, 0 in a job of one */
int vd_place_local_ranks(void);         /* ranks on this node, this one too */
int vd_place_most_local(void);          /* ranks on the fullest node */
/* The most peers any rank reaches through the network: the same on every
 * rank (the node map is the job's). */
uint64_t vd_place_net_peers_max(void);
uint64_t vd_place_nonce(void);          /* the job's random number (rank 0's) */
bool vd_place_uses(enum vd_transport t);
bool vd_place_job_net(void);
int vd_place_local(enum vd_transport t, VIP_NIC_HANDLE nic);
int vd_place_exchange(void);
const uint8_t *vd_place_host(enum vd_transport t, int rank, unsigned *len);
/* Where rank lives, for messages: "on this host", "on host A.B.C.D" (its
 * fabric address), ... */
void vd_place_where(int rank, char *out, size_t len);
void vd_place_finalize(void);

/* wire.c: VIPL plumbing. */
int vd_wire_init(void);
void vd_wire_finalize(void);
/* Send a header (+ payload of len bytes, copied) to world rank peer;
 * queues r (if given) when no send slot is free.  0 or -errno. */
int vd_wire_send(int peer, const struct vd_msg *m, const void *payload, size_t len);
/* Into the ring at once or not at all: 0, -EAGAIN (the ring is full or
 * messages wait before it; nothing queued), or -errno. */
int vd_wire_send_direct(int peer, const struct vd_msg *m, const void *payload, size_t len);
/* The same without copying the payload when it must wait for ring space:
 * it is read from `payload` when it goes, and `done` (if given) is then
 * completed.  0 sent now, 1 queued, or -errno. */
int vd_wire_send_ref(int peer, const struct vd_msg *m, const void *payload, size_t len,
		     struct vd_req *done);
/* Whether the peer has begun a message of its own since this rank last
 * began one to it (answers -- CTS, DONE -- do not count either way): a
 * ping-pong's turn, where a stream of sends finds false. */
bool vd_wire_answered(int peer);
/* RDMA on behalf of request r: read into local [data,len) from the peer's
 * raddr, or write local data to raddr with immediate imm (which consumes
 * a receive at the peer).  vd_proto_read_done/write_done(r, err) follow
 * when the slot is reaped. */
int vd_wire_rdma_read(int peer, struct vd_req *r, void *data, VIP_MEM_HANDLE lmh,
		      uint64_t raddr, VIP_MEM_HANDLE rmh, size_t len);
/* The same read queued, started by the next progress call instead of
 * now: for a receive posted when its message has already announced
 * itself, so that MPI_Irecv returns without copying (a program that posts
 * its receives, then its sends, gets its sends out before it copies). */
int vd_wire_rdma_read_later(int peer, struct vd_req *r, void *data, VIP_MEM_HANDLE lmh,
			    uint64_t raddr, VIP_MEM_HANDLE rmh, size_t len);
int vd_wire_rdma_write_imm(int peer, struct vd_req *r, const void *data,
			   VIP_MEM_HANDLE lmh, uint64_t raddr, VIP_MEM_HANDLE rmh,
			   size_t len, uint32_t imm);
/* An RDMA write without immediate data: nothing happens at the peer's
 * CPU (one-sided operations). */
int vd_wire_rdma_write(int peer, struct vd_req *r, const void *data, VIP_MEM_HANDLE lmh,
		       uint64_t raddr, VIP_MEM_HANDLE rmh, size_t len);
/* Registration with transport t's NIC (vd_place_via(peer) for a
 * transfer with peer). */
int vd_wire_register(enum vd_transport t, void *addr, size_t len, bool rdma_read,
		     bool rdma_write, VIP_MEM_HANDLE *mh);
void vd_wire_deregister(enum vd_transport t, void *addr, VIP_MEM_HANDLE mh);
/* Handle everything that arrived; block=true sleeps (briefly) when
 * nothing did.  Returns the number of events handled. */
int vd_progress(bool block);
/* nbc_sched.c: advance the nonblocking collectives (vd_progress calls
 * it); how many moved. */
int vd_nbc_progress(void);
/* Sends queued or in flight on any VI (MPI_Finalize drains them). */
bool vd_wire_busy(void);
/* Progress until !vd_wire_busy(); a connection that never comes ends the
 * job (as a blocking wait's would) rather than spin here for ever. */
void vd_wire_flush(void);
/* A transfer across hosts is under way: an RDMA write of ours not yet
 * complete, one we cleared (CTS) not yet arrived, or a get of our buffer
 * (RTS_GET) not yet answered DONE. */
bool vd_wire_moving(void);
/* A message from another host came at since_ns (CLOCK_MONOTONIC) or
 * later. */
bool vd_wire_heard_since(uint64_t since_ns);
/* A get of ours across hosts began (+1: its RTS went out or was queued)
 * or ended (-1). */
void vd_wire_get_out(int delta);
/* The largest message sent eagerly to peer (its transport's limit). */
size_t vd_eager_max(int peer);

/* regcache.c: registrations of message buffers for transfers with peer
 * (on the NIC that reaches it), reused (RDMA read and write enabled).
 * 0 or -errno. */
int vd_regcache_get(int peer, void *addr, size_t len, VIP_MEM_HANDLE *mh);
void vd_regcache_put(int peer, void *addr, VIP_MEM_HANDLE mh);
void vd_regcache_flush(void);

/* proto.c: what arrives. */
void vd_proto_arrived(int peer, const struct vd_msg *m, const void *payload, size_t plen);
void vd_proto_rdma_written(uint32_t rreq);
void vd_proto_read_done(struct vd_req *r, int err);
void vd_proto_write_done(struct vd_req *r, int err);
/* Start a send (p2p.c calls it). */
int vd_proto_send(struct vd_req *r);
/* Send a contiguous message eagerly, at once, without a request: 0,
 * -EAGAIN (not an eager size, or -- unless `queue` -- no room in the
 * ring now: use a request), or -errno.  With `queue` a message that
 * must wait for ring space is copied into the wire's queue. */
int vd_proto_eager_now(int peer, uint32_t ctx, int src, int tag, const void *data,
		       size_t bytes, bool queue);
/* A posted receive met a message (unexpected or arriving). */
void vd_proto_match(struct vd_req *r, int peer, const struct vd_msg *m, const void *payload);
/* vd_proto_match of an unexpected message taken from the queue, which it
 * frees -- also one whose parts are still arriving. */
void vd_proto_match_unexp(struct vd_req *r, struct vd_unexp *u);
/* Forget messages half arrived (MPI_Finalize, after the wire closed). */
void vd_proto_finalize(void);
/* Inside a host, messages up to max bytes go through the ring, larger
 * ones by get, split from min bytes (tune.c measures where). */
void vd_proto_ring_max(size_t max);
void vd_proto_split_min(size_t min);
/* tune.c: every message sent until VD_FORCE_NONE takes the ring (eager,
 * pipelined above the eager limit), get or split. */
enum vd_proto_force { VD_FORCE_NONE, VD_FORCE_RING, VD_FORCE_GET, VD_FORCE_SPLIT };
void vd_proto_force(enum vd_proto_force f);

/* tune.c: measure the ring against get on the host's first two ranks and
 * share the switch point (every rank calls it, after vd_wire_init: it
 * fences twice when some host has two ranks).  0 or -errno. */
int vd_tune_init(void);

/* win.c, win_ops.c: one-sided traffic (the engine hands it over). */
void vd_win_rdma_done(struct vd_req *r, int err);
void vd_win_arrived(int peer, const struct vd_msg *m, const void *payload, size_t plen);

/* req.c: matching queues, in post / arrival order. */
struct vd_req *vd_match_posted(uint32_t ctx, int src, int tag);
void vd_post_recv(struct vd_req *r);
/* A receive started (vd_recv_open) and not yet complete, matched or
 * not: this rank's core has copying of its own ahead (inside a host, or
 * over tcp, where this rank's progress reads the data in). */
void vd_recv_open(struct vd_req *r);
bool vd_recv_busy(void);
bool vd_unpost_recv(struct vd_req *r);
struct vd_unexp *vd_unexp_add(int peer, const struct vd_msg *m, const void *payload, size_t plen);
/* A message buffer of n bytes -- an unexpected message's payload, a
 * message waiting for ring space -- kept for reuse up to 32 KiB (req.c),
 * and its release (NULL allowed).  NULL when out of memory. */
void *vd_payload_alloc(size_t n);
void vd_payload_free(void *p);
/* First unexpected message matching; `take` removes it (caller frees
 * it and its payload with vd_payload_free). */
struct vd_unexp *vd_unexp_find(uint32_t ctx, int src, int tag, bool take);
void vd_req_finalize(void);

#endif /* VIADUCT_MPI_ENGINE_H */
