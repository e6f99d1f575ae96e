/* SPDX-License-Identifier: MIT */
/*
 * ofi provider: the fabric (open, endpoints, receive buffers), the
 * progress engine and its service thread, memory registration (the
 * interface, capabilities and name service: ofi_addr.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "prov/ofi/ofi.h"
#include "util/copy.h"

#define OFI_API FI_VERSION(1, 17)

/* ---- fabric ---------------------------------------------------------------------------- */

static struct fi_info *hints_make(const char *prov, uint64_t caps)
{
	struct fi_info *h = vd_fi.dupinfo(NULL);

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = caps;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	/* Messages between two endpoints arrive in the order sent: the
	 * target places chunks and operations in sequence. */
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	h->addr_format = FI_SOCKADDR_IN;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	if (prov && *prov)
		h->fabric_attr->prov_name = strdup(prov);
	return h;
}

/* Defaults for libfabric's own settings, each only where the user set
 * none, before libfabric first reads them.
 * FI_OFI_RXM_EAGER_LIMIT: rxm over tcp sends a message of up to this
 * size in one piece, anything larger by segments or its own rendezvous.  Left at
 * its 16 KiB, every message of ours above that (a ring message with a
 * 16 KiB MPI payload, a 32 KiB chunk) took the slow path: 16 KiB MPI
 * messages between namespace hosts took 4.2x as long as 4 KiB ones, 1.5x
 * with every message of ours (VD_OFI_MSG_MAX) under the limit.  Raising
 * FI_OFI_RXM_BUFFER_SIZE instead does as well but doubles rxm's bounce
 * buffers (61 to 109 MiB resident per rank).
 * FI_OFI_RXM_MSG_RX_SIZE: left
 * unset, rxm over tcp (libfabric 1.17) sizes the receive queue of its
 * connections from the tcp provider's far larger one and fills it with
 * bounce buffers: 165 MiB resident per rank at MPI_Init, against 62 MiB
 * with rxm's documented default of 128 -- twice the sends a VI keeps in
 * flight (VD_OFI_TX_WINDOW), so the queue never runs dry for us. */
static void fabric_env_set(void)
{
	char buf[24];

	setenv("FI_OFI_RXM_MSG_RX_SIZE", "128", 0);
	snprintf(buf, sizeof(buf), "%zu", (size_t)VD_OFI_MSG_MAX);
	setenv("FI_OFI_RXM_EAGER_LIMIT", buf, 0);
}

static void fabric_env_defaults(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, fabric_env_set);
}

/* The first provider that is not node-local (shm).  Where that is tcp
 * under rxm and the user named none: libfabric's native RDM over TCP
 * ("net", which libfabric 1.18 made its tcp provider) if offered -- one
 * layer less on every message (8-byte MPI half round trip between two
 * namespace hosts 8.0 against 13.0 us, 1 MiB windowed bandwidth 4.2
 * against 3.9 GB/s).  Its wire protocol is not rxm's: every rank of a
 * job must make the same choice, as they do with the same libfabric. */
static struct fi_info *pick(struct fi_info *all, bool named)
{
	struct fi_info *i, *first = NULL;

	for (i = all; i && !first; i = i->next)
		if (!strstr(i->fabric_attr->prov_name, "shm"))
			first = i;
	if (named || !first || strcmp(first->fabric_attr->prov_name, "tcp;ofi_rxm") != 0)
		return first ? first : all;
	for (i = all; i; i = i->next)
		if (strcmp(i->fabric_attr->prov_name, "net") == 0)
			return i;
	return first;
}

/* The libfabric provider: "ofi:<name>", else VIADUCT_OFI_PROVIDER, else
 * the one pick() takes from what libfabric offers; with RMA
 * (zero-copy transfers) where it has it.  Endpoints after the first take
 * what the first got. */
static int info_get(struct vd_ofi_nic *on, const char *spec, const char *service,
		    struct fi_info **out)
{
	const char *prov = *spec ? spec : getenv("VIADUCT_OFI_PROVIDER");
	bool first = !on->info;
	uint64_t caps = first || on->zc ? FI_MSG | FI_RMA : FI_MSG;
	struct fi_info *all = NULL, *i;
	int r;

	fabric_env_defaults();
	for (;;) {
		struct fi_info *h = hints_make(prov, caps);
		if (!h)
			return -ENOMEM;
		if (!first) {
			free(h->fabric_attr->prov_name);
			h->fabric_attr->prov_name = strdup(on->info->fabric_attr->prov_name);
		}
		r = vd_fi.getinfo(OFI_API, on->iface_ip, service, FI_SOURCE, h, &all);
		vd_fi.freeinfo(h);
		if (r != -FI_ENODATA || !first || caps == FI_MSG)
			break;
		caps = FI_MSG;
	}
	if (r) {
		fprintf(stderr, "viaduct: ofi: no libfabric provider%s%s for %s: %s\n",
			prov && *prov ? " " : "", prov && *prov ? prov : "",
			on->iface_ip, vd_fi.strerror(-r));
		return r == -FI_ENODATA ? -ENODEV : -EIO;
	}
	i = pick(all, prov && *prov);
	*out = vd_fi.dupinfo(i);
	vd_fi.freeinfo(all);
	if (first && *out) {
		uint64_t zc_min = VD_OFI_ZC_MIN;
		(void)viaduct_param_uint("VIADUCT_OFI_ZC_MIN", VD_OFI_ZC_MIN, &zc_min);
		on->zc_min = zc_min;
		on->zc = (caps & FI_RMA) && (*out)->domain_attr->mr_key_size <= 8 && zc_min;
		on->zc_ordered = ((*out)->tx_attr->msg_order & (FI_ORDER_RAR | FI_ORDER_WAW)) ==
				 (FI_ORDER_RAR | FI_ORDER_WAW);
		/* libfabric's order flags say how operations are processed,
		 * not that a write's data is in place: only net (tcp from
		 * 1.18), one TCP stream per peer placed in sequence, is known
		 * to place it before a later message. */
		on->zc_done_early = on->zc_ordered &&
				    ((*out)->tx_attr->msg_order & FI_ORDER_SAW) &&
				    strcmp((*out)->fabric_attr->prov_name, "net") == 0;
	}
	return *out ? 0 : -ENOMEM;
}

/* libfabric's net provider (1.17) sets a signal in its progress
 * engine's poll set that only its own progress thread, or a counter's
 * wait, ever clears: under manual progress the CQ's fd stays readable
 * and a thread that sleeps on it spins.  A counter of every completion
 * (FI_WAIT_NONE, so that net's own wait serves it) is the sleep there:
 * fi_cntr_wait for one more completion progresses, clears the signal
 * and blocks in the engine's poll set. */
static int wake_cntr_open(struct vd_ofi_nic *on)
{
	struct fi_cntr_attr a = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE };

	if (strcmp(on->info->fabric_attr->prov_name, "net") != 0)
		return 0;
	return fi_cntr_open(on->domain, &a, &on->wake_cntr, NULL) ? -EIO : 0;
}

static int cq_open(struct vd_ofi_nic *on)
{
	struct fi_cq_attr a = { .format = FI_CQ_FORMAT_DATA, .size = 4096,
				.wait_obj = FI_WAIT_FD };
	int r = fi_cq_open(on->domain, &a, &on->cq, NULL);

	on->wait_fd = -1;
	if (r == 0 && fi_control(&on->cq->fid, FI_GETWAIT, &on->wait_fd) == 0)
		return 0;
	if (r == 0)
		fi_close(&on->cq->fid);
	/* No fd to sleep on: poll in short slices (vd_ofi_progress). */
	a.wait_obj = FI_WAIT_NONE;
	return fi_cq_open(on->domain, &a, &on->cq, NULL) ? -EIO : 0;
}

static int fabric_open(struct vd_ofi_nic *on)
{
	struct fi_av_attr av = { .type = FI_AV_TABLE };

	if (vd_fi.fabric(on->info->fabric_attr, &on->fabric, NULL) ||
	    fi_domain(on->fabric, on->info, &on->domain, NULL))
		return -EIO;
	on->mr_mode = (uint64_t)on->info->domain_attr->mr_mode;
	/* VIADUCT_OFI_MR_LOCAL=1 registers local buffers on fabrics that do
	 * not ask for it too: how that path is tested on tcp. */
	uint64_t force = 0;
	(void)viaduct_param_uint("VIADUCT_OFI_MR_LOCAL", 0, &force);
	on->mr_local = (on->mr_mode & FI_MR_LOCAL) || force;
	on->key_size = on->info->domain_attr->mr_key_size;
	if (fi_av_open(on->domain, &av, &on->av, NULL))
		return -EIO;
	return cq_open(on) ? -EIO : wake_cntr_open(on);
}

/* ---- receive buffers -------------------------------------------------------------------- */

/* A message buffer; registered with the fabric (bound to ep) where it
 * wants local buffers registered. */
static struct vd_ofi_op *op_alloc(struct vd_ofi_nic *on, struct fid_ep *ep)
{
	struct vd_ofi_op *op = calloc(1, sizeof(struct vd_ofi_op) + VD_OFI_MSG_MAX);
	int r;

	if (!op || !on->mr_local)
		return op;
	pthread_mutex_lock(&on->fab_lock);
	r = vd_ofi_mr_make(on, ep, op->buf, VD_OFI_MSG_MAX, FI_SEND | FI_RECV, &op->mr);
	pthread_mutex_unlock(&on->fab_lock);
	if (r) {
		vd_log("ofi: registering a message buffer: %s", vd_fi.strerror(-r));
		free(op);
		return NULL;
	}
	op->desc = fi_mr_desc(op->mr);
	return op;
}

static void op_free(struct vd_ofi_op *op)
{
	if (op && op->mr)
		fi_close(&op->mr->fid);
	free(op);
}

void vd_ofi_repost(struct vd_ofi_op *op)
{
	struct vd_ofi_ep *e = op->ep;
	int r;

	if (!e) {               /* a detached copy (vd_ofi_detach) */
		free(op);
		return;
	}
	op->next = NULL;
	do {
		pthread_mutex_lock(&e->on->fab_lock);
		r = (int)fi_recv(e->ep, op->buf, VD_OFI_MSG_MAX, op->desc, FI_ADDR_UNSPEC, op);
		pthread_mutex_unlock(&e->on->fab_lock);
	} while (r == -FI_EAGAIN && !atomic_load(&e->on->stop));
	if (r && r != -FI_EAGAIN)
		vd_log("ofi: fi_recv: %s", vd_fi.strerror(-r));
}

struct vd_ofi_op *vd_ofi_detach(struct vd_ofi_op *op)
{
	struct vd_ofi_op *copy = malloc(sizeof(*copy) + op->len);

	if (!copy)
		return op;      /* keep the fabric's buffer a while longer */
	memcpy(copy, op, sizeof(*copy) + op->len);
	copy->ep = NULL;
	copy->mr = NULL;                /* never posted to the fabric */
	copy->desc = NULL;
	vd_ofi_repost(op);
	return copy;
}

/* Open an RDM endpoint on `service` (NULL: any port), buffers posted. */
int vd_ofi_ep_open(struct vd_ofi_nic *on, struct vd_ofi_ep *e, const char *service)
{
	struct fi_info *info = NULL;
	int err = info_get(on, "", service, &info);

	e->on = on;
	if (err)
		return err;
	pthread_mutex_lock(&on->fab_lock);
	err = fi_endpoint(on->domain, info, &e->ep, NULL) ? -EADDRINUSE : 0;
	if (!err && (fi_ep_bind(e->ep, &on->av->fid, 0) ||
		     fi_ep_bind(e->ep, &on->cq->fid, FI_TRANSMIT | FI_RECV) ||
		     (on->wake_cntr && fi_ep_bind(e->ep, &on->wake_cntr->fid,
						  FI_SEND | FI_RECV | FI_READ | FI_WRITE)) ||
		     fi_enable(e->ep)))
		err = -EADDRINUSE;
	e->name_len = sizeof(e->name);
	if (!err && fi_getname(&e->ep->fid, e->name, &e->name_len))
		err = -EIO;
	pthread_mutex_unlock(&on->fab_lock);
	vd_fi.freeinfo(info);
	if (err)
		return err;
	for (int i = 0; i < VD_OFI_RX_BUFS; i++) {
		e->rx[i] = op_alloc(on, e->ep);
		if (!e->rx[i])
			return -ENOMEM;
		e->rx[i]->kind = OP_RX;
		e->rx[i]->ep = e;
		vd_ofi_repost(e->rx[i]);
	}
	return 0;
}

void vd_ofi_ep_close(struct vd_ofi_ep *e)
{
	/* Closing the endpoint cancels its receives: the buffers are ours
	 * (and their registrations, bound to it, go first). */
	if (e->ep)
		fi_close(&e->ep->fid);
	e->ep = NULL;
	for (int i = 0; i < VD_OFI_RX_BUFS; i++) {
		op_free(e->rx[i]);
		e->rx[i] = NULL;
	}
}

/* ---- sending ------------------------------------------------------------------------------ */

struct vd_ofi_op *vd_ofi_tx_get(struct vd_ofi_nic *on)
{
	struct vd_ofi_op *op;

	vd_lock(&on->tx_lock);
	op = on->tx_free;
	if (op)
		on->tx_free = op->next;
	vd_unlock(&on->tx_lock);
	if (!op) {
		op = op_alloc(on, on->data.ep);
		if (!op)
			return NULL;
		vd_lock(&on->tx_lock);
		op->all_next = on->tx_all;
		on->tx_all = op;
		vd_unlock(&on->tx_lock);
	}
	op->kind = OP_TX;
	op->next = NULL;
	return op;
}

void vd_ofi_tx_put(struct vd_ofi_nic *on, struct vd_ofi_op *op)
{
	vd_lock(&on->tx_lock);
	op->next = on->tx_free;
	on->tx_free = op;
	vd_unlock(&on->tx_lock);
}

static void on_completion(struct vd_ofi_nic *on, void *ctx, size_t len, int err);

/* ---- the backlog: sends the fabric could not take yet --------------------------------- *
 * fi_send says -FI_EAGAIN when its queue is full or, on rxm, while it
 * (re)makes the connection to the peer, which takes progress.  A sender
 * may hold a queue lock and must not wait for progress, so the message
 * goes to the NIC's backlog, in order, and every progress pass posts what
 * it can.  A message that waits more than VD_OFI_STUCK_NS while its peer
 * has been silent as long means the peer is gone (a dead process's
 * port refuses rxm's reconnection forever): the connection breaks. */
#define VD_OFI_STUCK_NS 500000000ull
/* ...and after this many of our own tries: a process that was not
 * scheduled (a loaded machine) does not blame its peer for it. */
#define VD_OFI_STUCK_TRIES 12u
/* A connection request nobody takes within this: no listener there (a
 * connection to a live port on a cluster network takes well under it). */
#define VD_OFI_NO_LISTENER_NS 100000000ull

/* Every libfabric call on the NIC's objects goes through fab_lock:
 * rxm's FI_THREAD_SAFE is not safe enough (a send racing fi_trywait's
 * progress dereferenced NULL in libfabric 1.20), and the calls are
 * short (never a sleep under it). */
static int fab_send(struct vd_ofi_nic *on, struct vd_ofi_op *op, size_t len, fi_addr_t to)
{
	int r;

	pthread_mutex_lock(&on->fab_lock);
	r = (int)fi_send(on->data.ep, op->buf, len, op->desc, to, op);
	pthread_mutex_unlock(&on->fab_lock);
	return r;
}

static void backlog_add(struct vd_ofi_nic *on, struct vd_ofi_op *op)
{
	op->next = NULL;
	op->queued_ns = vd_now_ns();
	op->tries = 0;
	__atomic_store_n(on->bl_tail, op, __ATOMIC_RELAXED);   /* see progress_locked */
	on->bl_tail = &op->next;
}

int vd_ofi_post(struct vd_ofi_nic *on, struct vd_ofi_op *op, size_t len, fi_addr_t to)
{
	int r = 0;

	op->to = to;
	op->post_len = len;
	vd_lock(&on->bl_lock);
	if (!on->bl_head)
		r = fab_send(on, op, len, to);
	if (on->bl_head || r == -FI_EAGAIN) {
		backlog_add(on, op);
		r = 0;
	}
	vd_unlock(&on->bl_lock);
	return r ? -EIO : 0;
}

/* When we last heard from the process behind `to` (any connection). */
static uint64_t peer_heard(const struct vd_ofi_nic *on, const struct vd_ofi_op *op)
{
	uint64_t t = op->conn ? atomic_load(&op->conn->last_rx_ns) : 0;

	if (op->to < VD_OFI_MAX_PEERS) {
		uint64_t p = atomic_load_explicit(&on->peer_rx_ns[op->to], memory_order_relaxed);
		if (p > t)
			t = p;
	}
	return t;
}

static bool stuck(const struct vd_ofi_nic *on, const struct vd_ofi_op *op, uint64_t now)
{

	if (((const struct vd_ofi_hdr *)op->buf)->type == VD_OFI_CONN_REQ)
		return vd_ns_since(now, op->queued_ns) > VD_OFI_NO_LISTENER_NS && op->tries >= 4;
	return vd_ns_since(now, op->queued_ns) > VD_OFI_STUCK_NS &&
	       op->tries >= VD_OFI_STUCK_TRIES &&
	       vd_ns_since(now, peer_heard(on, op)) > VD_OFI_STUCK_NS;
}

/* A broken connection's messages are dropped, unless it was broken on
 * purpose (vd_ofi_conn_break with tell, vd_ofi_conn_break_after) less
 * than VD_OFI_DRAIN_NS ago. */
static bool drop_on_break(const struct vd_ofi_op *op, uint64_t now)
{
	uint64_t how;

	if (!op->conn || !atomic_load(&op->conn->broken))
		return false;
	/* Seq_cst, after `broken`: pairs with claim_break's claim before
	 * its store of `broken`. */
	how = atomic_load(&op->conn->ended);
	return how == VD_OFI_END_DROP || (int64_t)(now - how) > 0;
}

/* Post what the fabric takes now; fail what belongs to a broken
 * connection or is stuck.  Progress lock held. */
static void backlog_flush(struct vd_ofi_nic *on)
{
	struct vd_ofi_op *failed = NULL;
	uint64_t now = vd_now_ns();

	vd_lock(&on->bl_lock);
	while (on->bl_head) {
		struct vd_ofi_op *op = on->bl_head;
		int r = drop_on_break(op, now) ? -FI_ECANCELED :
			fab_send(on, op, op->post_len, op->to);

		if (r == -FI_EAGAIN && (op->tries++, !stuck(on, op, now)))
			break;
		__atomic_store_n(&on->bl_head, op->next, __ATOMIC_RELAXED);
		if (!on->bl_head)
			on->bl_tail = &on->bl_head;
		if (r) {
			op->next = failed;
			failed = op;
		}
	}
	vd_unlock(&on->bl_lock);
	while (failed) {
		struct vd_ofi_op *op = failed;
		failed = op->next;
		if (op->conn && !atomic_load(&op->conn->broken))
			vd_log("ofi: connection %u: the peer does not take messages", op->conn->idx);
		on_completion(on, op, 0, FI_EIO);
	}
}

int vd_ofi_send_msg2(struct vd_ofi_nic *on, fi_addr_t to, struct vd_ofi_conn *owner,
		     const struct vd_ofi_hdr *h, const void *p1, size_t l1,
		     const void *p2, size_t l2, uint32_t tx_slot)
{
	struct vd_ofi_op *op;
	int err;

	if (l1 > VD_OFI_EAGER_MAX || l2 > VD_OFI_EAGER_MAX - l1)
		return -EMSGSIZE;
	op = vd_ofi_tx_get(on);
	if (!op)
		return -ENOMEM;
	op->conn = owner;
	op->tx_slot = tx_slot;
	memcpy(op->buf, h, sizeof(*h));
	((struct vd_ofi_hdr *)op->buf)->len = (uint32_t)(l1 + l2);
	if (owner && h->type >= VD_OFI_DISC)
		vd_ofi_number(owner, (struct vd_ofi_hdr *)op->buf);
	if (l1)
		memcpy(op->buf + sizeof(*h), p1, l1);
	if (l2)
		vd_copy(op->buf + sizeof(*h) + l1, p2, l2);
	if (owner)
		atomic_store_explicit(&owner->last_tx_ns, vd_now_ns(), memory_order_relaxed);
	err = vd_ofi_post(on, op, sizeof(*h) + l1 + l2, to);
	if (err)
		vd_ofi_tx_put(on, op);
	return err;
}

int vd_ofi_send_msg(struct vd_ofi_nic *on, fi_addr_t to, struct vd_ofi_conn *owner,
		    const struct vd_ofi_hdr *h, const void *payload, size_t len,
		    uint32_t tx_slot)
{
	return vd_ofi_send_msg2(on, to, owner, h, payload, len, NULL, 0, tx_slot);
}

/* ---- memory registration: local descriptors for FI_MR_LOCAL fabrics -------------------- */

int vd_ofi_mr_reg(struct vd_nic *nic, uint32_t idx, const struct vd_mr_info *m)
{
	struct vd_ofi_nic *on = vd_ofi_nic(nic);
	struct fid_mr *mr;

	int r;

	if (!on->mr_local)
		return 0;       /* the fabric takes any local buffer */
	pthread_mutex_lock(&on->fab_lock);
	r = vd_ofi_mr_make(on, on->data.ep, (void *)(uintptr_t)m->addr, m->len,
			   FI_SEND | FI_RECV | FI_READ | FI_WRITE, &mr);
	pthread_mutex_unlock(&on->fab_lock);
	if (r)
		return -ENOMEM;
	on->mrs[idx] = mr;
	on->mr_desc[idx] = fi_mr_desc(mr);
	return 0;
}

int vd_ofi_mr_dereg(struct vd_nic *nic, uint32_t idx)
{
	struct vd_ofi_nic *on = vd_ofi_nic(nic);
	uint64_t until = vd_now_ns() + 1000000000ull;

	/* Pairs with the placers' seq_cst increment before their TPT check
	 * (ofi_xfer.c place_begin): either a placer sees the revoked key,
	 * or we see it placing and wait until it is out. */
	while (atomic_load(&on->placing) || vd_ofi_zc_busy(on, idx)) {
		if (vd_now_ns() > until)
			return -EBUSY;
		usleep(100);
	}
	if (on->mrs && on->mrs[idx]) {
		pthread_mutex_lock(&on->fab_lock);
		fi_close(&on->mrs[idx]->fid);
		pthread_mutex_unlock(&on->fab_lock);
		on->mrs[idx] = NULL;
		on->mr_desc[idx] = NULL;
	}
	return 0;
}

void *vd_ofi_local_desc(struct vd_ofi_nic *on, VIP_MEM_HANDLE h)
{
	return on->mr_desc ? on->mr_desc[vd_tpt_index(h)] : NULL;
}

/* ---- progress --------------------------------------------------------------------------- */

static bool hdr_valid(const struct vd_ofi_op *op)
{
	const struct vd_ofi_hdr *h = (const void *)op->buf;

	return op->len >= sizeof(*h) && h->magic == VD_OFI_MAGIC &&
	       h->version == VD_OFI_VERSION && h->type > 0 && h->type < VD_OFI_TYPE_MAX &&
	       h->len == op->len - sizeof(*h);
}

static void on_rx(struct vd_ofi_nic *on, struct vd_ofi_op *op)
{
	const struct vd_ofi_hdr *h = (const void *)op->buf;
	struct vd_ofi_conn *c;

	if (!hdr_valid(op)) {
		vd_log("ofi: malformed message dropped (%zu bytes; magic %#x version %u type %u len %u)",
		       op->len, ((const struct vd_ofi_hdr *)op->buf)->magic,
		       ((const struct vd_ofi_hdr *)op->buf)->version,
		       ((const struct vd_ofi_hdr *)op->buf)->type,
		       ((const struct vd_ofi_hdr *)op->buf)->len);
		vd_ofi_repost(op);
		return;
	}
	if (h->type <= VD_OFI_CONN_CFM) {
		vd_ofi_on_cm(on, op->ep, h, op->buf + sizeof(*h), FI_ADDR_UNSPEC);
		vd_ofi_repost(op);
		return;
	}
	c = op->ep->listener ? NULL : vd_ofi_conn_lookup(on, h->conn, h->token);
	if (!c) {
		vd_log("ofi: message for no connection of ours dropped");
		vd_ofi_repost(op);
		return;
	}
	atomic_store_explicit(&c->last_rx_ns, vd_now_ns(), memory_order_relaxed);
	if (c->peer < VD_OFI_MAX_PEERS)
		atomic_store_explicit(&on->peer_rx_ns[c->peer], vd_now_ns(), memory_order_relaxed);
	vd_ofi_in_order(c, op);         /* keeps op until it is placed */
}

static void on_completion(struct vd_ofi_nic *on, void *ctx, size_t len, int err)
{
	struct vd_ofi_op *op = ctx;

	if (!op)
		return;
	switch (op->kind) {
	case OP_RX:
		if (err) {
			if (err != FI_ECANCELED && !atomic_load(&on->stop))
				vd_ofi_repost(op);
			return;
		}
		op->len = len;
		on_rx(on, op);
		return;
	case OP_ZC:
		vd_ofi_zc_complete(op, err);
		return;
	case OP_TX:
		if (op->conn && op->tx_slot)
			vd_ofi_on_tx_done(op->conn, op->tx_slot - 1, err);
		else if (op->conn && err &&
			 ((struct vd_ofi_hdr *)op->buf)->type == VD_OFI_CONN_REQ)
			vd_ofi_probe_failed(op->conn);  /* nothing listens there */
		else if (op->conn && err)
			vd_ofi_conn_break(op->conn, VIP_ERROR_CONN_LOST, false);
		vd_ofi_tx_put(on, op);
		return;
	}
}

/* Read the CQ until it is empty; progress lock held.  Returns how many.
 * A read that returns less than asked for found the queue empty: reading
 * again would only cost one more pass of the fabric's progress (a system
 * call on tcp) on the way to the application. */
static int drain(struct vd_ofi_nic *on)
{
	struct fi_cq_data_entry e[16];
	struct fi_cq_err_entry ee;
	int n = 0;

	for (;;) {
		ssize_t r;

		/* Read under fab_lock, dispatch without it (a completion
		 * may send). */
		pthread_mutex_lock(&on->fab_lock);
		r = fi_cq_read(on->cq, e, 16);
		if (r == -FI_EAVAIL) {
			memset(&ee, 0, sizeof(ee));
			r = fi_cq_readerr(on->cq, &ee, 0) > 0 ? -FI_EAVAIL : -FI_EAGAIN;
		}
		pthread_mutex_unlock(&on->fab_lock);
		if (r > 0) {
			for (ssize_t i = 0; i < r; i++)
				on_completion(on, e[i].op_context, e[i].len, 0);
			n += (int)r;
			if (r < 16)
				return n;
			continue;
		}
		if (r == -FI_EAVAIL) {
			on_completion(on, ee.op_context, ee.len, ee.err ? ee.err : EIO);
			n++;
			continue;
		}
		return n;
	}
}

/* Connections with recorded but unapplied completions. */
static void retry_kicks(struct vd_ofi_nic *on)
{
	if (!atomic_load(&on->pending))
		return;
	/* Connections are freed only with the NIC: no lock while kicking
	 * (a kick sends, and sending takes locks of its own). */
	uint32_t n = __atomic_load_n(&on->conns_hwm, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < n; i++) {
		/* Acquire: pairs with conn_new()'s release store. */
		struct vd_ofi_conn *c = __atomic_load_n(&on->conns[i], __ATOMIC_ACQUIRE);
		if (c && atomic_exchange(&c->zc_retry, false)) {
			/* Its count in `pending` passes to the receive kick. */
			if (atomic_fetch_or(&c->kick, VD_OFI_KICK_RX) & VD_OFI_KICK_RX)
				atomic_fetch_sub(&on->pending, 1);
		}
		if (c && atomic_load(&c->kick))
			vd_ofi_kick(c, 0);
	}
}

/* fd_wait on net: without fab_lock (net's progress takes its own lock,
 * and a send must not wait for our sleep).  It cannot watch the
 * preemption eventfd, so the service thread, which others may want out
 * of its sleep, sleeps 1 ms at a time. */
static void cntr_wait(struct vd_ofi_nic *on, bool service, int ms)
{
	uint64_t seen;

	if (service && (atomic_load(&on->want) || ms > 1))
		ms = atomic_load(&on->want) ? 0 : 1;
	if (!ms)
		return;
	pthread_mutex_lock(&on->fab_lock);
	seen = fi_cntr_read(on->wake_cntr);
	pthread_mutex_unlock(&on->fab_lock);
	(void)fi_cntr_wait(on->wake_cntr, seen + 1, ms);
}

/* Block on the CQ's fd (when it has one) and on the preemption eventfd
 * until deadline; progress lock held. */
static void fd_wait(struct vd_ofi_nic *on, uint64_t deadline_ns, bool service)
{
	struct fid *f = &on->cq->fid;
	uint64_t now = vd_now_ns();
	int ms = deadline_ns ? (int)((deadline_ns - now) / 1000000u) : 50;
	struct pollfd p[2] = { { .fd = on->wait_fd, .events = POLLIN },
			       { .fd = on->preempt_fd, .events = POLLIN } };

	if (ms > 50)
		ms = 50;        /* keepalives, pending kicks, the backlog */
	if (ms <= 0)
		ms = 1;
	pthread_mutex_lock(&on->fab_lock);
	int tw = on->wait_fd < 0 ? -FI_EAGAIN : fi_trywait(on->fabric, &f, 1);
	pthread_mutex_unlock(&on->fab_lock);
	if (tw != FI_SUCCESS) {
		if (on->wait_fd < 0)
			usleep(200);
		return;
	}
	if (on->wake_cntr) {
		cntr_wait(on, service, ms);
		return;
	}
	/* Seq_cst: pairs with vd_ofi_progress_lock()'s load after its
	 * increment of `want`: either it sees us polling and rings, or we
	 * see its want and do not poll. */
	atomic_store(&on->svc_polling, service);
	if (!(service && atomic_load(&on->want)))
		(void)poll(p, 2, ms);
	atomic_store(&on->svc_polling, false);
	if (p[1].revents & POLLIN) {
		uint64_t v;
		(void)!read(on->preempt_fd, &v, sizeof(v));
	}
}

/* Ring the service thread out of its poll() (it then keeps away while
 * `want` is set). */
static void preempt_service(struct vd_ofi_nic *on)
{
	uint64_t one = 1;

	/* Seq_cst load: pairs with fd_wait's store of svc_polling (see
	 * there). */
	if (atomic_load(&on->svc_polling))
		(void)!write(on->preempt_fd, &one, sizeof(one));
}

/* Take the progress lock from an application thread (no queue lock
 * held), sleeping between tries, never spinning on it. */
void vd_ofi_progress_lock(struct vd_ofi_nic *on)
{
	atomic_fetch_add(&on->want, 1);
	while (!vd_trylock(&on->progress)) {
		preempt_service(on);
		vd_ofi_wait(on, vd_now_ns() + 1000000);
	}
	atomic_fetch_sub(&on->want, 1);
}

static void progress_locked(struct vd_ofi_nic *on, uint64_t deadline_ns, bool block,
			    bool service)
{
	int n = drain(on);

	if (!n && block) {
		fd_wait(on, deadline_ns, service);
		n = drain(on);
	}
	/* Relaxed: a hint (backlog_flush looks again under bl_lock); pairs
	 * with nothing. */
	if (__atomic_load_n(&on->bl_head, __ATOMIC_RELAXED))
		backlog_flush(on);
	retry_kicks(on);
	vd_unlock(&on->progress);
	/* Also when nothing arrived: a thread that rang us out waits for
	 * this to try the lock again. */
	if (n || atomic_load(&on->want))
		vd_event_bump(&on->events);
}

void vd_ofi_poll(struct vd_ofi_nic *on)
{
	/* A hint for the service thread to stay away: a count, not a clock
	 * read (that was 2-4% of a polling thread's time).  Relaxed, pairs
	 * with nothing (a hint, as app_inside), and no atomic increment:
	 * polls racing may count once, or rarely set the count back to a
	 * value the service thread saw -- it then comes a few ms early. */
	atomic_store_explicit(&on->app_polls,
			      atomic_load_explicit(&on->app_polls, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	/* Safe with a queue lock held: the engine only ever trylocks
	 * queue locks, and nobody waits for the progress lock holding one. */
	if (vd_trylock(&on->progress))
		progress_locked(on, 0, false, false);
	else
		preempt_service(on);
}

void vd_ofi_app_inside(struct vd_ofi_nic *on, int delta)
{
	/* Relaxed: a hint for service_progress, as app_polls. */
	atomic_fetch_add_explicit(&on->app_inside, (uint32_t)delta, memory_order_relaxed);
}

void vd_ofi_progress(struct vd_ofi_nic *on, uint64_t deadline_ns, bool block)
{
	if (vd_trylock(&on->progress)) {
		progress_locked(on, deadline_ns, block, false);
		return;
	}
	if (!block)
		return;
	/* Someone progresses for everybody; if it is the service thread
	 * idling in poll(), ring it out so that the next try is ours (no
	 * hand-off through a wake-up on the next message). */
	atomic_fetch_add(&on->want, 1);
	preempt_service(on);
	vd_ofi_wait(on, deadline_ns);
	atomic_fetch_sub(&on->want, 1);
}

/* Whether an application thread polled lately, as the service thread
 * sees it on waking (at least every 1 ms): a poll moved the count since
 * its last look, or it saw the count move within the last 2 ms (so up to
 * about 3 ms after the last poll). */
static bool app_polled_lately(struct vd_ofi_nic *on, uint64_t now)
{
	/* Relaxed: a hint, pairs with nothing (vd_ofi_poll). */
	uint64_t polls = atomic_load_explicit(&on->app_polls, memory_order_relaxed);

	if (polls != on->svc_polls_seen) {
		on->svc_polls_seen = polls;
		on->svc_polls_moved_ns = now;
		return true;
	}
	return vd_ns_since(now, on->svc_polls_moved_ns) < 2000000;
}

/* The service thread's pass: only when no application thread wants it
 * or polls (a busy-polling thread progresses itself; the service thread
 * may share its CPU and would only hold the lock against it).  While it
 * keeps away it sleeps on a timer, not on `events`: waking it for every
 * message would put a context switch into each of them. */
static void service_progress(struct vd_ofi_nic *on)
{
	uint64_t now = vd_now_ns(), until = now + 20000000;
	uint32_t seen = vd_event_seen(&on->svc_wake);

	/* An application thread asleep in a CQ set polled a moment ago but
	 * relies on us now.  Seq_cst load: pairs with vd_ofi_handoff's
	 * increment before its bump of svc_wake. */
	if (atomic_load(&on->want) ||
	    (!atomic_load(&on->handoff) &&
	     (atomic_load_explicit(&on->app_inside, memory_order_relaxed) ||
	      app_polled_lately(on, now))) ||
	    !vd_trylock(&on->progress)) {
		(void)vd_event_wait(&on->svc_wake, seen, now + 1000000);
		return;
	}
	progress_locked(on, until, true, true);
}

/* delta +1: an application thread goes to sleep on a CQ set and hands
 * the fabric to the service thread, woken from its nap at once; -1: it
 * is back. */
void vd_ofi_handoff(struct vd_ofi_nic *on, int delta)
{
	if (delta < 0) {
		atomic_fetch_sub(&on->handoff, 1);
		return;
	}
	atomic_fetch_add(&on->handoff, 1);
	vd_event_bump(&on->svc_wake);
}

int vd_ofi_wait(struct vd_ofi_nic *on, uint64_t deadline_ns)
{
	uint32_t seen = vd_event_seen(&on->events);
	uint64_t slice = vd_now_ns() + 2000000;   /* the holder may be asleep */

	(void)vd_event_wait(&on->events, seen, deadline_ns && deadline_ns < slice ?
			    deadline_ns : slice);
	/* A slice that ran out is not the caller's timeout. */
	return deadline_ns && vd_now_ns() >= deadline_ns ? -ETIMEDOUT : 0;
}

static void *service_main(void *arg)
{
	struct vd_ofi_nic *on = arg;
	uint64_t next_ka = vd_now_ns() + VD_OFI_KEEPALIVE_NS;

	while (!atomic_load(&on->stop)) {
		service_progress(on);
		if (vd_now_ns() >= next_ka) {
			vd_ofi_keepalive(on);
			next_ka = vd_now_ns() + VD_OFI_KEEPALIVE_NS / 2;
		}
	}
	return NULL;
}

/* ---- open / close --------------------------------------------------------------------------- */

static int tables_alloc(struct vd_ofi_nic *on)
{
	on->nconns = 65536;        /* indices are never reused (ofi_conn.c) */
	on->conns = calloc(on->nconns, sizeof(*on->conns));
	on->peer_rx_ns = calloc(VD_OFI_MAX_PEERS, sizeof(*on->peer_rx_ns));
	on->zc_busy = calloc(VD_TPT_MAX, sizeof(*on->zc_busy));
	if (!on->conns || !on->peer_rx_ns || !on->zc_busy)
		return -ENOMEM;
	if (on->mr_local) {
		on->mr_desc = calloc(VD_TPT_MAX, sizeof(*on->mr_desc));
		on->mrs = calloc(VD_TPT_MAX, sizeof(*on->mrs));
		if (!on->mr_desc || !on->mrs)
			return -ENOMEM;
	}
	return 0;
}

static int nic_start(struct vd_ofi_nic *on, const char *spec)
{
	int err = vd_ofi_job_key(on->job_key);
	uint64_t t0 = vd_now_ns(), t1 = t0, t2 = t0;

	if (!err)
		err = vd_ofi_lib_load();
	if (!err)
		err = vd_ofi_pick_iface(on->iface_ip, sizeof(on->iface_ip), on->host);
	if (!err) {
		t1 = vd_now_ns();
		err = info_get(on, spec, NULL, &on->info);
		t2 = vd_now_ns();
	}
	/* Where a slow start goes: loading libfabric runs its dependencies'
	 * constructors, its first fi_getinfo every provider's set-up (a
	 * later NIC shows what is left). */
	if (!err)
		vd_log("ofi: loading libfabric took %.1f ms, finding its provider %.1f ms",
		       (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6);
	if (!err)
		err = fabric_open(on);
	if (!err)
		err = tables_alloc(on);
	if (!err) {
		on->preempt_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		err = on->preempt_fd < 0 ? -errno : 0;
	}
	if (!err)
		err = vd_ofi_ep_open(on, &on->data, NULL);
	if (!err)
		err = pthread_create(&on->service, NULL, service_main, on) ? -EAGAIN : 0;
	on->service_started = !err;
	return err;
}

int vd_ofi_nic_open(struct vd_nic *nic, const char *spec)
{
	struct vd_ofi_nic *on = calloc(1, sizeof(*on));
	int err;

	if (!on)
		return -ENOMEM;
	on->nic = nic;
	on->wait_fd = -1;
	on->preempt_fd = -1;
	pthread_mutex_init(&on->lock, NULL);
	pthread_mutex_init(&on->fab_lock, NULL);
	pthread_cond_init(&on->cond, NULL);
	vd_list_init(&on->listeners);
	vd_list_init(&on->listens);
	vd_list_init(&on->peers);
	vd_lock_init(&on->progress);
	vd_lock_init(&on->tx_lock);
	vd_lock_init(&on->bl_lock);
	on->bl_tail = &on->bl_head;
	nic->prov = on;
	err = nic_start(on, spec);
	if (err) {
		vd_ofi_nic_close(nic);
		return err;
	}
	vd_log("ofi: %s on %s (%s)", on->info->fabric_attr->prov_name, on->iface_ip,
	       on->info->domain_attr->name);
	return 0;
}

void vd_ofi_nic_close(struct vd_nic *nic)
{
	struct vd_ofi_nic *on = vd_ofi_nic(nic);

	if (!on)
		return;
	atomic_store(&on->stop, true);
	if (on->service_started)
		pthread_join(on->service, NULL);
	vd_ofi_peers_free(on);
	vd_ofi_listeners_free(on);
	for (uint32_t i = 0; on->conns && i < on->conns_hwm; i++)
		if (on->conns[i])
			vd_ofi_zc_unexpose_all(on->conns[i]);
	/* Every send op, wherever it was (free, in the backlog, posted to
	 * the endpoint closed below); their registrations before it. */
	for (struct vd_ofi_op *op = on->tx_all; op; op = op->all_next)
		if (op->mr) {
			fi_close(&op->mr->fid);
			op->mr = NULL;
		}
	vd_ofi_ep_close(&on->data);
	if (on->wake_cntr)
		fi_close(&on->wake_cntr->fid);
	if (on->cq)
		fi_close(&on->cq->fid);
	if (on->av)
		fi_close(&on->av->fid);
	for (uint32_t i = 0; on->mrs && i < VD_TPT_MAX; i++)
		if (on->mrs[i])
			fi_close(&on->mrs[i]->fid);
	if (on->domain)
		fi_close(&on->domain->fid);
	if (on->fabric)
		fi_close(&on->fabric->fid);
	if (on->info)
		vd_fi.freeinfo(on->info);
	while (on->tx_all) {
		struct vd_ofi_op *op = on->tx_all;
		on->tx_all = op->all_next;
		free(op);
	}
	for (uint32_t i = 0; i < on->nconns; i++)
		free(on->conns[i]);
	free(on->conns);
	free((void *)on->peer_rx_ns);
	free((void *)on->zc_busy);
	free(on->mr_desc);
	free(on->mrs);
	if (on->preempt_fd >= 0)
		close(on->preempt_fd);
	pthread_cond_destroy(&on->cond);
	pthread_mutex_destroy(&on->lock);
	pthread_mutex_destroy(&on->fab_lock);
	nic->prov = NULL;
	free(on);
}
