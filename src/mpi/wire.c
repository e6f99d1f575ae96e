/* SPDX-License-Identifier: MIT */
/*
 * The engine's VIPL plumbing: a NIC per transport the rank uses (shm for
 * the peers of its node, ofi for the others: place.c), one VI per peer
 * (reliable delivery, viaduct flow control), made on the pair's first
 * message (wire_conn.c) or for every peer at MPI_Init, one CQ per NIC
 * for every receive queue on it; an idle rank sleeps on all its CQs at
 * once.  What waits for a peer's VI waits in the same queues as what
 * waits for ring space.
 * Messages go through the VI's message ring (viaduct_ring_send): the
 * sender copies header and payload into the peer's ring, the receiver
 * matches in place.  Descriptors carry only RDMA: a ring of send slots per
 * peer, and a few small receive buffers for the immediate data of
 * rendezvous writes, all in one registered pool.  Nothing here knows MPI
 * matching rules.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "engine.h"
#include "wire_conn.h"
#include "util/sys.h"

#define NSLOT 16                /* send slots per peer (RDMA) */
#define NRECV 16                /* receives for rendezvous immediates */
#define DESC_BYTES 64           /* control segment + two segments */
#define RBUF_BYTES 64           /* a receive's buffer (immediates only) */

enum slot_action { SLOT_IDLE = 0, SLOT_READ, SLOT_WRITE };   /* slots carry RDMA only */

struct slot {
	VIP_DESCRIPTOR *d;
	enum slot_action action;
	struct vd_req *req;
};

/* A message waiting for ring space: the header is copied; the payload
 * too, unless `ref` points at a send request's own buffer, which stays
 * untouched until the request completes (`done`, if set, on its way
 * out) -- a window of sends to a busy peer then costs no extra copy. */
struct queued_msg {
	struct queued_msg *next;
	uint32_t hlen, len;
	const void *ref;
	struct vd_req *done;
	uint8_t bytes[];
};

/* An RDMA to start once a slot frees. */
struct pending {
	enum slot_action action;
	size_t len;
	void *data;
	VIP_MEM_HANDLE lmh, rmh;
	uint64_t raddr;
	uint32_t imm;
	bool no_imm;                    /* a write without immediate data */
	struct vd_req *req;
	struct pending *next;
};

/* One NIC and what hangs off it. */
struct transport {
	VIP_NIC_HANDLE nic;
	VIP_CQ_HANDLE cq;
	uint8_t *pool;                  /* descriptors and immediates' buffers */
	size_t pool_len;
	VIP_MEM_HANDLE pool_mh;
	bool pin;                       /* message buffers are pinned: a
	                                 * fabric, or VIADUCT_MPI_PIN=1 */
};

struct peer {
	struct transport *t;
	VIP_VI_HANDLE vi;
	struct slot slot[NSLOT];
	unsigned s_post, s_reap;        /* ring of send slots in flight */
	VIP_DESCRIPTOR *rdesc[NRECV];
	uint8_t *rbuf[NRECV];
	struct pending *pend_head, **pend_tail;
	struct queued_msg *msg_head, **msg_tail;
	bool reaping;                   /* inside reap() */
	bool polling;                   /* inside poll_ring() */
	bool wanted;                    /* lazy: a connection was asked for */
	bool answered;                  /* nothing sent since the peer's last
	                                 * new message (vd_wire_answered) */
};

static struct {
	struct transport t[VD_T_N];
	VIP_CQ_HANDLE set[VD_T_N];      /* the CQs, for the idle wait */
	unsigned nset;
	struct peer *peers;             /* world size; [rank] unused */
	size_t eager_max[VD_T_N];       /* per transport of the peer */
	bool pin;                       /* VIADUCT_MPI_PIN=1 */
	/* CTSs sent whose RDMA write (and its immediate, on the CQ) has not
	 * arrived: while 0, the CQ is looked at only now and then. */
	unsigned imm_expected;
	unsigned net_imm_expected;      /* those of them to another host */
	/* Gets of ours across hosts not yet ended (vd_wire_get_out): the
	 * peer reads through our provider, which serves it at once while we
	 * poll (else the ofi service thread does, after 2 ms without a
	 * poll). */
	unsigned gets_out;
	unsigned cq_skipped;
	unsigned idle_ms;               /* idle_wait's bound */
	uint64_t net_heard_ns;          /* when a message last came from
	                                 * another host (vd_wire_heard_since) */
	bool lazy;                      /* VIADUCT_MPI_CONNECT=lazy */
	int *live;                      /* the peers with a VI, in the order
	                                 * they got it: progress looks at these */
	int nlive;
	unsigned nwaiting;              /* wanted, not yet connected */
} W;

/* The NIC of MPI_Alloc_mem's registrations: the node's, if open. */
VIP_NIC_HANDLE vd_mpi_nic(void)
{
	return W.t[VD_T_SHM].nic ? W.t[VD_T_SHM].nic : W.t[VD_T_OFI].nic;
}

size_t vd_eager_max(int peer)
{
	return W.eager_max[vd_place_via(peer)];
}

/* An eager message is one ring message, and eager goes up to the largest
 * by default.  Inside a host its two copies run on two cores at once and
 * beat get's one process_vm_readv: at 16 and 24 KiB, 2.8 and 2.4x the
 * windowed bandwidth and 0.5-0.6x the latency.  Across hosts a
 * rendezvous costs a round trip more.  The two limits are set apart
 * because fabrics differ (one with cheap RDMA may want a lower one). */
#define VD_EAGER_LIMIT (VIADUCT_RING_MAX_MSG - VD_MSG_SHORT)
#define VD_EAGER_DEFAULT VD_EAGER_LIMIT
#define VD_NET_EAGER_DEFAULT VD_EAGER_LIMIT
/* Up to this many ranks on a host, its connections get deep message
 * rings (VIADUCT_VI_DEEP_RING): 16 ranks that all talk to all hold 120
 * pairs x 2 directions x 512 KiB = 120 MiB of rings, as many as 32 ranks
 * with the ordinary 128 KiB ones.  Connections through the network get
 * them while no rank has more than this many peers there: each holds a
 * receive ring of its own, at most 8 MiB of them at 16. */
#define DEEP_RING_RANKS 16

/* ---- the pool ------------------------------------------------------------------ */

static int pool_init(struct transport *t, int npeers)
{
	size_t per = NSLOT * DESC_BYTES + NRECV * (DESC_BYTES + RBUF_BYTES);
	VIP_MEM_ATTRIBUTES ma = { NULL, VIP_FALSE, VIP_FALSE };
	void *p;

	t->pool_len = (per * (size_t)npeers + 4095) & ~(size_t)4095;
	if (!t->pool_len)
		return 0;
	p = mmap(NULL, t->pool_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	t->pool = p;
	if (VipRegisterMem(t->nic, t->pool, t->pool_len, &ma, &t->pool_mh) != VIP_SUCCESS) {
		munmap(t->pool, t->pool_len);
		t->pool = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Carve descriptors (64-byte aligned) and buffers for peer p. */
static void pool_carve(struct peer *p, uint8_t **cursor)
{
	for (int i = 0; i < NSLOT; i++) {
		p->slot[i].d = (VIP_DESCRIPTOR *)*cursor;
		*cursor += DESC_BYTES;
	}
	for (int i = 0; i < NRECV; i++) {
		p->rdesc[i] = (VIP_DESCRIPTOR *)*cursor;
		p->rbuf[i] = *cursor + DESC_BYTES;
		*cursor += DESC_BYTES + RBUF_BYTES;
	}
	p->pend_tail = &p->pend_head;
	p->msg_tail = &p->msg_head;
}

static void post_recv(struct peer *p, int i)
{
	VIP_DESCRIPTOR *d = p->rdesc[i];

	memset(d, 0, DESC_BYTES);
	d->CS.SegCount = 1;
	d->DS[0].Local.Data.Address = p->rbuf[i];
	d->DS[0].Local.Handle = p->t->pool_mh;
	d->DS[0].Local.Length = RBUF_BYTES;
	VipPostRecv(p->vi, d, p->t->pool_mh);
}

/* ---- connections ----------------------------------------------------------------- */

/* Peer r's VI is up: give it its receives, and let progress see it. */
static void adopt(int r, VIP_VI_HANDLE vi)
{
	struct peer *p = &W.peers[r];

	p->vi = vi;
	for (int i = 0; i < NRECV; i++)
		post_recv(p, i);
	W.live[W.nlive++] = r;
	if (p->wanted)
		W.nwaiting--;
}

/* Lazy: the VIs the connection threads made since the last look. */
static void adopt_new(void)
{
	int ranks[16];
	VIP_VI_HANDLE vis[16];
	int n;

	while ((n = vd_conn_take(ranks, vis, 16)) > 0)
		for (int i = 0; i < n; i++)
			adopt(ranks[i], vis[i]);
}

/* Lazy: a message or RDMA for a peer without a VI waits in its queues
 * until the VI comes (the first wish asks for it). */
static void want(struct peer *p, int peer)
{
	if (p->wanted)
		return;
	p->wanted = true;
	W.nwaiting++;
	vd_conn_want(peer);
}

/* Every pair connects peer to peer: all requests first, then all waits
 * (the provider advances every pending set-up while one waits). */
static int connect_all(void)
{
	uint8_t la[128], ra[128];
	VIP_VI_ATTRIBUTES attrs;
	VIP_VI_HANDLE *vi = calloc((size_t)vd_mpi.size, sizeof(*vi));
	int err = vi ? 0 : -ENOMEM;

	for (int r = 0; r < vd_mpi.size && !err; r++) {
		enum vd_transport k = vd_place_via(r);
		if (r == vd_mpi.rank)
			continue;
		err = vd_conn_vi_open(k, W.t[k].nic, W.t[k].cq, r, &vi[r]);
		if (!err && VipConnectPeerRequest(vi[r], vd_conn_addr(la, k, vd_mpi.rank, vd_mpi.rank, r),
						  vd_conn_addr(ra, k, r, r, vd_mpi.rank),
						  60000) != VIP_SUCCESS)
			err = -ECONNREFUSED;
	}
	for (int r = 0; r < vd_mpi.size && !err; r++)
		if (r != vd_mpi.rank && VipConnectPeerWait(vi[r], &attrs) != VIP_SUCCESS)
			err = -ECONNREFUSED;
	for (int r = 0; r < vd_mpi.size && !err; r++)
		if (r != vd_mpi.rank)
			adopt(r, vi[r]);
	free(vi);
	return err;
}

static void on_vipl_error(void *ctx, VIP_ERROR_DESCRIPTOR *e)
{
	(void)ctx;
	/* On the provider's thread: pairs with the release stores of the
	 * phase in init.c. */
	if (__atomic_load_n(&vd_mpi.phase, __ATOMIC_ACQUIRE) != VD_MPI_RUNNING)
		return;         /* peers leaving during finalize */
	if (e->ErrorCode == VIP_ERROR_CONN_LOST) {
		intptr_t r = (intptr_t)VipGetUserData(e->ViHandle) - 1;
		struct timespec pause = { 0, 300 * 1000 * 1000 };
		char msg[160], where[64];

		/* The launcher stops the job within milliseconds of the
		 * death and names the rank that died; give it the chance to
		 * tell the real story before this consequence is reported. */
		nanosleep(&pause, NULL);
		vd_place_where((int)r, where, sizeof(where));
		snprintf(msg, sizeof(msg),
			 "lost the connection to rank %ld %s (it died, or the link to it)",
			 (long)r, where);
		fprintf(stderr, "viaduct MPI: rank %d: %s\n", vd_mpi.rank, msg);
		vd_pmi_abort(MPI_ERR_OTHER, msg);
	} else if (e->ResourceCode == VIP_RESOURCE_VI) {
		/* Any other break of a VI (a receive queue found empty, an
		 * overrun) leaves its peer unreachable: end the job with the
		 * reason rather than wait on it forever. */
		intptr_t r = (intptr_t)VipGetUserData(e->ViHandle) - 1;
		char msg[160], where[64];

		vd_place_where((int)r, where, sizeof(where));
		snprintf(msg, sizeof(msg), "the connection to rank %ld %s broke (VIA error %d)",
			 (long)r, where, (int)e->ErrorCode);
		fprintf(stderr, "viaduct MPI: rank %d: %s\n", vd_mpi.rank, msg);
		vd_pmi_abort(MPI_ERR_INTERN, msg);
	}
}

/* Open transport k's NIC (and, with peers on it, its CQ and pool). */
static int transport_open(enum vd_transport k, int npeers)
{
	struct transport *t = &W.t[k];
	int err;

	if (VipOpenNic(k == VD_T_OFI ? "ofi" : "shm", &t->nic) != VIP_SUCCESS) {
		t->nic = NULL;
		fprintf(stderr, "viaduct MPI: rank %d: cannot open the VIPL NIC '%s'%s\n",
			vd_mpi.rank, k == VD_T_OFI ? "ofi" : "shm",
			k == VD_T_OFI ? " (some ranks are on other hosts, or "
					"VIADUCT_MPI_NET=ofi; VIADUCT_DEBUG=1 says why)" : "");
		return -ENODEV;
	}
	t->pin = k == VD_T_OFI || W.pin;        /* a fabric registers what it pins */
	VipErrorCallback(t->nic, NULL, on_vipl_error);
	if ((err = vd_place_local(k, t->nic)) || !npeers)
		return err;
	if (VipCreateCQ(t->nic, 65536, &t->cq) != VIP_SUCCESS) {
		t->cq = NULL;
		return -ENOMEM;
	}
	W.set[W.nset++] = t->cq;
	return pool_init(t, npeers);
}

/* VIADUCT_DEBUG=1: which peers each transport reaches (the first 64). */
static void report_transports(void)
{
	uint64_t dbg = 0;
	char line[VD_T_N][400];
	int len[VD_T_N] = { 0 }, count[VD_T_N] = { 0 };

	if (viaduct_param_uint("VIADUCT_DEBUG", 0, &dbg) || !dbg)
		return;
	for (int r = 0; r < vd_mpi.size; r++) {
		int k = r == vd_mpi.rank ? -1 : (int)vd_place_via(r);
		if (k < 0 || ++count[k] > 64)
			continue;
		len[k] += snprintf(line[k] + len[k], sizeof(line[k]) - (size_t)len[k], " %d", r);
	}
	for (int k = 0; k < VD_T_N; k++)
		line[k][len[k]] = '\0';
	fprintf(stderr, "viaduct MPI: rank %d: peers through shm:%s%s; through ofi:%s%s\n",
		vd_mpi.rank, count[0] ? line[0] : " none", count[0] > 64 ? " ..." : "",
		count[1] ? line[1] : " none", count[1] > 64 ? " ..." : "");
	fprintf(stderr, "viaduct MPI: rank %d: a blocking wait spins %llu us before it sleeps\n",
		vd_mpi.rank, (unsigned long long)(vd_spin_budget_ns() / 1000));
}

/* Every transport this rank reaches a peer through; shm alone when none
 * (a job of one: MPI_Alloc_mem still registers). */
static int transports_open(void)
{
	int npeers[VD_T_N] = { 0 }, err = 0;

	for (int r = 0; r < vd_mpi.size; r++)
		if (r != vd_mpi.rank)
			npeers[vd_place_via(r)]++;
	for (int k = 0; k < VD_T_N && !err; k++)
		if (npeers[k])
			err = transport_open((enum vd_transport)k, npeers[k]);
	if (!err && vd_mpi.size == 1)
		err = transport_open(VD_T_SHM, 0);
	if (!err)
		report_transports();
	return err;
}

int vd_wire_init(void)
{
	uint64_t emax = VD_EAGER_DEFAULT, net_emax = VD_NET_EAGER_DEFAULT, pin = 0, eager = 0;
	uint64_t deep = DEEP_RING_RANKS;
	uint8_t *cursor[VD_T_N];
	VIP_NIC_HANDLE nic[VD_T_N];
	VIP_CQ_HANDLE cq[VD_T_N];
	int err;

	/* In range (the registry's bounds are the ring's): checked at init. */
	if (viaduct_param_uint("VIADUCT_MPI_EAGER_MAX", VD_EAGER_DEFAULT, &emax) ||
	    viaduct_param_uint("VIADUCT_MPI_NET_EAGER_MAX", VD_NET_EAGER_DEFAULT, &net_emax) ||
	    viaduct_param_uint("VIADUCT_MPI_PIN", 0, &pin) ||
	    viaduct_param_uint("VIADUCT_MPI_CONNECT", 0, &eager) ||
	    viaduct_param_uint("VIADUCT_MPI_DEEP_RING_RANKS", DEEP_RING_RANKS, &deep))
		return -EINVAL;
	W.pin = pin == 1;
	W.lazy = eager == 0;
	W.idle_ms = 1;
	W.eager_max[VD_T_SHM] = emax > VD_EAGER_LIMIT ? VD_EAGER_LIMIT : (size_t)emax;
	W.eager_max[VD_T_OFI] = net_emax > VD_EAGER_LIMIT ? VD_EAGER_LIMIT : (size_t)net_emax;
	if ((err = vd_place_init()))
		return err;
	W.peers = calloc((size_t)vd_mpi.size, sizeof(*W.peers));
	W.live = calloc((size_t)vd_mpi.size, sizeof(*W.live));
	if (!W.peers || !W.live)
		return -ENOMEM;
	if ((err = transports_open()) || vd_mpi.size == 1)
		return err;
	if ((err = vd_place_exchange()))
		return err;
	vd_conn_deep_rings((uint64_t)vd_place_local_ranks() <= deep, vd_place_net_peers_max() <= deep);
	for (int k = 0; k < VD_T_N; k++)
		cursor[k] = W.t[k].pool;
	for (int r = 0; r < vd_mpi.size; r++) {
		struct peer *p = &W.peers[r];
		if (r == vd_mpi.rank)
			continue;
		p->t = &W.t[vd_place_via(r)];
		pool_carve(p, &cursor[vd_place_via(r)]);
	}
	if (!W.lazy)
		return connect_all();
	for (int k = 0; k < VD_T_N; k++) {
		nic[k] = W.t[k].nic;
		cq[k] = W.t[k].cq;
	}
	return vd_conn_start(nic, cq);
}

/* VIADUCT_DEBUG=1: how many VIs this rank had (the tests count them). */
static void report_connections(void)
{
	uint64_t dbg = 0;

	if (viaduct_param_uint("VIADUCT_DEBUG", 0, &dbg) || !dbg || !W.peers)
		return;
	fprintf(stderr, "viaduct MPI: rank %d: %d connections (%s)\n", vd_mpi.rank, W.nlive,
		W.lazy ? "lazy" : "eager");
}

/* What never went out (a job ending with sends no one received). */
static void drop_queued(struct peer *p)
{
	while (p->msg_head) {
		struct queued_msg *q = p->msg_head;
		p->msg_head = q->next;
		vd_payload_free(q);
	}
	while (p->pend_head) {
		struct pending *q = p->pend_head;
		p->pend_head = q->next;
		free(q);
	}
}

void vd_wire_finalize(void)
{
	if (W.lazy && W.peers && vd_mpi.size > 1)
		vd_conn_stop();
	report_connections();
	for (int r = 0; W.peers && r < vd_mpi.size; r++) {
		drop_queued(&W.peers[r]);
		if (!W.peers[r].vi)
			continue;
		VipDisconnect(W.peers[r].vi);
		VipDestroyVi(W.peers[r].vi);
	}
	for (int k = 0; k < VD_T_N; k++) {
		struct transport *t = &W.t[k];
		if (t->cq)
			VipDestroyCQ(t->cq);
		if (t->pool) {
			VipDeregisterMem(t->nic, t->pool, t->pool_mh);
			munmap(t->pool, t->pool_len);
		}
		if (t->nic)
			VipCloseNic(t->nic);
	}
	vd_place_finalize();
	free(W.peers);
	free(W.live);
	memset(&W, 0, sizeof(W));
}

/* ---- registration -------------------------------------------------------------------- */

/* Say once why a message buffer could not be registered, with numbers. */
static void pin_failed(const struct transport *t, size_t len)
{
	static bool said;
	struct rlimit rl;

	if (said || getrlimit(RLIMIT_MEMLOCK, &rl))
		return;
	said = true;
	fprintf(stderr, "viaduct MPI: rank %d: cannot register a %zu-byte message buffer%s: "
		"RLIMIT_MEMLOCK is %llu bytes.  Raise it (ulimit -l, or memlock in "
		"/etc/security/limits.conf)%s.\n", vd_mpi.rank, len,
		t == &W.t[VD_T_OFI] ? " with the fabric" : W.pin ? " pinned (VIADUCT_MPI_PIN=1)" : "",
		(unsigned long long)rl.rlim_cur,
		t != &W.t[VD_T_OFI] && W.pin ? ", or unset VIADUCT_MPI_PIN: this provider needs no pins" : "");
}

int vd_wire_register(enum vd_transport k, void *addr, size_t len, bool rdma_read,
		     bool rdma_write, VIP_MEM_HANDLE *mh)
{
	struct transport *t = &W.t[k];
	VIP_MEM_ATTRIBUTES ma = { NULL, rdma_write ? VIP_TRUE : VIP_FALSE,
				  rdma_read ? VIP_TRUE : VIP_FALSE };

	VIP_RETURN r;

	if (!len)
		len = 1;
	/* The shm provider copies by virtual address: a pin would only count
	 * against RLIMIT_MEMLOCK (8 MiB by default for users). */
	r = t->pin ? VIP_INVALID_PARAMETER
		   : viaduct_register_mem_unpinned(t->nic, addr, len, &ma, mh);
	if (r == VIP_INVALID_PARAMETER)
		r = VipRegisterMem(t->nic, addr, len, &ma, mh);
	if (r != VIP_SUCCESS)
		pin_failed(t, len);
	return r == VIP_SUCCESS ? 0 : -ENOMEM;
}

void vd_wire_deregister(enum vd_transport k, void *addr, VIP_MEM_HANDLE mh)
{
	VipDeregisterMem(W.t[k].nic, addr, mh);
}

/* p is reached through the fabric (another host). */
static bool over_fabric(const struct peer *p)
{
	return p->t == &W.t[VD_T_OFI];
}

/* ---- send slots -------------------------------------------------------------------------- */

/* A reaped slot's follow-up (RDMA completions call back into the
 * protocol, which may send: the slot is already free by then). */
static void slot_done(struct vd_req *r, enum slot_action a, uint32_t status)
{
	if (!r)
		return;
	if (a == SLOT_READ)
		vd_proto_read_done(r, status & VIP_STATUS_ERROR_MASK ? -EIO : 0);
	else if (a == SLOT_WRITE)
		vd_proto_write_done(r, status & VIP_STATUS_ERROR_MASK ? -EIO : 0);
}

/* Reap the send queue of p in order; the number of transfers that
 * ended (progress, as arrivals are: a wait that sees reads and writes
 * complete keeps polling).  Not re-entrant: a callback that sends while
 * the ring is full queues its message (slot_take() finds no slot)
 * instead of reaping from inside this loop, which would attribute
 * completions to the wrong slots. */
static int reap(struct peer *p)
{
	VIP_DESCRIPTOR *d;
	int n = 0;

	if (p->reaping)
		return 0;
	p->reaping = true;
	while (p->s_reap != p->s_post) {
		VIP_RETURN rc = VipSendDone(p->vi, &d);
		if ((rc != VIP_SUCCESS && rc != VIP_DESCRIPTOR_ERROR) || !d)
			break;
		struct slot *s = &p->slot[p->s_reap % NSLOT];
		struct vd_req *r = s->req;
		enum slot_action a = s->action;
		s->req = NULL;
		s->action = SLOT_IDLE;
		p->s_reap++;
		slot_done(r, a, d->CS.Status);
		n++;
	}
	p->reaping = false;
	return n;
}

static struct slot *slot_take(struct peer *p)
{
	if (p->s_post - p->s_reap >= NSLOT)
		reap(p);
	if (p->s_post - p->s_reap >= NSLOT)
		return NULL;
	return &p->slot[p->s_post % NSLOT];
}

static void slot_post(struct peer *p, struct slot *s)
{
	p->s_post++;
	VipPostSend(p->vi, s->d, p->t->pool_mh);
}

static void fill_rdma(struct slot *s, const struct pending *q)
{
	VIP_DESCRIPTOR *d = s->d;

	memset(d, 0, DESC_BYTES);
	d->CS.SegCount = 2;
	d->CS.Control = q->action == SLOT_READ ? VIP_CONTROL_OP_RDMAREAD
			 : q->no_imm ? VIP_CONTROL_OP_RDMAWRITE
				     : VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE;
	d->CS.ImmediateData = q->imm;
	d->CS.Length = (VIP_UINT32)q->len;
	d->DS[0].Remote.Data.AddressBits = q->raddr;
	d->DS[0].Remote.Handle = q->rmh;
	d->DS[1].Local.Data.Address = q->data;
	d->DS[1].Local.Handle = q->lmh;
	d->DS[1].Local.Length = (VIP_UINT32)q->len;
	s->action = q->action;
	s->req = q->req;
}

static void start(struct peer *p, struct slot *s, struct pending *q)
{
	fill_rdma(s, q);
	slot_post(p, s);
}

/* Pending work of p, in order, while slots are free. */
static int drain(struct peer *p)
{
	struct slot *s;
	int n = 0;

	while (p->pend_head && (s = slot_take(p))) {
		struct pending *q = p->pend_head;
		p->pend_head = q->next;
		if (!p->pend_head)
			p->pend_tail = &p->pend_head;
		start(p, s, q);
		free(q);
		n++;
	}
	return n;
}

/* A copy of q behind p's pending work, started by a later progress. */
static int pend(struct peer *p, const struct pending *q)
{
	struct pending *c = malloc(sizeof(*c));

	if (!c)
		return -ENOMEM;
	*c = *q;
	c->next = NULL;
	*p->pend_tail = c;
	p->pend_tail = &c->next;
	return 0;
}

/* Start q now if nothing is queued before it and a slot is free; else
 * queue a copy. */
static int submit(int peer, struct pending *q)
{
	struct peer *p = &W.peers[peer];
	struct slot *s = p->pend_head || !p->vi ? NULL : slot_take(p);

	if (!p->vi)
		want(p, peer);
	if (s) {
		start(p, s, q);
		return 0;
	}
	return pend(p, q);
}

/* ---- messages ------------------------------------------------------------------------ */

static int queue_msg(struct peer *p, const void *hdr, size_t hlen, const void *payload,
		     size_t len, bool by_ref, struct vd_req *done)
{
	/* From the payload cache: messages that wait for ring space come and
	 * go a window at a time (req.c). */
	struct queued_msg *q = vd_payload_alloc(sizeof(*q) + hlen + (by_ref ? 0 : len));

	if (!q)
		return -ENOMEM;
	q->next = NULL;
	q->hlen = (uint32_t)hlen;
	q->len = (uint32_t)len;
	q->ref = by_ref ? payload : NULL;
	q->done = done;
	memcpy(q->bytes, hdr, hlen);
	if (len && !by_ref)
		memcpy(q->bytes + hlen, payload, len);
	*p->msg_tail = q;
	p->msg_tail = &q->next;
	return 0;
}

/* Queued messages of p, in order, while its ring has room. */
static int drain_msgs(struct peer *p)
{
	int n = 0;

	while (p->msg_head) {
		struct queued_msg *q = p->msg_head;
		const void *payload = q->ref ? q->ref : q->bytes + q->hlen;
		if (viaduct_ring_send(p->vi, q->bytes, q->hlen, payload, q->len) != VIP_SUCCESS)
			break;          /* full (or gone: the error callback says) */
		p->msg_head = q->next;
		if (!p->msg_head)
			p->msg_tail = &p->msg_head;
		if (q->done)
			vd_req_complete(q->done, MPI_SUCCESS);
		vd_payload_free(q);
		n++;
	}
	return n;
}

/* Into the ring now, behind nothing queued: true. */
static bool send_now(struct peer *p, int peer, const struct vd_msg *m, size_t hlen,
		     const void *payload, size_t len)
{
	if (!p->vi) {
		want(p, peer);
		return false;
	}
	return !p->msg_head && viaduct_ring_send(p->vi, m, (VIP_UINT32)hlen, payload,
						 (VIP_UINT32)len) == VIP_SUCCESS;
}

/* A message of the sender's own, not an answer to the other's (CTS,
 * DONE, SYNC_ACK, nor the rest of one already begun). */
static bool begins_message(uint8_t type)
{
	return type == VD_MSG_EAGER || type == VD_MSG_EAGER_TINY || type == VD_MSG_RTS_GET ||
	       type == VD_MSG_RTS_RNDV;
}

/* Now, or queued (1) with the payload copied or by reference. */
static int wire_send(int peer, const struct vd_msg *m, const void *payload, size_t len,
		     bool by_ref, struct vd_req *done)
{
	struct peer *p = &W.peers[peer];
	size_t hlen = vd_msg_hdr_len(m->type);
	int err;

	if (hlen + len > VIADUCT_RING_MAX_MSG)
		return -EMSGSIZE;
	if (begins_message(m->type))
		p->answered = false;
	if (send_now(p, peer, m, hlen, payload, len)) {
		err = 0;
	} else if ((err = queue_msg(p, m, hlen, payload, len, by_ref, done)) == 0) {
		err = 1;
	}
	/* Counted once sent or queued: a CTS that failed (no memory) would
	 * keep the CQ looked at, and waits polling, for good. */
	if (err >= 0 && m->type == VD_MSG_CTS) {
		W.imm_expected++;
		W.net_imm_expected += over_fabric(p);
	}
	return err;
}

int vd_wire_send(int peer, const struct vd_msg *m, const void *payload, size_t len)
{
	int err = wire_send(peer, m, payload, len, false, NULL);

	return err < 0 ? err : 0;
}

int vd_wire_send_direct(int peer, const struct vd_msg *m, const void *payload, size_t len)
{
	struct peer *p = &W.peers[peer];
	size_t hlen = vd_msg_hdr_len(m->type);

	if (hlen + len > VIADUCT_RING_MAX_MSG)
		return -EMSGSIZE;
	if (!send_now(p, peer, m, hlen, payload, len))
		return -EAGAIN;
	if (begins_message(m->type))
		p->answered = false;
	return 0;
}

int vd_wire_send_ref(int peer, const struct vd_msg *m, const void *payload, size_t len,
		     struct vd_req *done)
{
	return wire_send(peer, m, payload, len, true, done);
}

int vd_wire_rdma_read(int peer, struct vd_req *r, void *data, VIP_MEM_HANDLE lmh,
		      uint64_t raddr, VIP_MEM_HANDLE rmh, size_t len)
{
	struct pending q = { .action = SLOT_READ, .data = data, .lmh = lmh,
			     .raddr = raddr, .rmh = rmh, .len = len, .req = r };

	return submit(peer, &q);
}

int vd_wire_rdma_read_later(int peer, struct vd_req *r, void *data, VIP_MEM_HANDLE lmh,
			    uint64_t raddr, VIP_MEM_HANDLE rmh, size_t len)
{
	struct pending q = { .action = SLOT_READ, .data = data, .lmh = lmh,
			     .raddr = raddr, .rmh = rmh, .len = len, .req = r };
	struct peer *p = &W.peers[peer];

	if (!p->vi)
		want(p, peer);
	return pend(p, &q);
}

int vd_wire_rdma_write_imm(int peer, struct vd_req *r, const void *data,
			   VIP_MEM_HANDLE lmh, uint64_t raddr, VIP_MEM_HANDLE rmh,
			   size_t len, uint32_t imm)
{
	struct pending q = { .action = SLOT_WRITE, .data = (void *)data, .lmh = lmh,
			     .raddr = raddr, .rmh = rmh, .len = len, .imm = imm, .req = r };

	return submit(peer, &q);
}

int vd_wire_rdma_write(int peer, struct vd_req *r, const void *data, VIP_MEM_HANDLE lmh,
		       uint64_t raddr, VIP_MEM_HANDLE rmh, size_t len)
{
	struct pending q = { .action = SLOT_WRITE, .data = (void *)data, .lmh = lmh,
			     .raddr = raddr, .rmh = rmh, .len = len, .no_imm = true, .req = r };

	return submit(peer, &q);
}

/* ---- progress ------------------------------------------------------------------------------ */

/* A rendezvous write's immediate consumed receive d of peer. */
static void imm_arrived(int peer, VIP_DESCRIPTOR *d)
{
	struct peer *p = &W.peers[peer];
	size_t i = (size_t)((uint8_t *)d - (uint8_t *)p->rdesc[0]) / (DESC_BYTES + RBUF_BYTES);
	uint32_t st = d->CS.Status;

	if (i >= NRECV || p->rdesc[i] != d)
		return;                 /* not ours: cannot happen */
	if (st & VIP_STATUS_ERROR_MASK) {
		if (st & VIP_STATUS_DESC_FLUSHED_ERROR)
			return;         /* connection gone (finalize) */
		vd_pmi_abort(MPI_ERR_INTERN, "viaduct MPI: receive failed");
	}
	if ((st & VIP_STATUS_OP_MASK) == VIP_STATUS_OP_REMOTE_RDMA_WRITE) {
		if (W.imm_expected)
			W.imm_expected--;
		if (over_fabric(p) && W.net_imm_expected)
			W.net_imm_expected--;
		vd_proto_rdma_written(d->CS.ImmediateData);
	}
	post_recv(p, (int)i);
}

static void handle_event(VIP_VI_HANDLE vh)
{
	intptr_t peer = (intptr_t)VipGetUserData(vh) - 1;
	VIP_DESCRIPTOR *d;

	if (peer < 0 || peer >= vd_mpi.size)
		return;
	/* The CQ entry may run a moment ahead of the descriptor. */
	for (int spins = 0; spins < 1000; spins++) {
		VIP_RETURN rc = VipRecvDone(vh, &d);
		if (rc == VIP_NOT_DONE)
			continue;
		if (d)
			imm_arrived((int)peer, d);
		return;
	}
}

/* One ring message: the header, then the payload, matched in place
 * (a malformed one is dropped). */
static void msg_arrived(int peer, const uint8_t *msg, size_t len)
{
	struct vd_msg m;
	size_t hlen;

	if (!vd_msg_parse(msg, len, &m, &hlen))
		return;
	if (begins_message(m.type))
		W.peers[peer].answered = true;  /* the conversation has turned */
	vd_proto_arrived(peer, &m, msg + hlen, len - hlen);
}

bool vd_wire_answered(int peer)
{
	return W.peers[peer].answered;
}

/* Everything in peer's ring.  Not re-entrant: a message is released
 * before the next peek, and a callback that progresses meanwhile must not
 * see it again. */
static int poll_ring(struct peer *p, int peer)
{
	const void *msg;
	VIP_UINT32 len;
	int n = 0;

	if (p->polling)
		return 0;
	p->polling = true;
	/* Each next releases the message before (after the last, the
	 * ring's end is a failed peek, as before). */
	while (viaduct_ring_next(p->vi, &msg, &len) == VIP_SUCCESS) {
		msg_arrived(peer, msg, len);
		n++;
	}
	p->polling = false;
	return n;
}

static int progress_peer(struct peer *p, int peer)
{
	int n = 0;

	if (p->s_post != p->s_reap)
		n += reap(p);
	if (p->pend_head)
		n += drain(p);
	if (p->msg_head)
		n += drain_msgs(p);
	int got = poll_ring(p, peer);

	/* A clock read per burst of arrivals from another host: each
	 * costs microseconds of the fabric already. */
	if (got && over_fabric(p))
		W.net_heard_ns = vd_now_ns();
	return n + got;
}

/* Nothing arrived: sleep until a message or completion may have, unless
 * our own messages wait for ring space (no bell rings for that). */
/* The sleep is bounded all the same (a look at everything now and then),
 * the bound doubling from 1 ms to 16 ms while nothing comes: a rank that
 * waits long costs almost no CPU (it woke 1000 times a second, 4% of a
 * CPU, before). */
#define IDLE_MS_MAX 16u

static void idle_wait(void)
{
	for (int i = 0; i < W.nlive; i++) {
		if (W.peers[W.live[i]].msg_head) {
			sched_yield();
			return;
		}
	}
	/* A connection we wait for comes from another thread, which rings
	 * no bell: look often. */
	if (W.nwaiting) {
		vd_conn_check();
		W.idle_ms = 1;
	}
	/* Read under the lock: the sleep below may run without it. */
	unsigned ms = W.idle_ms, nset = W.nset;
	int saved;
	VIP_RETURN rc;

	/* MPI_THREAD_MULTIPLE: one thread sleeps in the CQs, without the
	 * lock; the others wait for what it (or anyone) completes. */
	if (!vd_lock_sleep_begin(&saved)) {
		vd_lock_wait_progress(ms);
		return;
	}
	/* W.set is written once, at MPI_Init. */
	/* The caller has spun for its own budget (VIADUCT_MPI_SPIN_US):
	 * a second spin here would double it, and ignore the smaller one
	 * of an oversubscribed host. */
	rc = viaduct_cq_sleep_set(W.set, nset, ms);
	vd_lock_sleep_end(saved);
	if (rc == VIP_TIMEOUT && W.idle_ms < IDLE_MS_MAX)
		W.idle_ms *= 2;
}

static int progress_wire(bool block)
{
	VIP_VI_HANDLE vh;
	VIP_BOOLEAN recv;
	int n = 0;

	if (vd_mpi.size == 1 || !W.nset)
		return 0;
	if (W.lazy)
		adopt_new();
	for (int i = 0; i < W.nlive; i++)
		n += progress_peer(&W.peers[W.live[i]], W.live[i]);
	/* Only immediates (and flushes at the end) arrive there. */
	if (!W.imm_expected && ++W.cq_skipped < 64 && !block)
		return n;
	W.cq_skipped = 0;
	for (unsigned k = 0; k < W.nset; k++) {
		while (VipCQDone(W.set[k], &vh, &recv) == VIP_SUCCESS) {
			handle_event(vh);
			n++;
		}
	}
	if (n) {
		W.idle_ms = 1;
		vd_lock_progressed();
	} else if (block)
		idle_wait();
	return n;
}

/* The wire, then the nonblocking collectives' schedules: what arrived
 * may let them go on. */
int vd_progress(bool block)
{
	int n = progress_wire(block);

	return n + vd_nbc_progress();
}

void vd_wire_get_out(int delta)
{
	W.gets_out += (unsigned)delta;
}

bool vd_wire_moving(void)
{
	if (W.net_imm_expected || W.gets_out)
		return true;
	for (int i = 0; i < W.nlive; i++) {
		struct peer *p = &W.peers[W.live[i]];

		if (over_fabric(p) && p->s_post != p->s_reap)
			return true;
	}
	return false;
}

bool vd_wire_heard_since(uint64_t since_ns)
{
	return W.net_heard_ns >= since_ns;
}

bool vd_wire_busy(void)
{
	for (int r = 0; W.peers && r < vd_mpi.size; r++)
		if (W.peers[r].pend_head || W.peers[r].msg_head ||
		    W.peers[r].s_post != W.peers[r].s_reap)
			return true;
	return false;
}

void vd_wire_flush(void)
{
	for (unsigned i = 1; vd_wire_busy(); i++) {
		vd_progress(false);
		if (W.nwaiting && !(i % 1024))
			vd_conn_check();
	}
}
