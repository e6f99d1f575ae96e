/* SPDX-License-Identifier: MIT */
/*
 * shm provider data path: send-directed transfer (the CLAN VIA paper's section 3.3).
 *
 * A posted receive is offered to the sender as a cookie (its segments);
 * a send takes the next cookie, moves the data -- inline in the transfer
 * slot or the pio ring ("PIO"), or with one process_vm_writev straight
 * into the receive buffer ("DMA") -- and then publishes a transfer-queue
 * entry, which is what completes the receive.  Blocking waits sleep on a
 * futex over the transfer queue's write index (the tripwire); a sender
 * pays for a wake only when a waiter is armed.
 *
 * Each queue has one producer and one consumer process, each serialised
 * by its VI's queue lock, so every index is single-writer.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "prov/shm/shm.h"
#include "util/copy.h"

#define RX_STATUS_ALLOWED (VIP_STATUS_OP_MASK | VIP_STATUS_IMMEDIATE | \
			   VIP_STATUS_LENGTH_ERROR | VIP_STATUS_TRANSPORT_ERROR | \
			   VIP_STATUS_PARTIAL_ERROR | VIADUCT_STATUS_MORE)

static uint32_t round64(uint32_t n)
{
	return (n + 63u) & ~63u;
}

/* Largest message sent inline in AUTO mode (VIADUCT_SHM_PIO_MAX).  The
 * default is the crossover measured by bench/vipl on this class of
 * machine (docs/bench-vipl.md). */
static uint32_t pio_max(const struct vd_shm_conn *c)
{
	static _Atomic int64_t cached = -1;
	int64_t v = atomic_load_explicit(&cached, memory_order_relaxed);

	if (v < 0) {
		uint64_t max = 8192;

		(void)viaduct_param_uint("VIADUCT_SHM_PIO_MAX", 8192, &max);   /* checked at open */
		v = (int64_t)max;
		atomic_store_explicit(&cached, v, memory_order_relaxed);
	}
	return (uint32_t)(v > c->pio_bytes / 2 ? c->pio_bytes / 2 : v);
}

/* ---- connection set-up -------------------------------------------------------- */

/* The receive-side attributes a sender and an RDMA initiator consult.
 * Release stores pair with the acquire loads in shm_rdma.c and
 * plan_cookies(). */
static void publish_rx_attrs(struct vd_vi *vi, struct vd_shm_conn *c)
{
	uint32_t f = 0;

	if (atomic_load(&vi->ext_flags) & VIADUCT_VI_SPLIT_RECV)
		f |= VD_RXF_SPLIT;
	if (vi->attrs.EnableRdmaWrite)
		f |= VD_RXF_RDMA_WRITE;
	if (vi->attrs.EnableRdmaRead)
		f |= VD_RXF_RDMA_READ;
	atomic_store_explicit(&c->rx->ra.rx_ptag, vi->ptag_id, memory_order_release);
	atomic_store_explicit(&c->rx->ra.rx_flags, f, memory_order_release);
	/* Pairs with announce()'s acquire: where to ring for our CQ. */
	atomic_store_explicit(&c->rx->ra.rx_cq_slot,
			      !c->linked_cq ? 0 : c->cq_slot < VD_CQR_SLOTS ? c->cq_slot + 1
								     : VD_CQR_NO_SLOT,
			      memory_order_release);
}

/* Idempotent: the acceptor runs it before offering its receives and
 * again (through vd_vi_connected) once the requester confirms.  The
 * private indices start at 0 because connections come zeroed. */
void vd_shm_conn_ready(struct vd_vi *vi)
{
	struct vd_shm_conn *c = vi->conn;

	/* Set before the service thread watches c; written again only if
	 * it changed, so its unlocked read never races with a store. */
	if (c->vi != vi)
		c->vi = vi;
	publish_rx_attrs(vi, c);
}

void vd_shm_conn_attrs_changed(struct vd_vi *vi)
{
	publish_rx_attrs(vi, vi->conn);
}

/* The peer broke the protocol (or a transfer failed): tear the
 * connection down through the socket, so both service threads report
 * it.  Never trusts the shared memory again. */
void vd_shm_conn_fail(struct vd_shm_conn *c, const char *why)
{
	vd_log("shm: connection to pid %d failed: %s", (int)c->peer_pid, why);
	atomic_store(&c->broken, true);
	shutdown(c->sock, SHUT_RDWR);
}

/* ---- the sender's view of the cookie queue ------------------------------------ */

static uint32_t cookies_avail(struct vd_shm_conn *c)
{
	uint32_t n = c->tx_cookie_write_lazy - c->tx_cookie_read;

	if (n == 0) {
		/* Acquire pairs with the receiver's release store of
		 * cookie_write in vd_shm_recv_publish(): the slots are
		 * written before the index moves. */
		c->tx_cookie_write_lazy = atomic_load_explicit(&c->tx->r.cookie_write,
							       memory_order_acquire);
		n = c->tx_cookie_write_lazy - c->tx_cookie_read;
	}
	if (n > c->depth) {
		vd_shm_conn_fail(c, "cookie index out of range");
		return 0;
	}
	return n;
}

struct ck_snap {
	uint32_t seq;
	uint16_t nseg;
	uint64_t total;
	struct vd_shm_seg seg[VD_MAX_SEGS];
};

/* Copy cookie k (from the read index) out of shared memory before use, so
 * a peer changing it under us cannot make us act on two versions. */
static int cookie_snap(struct vd_shm_conn *c, uint32_t k, struct ck_snap *s)
{
	const struct vd_shm_cookie *ck =
		&c->tx_cookies[(c->tx_cookie_read + k) & (c->depth - 1)];

	s->seq = ck->seq;
	s->nseg = ck->nseg;
	if (s->nseg > VD_MAX_SEGS)
		return -EPROTO;
	memcpy(s->seg, ck->seg, s->nseg * sizeof(s->seg[0]));
	s->total = 0;
	for (unsigned i = 0; i < s->nseg; i++)
		s->total += s->seg[i].len;
	return 0;
}

/* The receiver has receives posted that it could not offer yet (its
 * cookie window is full until it reaps completions): a send that finds
 * no cookie waits for them -- it is not a send to an empty receive queue.
 * Read before the caller's next look at cookie_write; acquire pairs with
 * set_backlog()'s release. */
bool vd_shm_peer_backlog(struct vd_shm_conn *c)
{
	return atomic_load_explicit(&c->tx->r.backlog, memory_order_acquire);
}

/* How many cookies a message of `total` bytes needs: 0 and *n, -ENOSPC
 * (not enough receives posted), -EMSGSIZE (the next receive is too small
 * and the receiver does not split). */
static int plan_cookies(struct vd_shm_conn *c, uint64_t total, unsigned *n)
{
	uint32_t avail = cookies_avail(c);
	bool split = atomic_load_explicit(&c->tx->ra.rx_flags, memory_order_acquire) &
		     VD_RXF_SPLIT;
	uint64_t room = 0;
	struct ck_snap s;

	for (uint32_t k = 0; k < avail; k++) {
		if (cookie_snap(c, k, &s))
			return -EPROTO;
		room += s.total;
		if (room >= total) {
			*n = k + 1;
			return 0;
		}
		if (!split)
			return -EMSGSIZE;
	}
	return -ENOSPC;
}

/* ---- the transfer queue and pio ring ------------------------------------------- */

static struct vd_shm_xfer *xfer_slot(struct vd_shm_conn *c)
{
	uint32_t w = c->tx_xfer_write;

	if (w - c->tx_xfer_read_lazy >= c->depth) {
		/* Acquire pairs with the receiver's release of xfer_read. */
		c->tx_xfer_read_lazy = atomic_load_explicit(&c->tx->r2.xfer_read,
							    memory_order_acquire);
		if (w - c->tx_xfer_read_lazy >= c->depth)
			return NULL;    /* cannot happen with an honest peer */
	}
	return &c->tx_xfers[w & (c->depth - 1)];
}

void vd_shm_xfer_publish(struct vd_shm_conn *c, struct vd_shm_xfer *x)
{
	/* Release pairs with the receiver's acquire load of the stamp in
	 * vd_shm_recv_progress(): the slot (and any payload) first. */
	atomic_store_explicit(&x->stamp, (uint16_t)(c->tx_xfer_write + 1), memory_order_release);
	c->tx_xfer_write++;
	/* The tripwire word, read by a receiver about to sleep.  A seq_cst
	 * exchange (one locked instruction, cheaper than store + fence) so
	 * that announce()'s seq_cst load of recv_waiting cannot be ordered
	 * before it: Dekker with the receiver's seq_cst increment of
	 * recv_waiting and load of xfer_write in arm_and_sleep(). */
	atomic_exchange(&c->tx->s.xfer_write, c->tx_xfer_write);
}

static int ring_alloc(struct vd_shm_conn *c, uint32_t len, uint32_t *off)
{
	uint32_t size = c->pio_bytes, need = round64(len);
	uint32_t w = c->tx_ring_write, pos = w & (size - 1);
	uint32_t pad = pos + need > size ? size - pos : 0;

	if (need > size / 2)
		return -ENOSPC;
	if (w + pad + need - c->tx_ring_read_lazy > size) {
		/* Acquire pairs with the receiver's release of ring_read
		 * after it copied the payload out. */
		c->tx_ring_read_lazy = atomic_load_explicit(&c->tx->r2.ring_read,
							    memory_order_acquire);
		if (w + pad + need - c->tx_ring_read_lazy > size)
			return -ENOSPC;
	}
	*off = w + pad;
	c->tx_ring_write = w + pad + need;
	return 0;
}

/* ---- moving bytes ---------------------------------------------------------------- */

unsigned vd_shm_local_iov(VIP_DESCRIPTOR *d, unsigned first, struct iovec *iov)
{
	unsigned n = 0;

	for (unsigned i = first; i < d->CS.SegCount; i++) {
		VIP_DATA_SEGMENT *s = vd_desc_seg(d, i);
		if (!s->Length)
			continue;
		iov[n].iov_base = vd_pv(s->Data);
		iov[n].iov_len = s->Length;
		n++;
	}
	return n;
}

/* Bytes [off, off+len) of a scatter list, as a new list. */
unsigned vd_shm_iov_slice(const struct iovec *src, unsigned n, uint64_t off,
			  uint64_t len, struct iovec *out)
{
	unsigned k = 0;

	for (unsigned i = 0; i < n && len; i++) {
		if (off >= src[i].iov_len) {
			off -= src[i].iov_len;
			continue;
		}
		size_t take = src[i].iov_len - off;
		if (take > len)
			take = len;
		out[k].iov_base = (char *)src[i].iov_base + off;
		out[k].iov_len = take;
		k++;
		len -= take;
		off = 0;
	}
	return k;
}

static void gather(const struct iovec *iov, unsigned n, uint8_t *dst)
{
	for (unsigned i = 0; i < n; i++) {
		vd_copy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
}

/* Cookie segments covering the first len bytes. */
static unsigned cookie_iov(const struct ck_snap *s, uint64_t len, struct iovec *out)
{
	unsigned k = 0;

	for (unsigned i = 0; i < s->nseg && len; i++) {
		uint64_t take = s->seg[i].len < len ? s->seg[i].len : len;
		if (!take)
			continue;
		out[k].iov_base = (void *)(uintptr_t)s->seg[i].addr;
		out[k].iov_len = take;
		k++;
		len -= take;
	}
	return k;
}

/* ---- sending ------------------------------------------------------------------------ */

static bool level_reliable(const struct vd_vi *vi)
{
	return vi->attrs.ReliabilityLevel != VIP_SERVICE_UNRELIABLE;
}

uint32_t vd_shm_no_receive(struct vd_vi *vi, struct vd_shm_conn *c,
			   enum vd_shm_notice why)
{
	(void)c;
	(void)why;
	switch (vi->attrs.ReliabilityLevel) {
	case VIP_SERVICE_UNRELIABLE:
		vi->stats.dropped_sends++;
		return 0;               /* dropped; the connection survives */
	case VIP_SERVICE_RELIABLE_DELIVERY:
		return 0;               /* reached the peer, which breaks */
	default:
		return VIP_STATUS_REMOTE_DESC_ERROR;
	}
}

/* After the sender's descriptor completed: a reliable connection breaks
 * on both sides (the notice makes the peer's service thread report it). */
void vd_shm_break_after(struct vd_vi *vi, struct vd_shm_conn *c, enum vd_shm_notice why)
{
	if (!level_reliable(vi))
		return;
	vd_shm_notice(c, why, true);
	vd_vi_break_locked(vi);
}

/* Inline ("PIO"): the payload into the slot itself (<= 40 bytes) or the
 * pio ring.  -ENOSPC when the ring has no room; the caller then moves it
 * another way. */
static int pio_payload(struct vd_vi *vi, struct vd_shm_conn *c, struct vd_shm_xfer *x,
		       const struct iovec *iov, unsigned n, uint32_t len, uint16_t flags)
{
	uint32_t roff;

	/* Plain stores into the slot (no read of a line the receiver polls). */
	if (len <= VD_SHM_INLINE) {
		gather(iov, n, x->inl);
		x->flags = flags | VD_XF_INLINE;
	} else if (ring_alloc(c, len, &roff) == 0) {
		gather(iov, n, c->tx_ring + (roff & (c->pio_bytes - 1)));
		x->flags = flags | VD_XF_RING;
		x->ring_off = roff;
	} else {
		return -ENOSPC;
	}
	vi->stats.pio_sends++;
	return 0;
}

/* Payload [off, off+len) of the message into slot x: inline when `pio`
 * and it fits, else ("DMA") with one process_vm_writev straight into the
 * cookie's receive buffer.  Returns the status bits to add
 * (TRANSPORT_ERROR on a failed copy). */
static uint32_t move_payload(struct vd_vi *vi, struct vd_shm_conn *c, struct vd_shm_xfer *x,
			     const struct iovec *src, unsigned nsrc, uint64_t off,
			     uint32_t len, const struct ck_snap *s, bool pio)
{
	struct iovec part[VD_MAX_SEGS], rem[VD_MAX_SEGS];
	unsigned np = vd_shm_iov_slice(src, nsrc, off, len, part);

	if (pio && pio_payload(vi, c, x, part, np, len, 0) == 0)
		return 0;
	x->flags = VD_XF_DMA;
	vi->stats.dma_sends++;
	unsigned nr = cookie_iov(s, len, rem);
	return vd_shm_copy(c, part, np, rem, nr, len, true, NULL, NULL) ? VIP_STATUS_TRANSPORT_ERROR : 0;
}

/* One part of a message into cookie k: the payload, then the slot. */
static int send_part(struct vd_vi *vi, struct vd_shm_conn *c, const struct iovec *src,
		     unsigned nsrc, uint64_t off, uint32_t len, const struct ck_snap *s,
		     uint32_t k, bool pio, uint32_t status, uint32_t imm)
{
	struct vd_shm_xfer *x = xfer_slot(c);

	if (!x)
		return -EPROTO;
	status |= move_payload(vi, c, x, src, nsrc, off, len, s, pio);   /* sets flags */
	x->seq = c->tx_cookie_read + k;
	x->length = status & VIP_STATUS_TRANSPORT_ERROR ? 0 : len;
	x->imm = imm;
	x->status = status;
	vd_shm_xfer_publish(c, x);
	return status & VIP_STATUS_TRANSPORT_ERROR ? -EIO : 0;
}

/* Wake the peer's sleepers on `word`, which we have just moved on --
 * unless its one sleeper was woken already for the value it sleeps on:
 * until it runs again and disarms (tens of microseconds), every later
 * transfer would make its own futex call, dearer than the transfer.  The
 * seq_cst load of the count pairs with arm_and_sleep()'s increment (after
 * our seq_cst move of the word, either we see the count or it sees the
 * word); the sleeper stored `seen` before that increment, so we read the
 * value of the arming we counted, or a later one.  A sleeper that armed
 * with that value again would have found the word moved and not slept.
 * Two sleepers or more: always woken. */
static bool wake_once(_Atomic uint32_t *word, _Atomic uint32_t *waiting,
		      _Atomic uint32_t *seen, struct vd_shm_woken *w)
{
	uint32_t n = atomic_load(waiting), s;

	if (!n) {
		w->valid = false;       /* no sleeper: the next one is new */
		return false;
	}
	s = atomic_load_explicit(seen, memory_order_relaxed);
	if (n == 1 && w->valid && w->seen == s)
		return false;
	*w = (struct vd_shm_woken){ s, true };
	vd_futex_wake_shared(word);
	return true;
}

/* Announce published transfers on the peer's CQ and wake its sleepers. */
static void announce(struct vd_vi *vi, struct vd_shm_conn *c, unsigned n)
{
	/* Pairs with the owner's acquire in harvest_conn(); seq_cst for
	 * vd_cq_ring_signal()'s set_bit. */
	atomic_fetch_add(&c->tx->s.cq_announced, n);
	if (c->peer_rcq) {
		/* Acquire pairs with publish_rx_attrs()'s release. */
		uint32_t slot = atomic_load_explicit(&c->tx->ra.rx_cq_slot, memory_order_acquire);

		if (slot && slot <= VD_CQR_NO_SLOT)
			vd_cq_ring_signal(c->peer_rcq, slot - 1);
	}
	if (wake_once(&c->tx->s.xfer_write, &c->tx->rw.recv_waiting, &c->tx->rw.recv_seen,
		      &c->peer_recv_woken))
		vi->stats.wakes_sent++;
}

/* Consumed cookies go back to the receiver; release pairs with its
 * acquire load of cookie_read before it reuses the slots. */
static void cookies_consumed(struct vd_shm_conn *c, unsigned n)
{
	c->tx_cookie_read += n;
	atomic_store_explicit(&c->tx->s2.cookie_read, c->tx_cookie_read, memory_order_release);
}

int vd_shm_post_imm(struct vd_vi *vi, struct vd_shm_conn *c, uint32_t imm,
		    uint32_t length, uint32_t op_status)
{
	struct vd_shm_xfer *x;

	if (!cookies_avail(c))
		return -ENOSPC;
	x = xfer_slot(c);
	if (!x)
		return -EPROTO;
	x->seq = c->tx_cookie_read;
	x->length = length;
	x->imm = imm;
	x->status = op_status;
	x->flags = 0;
	vd_shm_xfer_publish(c, x);
	cookies_consumed(c, 1);
	announce(vi, c, 1);
	return 0;
}

/* The message into n cookies (n > 1 only when the receiver splits). */
static int send_message(struct vd_vi *vi, struct vd_shm_conn *c, VIP_DESCRIPTOR *d,
			uint64_t total, unsigned n)
{
	struct iovec src[VD_MAX_SEGS];
	unsigned nsrc = vd_shm_local_iov(d, 0, src);
	uint32_t mode = atomic_load(&vi->xfer_mode);
	bool pio = mode == VIADUCT_XFER_PIO || (mode == VIADUCT_XFER_AUTO && total <= pio_max(c));
	bool imm = d->CS.Control & VIP_CONTROL_IMMEDIATE;
	uint64_t off = 0;
	struct ck_snap s;
	int err = 0;
	unsigned k;

	for (k = 0; k < n && !err; k++) {
		if (cookie_snap(c, k, &s))
			return -EPROTO;
		uint64_t len = total - off < s.total ? total - off : s.total;
		bool last = k == n - 1;
		uint32_t st = VIP_STATUS_OP_RECEIVE;
		if (!last)
			st |= VIADUCT_STATUS_MORE;
		if (last && imm)
			st |= VIP_STATUS_IMMEDIATE;
		err = send_part(vi, c, src, nsrc, off, (uint32_t)len, &s, k, pio, st,
				last && imm ? d->CS.ImmediateData : 0);
		off += len;
	}
	cookies_consumed(c, k);
	announce(vi, c, k);
	return err;
}

/* The next cookie is too small and the receiver does not split: its
 * descriptor completes with a length error, nothing is written.  `length`
 * tells the receiver how long the message was (see cookie_fill). */
static void send_too_long(struct vd_vi *vi, struct vd_shm_conn *c, uint64_t length)
{
	struct vd_shm_xfer *x = xfer_slot(c);
	struct ck_snap s;

	if (!x || cookie_snap(c, 0, &s))
		return;
	x->seq = c->tx_cookie_read;
	x->length = length > UINT32_MAX ? UINT32_MAX : (uint32_t)length;
	x->imm = 0;
	x->flags = 0;
	x->status = VIP_STATUS_OP_RECEIVE | VIP_STATUS_LENGTH_ERROR;
	vd_shm_xfer_publish(c, x);
	cookies_consumed(c, 1);
	announce(vi, c, 1);
}

int vd_shm_defer(struct vd_vi *vi, VIP_DESCRIPTOR *d)
{
	if (!d->CS.Reserved) {
		d->CS.Reserved = 1;     /* count a deferral once */
		vi->stats.deferred_sends++;
	}
	return -EAGAIN;
}

/* plan_cookies(), and when no receive is offered: -EAGAIN (wait) if the
 * receiver has more posted than it could offer, or flow control is on;
 * else -ENOSPC (no receive posted). */
int vd_shm_plan_send(struct vd_vi *vi, struct vd_shm_conn *c, uint64_t total, unsigned *n)
{
	int err = plan_cookies(c, total, n);
	bool backlog;

	if (err != -ENOSPC)
		return err;
	/* backlog first, then cookie_write again: see vd_shm_peer_backlog() */
	backlog = vd_shm_peer_backlog(c);
	err = plan_cookies(c, total, n);
	if (err == -ENOSPC &&
	    (backlog || (atomic_load(&vi->ext_flags) & VIADUCT_VI_FLOW_CONTROL)))
		return -EAGAIN;
	return err;
}

/* The inline fast path needs only to know that a receive is posted, not
 * where: the sender never reads the cookie, so its cache line stays with
 * the receiver, and a small message costs one line transfer (the CLAN VIA paper's
 * PIO, minus the remote mapping).  Not for Reliable Reception (the sender
 * must learn of a length error) nor when the receiver splits messages. */
static bool fast_eligible(struct vd_vi *vi, struct vd_shm_conn *c, uint64_t total)
{
	uint32_t mode = atomic_load_explicit(&vi->xfer_mode, memory_order_relaxed);

	if (vi->attrs.ReliabilityLevel == VIP_SERVICE_RELIABLE_RECEPTION ||
	    mode == VIADUCT_XFER_DMA || total > c->pio_bytes / 2 ||
	    (mode == VIADUCT_XFER_AUTO && total > pio_max(c)))
		return false;
	/* Acquire pairs with publish_rx_attrs(). */
	return !(atomic_load_explicit(&c->tx->ra.rx_flags, memory_order_acquire) &
		 VD_RXF_SPLIT);
}

/* 0, -ENOSPC (pio ring full: take the general path), -EPROTO. */
static int send_fast(struct vd_vi *vi, struct vd_shm_conn *c, VIP_DESCRIPTOR *d,
		     uint32_t total)
{
	struct iovec src[VD_MAX_SEGS];
	unsigned n = vd_shm_local_iov(d, 0, src);
	struct vd_shm_xfer *x = xfer_slot(c);
	bool imm = d->CS.Control & VIP_CONTROL_IMMEDIATE;

	if (!x)
		return -EPROTO;
	if (pio_payload(vi, c, x, src, n, total, VD_XF_UNCHECKED))
		return -ENOSPC;         /* not published: the slot stays free */
	x->seq = c->tx_cookie_read;
	x->length = total;
	x->imm = imm ? d->CS.ImmediateData : 0;
	x->status = VIP_STATUS_OP_RECEIVE | (imm ? VIP_STATUS_IMMEDIATE : 0);
	vd_shm_xfer_publish(c, x);
	cookies_consumed(c, 1);
	announce(vi, c, 1);
	return 0;
}

static int shm_send(struct vd_vi *vi, struct vd_shm_conn *c, VIP_DESCRIPTOR *d)
{
	uint64_t total;
	uint32_t st = vd_desc_check_segs(vi, d, 0, &total);
	unsigned n;
	int err;

	if (st) {
		vd_wq_complete_send(vi, st);
		return 0;
	}
	if (fast_eligible(vi, c, total) && cookies_avail(c)) {
		err = send_fast(vi, c, d, (uint32_t)total);
		if (err == -EPROTO) {
			vd_shm_conn_fail(c, "transfer queue overrun");
			return 0;
		}
		if (!err) {
			d->CS.Reserved = 0;
			vi->stats.send_bytes += total;
			vd_wq_complete_send(vi, 0);
			return 0;
		}
	}
	err = vd_shm_plan_send(vi, c, total, &n);
	if (err == -EAGAIN)
		return vd_shm_defer(vi, d);
	d->CS.Reserved = 0;
	if (err == -ENOSPC || err == -EMSGSIZE) {
		enum vd_shm_notice why = err == -ENOSPC ? VD_SHM_NOTICE_RECVQ_EMPTY :
							  VD_SHM_NOTICE_LENGTH;
		if (err == -EMSGSIZE)
			send_too_long(vi, c, total);
		st = vd_shm_no_receive(vi, c, why);
		if (err == -EMSGSIZE && st)
			st = VIP_STATUS_LENGTH_ERROR;
		vd_wq_complete_send(vi, st);
		vd_shm_break_after(vi, c, why);
		return 0;
	}
	if (err) {
		vd_shm_conn_fail(c, "malformed cookie");
		return 0;
	}
	err = send_message(vi, c, d, total, n);
	if (err) {
		vd_wq_complete_send(vi, VIP_STATUS_TRANSPORT_ERROR);
		if (level_reliable(vi)) {
			/* Error state visible before the descriptor is reaped;
			 * the socket shutdown tells the peer. */
			vd_shm_conn_fail(c, "process_vm_writev failed");
			vd_vi_break_locked(vi);
		}
		return 0;
	}
	vi->stats.send_bytes += total;
	vd_wq_complete_send(vi, 0);
	return 0;
}

int vd_shm_send_progress(struct vd_vi *vi)
{
	struct vd_shm_conn *c = vi->conn;

	while (vi->sq.done < vi->sq.tail) {
		VIP_DESCRIPTOR *d = vd_wq_at(&vi->sq, vi->sq.done);
		int err;

		if (atomic_load(&vi->state) != VIP_STATE_CONNECTED || !c ||
		    atomic_load(&c->broken))
			break;      /* the break path flushes what is left */
		if ((d->CS.Control & VIP_CONTROL_OP_MASK) == VIP_CONTROL_OP_SENDRECV)
			err = shm_send(vi, c, d);
		else
			err = vd_shm_rdma(vi, c, d);
		if (err == -EAGAIN)
			break;      /* flow control: wait for a receive */
	}
	return 0;
}

/* ---- receiving ------------------------------------------------------------------------ */

/* The sender writes only where the cookie says, so the cookie offers the
 * registered part of each segment: a segment declared longer than its
 * registration ends the cookie at the registration's end.  A message that
 * needs more completes with a length error, which the receiver turns into
 * a protection error when its declared lengths would have held it. */
static void cookie_fill(struct vd_vi *vi, struct vd_shm_cookie *ck, VIP_DESCRIPTOR *d,
			uint32_t seq)
{
	uint64_t total = 0;
	unsigned n = 0;

	for (unsigned i = 0; i < d->CS.SegCount; i++) {
		VIP_DATA_SEGMENT *s = vd_desc_seg(d, i);
		uint64_t room = vd_recv_seg_room(vi, s);

		if (!s->Length)
			continue;
		ck->seg[n].addr = (uint64_t)(uintptr_t)vd_pv(s->Data);
		ck->seg[n].len = (uint32_t)room;
		total += room;
		n += room > 0;
		if (room < s->Length)
			break;
	}
	ck->seq = seq;
	ck->nseg = (uint16_t)n;
	ck->total = total;
}

static bool cookie_room(struct vd_shm_conn *c)
{
	if (c->rx_cookie_write - c->rx_cookie_read_lazy < c->depth)
		return true;
	/* Acquire pairs with the sender's release in cookies_consumed(): it
	 * has finished reading those slots. */
	c->rx_cookie_read_lazy = atomic_load_explicit(&c->rx->s2.cookie_read,
						      memory_order_acquire);
	return c->rx_cookie_write - c->rx_cookie_read_lazy < c->depth;
}

/* Stored after cookie_write: a sender that reads backlog clear (acquire)
 * and then cookie_write sees every cookie published before the clear
 * (peer_backlog()). */
static void set_backlog(struct vd_shm_conn *c, bool b)
{
	if (atomic_load_explicit(&c->rx->r.backlog, memory_order_relaxed) != b)
		atomic_store_explicit(&c->rx->r.backlog, b, memory_order_release);
}

int vd_shm_recv_publish(struct vd_vi *vi)
{
	struct vd_shm_conn *c = vi->conn;
	struct vd_wq *q = &vi->rq;
	unsigned n = 0;

	if (!c || atomic_load(&c->broken))
		return 0;
	while (q->sent < q->tail) {
		VIP_DESCRIPTOR *d = vd_wq_at(q, q->sent);

		if (d->CS.Reserved) {           /* bad descriptor: completes in turn */
			if (q->done != q->sent)
				break;
			vd_wq_complete_recv(vi, d->CS.Reserved, 0, 0, true);
			continue;
		}
		if (q->sent - q->done >= c->depth || !cookie_room(c))
			break;
		cookie_fill(vi, &c->rx_cookies[c->rx_cookie_write & (c->depth - 1)], d,
			    (uint32_t)q->sent);
		c->rx_cookie_write++;
		q->sent++;
		n++;
	}
	if (!n) {
		set_backlog(c, q->sent < q->tail);
		return 0;
	}
	/* Before the sender can see the cookies: the bound harvest_conn()
	 * checks the sender's announcements against (release pairs with its
	 * acquire). */
	atomic_store_explicit(&c->rx_offered, c->rx_cookie_write, memory_order_release);
	/* The exchange releases the cookies (pairs with cookies_avail()'s
	 * acquire) and, being seq_cst like the load after it, pairs with the
	 * sender's seq_cst arming in vd_shm_send_sleep(). */
	atomic_exchange(&c->rx->r.cookie_write, c->rx_cookie_write);
	set_backlog(c, q->sent < q->tail);
	wake_once(&c->rx->r.cookie_write, &c->rx->sw.send_waiting, &c->rx->sw.send_seen,
		  &c->peer_send_woken);
	return 0;
}

static void scatter(VIP_DESCRIPTOR *d, const uint8_t *src, uint32_t len)
{
	for (unsigned i = 0; i < d->CS.SegCount && len; i++) {
		VIP_DATA_SEGMENT *s = vd_desc_seg(d, i);
		uint32_t take = s->Length < len ? s->Length : len;
		vd_copy(vd_pv(s->Data), src, take);
		src += take;
		len -= take;
	}
}

/* Every byte of a len-byte message lands in registered memory. */
/* Payload of one transfer into the receive descriptor.  -EMSGSIZE: an
 * unchecked inline message longer than the descriptor; -EACCES: it would
 * land outside the registration (nothing written in either case); -EPROTO
 * for anything an honest sender never writes. */
static int deliver(struct vd_vi *vi, struct vd_shm_conn *c, VIP_DESCRIPTOR *d,
		   const struct vd_shm_xfer *x)
{
	uint32_t op = x->status & VIP_STATUS_OP_MASK;
	uint16_t kind = x->flags & ~VD_XF_UNCHECKED;

	if ((x->status & ~RX_STATUS_ALLOWED) ||
	    (op != VIP_STATUS_OP_RECEIVE && op != VIP_STATUS_OP_REMOTE_RDMA_WRITE))
		return -EPROTO;
	if (!kind)
		return x->flags ? -EPROTO : 0;  /* no payload: RDMA immediate */
	if (x->length > vd_desc_room(d))
		return x->flags & VD_XF_UNCHECKED ? -EMSGSIZE : -EPROTO;
	if (kind != VD_XF_DMA && !vd_recv_lands_registered(vi, d, x->length))
		return -EACCES;
	if (kind == VD_XF_INLINE) {
		if (x->length > VD_SHM_INLINE)
			return -EPROTO;
		scatter(d, x->inl, x->length);
	} else if (kind == VD_XF_RING) {
		uint32_t pos = x->ring_off & (c->pio_bytes - 1);
		if (x->length > c->pio_bytes / 2 || pos + x->length > c->pio_bytes)
			return -EPROTO;
		scatter(d, c->rx_ring + pos, x->length);
	} else if (kind != VD_XF_DMA) {
		return -EPROTO;
	}
	return 0;
}

/* The pio ring bytes of a consumed transfer go back to the sender;
 * release pairs with ring_alloc()'s acquire. */
static void ring_release(struct vd_shm_conn *c, const struct vd_shm_xfer *x)
{
	if ((x->flags & ~VD_XF_UNCHECKED) == VD_XF_RING)
		atomic_store_explicit(&c->rx->r2.ring_read, x->ring_off + round64(x->length),
				      memory_order_release);
}

/* A length error for a message that the receive's declared lengths would
 * have held: the cookie offered less (cookie_fill), so the bytes would
 * have landed outside the registration.  x->length is the sender's word,
 * used for nothing but this choice of status. */
static bool too_long_for_registration(struct vd_wq *q, const struct vd_shm_xfer *x)
{
	return (x->status & VIP_STATUS_LENGTH_ERROR) && x->length &&
	       q->done < q->sent && x->length <= vd_desc_room(vd_wq_at(q, q->done));
}

/* Next published transfer, copied out of shared memory, or false. */
static bool xfer_next(struct vd_shm_conn *c, struct vd_shm_xfer *x)
{
	const struct vd_shm_xfer *slot = &c->rx_xfers[c->rx_xfer_read & (c->depth - 1)];

	/* Acquire pairs with vd_shm_xfer_publish()'s release of the stamp. */
	if (atomic_load_explicit(&slot->stamp, memory_order_acquire) !=
	    (uint16_t)(c->rx_xfer_read + 1))
		return false;
	memcpy(x, slot, sizeof(*x));
	return true;
}

int vd_shm_recv_progress(struct vd_vi *vi)
{
	struct vd_shm_conn *c = vi->conn;
	struct vd_wq *q = &vi->rq;
	struct vd_shm_xfer x;
	unsigned n = 0;
	int err = 0;

	if (!c || atomic_load(&c->broken))
		return 0;
	while (!err && xfer_next(c, &x)) {
		uint32_t status = x.status, len = x.length;

		err = q->done < q->sent && x.seq == c->rx_cookie_taken ?
		      deliver(vi, c, vd_wq_at(q, q->done), &x) : -EPROTO;
		if (err == -EPROTO) {
			vd_shm_conn_fail(c, "malformed transfer entry");
			break;
		}
		if (err == -EMSGSIZE) {         /* nothing written */
			status = VIP_STATUS_OP_RECEIVE | VIP_STATUS_LENGTH_ERROR;
			len = 0;
		} else if (err == -EACCES || too_long_for_registration(q, &x)) {
			status = VIP_STATUS_OP_RECEIVE | VIP_STATUS_PROTECTION_ERROR;
			len = 0;
			err = -EACCES;
		}
		ring_release(c, &x);
		c->rx_xfer_read++;
		c->rx_cookie_taken++;
		/* Release pairs with xfer_slot()'s acquire. */
		atomic_store_explicit(&c->rx->r2.xfer_read, c->rx_xfer_read, memory_order_release);
		if (status & VIADUCT_STATUS_MORE)
			vi->stats.split_recvs++;
		vd_wq_complete_recv(vi, status, len, x.imm, false);
		n++;
		if (err == -EMSGSIZE && vi->attrs.ReliabilityLevel != VIP_SERVICE_UNRELIABLE)
			vd_shm_conn_fail(c, "message longer than the posted receive");
		else if (err == -EACCES && vi->attrs.ReliabilityLevel != VIP_SERVICE_UNRELIABLE)
			vd_shm_conn_fail(c, "message would land outside the receive's registration");
		else
			err = 0;
	}
	if (n)
		vd_shm_recv_publish(vi);
	return 0;
}

/* ---- sleeping (the tripwire) --------------------------------------------------------- */

/* Arm a waiter count, re-check, sleep.  The seq_cst RMW pairs with the
 * producer's fence in announce() / vd_shm_recv_publish(): either the
 * producer sees the count and wakes, or we see its new index.  The value
 * we sleep on goes into `seen_at` first: the RMW releases it to the
 * producer that reads the count (wake_once). */
static int arm_and_sleep(struct vd_vi *vi, struct vd_wq *q, struct vd_shm_conn *c,
			 _Atomic uint32_t *word, uint32_t seen, _Atomic uint32_t *waiting,
			 _Atomic uint32_t *seen_at, uint64_t deadline)
{
	int err;

	atomic_store_explicit(seen_at, seen, memory_order_relaxed);
	atomic_fetch_add(waiting, 1);
	if (atomic_load(word) != seen) {
		atomic_fetch_sub(waiting, 1);
		vd_unlock(&q->lock);
		return 0;
	}
	__atomic_fetch_add(&vi->stats.waits_slept, 1, __ATOMIC_RELAXED);   /* both queues */
	vd_unlock(&q->lock);
	/* The region stays mapped until vi->conn changes under q->lock; a
	 * wait on a word unmapped meanwhile fails with EFAULT, harmlessly. */
	err = vd_futex_wait_shared(word, seen, deadline);
	vd_lock(&q->lock);
	if (vi->conn == c)
		atomic_fetch_sub(waiting, 1);
	vd_unlock(&q->lock);
	return err;
}

int vd_shm_recv_sleep(struct vd_vi *vi, uint64_t deadline)
{
	struct vd_shm_conn *c;
	uint32_t w;

	vd_lock(&vi->rq.lock);
	c = vi->conn;
	if (!c || atomic_load(&vi->state) != VIP_STATE_CONNECTED || atomic_load(&c->broken)) {
		vd_unlock(&vi->rq.lock);
		return 0;
	}
	w = atomic_load_explicit(&c->rx->s.xfer_write, memory_order_acquire);
	if (w != c->rx_xfer_read) {
		vd_unlock(&vi->rq.lock);
		return 0;
	}
	return arm_and_sleep(vi, &vi->rq, c, &c->rx->s.xfer_write, w,
			     &c->rx->rw.recv_waiting, &c->rx->rw.recv_seen, deadline);
}

int vd_shm_send_sleep(struct vd_vi *vi, uint64_t deadline)
{
	struct vd_shm_conn *c;
	uint32_t w;

	vd_lock(&vi->sq.lock);
	c = vi->conn;
	if (!c || vi->sq.done == vi->sq.tail || atomic_load(&c->broken) ||
	    atomic_load(&vi->state) != VIP_STATE_CONNECTED) {
		vd_unlock(&vi->sq.lock);
		return 0;
	}
	w = atomic_load_explicit(&c->tx->r.cookie_write, memory_order_acquire);
	if (w != c->tx_cookie_write_lazy) {
		vd_unlock(&vi->sq.lock);
		return 0;
	}
	return arm_and_sleep(vi, &vi->sq, c, &c->tx->r.cookie_write, w,
			     &c->tx->sw.send_waiting, &c->tx->sw.send_seen, deadline);
}

/* The connection is over (the VI left Connected under its queue locks):
 * wake every sleeper on the shared words.  A waiter that checked the
 * state just before may not be asleep yet, and a wake that leaves the
 * word unchanged would be lost; so change the words -- nobody reads them
 * as indices any more (the peer keeps its own indices privately). */
void vd_shm_wake(struct vd_vi *vi)
{
	struct vd_shm_conn *c = vi->conn;

	if (!c)
		return;
	atomic_fetch_add(&c->rx->s.xfer_write, 1);
	atomic_fetch_add(&c->tx->r.cookie_write, 1);
	vd_futex_wake_shared(&c->rx->s.xfer_write);
	vd_futex_wake_shared(&c->tx->r.cookie_write);
}
