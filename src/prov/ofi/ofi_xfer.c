/* SPDX-License-Identifier: MIT */
/*
 * ofi provider data path.  Every operation travels as messages of at most
 * VD_OFI_EAGER_MAX payload bytes ("chunks") and is placed by the target
 * after its own checks:
 *   send          SEND chunks into the receive descriptor at the front of
 *                 the target VI's queue (none: dropped when unreliable,
 *                 else the connection breaks, as VIA has it);
 *   RDMA write    RDMAW chunks, each checked against the target's TPT
 *                 (handle, range, ptag, enable bit) before a byte lands,
 *                 answered by DONE; with immediate data the last one
 *                 consumes a receive descriptor;
 *   RDMA read     one RDMAR request, checked, answered by RDMAR_DATA
 *                 chunks and DONE.
 * A send descriptor completes when the fabric has sent all its chunks; an
 * RDMA descriptor when DONE arrives.  Descriptors complete in order.
 */
#include <errno.h>
#include <string.h>

#include "prov/ofi/ofi.h"

/* ---- sending messages --------------------------------------------------------------------- */

/* The one copy into the application's registered memory that its own
 * threads are not synchronized with: an RDMA write landing at the target,
 * which gets no completion for it (what a NIC's DMA engine does).  Sends,
 * receives and RDMA read answers complete through the queues.  One
 * function, kept out of line, so that ThreadSanitizer can be told exactly
 * this (tests/ofi/tsan.supp). */
__attribute__((noinline)) void vd_ofi_dma_copy(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}

void vd_ofi_hdr_init(struct vd_ofi_conn *c, struct vd_ofi_hdr *h, uint8_t type, uint32_t seq)
{
	memset(h, 0, sizeof(*h));
	h->magic = VD_OFI_MAGIC;
	h->version = VD_OFI_VERSION;
	h->type = type;
	h->conn = c->peer_conn;
	h->token = c->peer_token;
	h->seq = seq;
}

int vd_ofi_send_ctl(struct vd_ofi_conn *c, uint8_t type, uint32_t seq, uint64_t a)
{
	struct vd_ofi_hdr h;

	vd_ofi_hdr_init(c, &h, type, seq);
	h.a = a;
	return vd_ofi_send_msg(c->on, c->peer, c, &h, NULL, 0, 0);
}

/* The DONE an initiator's descriptor waits for.  One that cannot be
 * sent breaks the connection: our keepalives stop, so the peer's wait
 * ends at its timeout instead of never. */
void vd_ofi_send_done(struct vd_ofi_conn *c, uint32_t seq, uint32_t status)
{
	int err = vd_ofi_send_ctl(c, VD_OFI_DONE, seq, status);

	if (err) {
		vd_log("ofi: connection %u: a DONE could not be sent: %s", c->idx, strerror(-err));
		vd_ofi_conn_break(c, VIP_ERROR_CONN_LOST, false);
	}
}

/* Gather `n` bytes from offset `off` of segments [first, SegCount). */
static void gather(VIP_DESCRIPTOR *d, unsigned first, uint64_t off, uint8_t *dst, size_t n)
{
	for (unsigned i = first; i < d->CS.SegCount && n; i++) {
		VIP_DATA_SEGMENT *s = vd_desc_seg(d, i);
		if (off >= s->Length) {
			off -= s->Length;
			continue;
		}
		size_t k = s->Length - off < n ? s->Length - off : n;
		memcpy(dst, (uint8_t *)vd_pv(s->Data) + off, k);
		dst += k;
		n -= k;
		off = 0;
	}
}

/* One chunk of descriptor d: header h, bytes [off, off+n) of its data. */
static int send_chunk(struct vd_ofi_conn *c, struct vd_ofi_hdr *h, VIP_DESCRIPTOR *d,
		      unsigned first, uint64_t off, size_t n, uint32_t slot)
{
	struct vd_ofi_op *op = vd_ofi_tx_get(c->on);
	int err;

	if (!op)
		return -ENOMEM;
	h->len = (uint32_t)n;
	vd_ofi_number(c, h);
	memcpy(op->buf, h, sizeof(*h));
	gather(d, first, off, op->buf + sizeof(*h), n);
	op->conn = c;
	op->tx_slot = slot + 1;
	atomic_store_explicit(&c->last_tx_ns, vd_now_ns(), memory_order_relaxed);
	err = vd_ofi_post(c->on, op, sizeof(*h) + n, c->peer);
	if (err)
		vd_ofi_tx_put(c->on, op);
	return err;
}

/* ---- posting descriptors (sq.lock) ---------------------------------------------------------- */

static void slot_reset(struct vd_ofi_tx *t, uint32_t seq)
{
	t->seq = seq;
	t->chunks = 0;
	atomic_store(&t->sent, 0);
	atomic_store(&t->failed, 0);
	atomic_store(&t->status, 0);
	atomic_store(&t->desc, NULL);
	t->wants_done = false;
	t->posted = false;
}

/* Chunks of a send or RDMA write from c->tx_off on; 0 when all are out. */
static int post_chunks(struct vd_ofi_conn *c, VIP_DESCRIPTOR *d, uint32_t seq,
		       unsigned first, uint64_t total, bool rdma)
{
	VIP_ADDRESS_SEGMENT *as = (VIP_ADDRESS_SEGMENT *)vd_desc_seg(d, 0);
	struct vd_ofi_tx *t = &c->tx[seq % VD_OFI_TX_WINDOW];
	bool imm = d->CS.Control & VIP_CONTROL_IMMEDIATE;
	/* Flow control holds sends and RDMA writes with immediate data (which
	 * consume a receive) until the target has a receive posted. */
	uint32_t flow = (!rdma || imm) &&
			(atomic_load(&c->vi->ext_flags) & VIADUCT_VI_FLOW_CONTROL) ? VD_OFI_F_FLOW : 0;

	do {
		uint64_t n = total - c->tx_off < VD_OFI_EAGER_MAX ? total - c->tx_off :
			     VD_OFI_EAGER_MAX;

		/* A bounded amount in flight; the rest when completions
		 * come back (apply_tx resumes at tx_off). */
		if (atomic_load(&c->chunks_out) >= VD_OFI_CHUNKS_OUT)
			return -EAGAIN;
		struct vd_ofi_hdr h;
		bool last = c->tx_off + n == total;

		vd_ofi_hdr_init(c, &h, rdma ? VD_OFI_RDMAW : VD_OFI_SEND, seq);
		if (rdma) {
			h.a = as->Handle;
			h.b = (uint64_t)(uintptr_t)vd_pv(as->Data) + c->tx_off;
			h.c = c->tx_off;
			h.d = total;
		} else {
			h.a = c->tx_off;
			h.b = total;
		}
		h.flags = flow | (last ? VD_OFI_F_LAST : 0);
		if (last && !rdma && t->wants_done)
			h.flags |= VD_OFI_F_ACK;
		if (last && imm) {
			h.flags |= VD_OFI_F_IMM;
			h.imm = d->CS.ImmediateData;
		}
		atomic_fetch_add(&c->chunks_out, 1);
		int err = send_chunk(c, &h, d, first, c->tx_off, (size_t)n, seq % VD_OFI_TX_WINDOW);
		if (err) {
			atomic_fetch_sub(&c->chunks_out, 1);
			return err;
		}
		t->chunks++;
		c->tx_off += n;
	} while (c->tx_off < total);
	return 0;
}

static int post_read(struct vd_ofi_conn *c, VIP_DESCRIPTOR *d, uint32_t seq, uint64_t total)
{
	VIP_ADDRESS_SEGMENT *as = (VIP_ADDRESS_SEGMENT *)vd_desc_seg(d, 0);
	struct vd_ofi_tx *t = &c->tx[seq % VD_OFI_TX_WINDOW];
	struct vd_ofi_hdr h;

	/* Release pairs with the acquire in rx_read_data(). */
	atomic_store_explicit(&t->desc, d, memory_order_release);
	vd_ofi_hdr_init(c, &h, VD_OFI_RDMAR, seq);
	h.a = as->Handle;
	h.b = (uint64_t)(uintptr_t)vd_pv(as->Data);
	h.d = total;
	struct vd_ofi_op *op = vd_ofi_tx_get(c->on);
	if (!op)
		return -ENOMEM;
	vd_ofi_number(c, &h);
	memcpy(op->buf, &h, sizeof(h));
	op->conn = c;
	op->tx_slot = seq % VD_OFI_TX_WINDOW + 1;
	atomic_fetch_add(&c->chunks_out, 1);    /* on_tx_done counts it back */
	int err = vd_ofi_post(c->on, op, sizeof(h), c->peer);
	if (err) {
		atomic_fetch_sub(&c->chunks_out, 1);
		vd_ofi_tx_put(c->on, op);
		return err;
	}
	t->chunks = 1;
	return 0;
}

/* A descriptor of one data segment, moved by the target's RMA: expose
 * the segment (read-only for a send or RDMA write, write-only for an
 * RDMA read) and tell the target where.  It completes on DONE. */
static int post_zc(struct vd_ofi_conn *c, VIP_DESCRIPTOR *d, uint32_t seq, unsigned first,
		   uint64_t total)
{
	VIP_ADDRESS_SEGMENT *as = (VIP_ADDRESS_SEGMENT *)vd_desc_seg(d, 0);
	VIP_DATA_SEGMENT *s = vd_desc_seg(d, first);
	struct vd_ofi_tx *t = &c->tx[seq % VD_OFI_TX_WINDOW];
	uint32_t op = d->CS.Control & VIP_CONTROL_OP_MASK;
	bool flow = (op == VIP_CONTROL_OP_SENDRECV ||
		     (op == VIP_CONTROL_OP_RDMAWRITE && (d->CS.Control & VIP_CONTROL_IMMEDIATE))) &&
		    (atomic_load(&c->vi->ext_flags) & VIADUCT_VI_FLOW_CONTROL);
	struct vd_ofi_zc z;
	struct vd_ofi_hdr h;
	int err;

	if (atomic_load(&c->chunks_out) >= VD_OFI_CHUNKS_OUT)
		return -EAGAIN;
	err = vd_ofi_zc_expose(c, t, vd_pv(s->Data), total,
			       op == VIP_CONTROL_OP_RDMAREAD ? FI_REMOTE_WRITE : FI_REMOTE_READ, &z);
	if (err)
		return err;
	vd_ofi_hdr_init(c, &h, op == VIP_CONTROL_OP_SENDRECV ? VD_OFI_SEND :
			op == VIP_CONTROL_OP_RDMAWRITE ? VD_OFI_RDMAW : VD_OFI_RDMAR, seq);
	if (op == VIP_CONTROL_OP_SENDRECV) {
		h.b = total;
		h.flags = VD_OFI_F_ACK | (flow ? VD_OFI_F_FLOW : 0);
	} else {
		h.a = as->Handle;
		h.b = (uint64_t)(uintptr_t)vd_pv(as->Data);
		h.d = total;
		h.flags = flow ? VD_OFI_F_FLOW : 0;
	}
	h.flags |= VD_OFI_F_ZC | VD_OFI_F_LAST;
	if (d->CS.Control & VIP_CONTROL_IMMEDIATE) {
		h.flags |= VD_OFI_F_IMM;
		h.imm = d->CS.ImmediateData;
	}
	atomic_fetch_add(&c->chunks_out, 1);    /* on_tx_done counts it back */
	err = vd_ofi_send_msg(c->on, c->peer, c, &h, &z, sizeof(z), seq % VD_OFI_TX_WINDOW + 1);
	if (err) {
		atomic_fetch_sub(&c->chunks_out, 1);
		vd_ofi_zc_unexpose(c->on, t);
		return err;
	}
	t->chunks = 1;
	return 0;
}

/* Post descriptor sq[c->tx_posted].  0 when fully posted. */
static int post_one(struct vd_vi *vi, struct vd_ofi_conn *c)
{
	VIP_DESCRIPTOR *d = vd_wq_at(&vi->sq, c->tx_posted);
	uint32_t seq = (uint32_t)c->tx_posted, op = d->CS.Control & VIP_CONTROL_OP_MASK;
	struct vd_ofi_tx *t = &c->tx[seq % VD_OFI_TX_WINDOW];
	bool rdma = op != VIP_CONTROL_OP_SENDRECV;
	uint64_t total;
	int err;

	if (c->tx_off == 0 && t->chunks == 0) {
		slot_reset(t, seq);
		uint32_t st = vd_desc_check_segs(vi, d, rdma ? 1 : 0, &total);
		if (st) {
			atomic_store(&t->status, st + 1);
			t->wants_done = true;
			t->posted = true;
			return 0;
		}
		/* RDMA, reliable reception and flow control complete when
		 * the target says so. */
		t->wants_done = rdma ||
			vi->attrs.ReliabilityLevel == VIP_SERVICE_RELIABLE_RECEPTION ||
			(atomic_load(&vi->ext_flags) & VIADUCT_VI_FLOW_CONTROL) ||
			vd_ofi_zc_wanted(c, d, rdma ? 1 : 0, total);
		t->bytes = total;
	} else {
		(void)vd_desc_check_segs(vi, d, rdma ? 1 : 0, &total);
	}
	if (vd_ofi_zc_wanted(c, d, rdma ? 1 : 0, total))
		err = post_zc(c, d, seq, rdma ? 1 : 0, total);
	else if (op == VIP_CONTROL_OP_RDMAREAD)
		err = post_read(c, d, seq, total);
	else
		err = post_chunks(c, d, seq, rdma ? 1 : 0, total, rdma);
	if (!err)
		t->posted = true;
	return err;
}

static void post_sends(struct vd_vi *vi, struct vd_ofi_conn *c)
{
	if (c->tx_posted < vi->sq.done)
		c->tx_posted = vi->sq.done;     /* flushed meanwhile */
	while (c->tx_posted < vi->sq.tail && c->tx_posted - vi->sq.done < VD_OFI_TX_WINDOW &&
	       !atomic_load(&c->broken)) {
		int err = post_one(vi, c);
		if (err == -EAGAIN)
			return;         /* chunks in flight: resumed on completion */
		if (err) {
			vd_log("ofi: posting a send failed: %s", strerror(-err));
			vd_ofi_conn_break(c, VIP_ERROR_CONN_LOST, false);
			return;
		}
		c->tx_posted++;
		c->tx_off = 0;
	}
}

static void count_send(struct vd_vi *vi, VIP_DESCRIPTOR *d, uint64_t bytes)
{
	switch (d->CS.Control & VIP_CONTROL_OP_MASK) {
	case VIP_CONTROL_OP_RDMAWRITE:
		vi->stats.rdma_writes++;
		vi->stats.rdma_bytes += bytes;
		break;
	case VIP_CONTROL_OP_RDMAREAD:
		vi->stats.rdma_reads++;
		vi->stats.rdma_bytes += bytes;
		break;
	default:
		vi->stats.send_bytes += bytes;
		vi->stats.pio_sends++;          /* every byte goes in a message */
	}
}

/* Complete finished descriptors, in order. */
static void complete_sends(struct vd_vi *vi, struct vd_ofi_conn *c)
{
	/* Relaxed atomic adds: the receive side (rq.lock only) counts into
	 * dropped_sends and protection_errors too; viaduct_vi_get_stats
	 * reads under both locks. */
	__atomic_fetch_add(&vi->stats.dropped_sends, atomic_exchange(&c->dropped, 0),
			   __ATOMIC_RELAXED);
	vi->stats.deferred_sends += atomic_exchange(&c->deferred, 0);
	while (vi->sq.done < c->tx_posted) {
		struct vd_ofi_tx *t = &c->tx[(uint32_t)vi->sq.done % VD_OFI_TX_WINDOW];
		uint32_t st;

		if (!t->posted || atomic_load(&t->sent) < t->chunks)
			return;
		if (atomic_load(&t->failed)) {
			vd_log("ofi: the fabric failed a send of connection %u", c->idx);
			vd_ofi_conn_break(c, VIP_ERROR_CONN_LOST, false);
			return;
		}
		st = atomic_load(&t->status);
		if (t->wants_done && !st)
			return;
		st = st ? st - 1 : 0;
		vd_ofi_zc_unexpose(c->on, t);   /* before the buffer is the
		                                 * application's again */
		t->posted = false;
		t->chunks = 0;
		/* Late RDMAR_DATA for it (a hostile peer) finds nothing to
		 * write into: the descriptor is the application's again. */
		atomic_store(&t->desc, NULL);
		if (!st)
			count_send(vi, vd_wq_at(&vi->sq, vi->sq.done), t->bytes);
		if (st == VIP_STATUS_RDMA_PROT_ERROR)
			__atomic_fetch_add(&vi->stats.protection_errors, 1, __ATOMIC_RELAXED);
		vd_wq_complete_send(vi, st);
		if (st && vd_ofi_reliable(vi) && st != VIP_STATUS_LENGTH_ERROR) {
			vd_ofi_conn_break(c, VIP_ERROR_CONN_LOST, false);
			return;
		}
	}
}

static void apply_tx(struct vd_vi *vi, struct vd_ofi_conn *c)
{
	if (atomic_load(&vi->state) != VIP_STATE_CONNECTED || vd_ofi_conn_of(vi) != c)
		return;
	complete_sends(vi, c);
	post_sends(vi, c);
}

int vd_ofi_send_progress(struct vd_vi *vi)
{
	struct vd_ofi_conn *c = vd_ofi_conn_of(vi);

	if (c) {
		vd_ofi_app_inside(c->on, 1);
		apply_tx(vi, c);
		vd_ofi_poll(c->on);
		apply_tx(vi, c);
		vd_ofi_app_inside(c->on, -1);
	}
	return 0;
}

/* The target VI's own permission, then the region's. */
static int rdma_check(struct vd_vi *vi, uint64_t handle, uint64_t addr, uint64_t len, bool write)
{
	if (!(write ? vi->attrs.EnableRdmaWrite : vi->attrs.EnableRdmaRead))
		return -EACCES;
	return vd_tpt_check_rdma(vi->nic, (VIP_MEM_HANDLE)handle, addr, len, vi->ptag_id,
				 write ? VD_TPT_RDMA_WRITE : VD_TPT_RDMA_READ);
}

static void rdma_refuse(struct vd_vi *vi, struct vd_ofi_conn *c, uint32_t seq, bool write)
{
	/* Atomic: the send side counts here too (see complete_sends). */
	__atomic_fetch_add(&vi->stats.protection_errors, 1, __ATOMIC_RELAXED);
	vd_ofi_send_done(c, seq, VIP_STATUS_RDMA_PROT_ERROR);
	if (vd_ofi_reliable(vi))
		vd_ofi_conn_break_after(c, write ? VIP_ERROR_RDMAW_PROT : VIP_ERROR_RDMAR_PROT);
}

static void rdmaw_imm(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h)
{
	if (!vd_ofi_front_recv(vi)) {
		if (vd_ofi_reliable(vi))
			vd_ofi_rx_fail(c, VIP_ERROR_RECVQ_EMPTY);
		else
			__atomic_fetch_add(&vi->stats.dropped_sends, 1, __ATOMIC_RELAXED);
		return;
	}
	vd_wq_complete_recv(vi, VIP_STATUS_IMMEDIATE | VIP_STATUS_OP_REMOTE_RDMA_WRITE, 0,
			    h->imm, true);
}

/* false: kept until a receive is posted (flow control). */
static bool rx_rdmaw(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h,
		     const uint8_t *p)
{
	int err;

	if (c->rdma_bad_seq == h->seq + 1)
		return true;            /* the rest of a refused write */
	if ((h->flags & (VD_OFI_F_LAST | VD_OFI_F_IMM)) == (VD_OFI_F_LAST | VD_OFI_F_IMM) &&
	    !vd_ofi_front_recv(vi) && vd_ofi_rx_defer(c, h))
		return false;
	vd_ofi_place_begin(c->on);
	err = rdma_check(vi, h->a, h->b, h->len, true);
	if (!err)
		vd_ofi_dma_copy((void *)(uintptr_t)h->b, p, h->len);
	vd_ofi_place_end(c->on);
	if (err) {
		c->rdma_bad_seq = h->seq + 1;
		rdma_refuse(vi, c, h->seq, true);
		return true;
	}
	if (!(h->flags & VD_OFI_F_LAST))
		return true;
	if (h->flags & VD_OFI_F_IMM)
		rdmaw_imm(vi, c, h);
	vd_ofi_send_done(c, h->seq, 0);
	return true;
}

/* ---- zero-copy RDMA at the target ----------------------------------------------------------
 * An RDMA write (pulled: fi_read) or read (pushed: fi_write) that the
 * fabric moves, VD_OFI_F_ZC: all of it checked under a hold on the
 * region, DONE once the fabric is done.  Up to VD_OFI_ZC_DEPTH of them
 * run at once, answered in arrival order: one at a time, each cost a
 * round trip to the initiator with the link idle (64 KiB RDMA writes
 * between two hosts over tcp moved at half the link's rate).  A later
 * one joins the runs only if it cannot change what an earlier one
 * leaves behind -- the fabric carries them in order, or its memory
 * overlaps none of theirs -- and its check passes now: a refusal is
 * answered at once, so it waits until the runs before it are over. */

static bool is_zc_rdma(const struct vd_ofi_hdr *h)
{
	return (h->flags & VD_OFI_F_ZC) && (h->type == VD_OFI_RDMAW || h->type == VD_OFI_RDMAR);
}

static bool zq_empty(const struct vd_ofi_conn *c)
{
	return c->zq_head == c->zq_tail;
}

static bool zq_overlaps(const struct vd_ofi_conn *c, const struct vd_ofi_hdr *h)
{
	for (uint32_t i = c->zq_head; i != c->zq_tail; i++) {
		const struct vd_ofi_hdr *o = &c->zq[i % VD_OFI_ZC_DEPTH].h;

		if (h->b < o->b + o->d && o->b < h->b + h->d)
			return true;
	}
	return false;
}

/* A zero-copy request as only a faithful peer sends it. */
static bool zc_request_ok(const struct vd_ofi_conn *c, const struct vd_ofi_hdr *h)
{
	return c->zc && h->len == sizeof(struct vd_ofi_zc) && h->c == 0 &&
	       h->d <= VD_MAX_TRANSFER && (h->flags & VD_OFI_F_LAST);
}

static bool zq_may_join(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h)
{
	bool write = h->type == VD_OFI_RDMAW;

	if (c->zq_tail - c->zq_head >= VD_OFI_ZC_DEPTH)
		return false;
	if (!c->on->zc_ordered && (!write || zq_overlaps(c, h)))
		return false;
	return zc_request_ok(c, h) && rdma_check(vi, h->a, h->b, h->d, write) == 0;
}

enum zc_start { ZC_RUNS, ZC_AGAIN, ZC_ANSWERED };

/* Start the transfer h asks for as the newest run, or answer it. */
static enum zc_start zq_start(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h,
			      const uint8_t *p)
{
	struct vd_ofi_zc_run *run = &c->zq[c->zq_tail % VD_OFI_ZC_DEPTH];
	bool write = h->type == VD_OFI_RDMAW;
	struct vd_ofi_zc z;

	if (!zc_request_ok(c, h)) {
		vd_ofi_rx_fail(c, VIP_ERROR_CONN_LOST);
		return ZC_ANSWERED;
	}
	memcpy(&z, p, sizeof(z));
	atomic_store(&run->out, 0);
	atomic_store(&run->err, 0);
	run->answered = false;
	vd_ofi_zc_hold(c->on, h->a);
	int bad = rdma_check(vi, h->a, h->b, h->d, write);
	int err = bad ? 0 : vd_ofi_zc_move(c, write, (void *)(uintptr_t)h->b, (size_t)h->d,
					   h->a, &z, 0, run);
	vd_ofi_zc_release(c->on, h->a);
	if (bad) {
		rdma_refuse(vi, c, h->seq, write);
		return ZC_ANSWERED;
	}
	if (err == -EAGAIN) {
		vd_ofi_zc_retry(c);
		return ZC_AGAIN;
	}
	if (err) {
		vd_ofi_rx_fail(c, VIP_ERROR_CONN_LOST);
		return ZC_ANSWERED;
	}
	/* A push with no run before it to answer first is answered as it
	 * starts where the data lands before a later message: waiting for
	 * its completion (on tcp, the initiator's acknowledgement) added a
	 * round trip, and often a wake-up, to every RDMA read.  It stays a
	 * run until then: what arrives after it still waits for it. */
	if (!write && c->on->zc_done_early && zq_empty(c)) {
		run->answered = true;
		vd_ofi_send_done(c, h->seq, 0);
	}
	run->h = *h;
	c->zq_tail++;
	return ZC_RUNS;
}

/* Answer the oldest run if its transfers are over.  false: still moving,
 * or its immediate waits for a receive (flow control). */
static bool zq_retire(struct vd_vi *vi, struct vd_ofi_conn *c)
{
	struct vd_ofi_zc_run *run = &c->zq[c->zq_head % VD_OFI_ZC_DEPTH];
	const struct vd_ofi_hdr *h = &run->h;
	bool imm = h->type == VD_OFI_RDMAW && (h->flags & VD_OFI_F_IMM);
	int err;

	if (atomic_load(&run->out))
		return false;
	err = atomic_load(&run->err);
	if (imm && !err && !vd_ofi_front_recv(vi) && vd_ofi_rx_defer(c, h))
		return false;   /* placed; its immediate waits for a receive */
	c->zq_head++;
	if (err) {
		vd_ofi_rx_fail(c, VIP_ERROR_CONN_LOST);
		return true;
	}
	if (imm)
		rdmaw_imm(vi, c, h);
	if (!run->answered)
		vd_ofi_send_done(c, h->seq, 0);
	return true;
}

/* The arrival at the head, a zero-copy RDMA request: false while it
 * must stay there. */
static bool rx_rdma_zc(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h,
		       const uint8_t *p)
{
	if (!zq_empty(c) && !zq_may_join(vi, c, h))
		return false;
	return zq_start(vi, c, h, p) != ZC_AGAIN;
}

/* RDMA read at the target: check all of it, then answer in chunks, each
 * copied out of our memory under place_begin. */
static void rx_rdmar(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h)
{
	uint64_t off = 0;

	if (h->d > VD_MAX_TRANSFER || rdma_check(vi, h->a, h->b, h->d, false)) {
		rdma_refuse(vi, c, h->seq, false);
		return;
	}
	while (off < h->d) {
		size_t n = h->d - off < VD_OFI_EAGER_MAX ? (size_t)(h->d - off) : VD_OFI_EAGER_MAX;
		struct vd_ofi_hdr r;
		int err;

		vd_ofi_hdr_init(c, &r, VD_OFI_RDMAR_DATA, h->seq);
		r.a = off;
		vd_ofi_place_begin(c->on);
		err = rdma_check(vi, h->a, h->b + off, n, false);
		if (!err)
			err = vd_ofi_send_msg(c->on, c->peer, c, &r, (void *)(uintptr_t)(h->b + off), n, 0);
		vd_ofi_place_end(c->on);
		if (err) {
			rdma_refuse(vi, c, h->seq, false);
			return;
		}
		off += n;
	}
	vd_ofi_send_done(c, h->seq, 0);
}

/* Initiator: a chunk of what our RDMA read asked for. */
static void rx_read_data(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h,
			 const uint8_t *p)
{
	struct vd_ofi_tx *t = &c->tx[h->seq % VD_OFI_TX_WINDOW];
	/* Acquire pairs with post_read()'s release. */
	VIP_DESCRIPTOR *d = atomic_load_explicit(&t->desc, memory_order_acquire);
	uint64_t off = h->a, len = h->len;

	if (!d || t->seq != h->seq) {
		vd_ofi_rx_fail(c, VIP_ERROR_CONN_LOST);
		return;
	}
	vd_ofi_place_begin(c->on);
	for (unsigned i = 1; i < d->CS.SegCount && len; i++) {
		VIP_DATA_SEGMENT *s = vd_desc_seg(d, i);
		if (off >= s->Length) {
			off -= s->Length;
			continue;
		}
		uint64_t k = s->Length - off < len ? s->Length - off : len;
		if (!vd_tpt_check_local(vi->nic, s->Handle, (uint64_t)(uintptr_t)vd_pv(s->Data) + off,
					k, vi->ptag_id))
			memcpy((uint8_t *)vd_pv(s->Data) + off, p, k);
		p += k;
		len -= k;
		off = 0;
	}
	vd_ofi_place_end(c->on);
}

static void rx_done(struct vd_ofi_conn *c, const struct vd_ofi_hdr *h)
{
	struct vd_ofi_tx *t = &c->tx[h->seq % VD_OFI_TX_WINDOW];

	/* A status is 0 or error bits only: never DONE, an op code or
	 * IMMEDIATE from the wire. */
	if (t->seq != h->seq || !t->wants_done || (h->a & ~(uint64_t)VIP_STATUS_ERROR_MASK)) {
		vd_ofi_rx_fail(c, VIP_ERROR_CONN_LOST);
		return;
	}
	atomic_store(&t->status, (uint32_t)h->a + 1);
	vd_ofi_kick_mark(c, VD_OFI_KICK_TX);    /* apply_tx completes it */
}

/* false: the message stays at the head of the queue for now. */
static bool rx_one(struct vd_vi *vi, struct vd_ofi_conn *c, struct vd_ofi_op *op)
{
	const struct vd_ofi_hdr *h = (const void *)op->buf;
	const uint8_t *p = op->buf + sizeof(*h);

	switch (h->type) {
	case VD_OFI_SEND:
		return vd_ofi_rx_send(vi, c, h, p);
	case VD_OFI_RDMAW:
		return rx_rdmaw(vi, c, h, p);
	case VD_OFI_RDMAR:
		rx_rdmar(vi, c, h);
		break;
	case VD_OFI_RDMAR_DATA:
		rx_read_data(vi, c, h, p);
		break;
	case VD_OFI_DONE:
		rx_done(c, h);
		break;
	case VD_OFI_NOTICE:
		vd_ofi_conn_break(c, h->a == VIP_ERROR_RECVQ_EMPTY ? VIP_ERROR_RECVQ_EMPTY :
				  VIP_ERROR_CONN_LOST, false);
		break;
	case VD_OFI_DISC:
		vd_ofi_conn_break(c, VIP_ERROR_CONN_LOST, false);
		break;
	case VD_OFI_DROPPED:
		atomic_fetch_add(&c->dropped, 1);
		vd_ofi_kick_mark(c, VD_OFI_KICK_TX);
		break;
	case VD_OFI_DEFERRED:
		atomic_fetch_add(&c->deferred, 1);
		vd_ofi_kick_mark(c, VD_OFI_KICK_TX);
		break;
	default:
		break;          /* KEEPALIVE */
	}
	return true;
}

static struct vd_ofi_op *in_peek(struct vd_ofi_conn *c)
{
	struct vd_ofi_op *op;

	vd_lock(&c->in_lock);
	op = c->in_head;
	vd_unlock(&c->in_lock);
	return op;
}

/* The head of one of c's arrival queues (descriptor traffic or ring
 * messages), taken off. */
static struct vd_ofi_op *queue_pop(struct vd_ofi_conn *c, struct vd_ofi_op **head,
				   struct vd_ofi_op ***tail)
{
	struct vd_ofi_op *op;

	vd_lock(&c->in_lock);
	op = *head;
	if (op) {
		*head = op->next;
		c->in_len--;
		if (!*head)
			*tail = head;
	}
	vd_unlock(&c->in_lock);
	return op;
}

static struct vd_ofi_op *in_pop(struct vd_ofi_conn *c)
{
	return queue_pop(c, &c->in_head, &c->in_tail);
}

static struct vd_ofi_op *ring_in_pop(struct vd_ofi_conn *c)
{
	return queue_pop(c, &c->rin_head, &c->rin_tail);
}

/* Ring messages first, and on their own: a send waiting for a receive
 * (flow control) must not hold them back -- the application may post
 * that receive only once it has read them. */
static void apply_rx(struct vd_vi *vi, struct vd_ofi_conn *c)
{
	struct vd_ofi_op *op;
	int st;                     /* VIP_VI_STATE */

	if (vd_ofi_conn_of(vi) != c)
		return;
	/* Attached but not yet Connected (conn_attach publishes c before
	 * vd_vi_connected): what arrived waits.  vd_vi_connected's
	 * recv_publish applies it, under the rq lock this runs under too. */
	st = atomic_load(&vi->state);
	if (st == VIP_STATE_IDLE || st == VIP_STATE_CONNECT_PENDING)
		return;
	while ((op = ring_in_pop(c))) {
		if (!atomic_load(&c->broken) && atomic_load(&vi->state) == VIP_STATE_CONNECTED)
			vd_ofi_rx_ring(vi, c, (const void *)op->buf,
				       op->buf + sizeof(struct vd_ofi_hdr));
		vd_ofi_repost(op);
	}
	for (;;) {
		bool live = !atomic_load(&c->broken) &&
			    atomic_load(&vi->state) == VIP_STATE_CONNECTED;

		/* Broken: the runs are only waited out (conn_detach), the
		 * receives they would complete are flushed. */
		while (live && !zq_empty(c) && zq_retire(vi, c))
			;
		if (!(op = in_peek(c)))
			return;
		if (live) {
			const struct vd_ofi_hdr *h = (const void *)op->buf;

			if (is_zc_rdma(h)) {
				if (!rx_rdma_zc(vi, c, h, op->buf + sizeof(*h)))
					return;
			} else if (!zq_empty(c) || !rx_one(vi, c, op)) {
				/* After the runs before it; or it waits for a
				 * receive (flow control). */
				return;
			}
		}
		in_pop(c);
		vd_ofi_repost(op);
	}
}

/* The VI whose receive queue lock this thread holds while it drives the
 * fabric (vd_ofi_recv_progress): ring messages for it are applied as
 * they arrive (ring_apply_now). */
static _Thread_local struct vd_vi *rq_held;

int vd_ofi_recv_progress(struct vd_vi *vi)
{
	struct vd_ofi_conn *c = vd_ofi_conn_of(vi);

	if (c) {
		struct vd_vi *outer = rq_held;

		vd_ofi_app_inside(c->on, 1);
		rq_held = vi;
		vd_ofi_poll(c->on);
		rq_held = outer;
		apply_rx(vi, c);
		vd_ofi_app_inside(c->on, -1);
	}
	return 0;
}

/* A new receive may take a message that waits for one (flow control);
 * the fabric itself is left to the next poll -- posting a receive is on
 * the way to the reply's send. */
int vd_ofi_recv_publish(struct vd_vi *vi)
{
	struct vd_ofi_conn *c = vd_ofi_conn_of(vi);

	if (c)
		apply_rx(vi, c);
	return 0;
}

/* ---- recording completions (progress lock held) ------------------------------------------------ */

void vd_ofi_number(struct vd_ofi_conn *c, struct vd_ofi_hdr *h)
{
	/* Relaxed: only uniqueness matters; the target sorts. */
	h->msg_no = atomic_fetch_add_explicit(&c->tx_msg_no, 1, memory_order_relaxed);
}

#define HOLD_MAX 1024u              /* messages ahead of a missing one */

static uint32_t msg_no(const struct vd_ofi_op *op)
{
	return ((const struct vd_ofi_hdr *)op->buf)->msg_no;
}

/* Insert into the held list, sorted by number -- as a copy: the message
 * it waits for may be a large one that the fabric can deliver only into
 * a free receive buffer (rxm completes a rendezvous after later eager
 * messages), and held fabric buffers would run the endpoint out of them
 * (two ranks streaming at each other deadlocked so). */
static void hold(struct vd_ofi_conn *c, struct vd_ofi_op *op)
{
	struct vd_ofi_op **p = &c->held;

	op = vd_ofi_detach(op);

	while (*p && (int32_t)(msg_no(*p) - msg_no(op)) < 0)
		p = &(*p)->next;
	op->next = *p;
	*p = op;
	c->nheld++;
}

void vd_ofi_in_order(struct vd_ofi_conn *c, struct vd_ofi_op *op)
{
	int32_t ahead = (int32_t)(msg_no(op) - c->rx_msg_no);

	if (ahead < 0 || (uint32_t)ahead >= HOLD_MAX || c->nheld >= HOLD_MAX ||
	    (c->held && msg_no(c->held) == msg_no(op))) {
		vd_log("ofi: connection %u: message %u out of window", c->idx, msg_no(op));
		vd_ofi_repost(op);
		vd_ofi_conn_break(c, VIP_ERROR_CONN_LOST, true);
		return;
	}
	if (ahead > 0) {
		hold(c, op);
		return;
	}
	c->rx_msg_no++;
	vd_ofi_on_data(c, op);
	while (c->held && msg_no(c->held) == c->rx_msg_no) {
		struct vd_ofi_op *next = c->held;
		c->held = next->next;
		c->nheld--;
		c->rx_msg_no++;
		vd_ofi_on_data(c, next);
	}
}

/* Messages a connection may keep in the fabric's receive buffers while
 * its application does not take them; later ones are copied out, so one
 * idle VI cannot starve the endpoint (and rxm's flow) of buffers. */
#define IN_KEEP 4u

static bool rin_empty(struct vd_ofi_conn *c)
{
	bool empty;

	vd_lock(&c->in_lock);
	empty = c->rin_head == NULL;
	vd_unlock(&c->in_lock);
	return empty;
}

/* A ring message goes into the ring as it arrives when this thread holds
 * the VI's receive side already (it is peeking) or can take it, and none
 * waits before it; else it queues for apply_rx.  Queued, a burst's
 * messages past IN_KEEP were copied out of the fabric's buffers into
 * fresh allocations first (4 KiB both ways between two namespace hosts:
 * a tenth of the CPU in malloc, its page faults and that copy). */
static bool ring_apply_now(struct vd_ofi_conn *c, struct vd_ofi_op *op)
{
	struct vd_vi *vi = c->vi;
	bool held = vi && vi == rq_held, applied = false;

	if (!vi || atomic_load(&c->dead) || (!held && !vd_trylock(&vi->rq.lock)))
		return false;
	if (vd_ofi_conn_of(vi) == c && atomic_load(&vi->state) == VIP_STATE_CONNECTED &&
	    !atomic_load(&c->broken) && rin_empty(c)) {
		vd_ofi_rx_ring(vi, c, (const void *)op->buf, op->buf + sizeof(struct vd_ofi_hdr));
		applied = true;
	}
	if (!held)
		vd_unlock(&vi->rq.lock);
	if (applied)
		vd_ofi_repost(op);
	return applied;
}

void vd_ofi_on_data(struct vd_ofi_conn *c, struct vd_ofi_op *op)
{
	const struct vd_ofi_hdr *h = (const void *)op->buf;
	uint32_t n;

	if (h->type == VD_OFI_KEEPALIVE) {
		vd_ofi_repost(op);      /* it said all it had to say */
		return;
	}
	if (h->type == VD_OFI_RING_CREDIT) {
		/* Applied here, in order: the sender needs it while it holds
		 * its send queue's lock, which a kick would wait for. */
		vd_ofi_ring_credit(c, h->a);
		vd_ofi_repost(op);
		return;
	}
	bool ring = h->type == VD_OFI_RING;     /* h is gone once detached */

	if (ring && (h->flags & VD_OFI_F_CREDIT))
		vd_ofi_ring_credit(c, h->c);
	if (ring && ring_apply_now(c, op))
		return;

	vd_lock(&c->in_lock);
	n = c->in_len;
	vd_unlock(&c->in_lock);
	if (n >= IN_KEEP)
		op = vd_ofi_detach(op);
	op->next = NULL;
	vd_lock(&c->in_lock);
	if (ring) {                     /* apply_rx: their own queue */
		*c->rin_tail = op;
		c->rin_tail = &op->next;
	} else {
		*c->in_tail = op;
		c->in_tail = &op->next;
	}
	c->in_len++;
	vd_unlock(&c->in_lock);
	vd_ofi_kick(c, VD_OFI_KICK_RX);
}

void vd_ofi_on_tx_done(struct vd_ofi_conn *c, uint32_t slot, int err)
{
	struct vd_ofi_tx *t = &c->tx[slot % VD_OFI_TX_WINDOW];

	atomic_fetch_sub(&c->chunks_out, 1);
	if (err)
		atomic_fetch_add(&t->failed, 1);
	atomic_fetch_add(&t->sent, 1);
	vd_ofi_kick(c, VD_OFI_KICK_TX);
}

/* c has recorded work for its send side (VD_OFI_KICK_TX) and/or its
 * receive side (VD_OFI_KICK_RX).  on->pending counts the kick bits (and
 * zc_retry flags) that are set: every 0 -> 1 change adds one and every
 * 1 -> 0 change takes one back, so a progress pass that sees pending == 0
 * may skip retry_kicks. */
void vd_ofi_kick_mark(struct vd_ofi_conn *c, uint32_t bits)
{
	uint32_t fresh = bits & ~atomic_fetch_or(&c->kick, bits);

	if (fresh)
		atomic_fetch_add(&c->on->pending, (uint32_t)__builtin_popcount(fresh));
}

/* Clear one kick bit; true if it was set. */
static bool kick_take(struct vd_ofi_conn *c, uint32_t bit)
{
	if (!(atomic_fetch_and(&c->kick, ~bit) & bit))
		return false;
	atomic_fetch_sub(&c->on->pending, 1);
	return true;
}

/* One side: if its bit is set and its lock free, clear the bit (before
 * applying, so work recorded meanwhile sets it again) and apply.  true
 * if it applied. */
static bool kick_side(struct vd_vi *vi, struct vd_ofi_conn *c, uint32_t bit)
{
	struct vd_wq *q = bit == VD_OFI_KICK_RX ? &vi->rq : &vi->sq;

	if (!(atomic_load(&c->kick) & bit) || !vd_trylock(&q->lock))
		return false;
	if (kick_take(c, bit)) {
		if (bit == VD_OFI_KICK_RX)
			apply_rx(vi, c);
		else
			apply_tx(vi, c);
	}
	vd_unlock(&q->lock);
	return true;
}

/* Apply what was recorded for c on each side whose queue lock is free
 * (trylock only: see ofi.h).  A side's bit is cleared only under its
 * lock, so nothing recorded is lost: a side whose lock is taken keeps
 * its bit for that lock's holder (the Done and Wait paths apply their own
 * side) or the next progress pass (retry_kicks, while on->pending).  The
 * receive side goes first: a DONE it applies completes on the send
 * side. */
void vd_ofi_kick(struct vd_ofi_conn *c, uint32_t bits)
{
	struct vd_vi *vi = c->vi;

	vd_ofi_kick_mark(c, bits);
	if (!vi || atomic_load(&c->dead))
		return;
	for (;;) {
		bool rx = kick_side(vi, c, VD_OFI_KICK_RX);
		bool tx = kick_side(vi, c, VD_OFI_KICK_TX);
		if (!rx && !tx)
			return;
	}
}

/* ---- sleeping ------------------------------------------------------------------------------ */

static int vi_sleep(struct vd_vi *vi, uint64_t deadline_ns)
{
	struct vd_ofi_conn *c = vd_ofi_conn_of(vi);

	if (deadline_ns && vd_now_ns() >= deadline_ns)
		return -ETIMEDOUT;
	if (!c || atomic_load(&c->broken))
		return vd_ofi_wait(vd_ofi_nic(vi->nic), deadline_ns);
	vd_ofi_progress(c->on, deadline_ns, true);
	return 0;
}

int vd_ofi_send_sleep(struct vd_vi *vi, uint64_t deadline_ns)
{
	return vi_sleep(vi, deadline_ns);
}

int vd_ofi_recv_sleep(struct vd_vi *vi, uint64_t deadline_ns)
{
	return vi_sleep(vi, deadline_ns);
}

void vd_ofi_wake(struct vd_vi *vi)
{
	vd_event_bump(&vd_ofi_nic(vi->nic)->events);
}

void vd_ofi_conn_ready(struct vd_vi *vi)
{
	(void)vi;
}

void vd_ofi_conn_free_data(struct vd_ofi_conn *c)
{
	struct vd_ofi_op *op;

	while ((op = in_pop(c)))
		vd_ofi_repost(op);
	while ((op = ring_in_pop(c)))
		vd_ofi_repost(op);
	while (c->held) {           /* progress lock held by the caller */
		op = c->held;
		c->held = op->next;
		vd_ofi_repost(op);
	}
	vd_ofi_ring_free(c);
}
