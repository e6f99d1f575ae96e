/* SPDX-License-Identifier: MIT */
/*
 * ofi provider: message rings (viaduct_ring_send / peek / release).  A
 * ring message travels as one numbered data-path message (VD_OFI_RING);
 * the target copies it into the connection's receive ring, where peek
 * shows it in place until release.
 *
 * Flow control by credit: both ends place messages in the ring the same
 * way (ring_place), so the sender knows where each one will land; the
 * receiver reports how far it has released -- in every ring message it
 * sends back (VD_OFI_F_CREDIT), else on its own (VD_OFI_RING_CREDIT) once
 * a quarter ring is unreported -- and the sender refuses (VIP_NOT_DONE)
 * a message that would overrun what is unreleased.  With a quarter-ring
 * report step and messages of at most 32 KiB, a sender whose receiver
 * has read everything always has room (unreported < a quarter ring, the
 * message and the wrap it may skip <= 64 KiB: 96 of 128 KiB).
 * The ring is 128 KiB, or 512 KiB on a VIADUCT_VI_DEEP_RING VI: each
 * end says in its handshake which it receives into.  A peer that
 * ignores its credit, or claims a release that never happened, breaks
 * the connection.
 *
 * An entry is an 8-byte header (length, wrap mark) and the payload,
 * padded to 8 bytes; an entry never wraps -- a wrap mark sends the
 * reader back to the ring's start.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "prov/ofi/ofi.h"
#include "util/copy.h"

#define WRAP_MARK 1u

struct ring_entry {
	uint32_t len;
	uint32_t mark;              /* WRAP_MARK: the rest of this lap is empty */
};
static_assert(sizeof(struct ring_entry) == 8, "ring entry layout");
static_assert((VD_OFI_RING_BYTES & (VD_OFI_RING_BYTES - 1)) == 0 &&
		      (VD_OFI_RING_BYTES_DEEP & (VD_OFI_RING_BYTES_DEEP - 1)) == 0,
	      "ring sizes: powers of two");
static_assert(VIADUCT_RING_MAX_MSG + sizeof(struct ring_entry) <= VD_OFI_RING_BYTES / 4,
	      "ring: room argument of the file comment");

struct vd_ofi_ring {
	uint8_t *buf;               /* bytes */
	uint64_t bytes;             /* the connection's ring_bytes */
	uint64_t wpos, rpos;        /* absolute byte positions */
	uint32_t unread;            /* messages in the ring, counted in the CQ */
	bool peeked;                /* rpos is at the message peek returned */
	bool drained;               /* released the last message peek found */
};

static uint64_t ring_units(uint32_t len)
{
	return sizeof(struct ring_entry) + (((uint64_t)len + 7) & ~(uint64_t)7);
}

/* Where an entry of `units` bytes written at `pos` of a ring of `bytes`
 * starts: at pos, or at the next lap when it would not fit before the
 * end. */
static uint64_t ring_place(uint64_t pos, uint64_t units, uint64_t bytes)
{
	uint64_t off = pos & (bytes - 1);

	return off + units > bytes ? pos + (bytes - off) : pos;
}

/* ---- sender (sq.lock) ----------------------------------------------------------------- */

/* *v = max(*v, x): the credit reported by a send (sq.lock) and by a
 * release (rq.lock) may race; a lower value only costs a credit. */
static void raise_to(_Atomic uint64_t *v, uint64_t x)
{
	uint64_t old = atomic_load(v);

	while (x > old && !atomic_compare_exchange_weak(v, &old, x))
		;
}

static bool ring_room(struct vd_ofi_conn *c, uint64_t end)
{
	return end - atomic_load(&c->ring_credit) <= c->peer_ring_bytes;
}

int vd_ofi_ring_send(struct vd_vi *vi, const void *hdr, uint32_t hlen, const void *data,
		     uint32_t len)
{
	struct vd_ofi_conn *c = vd_ofi_conn_of(vi);
	uint64_t units = ring_units(hlen + len), start, pos;
	struct vd_ofi_hdr h;
	int err;

	if (!c || atomic_load(&c->broken))
		return -ENOTCONN;
	pos = atomic_load_explicit(&c->ring_tx_pos, memory_order_relaxed);
	start = ring_place(pos, units, c->peer_ring_bytes);
	if (!ring_room(c, start + units)) {
		vd_ofi_poll(c->on);     /* a credit may be on its way */
		if (!ring_room(c, start + units))
			return -EAGAIN;
	}
	/* Before the message leaves: its credit may come back (and be
	 * checked against this bound) before vd_ofi_send_msg2 returns.
	 * Only this side writes it (sq.lock). */
	atomic_store(&c->ring_tx_pos, start + units);
	vd_ofi_hdr_init(c, &h, VD_OFI_RING, 0);
	/* What we released of the peer's messages rides along: a reply
	 * needs no credit message of its own (a 16 KiB ping-pong sent one
	 * every other message, 2-3 us each). */
	uint64_t released = atomic_load(&c->ring_released);
	if (released != atomic_load(&c->ring_reported)) {
		h.c = released;
		h.flags |= VD_OFI_F_CREDIT;
	}
	err = vd_ofi_send_msg2(c->on, c->peer, c, &h, hdr, hlen, data, len, 0);
	if (err) {
		atomic_store(&c->ring_tx_pos, pos);     /* nothing went out */
		return err == -ENOMEM ? -EAGAIN : -ENOTCONN;
	}
	raise_to(&c->ring_reported, released);
	vi->stats.sends++;
	vi->stats.send_bytes += hlen + len;
	return 0;
}

void vd_ofi_ring_credit(struct vd_ofi_conn *c, uint64_t released)
{
	/* A release the peer can have made: not past what we sent.  One
	 * older than what we know is stale (a credit message and a ring
	 * message may carry theirs in either order), not a lie. */
	if (released > atomic_load(&c->ring_tx_pos)) {
		vd_ofi_rx_fail(c, VIP_ERROR_CONN_LOST);
		return;
	}
	raise_to(&c->ring_credit, released);
}

/* ---- receiver (rq.lock) --------------------------------------------------------------- */

static struct vd_ofi_ring *ring_get(struct vd_ofi_conn *c)
{
	if (!c->ring) {
		struct vd_ofi_ring *r = calloc(1, sizeof(*r));
		if (r && !(r->buf = malloc(c->ring_bytes))) {
			free(r);
			r = NULL;
		}
		if (r)
			r->bytes = c->ring_bytes;
		c->ring = r;
	}
	return c->ring;
}

void vd_ofi_rx_ring(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h,
		    const uint8_t *p)
{
	struct vd_ofi_ring *r = ring_get(c);
	uint64_t units = ring_units(h->len), start;
	struct ring_entry e = { h->len, 0 };

	if (!r) {
		vd_log("ofi: connection %u: no memory for its message ring", c->idx);
		vd_ofi_conn_break(c, VIP_ERROR_CATASTROPHIC, true);
		return;
	}
	start = ring_place(r->wpos, units, r->bytes);
	if (h->len > VIADUCT_RING_MAX_MSG || start + units - r->rpos > r->bytes) {
		vd_ofi_rx_fail(c, VIP_ERROR_CONN_LOST);     /* over its credit */
		return;
	}
	if (start != r->wpos) {
		struct ring_entry wrap = { 0, WRAP_MARK };
		memcpy(r->buf + (r->wpos & (r->bytes - 1)), &wrap, sizeof(wrap));
	}
	memcpy(r->buf + (start & (r->bytes - 1)), &e, sizeof(e));
	vd_copy(r->buf + (start & (r->bytes - 1)) + sizeof(e), p, h->len);
	r->wpos = start + units;
	r->unread++;
	vi->stats.recvs++;
	vi->stats.recv_bytes += h->len;
	if (vi->recv_cq)
		vd_ofi_cq_ring_count(vi->recv_cq, 1);
}

/* The entry at rpos, past a wrap mark; NULL when the ring is empty. */
static const struct ring_entry *ring_front(struct vd_ofi_ring *r)
{
	struct ring_entry *e;

	if (!r || r->rpos == r->wpos)
		return NULL;
	e = (struct ring_entry *)(r->buf + (r->rpos & (r->bytes - 1)));
	if (e->mark == WRAP_MARK) {
		r->rpos += r->bytes - (r->rpos & (r->bytes - 1));
		e = (struct ring_entry *)(r->buf + (r->rpos & (r->bytes - 1)));
	}
	return e;
}

int vd_ofi_ring_peek(struct vd_vi *vi, const void **msg, uint32_t *len)
{
	struct vd_ofi_conn *c = vd_ofi_conn_of(vi);
	const struct ring_entry *e;

	/* Idle: the core has left Connected for a disconnect, which frees
	 * the ring without this lock. */
	if (!c || atomic_load(&vi->state) == VIP_STATE_IDLE)
		return -EAGAIN;
	e = ring_front(c->ring);
	if (!e && c->ring && c->ring->drained) {
		/* The caller has just emptied the ring, and the usual next step
		 * is its answer: a look at the fabric now (a system call on
		 * tcp) would stand between a message and its reply.  The next
		 * peek looks. */
		c->ring->drained = false;
		return -EAGAIN;
	}
	if (!e && atomic_load(&vi->state) == VIP_STATE_CONNECTED) {
		vd_ofi_recv_progress(vi);       /* the fabric, then arrivals */
		e = ring_front(c->ring);
	}
	if (!e)
		return -EAGAIN;
	*msg = e + 1;
	*len = e->len;
	c->ring->peeked = true;
	return 0;
}

int vd_ofi_ring_release(struct vd_vi *vi)
{
	struct vd_ofi_conn *c = vd_ofi_conn_of(vi);
	struct vd_ofi_ring *r = c && atomic_load(&vi->state) != VIP_STATE_IDLE ? c->ring : NULL;
	const struct ring_entry *e;

	if (!r || !r->peeked)
		return -EINVAL;
	e = (const struct ring_entry *)(r->buf + (r->rpos & (r->bytes - 1)));
	r->rpos += ring_units(e->len);
	r->peeked = false;
	r->drained = r->rpos == r->wpos;
	r->unread--;
	if (vi->recv_cq)
		vd_ofi_cq_ring_count(vi->recv_cq, -1);
	atomic_store(&c->ring_released, r->rpos);
	if (r->rpos - atomic_load(&c->ring_reported) >= r->bytes / 4 &&
	    !atomic_load(&c->broken) && vd_ofi_send_ctl(c, VD_OFI_RING_CREDIT, 0, r->rpos) == 0)
		raise_to(&c->ring_reported, r->rpos);
	return 0;
}

void vd_ofi_ring_free(struct vd_ofi_conn *c)
{
	struct vd_ofi_ring *r = c->ring;

	if (!r)
		return;
	if (r->unread && c->vi && c->vi->recv_cq)
		vd_ofi_cq_ring_count(c->vi->recv_cq, -(int)r->unread);
	c->ring = NULL;
	free(r->buf);
	free(r);
}
