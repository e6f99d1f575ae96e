/* SPDX-License-Identifier: MIT */
/*
 * ofi provider: VIPL across hosts over libfabric.
 *
 * One reliable-datagram (FI_EP_RDM) endpoint per NIC carries every VI's
 * traffic; connections are ours, made by a three-message handshake
 * through a listener endpoint per discriminator and authenticated with
 * the job key.  RDM is what every fabric offers (tcp;ofi_rxm here, efa,
 * cxi, psm3, opx, verbs;ofi_rxm), where FI_EP_MSG is not.
 *
 * Data never lands in memory by the initiator's word alone: the target
 * checks the target VI's queue and its translation and protection table
 * before a byte moves.  Small transfers travel as messages into our
 * receive buffers, copied into place by the target.  From VD_OFI_ZC_MIN
 * bytes on (one data segment, a fabric with RMA) they move without a copy
 * in between: the initiator exposes its one buffer to the peer for that
 * one operation (read-only for a send or RDMA write, write-only for an
 * RDMA read: struct vd_ofi_zc), and the target, once its checks passed,
 * pulls the data straight into the checked destination with fi_read (or
 * pushes what an RDMA read asked for with fi_write).  So a forged, revoked
 * or wrong-ptag handle or an out-of-range address moves 0 bytes,
 * deregistration waits for the target's transfers into or out of the
 * region, and no registration is ever exposed longer than one operation.
 *
 * Progress (the fabric's data progress is manual on tcp): a thread that
 * sleeps in a *Wait, a CQ wait or the provider's service thread owns the
 * progress lock and reads the fabric CQ.  A completion is recorded in its
 * connection and then applied under the VI's queue lock, taken with
 * trylock only: whoever holds that lock applies it (send_progress and
 * recv_progress begin with that), else the next progress pass retries.
 * Nothing that holds a queue lock ever waits for the progress lock.
 */
#ifndef VIADUCT_OFI_H
#define VIADUCT_OFI_H

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "vipl/prov.h"

#define VD_OFI_ADDR_LEN 4           /* IPv4 host address */
#define VD_OFI_MAX_DISC 32
#define VD_OFI_EAGER_MAX 32768      /* payload bytes per message (chunk) */
#define VD_OFI_RX_BUFS 64           /* receive buffers per endpoint */
#define VD_OFI_SPIN_NS 200000ull    /* a blocking wait's poll (vd_ofi_query) */
#define VD_OFI_TX_WINDOW 64         /* sends in flight per VI */
#define VD_OFI_CHUNKS_OUT 32        /* chunks in flight per VI (1 MiB) */
#define VD_OFI_MAX_PEERS 65536u     /* AV entries we track liveness for */
#define VD_OFI_EP_NAME_MAX 64       /* fi_getname bytes we carry */
#define VD_OFI_KEEPALIVE_NS 250000000ull
/* How long a connection broken on purpose may still send what waited in
 * the backlog: bounded, so that a peer that takes nothing (and keeps
 * talking, so it never counts as silent) cannot hold the backlog, which
 * every connection of the NIC shares, for longer. */
#define VD_OFI_DRAIN_NS 500000000ull
#define VD_OFI_END_DROP 1ull        /* vd_ofi_conn.ended: backlog dropped */
#define VD_OFI_ZC_MIN 65536         /* default VIADUCT_OFI_ZC_MIN */
/* Default VIADUCT_OFI_PORT_BASE: listeners on 20480-24575, below Linux's
 * ephemeral ports (32768-60999), where any outgoing connection on the
 * host -- ours included -- could hold a listener's port and fail its
 * bind (47000, the old base, lay inside them). */
#define VD_OFI_PORT_BASE 20480
/* A discriminator's listener takes the first free one of this many
 * ports from its hash on (another process may hold the first: two
 * discriminators collide, or anything else bound it); a requester asks
 * them in turn until one knows the discriminator. */
#define VD_OFI_PORT_PROBES 8u
#define VD_OFI_ZC_DEPTH 8           /* RDMA transfers a target runs at once per VI */
#define VD_OFI_RING_BYTES (128u * 1024u)   /* message ring per direction */
#define VD_OFI_RING_BYTES_DEEP (512u * 1024u)      /* ...on a VIADUCT_VI_DEEP_RING VI */

/* ---- libfabric, opened at run time (ofi_lib.c) ----------------------------- */
/* The functions libfabric exports by symbol that the provider calls;
 * valid once vd_ofi_lib_load() returned 0. */
struct vd_fi_lib {
	int (*getinfo)(uint32_t version, const char *node, const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info);
	void (*freeinfo)(struct fi_info *info);
	struct fi_info *(*dupinfo)(const struct fi_info *info);
	int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
	const char *(*strerror)(int errnum);
};
extern struct vd_fi_lib vd_fi;

/* Load libfabric once: 0, or -ENODEV after saying why on stderr. */
int vd_ofi_lib_load(void);

/* ---- wire format ---------------------------------------------------------- */
#define VD_OFI_MAGIC 0x7664u        /* "vd" */
#define VD_OFI_VERSION 6u

enum vd_ofi_type {
	VD_OFI_CONN_REQ = 1,        /* to a listener: connect, please */
	VD_OFI_CONN_ACC,            /* accepted: here is my connection */
	VD_OFI_CONN_REJ,            /* rejected / no such discriminator */
	VD_OFI_CONN_CFM,            /* requester confirms: now connected */
	VD_OFI_DISC,                /* peer disconnected */
	VD_OFI_SEND,                /* a chunk of a send: a = offset, b = total */
	VD_OFI_RDMAW,               /* a chunk of an RDMA write: a = handle,
	                             * b = target address of the chunk,
	                             * c = offset, d = total */
	VD_OFI_RDMAR,               /* RDMA read request: a = handle,
	                             * b = target address, d = total */
	VD_OFI_RDMAR_DATA,          /* a chunk of the answer: a = offset */
	VD_OFI_DONE,                /* RDMA op `seq` finished: a = VIP_STATUS */
	VD_OFI_NOTICE,              /* peer broke the VI: a = VIP_ERROR_CODE */
	VD_OFI_KEEPALIVE,
	VD_OFI_DROPPED,             /* unreliable: a send found no receive */
	VD_OFI_DEFERRED,            /* flow control: a send waits for one */
	VD_OFI_RING,                /* a message ring message: the payload */
	VD_OFI_RING_CREDIT,         /* a = the receiver's ring position up to
	                             * which it has released messages */
	VD_OFI_TYPE_MAX,
};

#define VD_OFI_F_IMM 0x1u           /* imm is valid (last chunk) */
#define VD_OFI_F_LAST 0x2u          /* last chunk of the operation */
#define VD_OFI_F_ACK 0x4u           /* send: answer DONE once placed */
#define VD_OFI_F_FLOW 0x8u          /* send: wait for a receive, never drop */
#define VD_OFI_F_CREDIT 0x20u       /* ring message: c is how far the sender
	                             * has released its own ring (the credit
	                             * it would otherwise send on its own) */
#define VD_OFI_F_ZC 0x10u           /* the payload is a struct vd_ofi_zc: the
                                     * data is pulled from (pushed into) it */

/* cm.rdma_flags: the sender takes zero-copy transfers (VD_OFI_F_ZC). */
#define VD_OFI_CM_ZC 0x80000000u
/* cm.rdma_flags: the sender's receive ring is VD_OFI_RING_BYTES_DEEP
 * (else VD_OFI_RING_BYTES); the peer places its messages by that size. */
#define VD_OFI_CM_DEEP_RING 0x40000000u

struct vd_ofi_hdr {
	uint16_t magic;
	uint8_t version;
	uint8_t type;               /* enum vd_ofi_type */
	uint32_t conn;              /* the receiver's connection index */
	uint64_t token;             /* the receiver's connection secret */
	uint32_t seq;               /* sender's operation number (DONE names it) */
	uint32_t len;               /* payload bytes after the header */
	uint32_t imm;
	uint32_t flags;             /* VD_OFI_F_* */
	uint64_t a, b, c, d;        /* per type */
	/* Data-path messages (type >= DISC) of a connection are numbered
	 * from 0: the fabric completes receives in any order (rxm finishes
	 * a rendezvous after later eager messages), the target places them
	 * in this order. */
	uint32_t msg_no;
	uint32_t reserved;
};
static_assert(sizeof(struct vd_ofi_hdr) == 72, "ofi header layout");

/* Handshake payload (CONN_REQ, CONN_ACC, CONN_CFM). */
struct vd_ofi_cm {
	uint8_t ep[VD_OFI_EP_NAME_MAX];    /* sender's data endpoint name */
	uint32_t ep_len;
	uint32_t conn;              /* sender's connection index */
	uint64_t token;             /* sender's connection secret */
	uint64_t nonce_req, nonce_acc;
	uint8_t host[VD_OFI_ADDR_LEN];     /* sender's host address */
	uint16_t disc_len;          /* sender's discriminator */
	uint16_t want_len;          /* discriminator asked for (REQ) */
	uint8_t disc[VD_OFI_MAX_DISC];
	uint8_t want[VD_OFI_MAX_DISC];
	uint32_t reliability;       /* VIP_VI_ATTRIBUTES the peer needs */
	uint32_t mtu;
	uint32_t rdma_flags;        /* VD_TPT_RDMA_* enabled on the VI,
	                             * VD_OFI_CM_ZC, VD_OFI_CM_DEEP_RING */
	uint32_t reserved;
	uint64_t mac[2];            /* keyed hash of everything above */
};
static_assert(sizeof(struct vd_ofi_cm) == 200, "ofi cm layout");

/* The initiator's buffer of one zero-copy operation, as the fabric names
 * it for the peer (FI_MR_VIRT_ADDR: its address, else 0; the key). */
struct vd_ofi_zc {
	uint64_t addr;
	uint64_t key;
};
static_assert(sizeof(struct vd_ofi_zc) == 16, "ofi zc layout");

#define VD_OFI_MSG_MAX (sizeof(struct vd_ofi_hdr) + VD_OFI_EAGER_MAX)

/* ---- operations in flight (fabric contexts) -------------------------------- */
enum vd_ofi_op_kind { OP_RX, OP_TX, OP_ZC };

struct vd_ofi_ep;
struct vd_ofi_conn;

struct vd_ofi_op {
	struct fi_context2 ctx;     /* first: FI_CONTEXT / FI_CONTEXT2 */
	enum vd_ofi_op_kind kind;
	struct vd_ofi_ep *ep;       /* OP_RX: whose buffer */
	struct vd_ofi_conn *conn;   /* OP_TX / OP_RMA: owner, or NULL */
	struct vd_ofi_op *next;     /* free list, arrival queue */
	struct vd_ofi_op *all_next; /* OP_TX: every one made (freed at close) */
	uint32_t tx_slot;           /* OP_TX of a descriptor: window slot + 1 */
	uint32_t tpt_idx;           /* OP_ZC: the region it moves into/out of */
	struct vd_ofi_zc_run *run;  /* OP_ZC: the RDMA run it is part of, or
	                             * NULL (a send's) */
	struct fid_mr *mr;          /* mr_local fabrics: buf's registration */
	void *desc;                 /* ...and its descriptor, else NULL */
	fi_addr_t to;               /* OP_TX: destination, length */
	size_t post_len;
	uint64_t queued_ns;         /* OP_TX in the backlog: since when, */
	uint32_t tries;             /* and how often we tried to post it */
	size_t len;                 /* received bytes (OP_RX) */
	uint8_t buf[];              /* VD_OFI_MSG_MAX */
};

/* ---- endpoints and NIC --------------------------------------------------- */

/* An RDM endpoint: the NIC's data endpoint, or a listener on the port of
 * one or more discriminators. */
struct vd_ofi_ep {
	struct fid_ep *ep;
	struct vd_ofi_nic *on;
	bool listener;
	unsigned port;              /* listener */
	uint8_t name[VD_OFI_EP_NAME_MAX];
	size_t name_len;
	struct vd_ofi_op *rx[VD_OFI_RX_BUFS];
	struct vd_list link;        /* vd_ofi_nic.listeners */
};

/* A discriminator this NIC has waited on (VipConnectWait). */
struct vd_ofi_listen {
	struct vd_list link;        /* vd_ofi_nic.listens */
	struct vd_ofi_ep *ep;       /* its port's listener endpoint */
	uint8_t disc[VD_OFI_MAX_DISC];
	uint16_t disc_len;
	unsigned waiters;           /* threads in VipConnectWait on it */
	struct vd_list reqs;        /* struct vd_conn_req, for them */
};
/* vd_ofi_cm.reserved of a REJ: the NIC knows the discriminator but
 * nobody waits on it, or the NIC never listened on it (the port is
 * another NIC's: the requester tries the discriminator's next port). */
#define VD_OFI_REJ_NO_MATCH 1u
#define VD_OFI_REJ_UNKNOWN 2u

/* A VipConnectPeerRequest in progress.  Of the two sides, the one with
 * the larger (host, discriminator) requests, the other accepts. */
struct vd_ofi_peer {
	struct vd_list link;        /* vd_ofi_nic.peers */
	struct vd_vi *vi;
	bool requester;
	uint64_t deadline_ns;       /* 0: none */
	uint8_t local[sizeof(VIP_NET_ADDRESS) + VD_OFI_ADDR_LEN + VD_OFI_MAX_DISC];
	uint8_t remote[sizeof(VIP_NET_ADDRESS) + VD_OFI_ADDR_LEN + VD_OFI_MAX_DISC];
	struct vd_ofi_listen *li;   /* accepter: where the request comes */
	struct vd_list reqs;        /* accepter: the request, once here */
	bool busy;                  /* a thread is in vd_ofi_peer_progress */
	/* Requester: the handshake under way.  It outlives the call that
	 * began it: VipConnectPeerDone looks for a millisecond, and an
	 * answer that takes longer must still find the request. */
	struct vd_ofi_conn *hs;
	struct vd_ofi_cm hs_cm;     /* its sealed REQ */
	uint64_t hs_slice_end;      /* when its current port counts as silent */
	uint64_t hs_begun_ns;       /* when it began */
	uint64_t hs_retry_ns;       /* no listener found: not again before */
};

struct vd_ofi_nic {
	struct vd_nic *nic;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	int wait_fd;                /* the CQ's fd (FI_WAIT_FD), or -1 */
	struct fid_cntr *wake_cntr; /* net: the sleep instead (fd_wait) */
	struct vd_ofi_ep data;
	_Atomic uint32_t placing;   /* target-side copies into registered
	                             * memory in progress (mr_dereg waits) */
	uint8_t host[VD_OFI_ADDR_LEN];
	char iface_ip[46];          /* INET6_ADDRSTRLEN */
	uint64_t mr_mode;
	size_t key_size;
	uint64_t job_key[2];

	pthread_mutex_t lock;       /* listeners, conns table, handshakes */
	pthread_mutex_t fab_lock;   /* every call into libfabric (ofi_nic.c) */
	pthread_cond_t cond;        /* handshake progress (with lock) */
	struct vd_list listeners;   /* struct vd_ofi_ep */
	struct vd_list listens;     /* struct vd_ofi_listen */
	struct vd_list peers;       /* struct vd_ofi_peer */
	struct vd_ofi_conn **conns; /* by index; NULL = free */
	uint32_t nconns;
	uint32_t conns_hwm;
	_Atomic uint64_t *peer_rx_ns;  /* by fi_addr (AV table index): when
	                                * anything last came from that peer
	                                * process, on any connection */         /* under lock (read atomically): indices used */
	vd_lock_t tx_lock;          /* tx_free */
	vd_lock_t bl_lock;          /* the backlog (ofi_nic.c) */
	struct vd_ofi_op *bl_head, **bl_tail;
	struct vd_ofi_op *tx_free;
	struct vd_ofi_op *tx_all;   /* tx_lock: every OP_TX op, for close */

	vd_lock_t progress;         /* who reads the fabric CQ */
	_Atomic uint32_t want;      /* application threads waiting for it */
	_Atomic uint64_t app_polls; /* bumped by every application poll */
	uint64_t svc_polls_seen;    /* service thread only: app_polls when it */
	uint64_t svc_polls_moved_ns;    /* last saw it move, and when */
	_Atomic uint32_t app_inside;   /* application threads in a data-path
	                                * call (vd_ofi_app_inside) */
	_Atomic bool svc_polling;   /* the service thread sleeps in poll()
	                             * holding it */
	int preempt_fd;             /* eventfd: rings the service thread out */
	struct vd_event events;     /* bumped after every pass
	                             * that recorded something */
	_Atomic uint32_t handoff;   /* application threads asleep in a CQ
	                             * set (vd_ofi_cq_arm): the service thread
	                             * progresses for them */
	struct vd_event svc_wake;   /* wakes the service thread's nap */
	_Atomic uint32_t pending;   /* conns with unapplied completions */
	pthread_t service;
	_Atomic bool stop;
	bool service_started;
	bool zc;                    /* the fabric has RMA we can use */
	bool zc_ordered;            /* ...and carries reads and writes in
	                             * order (FI_ORDER_RAR, FI_ORDER_WAW) */
	bool zc_done_early;         /* ...over one byte stream per peer,
	                             * where a message sent after a write
	                             * lands after its data */
	uint64_t zc_min;            /* VIADUCT_OFI_ZC_MIN */
	_Atomic uint32_t *zc_busy;  /* by TPT index: target-side fabric
	                             * transfers in flight (mr_dereg waits) */
	bool mr_local;              /* local buffers are registered (FI_MR_LOCAL
	                             * or VIADUCT_OFI_MR_LOCAL) */
	void **mr_desc;             /* mr_local: desc per TPT index */
	struct fid_mr **mrs;
};

static inline struct vd_ofi_nic *vd_ofi_nic(struct vd_nic *nic)
{
	return nic->prov;
}

/* ---- connections ------------------------------------------------------------ */

struct vd_ofi_tx {                  /* one descriptor in flight */
	uint32_t seq;
	uint32_t chunks;            /* messages posted for it */
	_Atomic uint32_t sent;      /* fabric completions of them */
	_Atomic uint32_t failed;
	_Atomic uint32_t status;    /* DONE's status + 1, 0 = none yet */
	_Atomic(VIP_DESCRIPTOR *) desc;   /* RDMA read: where data lands */
	bool wants_done;            /* RDMA: completes on DONE */
	bool posted;                /* every chunk is out */
	_Atomic(struct fid_mr *) zc_mr;   /* exposed for this operation */
	uint64_t bytes;             /* data bytes of the descriptor */
};

/* A zero-copy RDMA transfer the target runs: the request it answers
 * once its fabric transfers are complete. */
struct vd_ofi_zc_run {
	struct vd_ofi_hdr h;
	_Atomic uint32_t out;       /* its fabric transfers not yet complete */
	_Atomic int err;            /* the first one's error */
	bool answered;              /* its DONE has gone (zc_done_early) */
};

struct vd_ofi_conn {
	struct vd_ofi_nic *on;
	struct vd_vi *vi;
	uint32_t idx;
	uint64_t token;             /* ours: peers must present it */
	uint32_t peer_conn;
	uint64_t peer_token;
	fi_addr_t peer;             /* the peer's data endpoint */
	VIP_VI_ATTRIBUTES peer_attrs;
	uint32_t peer_rdma;         /* peer VI's RDMA enables */

	_Atomic uint32_t tx_msg_no; /* next number of a message we send */
	uint32_t rx_msg_no;         /* progress lock: next number to place */
	struct vd_ofi_op *held;     /* progress lock: arrived early, by number */
	uint32_t nheld;

	/* Arrivals, in order; appended by progress, taken under rq.lock. */
	vd_lock_t in_lock;
	struct vd_ofi_op *in_head, **in_tail;
	struct vd_ofi_op *rin_head, **rin_tail;     /* ring messages */
	uint32_t in_len;            /* in_lock: both queues */
	uint32_t rx_seq;            /* rq.lock: message being placed */
	bool rx_active;             /* rq.lock: a send is being placed */
	bool rx_drop;               /* rq.lock: ...and dropped (unreliable) */
	uint64_t rx_got;            /* rq.lock: bytes of it so far */
	uint64_t rx_coff;           /* rq.lock: bytes of the head chunk placed */
	uint64_t rx_dgot;           /* rq.lock: bytes in the front descriptor */
	bool rx_split;              /* rq.lock: it spans descriptors */
	uint32_t rdma_bad_seq;      /* rq.lock: RDMA write refused: seq + 1 */
	bool zc;                    /* both ends take zero-copy transfers */
	bool zc_active;             /* rq.lock: the head message moves by RMA */
	uint64_t zc_off;            /* rq.lock: bytes of it posted so far */
	uint64_t zc_base;           /* rq.lock: where the front descriptor's
	                             * part of it begins */
	_Atomic uint32_t zc_out;    /* fabric transfers not yet complete
	                             * (a send's, or the RDMA runs') */
	_Atomic int zc_err;         /* the send's first error */
	/* Zero-copy RDMA the target runs, oldest first (ofi_xfer.c);
	 * rq.lock. */
	struct vd_ofi_zc_run zq[VD_OFI_ZC_DEPTH];
	uint32_t zq_head, zq_tail;
	_Atomic bool zc_retry;      /* the fabric could not take one: the
	                             * next progress pass tries again */

	/* Sends: window slots by sq index (sq.lock). */
	struct vd_ofi_tx tx[VD_OFI_TX_WINDOW];
	uint64_t tx_posted;         /* sq.lock: next sq index to post */
	uint64_t tx_off;            /* sq.lock: bytes of it already posted */
	_Atomic uint32_t chunks_out;  /* chunks the fabric has not completed */
	uint32_t tx_seq;            /* sq.lock */

	/* Message rings (ofi_ring.c): positions count bytes of the
	 * receiver's ring, placed the same way by both ends. */
	struct vd_ofi_ring *ring;   /* rq.lock: receive side, made at the
	                             * first message */
	uint32_t ring_bytes;        /* our receive ring's size, and the */
	uint32_t peer_ring_bytes;   /* peer's: both fixed by the handshake */
	_Atomic uint64_t ring_tx_pos;   /* sq.lock writes: end of what we sent */
	_Atomic uint64_t ring_credit;   /* progress writes: what the peer released */
	_Atomic uint64_t ring_released; /* rq.lock writes: how far we released */
	_Atomic uint64_t ring_reported; /* ...and how far the peer was told */

	_Atomic uint32_t dropped;   /* DROPPED notices not yet in the stats */
	_Atomic uint32_t deferred;  /* DEFERRED notices, likewise */
	uint32_t rx_deferred;       /* rq.lock: seq + 1 of the send we said
	                             * DEFERRED for */
	_Atomic bool broken;
	_Atomic uint64_t ended;     /* how it broke: 0 not, VD_OFI_END_DROP,
	                             * else on purpose with the peer alive:
	                             * the backlog's messages for it still
	                             * go until then (ns) */
	_Atomic bool dead;          /* disconnected: progress leaves it alone */
	_Atomic bool reported;      /* the break went to the core */
	_Atomic uint32_t break_code;
	_Atomic uint32_t kick;      /* VD_OFI_KICK_*: recorded, not applied */
	_Atomic uint64_t last_rx_ns, last_tx_ns;

	/* Handshake */
	uint64_t nonce_req, nonce_acc;
	int hs_state;               /* under on->lock: 0 none, 1 waiting, 2 acc, 3 rej, 4 cfm */
	uint64_t hs_acc_ns;         /* under on->lock: when the ACC came */
	uint8_t probes_sent;        /* under on->lock: ports the REQ went to... */
	uint8_t probes_failed;      /* ...and how many of them knew nothing of it */
	struct vd_ofi_cm hs_peer;
};

/* A connection request that arrived at a listener. */
struct vd_conn_req {
	struct vd_list link;
	struct vd_ofi_nic *on;
	struct vd_ofi_cm cm;
	fi_addr_t from;
};

/* ---- functions ----------------------------------------------------------------- */

/* ofi_nic.c */
int vd_ofi_nic_open(struct vd_nic *nic, const char *spec);
void vd_ofi_nic_close(struct vd_nic *nic);
void vd_ofi_query(struct vd_nic *nic, struct vd_prov_caps *c);
int vd_ofi_node_address(struct vd_nic *nic, uint8_t *addr);
int vd_ofi_ns_lookup(struct vd_nic *nic, const char *name, unsigned index, uint8_t *addr);
int vd_ofi_ns_reverse(struct vd_nic *nic, const uint8_t *addr, char *name,
		      size_t room, size_t *need);
int vd_ofi_mr_reg(struct vd_nic *nic, uint32_t idx, const struct vd_mr_info *m);
int vd_ofi_mr_dereg(struct vd_nic *nic, uint32_t idx);
void *vd_ofi_local_desc(struct vd_ofi_nic *on, VIP_MEM_HANDLE h);
/* Progress: read the fabric CQ until empty (and wait up to deadline_ns
 * for something when `block`).  Returns with nothing held. */
void vd_ofi_progress(struct vd_ofi_nic *on, uint64_t deadline_ns, bool block);
/* One non-blocking pass if nobody else is progressing (callable with a
 * queue lock held: busy-polling *Done calls progress this way). */
void vd_ofi_poll(struct vd_ofi_nic *on);
/* An application thread enters (+1) or leaves (-1) a send or receive
 * progress call: it progresses for itself meanwhile, however long
 * serving a peer's read keeps it, and the service thread stays away. */
void vd_ofi_app_inside(struct vd_ofi_nic *on, int delta);
/* Take the progress lock, ringing the service thread out of its poll;
 * only with no queue lock held. */
void vd_ofi_progress_lock(struct vd_ofi_nic *on);
/* Sleep until a progress pass recorded something, or the deadline. */
int vd_ofi_wait(struct vd_ofi_nic *on, uint64_t deadline_ns);
struct vd_ofi_op *vd_ofi_tx_get(struct vd_ofi_nic *on);
void vd_ofi_tx_put(struct vd_ofi_nic *on, struct vd_ofi_op *op);
/* Post a filled OP_TX op of len bytes to `to` (into the backlog if the
 * fabric cannot take it now): 0 or -EIO. */
int vd_ofi_post(struct vd_ofi_nic *on, struct vd_ofi_op *op, size_t len, fi_addr_t to);
/* Send header + payload (copied) to `to` from the data endpoint. */
int vd_ofi_send_msg(struct vd_ofi_nic *on, fi_addr_t to, struct vd_ofi_conn *owner,
		    const struct vd_ofi_hdr *h, const void *payload, size_t len,
		    uint32_t tx_slot);
/* The same with the payload gathered from two pieces. */
int vd_ofi_send_msg2(struct vd_ofi_nic *on, fi_addr_t to, struct vd_ofi_conn *owner,
		     const struct vd_ofi_hdr *h, const void *p1, size_t l1,
		     const void *p2, size_t l2, uint32_t tx_slot);
/* Give a receive buffer back to the fabric (a detached copy: free it). */
void vd_ofi_repost(struct vd_ofi_op *op);
/* A heap copy of a received message; the buffer goes back to the fabric
 * at once.  For messages that wait for the application. */
struct vd_ofi_op *vd_ofi_detach(struct vd_ofi_op *op);
int vd_ofi_ep_open(struct vd_ofi_nic *on, struct vd_ofi_ep *e, const char *service);
void vd_ofi_ep_close(struct vd_ofi_ep *e);
uint64_t vd_ofi_mac(const struct vd_ofi_nic *on, const char *label,
		    const void *p, size_t n, uint64_t salt);

/* ofi_key.c */
/* The job's 128-bit key: 0, or a negative errno after saying why. */
int vd_ofi_job_key(uint64_t key[2]);

/* ofi_conn.c */
int vd_ofi_connect_wait(struct vd_nic *nic, const VIP_NET_ADDRESS *local,
			int timeout_ms, struct vd_conn_req **req);
void vd_ofi_conn_req_info(struct vd_conn_req *req, VIP_NET_ADDRESS *remote,
			  size_t remote_room, VIP_VI_ATTRIBUTES *attrs);
int vd_ofi_connect_accept(struct vd_conn_req *req, struct vd_vi *vi);
void vd_ofi_connect_reject(struct vd_conn_req *req);
int vd_ofi_connect_request(struct vd_vi *vi, const VIP_NET_ADDRESS *local,
			   const VIP_NET_ADDRESS *remote, int timeout_ms,
			   VIP_VI_ATTRIBUTES *remote_attrs);
int vd_ofi_peer_request(struct vd_vi *vi, const VIP_NET_ADDRESS *local,
			const VIP_NET_ADDRESS *remote, int timeout_ms);
int vd_ofi_peer_progress(struct vd_vi *vi, int timeout_ms, VIP_VI_ATTRIBUTES *remote_attrs);
void vd_ofi_disconnect(struct vd_vi *vi);
void vd_ofi_listeners_free(struct vd_ofi_nic *on);
/* Pending peer-to-peer requests left at NIC close. */
void vd_ofi_peers_free(struct vd_ofi_nic *on);
/* A control message (handshake) arrived; consumes nothing. */
void vd_ofi_on_cm(struct vd_ofi_nic *on, struct vd_ofi_ep *ep,
		  const struct vd_ofi_hdr *h, const void *payload, fi_addr_t from);
struct vd_ofi_conn *vd_ofi_conn_lookup(struct vd_ofi_nic *on, uint32_t idx, uint64_t token);
/* A REQ of c found no listener: its port counts as one that knew nothing. */
void vd_ofi_probe_failed(struct vd_ofi_conn *c);
void vd_ofi_conn_break(struct vd_ofi_conn *c, VIP_ERROR_CODE code, bool tell);
void vd_ofi_conn_break_after(struct vd_ofi_conn *c, VIP_ERROR_CODE code);
void vd_ofi_keepalive(struct vd_ofi_nic *on);

static inline bool vd_ofi_reliable(const struct vd_vi *vi)
{
	return vi->attrs.ReliabilityLevel != VIP_SERVICE_UNRELIABLE;
}

/* Copies into or out of registered memory happen between these two, so
 * a deregistration (vd_ofi_mr_dereg) waits for them.  Seq_cst: pairs with
 * the dereg's load of `placing` after its revocation of the key. */
static inline void vd_ofi_place_begin(struct vd_ofi_nic *on)
{
	atomic_fetch_add(&on->placing, 1);
}

static inline void vd_ofi_place_end(struct vd_ofi_nic *on)
{
	atomic_fetch_sub(&on->placing, 1);
}

/* ofi_xfer.c */
void vd_ofi_dma_copy(void *dst, const void *src, size_t n);
void vd_ofi_hdr_init(struct vd_ofi_conn *c, struct vd_ofi_hdr *h, uint8_t type, uint32_t seq);
/* A header-only data-path message (DONE, DROPPED, ...) to c's peer. */
int vd_ofi_send_ctl(struct vd_ofi_conn *c, uint8_t type, uint32_t seq, uint64_t a);
void vd_ofi_send_done(struct vd_ofi_conn *c, uint32_t seq, uint32_t status);

/* ofi_recv.c */
/* Receive descriptors marked bad at post time complete when they reach
 * the front; then the front one, or NULL. */
VIP_DESCRIPTOR *vd_ofi_front_recv(struct vd_vi *vi);
/* The peer sent what no honest peer sends: break, telling it. */
void vd_ofi_rx_fail(struct vd_ofi_conn *c, VIP_ERROR_CODE code);
bool vd_ofi_rx_defer(struct vd_ofi_conn *c, const struct vd_ofi_hdr *h);
/* A SEND message (chunk or zero-copy request); false: it stays at the
 * head of the arrivals for now. */
bool vd_ofi_rx_send(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h,
		    const uint8_t *p);
int vd_ofi_send_progress(struct vd_vi *vi);
int vd_ofi_recv_publish(struct vd_vi *vi);
int vd_ofi_recv_progress(struct vd_vi *vi);
int vd_ofi_send_sleep(struct vd_vi *vi, uint64_t deadline_ns);
int vd_ofi_recv_sleep(struct vd_vi *vi, uint64_t deadline_ns);
void vd_ofi_wake(struct vd_vi *vi);
void vd_ofi_conn_ready(struct vd_vi *vi);
/* The VI's connection.  Acquire: pairs with conn_attach's release, so a
 * connection found through its VI is complete. */
static inline struct vd_ofi_conn *vd_ofi_conn_of(struct vd_vi *vi)
{
	return __atomic_load_n((struct vd_ofi_conn **)&vi->conn, __ATOMIC_ACQUIRE);
}

/* Progress recorded something for c's send (TX) or receive (RX) side:
 * apply it where the side's queue lock is free. */
#define VD_OFI_KICK_TX 1u
#define VD_OFI_KICK_RX 2u
void vd_ofi_kick(struct vd_ofi_conn *c, uint32_t bits);
/* Record only (the caller may hold c's queue locks). */
void vd_ofi_kick_mark(struct vd_ofi_conn *c, uint32_t bits);
void vd_ofi_on_data(struct vd_ofi_conn *c, struct vd_ofi_op *rx);
/* Number a data-path message for c (any thread). */
void vd_ofi_number(struct vd_ofi_conn *c, struct vd_ofi_hdr *h);
/* A data-path message arrived (progress lock held): passed on in number
 * order, held while earlier ones are missing. */
void vd_ofi_in_order(struct vd_ofi_conn *c, struct vd_ofi_op *rx);
void vd_ofi_on_tx_done(struct vd_ofi_conn *c, uint32_t slot, int err);
void vd_ofi_conn_free_data(struct vd_ofi_conn *c);

/* ofi_zc.c */
/* fi_mr_reg with a fresh key and, on FI_MR_ENDPOINT fabrics, bound to ep
 * and enabled; fab_lock held.  0 or a negative fi_errno. */
int vd_ofi_mr_make(struct vd_ofi_nic *on, struct fid_ep *ep, void *buf, size_t len,
		   uint64_t access, struct fid_mr **out);
/* Would this descriptor move by zero copy (data segment `first` only)? */
bool vd_ofi_zc_wanted(const struct vd_ofi_conn *c, VIP_DESCRIPTOR *d, unsigned first,
		      uint64_t total);
/* Expose [buf, buf+len) to the peer for one operation of slot t. */
int vd_ofi_zc_expose(struct vd_ofi_conn *c, struct vd_ofi_tx *t, void *buf, size_t len,
		     uint64_t access, struct vd_ofi_zc *out);
void vd_ofi_zc_unexpose(struct vd_ofi_nic *on, struct vd_ofi_tx *t);
void vd_ofi_zc_unexpose_all(struct vd_ofi_conn *c);
/* Target: keep region `h` from being deregistered; call before the TPT
 * check of the transfer (see place_begin), undone when it completes. */
void vd_ofi_zc_hold(struct vd_ofi_nic *on, VIP_MEM_HANDLE h);
void vd_ofi_zc_release(struct vd_ofi_nic *on, VIP_MEM_HANDLE h);
/* Target: move len bytes between `local` (in held region h) and the
 * peer's exposed buffer at offset off: fi_read (pull) or fi_write
 * (push).  0, -EAGAIN (retry later) or another error; counted in
 * c->zc_out (and run's, if any) until the completion
 * (vd_ofi_zc_complete) releases h. */
int vd_ofi_zc_move(struct vd_ofi_conn *c, bool pull, void *local, size_t len,
		   VIP_MEM_HANDLE h, const struct vd_ofi_zc *z, uint64_t off,
		   struct vd_ofi_zc_run *run);
void vd_ofi_zc_complete(struct vd_ofi_op *op, int err);
/* The fabric could not take a transfer now: kick c on the next pass. */
void vd_ofi_zc_retry(struct vd_ofi_conn *c);
bool vd_ofi_zc_busy(struct vd_ofi_nic *on, uint32_t idx);

/* ofi_cq.c */
int vd_ofi_cq_open(struct vd_cq *cq);
void vd_ofi_cq_close(struct vd_cq *cq);
int vd_ofi_cq_pop(struct vd_cq *cq, uint64_t *vi_bits, bool *recv);
int vd_ofi_cq_push_local(struct vd_cq *cq, struct vd_vi *vi, bool recv);
int vd_ofi_cq_sleep(struct vd_cq *cq, uint64_t deadline_ns, bool rings);
bool vd_ofi_cq_ready(struct vd_cq *cq);
/* ofi_addr.c: VIADUCT_OFI_IFACE (a name or an IPv4 address), else the
 * first IPv4 address of an interface that is up and not loopback, else
 * 127.0.0.1. */
int vd_ofi_pick_iface(char *ip, size_t room, uint8_t host[VD_OFI_ADDR_LEN]);
int vd_ofi_cq_arm(struct vd_cq *cq, struct vd_waitv *w, void **armed);
void vd_ofi_cq_disarm(struct vd_cq *cq, void *armed, bool timed_out);
void vd_ofi_handoff(struct vd_ofi_nic *on, int delta);
/* Unread ring messages of VIs whose receive queue feeds cq changed by
 * delta (viaduct_cq_wait_any wakes for them). */
void vd_ofi_cq_ring_count(struct vd_cq *cq, int delta);

/* ofi_ring.c: message rings (viaduct_ring_*) */
int vd_ofi_ring_send(struct vd_vi *vi, const void *hdr, uint32_t hlen, const void *data,
		     uint32_t len);
int vd_ofi_ring_peek(struct vd_vi *vi, const void **msg, uint32_t *len);
int vd_ofi_ring_release(struct vd_vi *vi);
/* A RING message is next in order (rq.lock held): into the ring. */
void vd_ofi_rx_ring(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h,
		    const uint8_t *p);
/* A RING_CREDIT arrived (progress lock held; no queue lock needed). */
void vd_ofi_ring_credit(struct vd_ofi_conn *c, uint64_t released);
/* The connection leaves its VI: its ring and unread messages go. */
void vd_ofi_ring_free(struct vd_ofi_conn *c);

#endif /* VIADUCT_OFI_H */
