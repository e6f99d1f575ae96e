/* SPDX-License-Identifier: MIT */
/*
 * ofi provider: sends placed by the target (rq.lock held).  A send
 * arrives as chunks copied into the receive descriptor at the front of
 * the queue, or -- from VIADUCT_OFI_ZC_MIN on -- as one request whose
 * data the target pulls with the fabric's RMA (ofi_zc.c).  Either way the
 * descriptor is checked first: long enough, in registered memory.
 */
#include <errno.h>
#include <string.h>

#include "prov/ofi/ofi.h"

/* ---- placing sends (rq.lock) ---------------------------------------------------------------- */

/* Receive descriptors marked bad at post time complete when they reach
 * the front; then the front one, or NULL. */
VIP_DESCRIPTOR *vd_ofi_front_recv(struct vd_vi *vi)
{
	while (vi->rq.done < vi->rq.tail) {
		VIP_DESCRIPTOR *d = vd_wq_at(&vi->rq, vi->rq.done);
		if (!d->CS.Reserved)
			return d;
		vd_wq_complete_recv(vi, d->CS.Reserved, 0, 0, true);
	}
	return NULL;
}

/* Scatter n bytes at offset off of the message into d's segments, laid
 * out by their declared Length (the whole message was checked to land in
 * registered memory, vd_recv_lands_registered). */
static void scatter(VIP_DESCRIPTOR *d, uint64_t off, const uint8_t *p, size_t n)
{
	for (unsigned i = 0; i < d->CS.SegCount && n; i++) {
		VIP_DATA_SEGMENT *s = vd_desc_seg(d, i);
		if (off >= s->Length) {
			off -= s->Length;
			continue;
		}
		size_t k = s->Length - off < n ? (size_t)(s->Length - off) : n;
		memcpy((uint8_t *)vd_pv(s->Data) + off, p, k);
		p += k;
		n -= k;
		off = 0;
	}
}

void vd_ofi_rx_fail(struct vd_ofi_conn *c, VIP_ERROR_CODE code)
{
	vd_log("ofi: connection %u: refusing what the peer sent", c->idx);
	vd_ofi_conn_break(c, code, true);
}

/* Flow control: a message that needs a receive and finds none is kept
 * (true) when its sender waits for one, and the sender told once. */
bool vd_ofi_rx_defer(struct vd_ofi_conn *c, const struct vd_ofi_hdr *h)
{
	if (!(h->flags & VD_OFI_F_FLOW))
		return false;
	if (c->rx_deferred != h->seq + 1) {
		c->rx_deferred = h->seq + 1;
		vd_ofi_send_ctl(c, VD_OFI_DEFERRED, h->seq, 0);
	}
	return true;
}

/* A receive descriptor for a message that starts now: 0, or -ENOSPC when
 * there is none (already handled per reliability level). */
static int rx_start(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h)
{
	VIP_DESCRIPTOR *d = vd_ofi_front_recv(vi);

	if (!d && vd_ofi_rx_defer(c, h))
		return -EAGAIN;
	c->rx_active = true;
	c->rx_drop = false;
	c->rx_seq = h->seq;
	c->rx_got = c->rx_coff = c->rx_dgot = 0;
	c->rx_split = false;
	if (d)
		return 0;
	if (vd_ofi_reliable(vi)) {
		vd_ofi_rx_fail(c, VIP_ERROR_RECVQ_EMPTY);
		return -ENOSPC;
	}
	vd_ofi_send_ctl(c, VD_OFI_DROPPED, h->seq, 0);   /* for the sender's stats */
	c->rx_drop = true;
	return 0;
}

static bool splits(struct vd_vi *vi)
{
	return atomic_load(&vi->ext_flags) & VIADUCT_VI_SPLIT_RECV;
}

/* The receive descriptor at the front checked for a message of `total`
 * bytes; false when it failed (completed with the error).  A VI that
 * splits takes a longer message into the following descriptors too
 * (*split set; each piece is checked as it lands). */
static bool rx_fits(struct vd_vi *vi, VIP_DESCRIPTOR *d, uint64_t total, bool *split)
{
	*split = total > vd_desc_room(d) && splits(vi);
	if (*split || (total <= vd_desc_room(d) && vd_recv_lands_registered(vi, d, total)))
		return true;
	/* Longer than the descriptor: length error; landing outside its
	 * registered memory: protection error.  Nothing lands. */
	vd_wq_complete_recv(vi, total > vd_desc_room(d) ? VIP_STATUS_LENGTH_ERROR :
			    VIP_STATUS_PROTECTION_ERROR, 0, 0, true);
	return false;
}

/* Request splitting: the front descriptor is full and the message goes
 * on -- it completes with VIADUCT_STATUS_MORE and the bytes it holds. */
static void complete_more(struct vd_vi *vi, uint64_t len)
{
	vd_wq_complete_recv(vi, VIADUCT_STATUS_MORE, (uint32_t)len, 0, true);
	vi->stats.split_recvs++;
}

/* A split message needs one more descriptor and there is none: 0 to go
 * on (dropped, unreliable), -EAGAIN to wait for one (the sender asked
 * for flow control), -EPIPE when the connection broke. */
static int split_starved(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h)
{
	if (h->flags & VD_OFI_F_FLOW)
		return -EAGAIN;
	if (vd_ofi_reliable(vi)) {
		vd_ofi_rx_fail(c, VIP_ERROR_RECVQ_EMPTY);
		return -EPIPE;
	}
	c->rx_drop = true;
	return 0;
}

/* Copy chunk bytes [c->rx_coff, len) into the front descriptor from
 * c->rx_dgot on, moving to the next descriptor when a split message fills
 * one.  0, -EAGAIN (keep the chunk: flow control) or -EPIPE (broken). */
static int place_chunk(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h,
		       const uint8_t *p)
{
	while (c->rx_coff < h->len && !c->rx_drop) {
		VIP_DESCRIPTOR *d = vd_ofi_front_recv(vi);
		int err = d ? 0 : split_starved(vi, c, h);

		if (!d) {
			if (err)
				return err;
			continue;
		}
		uint64_t room = vd_desc_room(d) - c->rx_dgot, k = h->len - c->rx_coff;
		if (room == 0) {
			complete_more(vi, c->rx_dgot);
			c->rx_dgot = 0;
			continue;
		}
		if (k > room)
			k = room;
		/* Checked under place_begin: a deregistration since the
		 * message began must not see us write. */
		vd_ofi_place_begin(c->on);
		bool ok = vd_recv_lands_registered(vi, d, c->rx_dgot + k);
		if (ok)
			scatter(d, c->rx_dgot, p + c->rx_coff, (size_t)k);
		vd_ofi_place_end(c->on);
		if (!ok) {
			vd_wq_complete_recv(vi, VIP_STATUS_PROTECTION_ERROR, 0, 0, true);
			c->rx_drop = true;
			if (vd_ofi_reliable(vi)) {
				vd_ofi_rx_fail(c, VIP_ERROR_RECVQ_EMPTY);
				return -EPIPE;
			}
			break;
		}
		c->rx_dgot += k;
		c->rx_coff += k;
	}
	return 0;
}

/* The message is all in: complete its (last) descriptor, answer DONE if
 * the sender waits for it. */
static void rx_end(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h)
{
	c->rx_active = false;
	if (!c->rx_drop && vd_ofi_front_recv(vi))
		vd_wq_complete_recv(vi, h->flags & VD_OFI_F_IMM ? VIP_STATUS_IMMEDIATE : 0,
				    (uint32_t)c->rx_dgot, h->imm, true);
	if (h->flags & VD_OFI_F_ACK)
		vd_ofi_send_done(c, h->seq, 0);
}

/* Pull message bytes [c->zc_off, end) into d, which holds the message
 * from byte `base` on: one fabric read per segment piece, each checked
 * under a hold on its region. */
static int zc_pull_recv(struct vd_ofi_conn *c, VIP_DESCRIPTOR *d, const struct vd_ofi_zc *z,
			uint64_t base, uint64_t end)
{
	uint64_t most = c->on->info->ep_attr->max_msg_size;

	while (c->zc_off < end) {
		uint64_t off = c->zc_off - base;
		unsigned i = 0;
		VIP_DATA_SEGMENT *s = vd_desc_seg(d, 0);

		while (off >= s->Length) {      /* end - base fits in d */
			off -= s->Length;
			s = vd_desc_seg(d, ++i);
		}
		uint64_t k = s->Length - off < end - c->zc_off ? s->Length - off :
			     end - c->zc_off;
		if (most && k > most)
			k = most;
		uint8_t *dst = (uint8_t *)vd_pv(s->Data) + off;
		vd_ofi_zc_hold(c->on, s->Handle);
		int err = vd_tpt_check_local(c->vi->nic, s->Handle, (uint64_t)(uintptr_t)dst, k,
					     c->vi->ptag_id) ? -EACCES :
			  vd_ofi_zc_move(c, true, dst, (size_t)k, s->Handle, z, c->zc_off,
					       NULL);
		vd_ofi_zc_release(c->on, s->Handle);
		if (err)
			return err;
		c->zc_off += k;
	}
	return 0;
}

/* The pulled send is in (or failed): complete the receive, say DONE. */
static bool rx_send_zc_end(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h,
			   VIP_DESCRIPTOR *d)
{
	int err = atomic_load(&c->zc_err);

	c->zc_active = false;
	if (d && err == EACCES) {       /* deregistered before we pulled */
		vd_wq_complete_recv(vi, VIP_STATUS_PROTECTION_ERROR, 0, 0, true);
		c->rx_drop = true;
		if (vd_ofi_reliable(vi)) {
			vd_ofi_rx_fail(c, VIP_ERROR_RECVQ_EMPTY);
			return true;
		}
	} else if (err) {
		vd_ofi_rx_fail(c, VIP_ERROR_CONN_LOST);
		return true;
	}
	c->rx_dgot = c->zc_off - c->zc_base;
	rx_end(vi, c, h);
	return true;
}

/* The start of a zero-copy send: validated, a receive found (or the
 * message kept, dropped or refused per reliability level).  false: it
 * stays where it is; *done: nothing more to do with it. */
static bool rx_send_zc_start(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h,
			     bool *done)
{
	VIP_DESCRIPTOR *d;

	*done = true;
	if (!c->zc || c->rx_active || h->a != 0 || h->b > VD_MAX_TRANSFER ||
	    h->len != sizeof(struct vd_ofi_zc) || !(h->flags & VD_OFI_F_LAST)) {
		vd_ofi_rx_fail(c, VIP_ERROR_CONN_LOST);
		return true;
	}
	int err = rx_start(vi, c, h);
	if (err)
		return err != -EAGAIN;
	d = c->rx_drop ? NULL : vd_ofi_front_recv(vi);
	if (d && !rx_fits(vi, d, h->b, &c->rx_split)) {
		c->rx_drop = true;
		if (vd_ofi_reliable(vi)) {
			vd_ofi_rx_fail(c, VIP_ERROR_RECVQ_EMPTY);
			return true;
		}
	}
	c->zc_active = true;
	c->zc_off = c->zc_base = 0;
	atomic_store(&c->zc_err, 0);
	*done = false;
	return true;
}

/* A send of one message whose data the fabric pulls from the sender
 * (VD_OFI_F_ZC), one receive descriptor after the other.  It stays at the
 * head of the arrivals until its reads completed: false. */
static bool rx_send_zc(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h,
		       const uint8_t *p)
{
	struct vd_ofi_zc z;
	VIP_DESCRIPTOR *d;
	bool done;

	if (!c->zc_active) {
		bool r = rx_send_zc_start(vi, c, h, &done);
		if (done)
			return r;
	}
	memcpy(&z, p, sizeof(z));
	for (;;) {
		d = c->rx_drop ? NULL : vd_ofi_front_recv(vi);
		if (!d && !c->rx_drop && c->zc_off < h->b) {
			int err = split_starved(vi, c, h);
			if (err)
				return err != -EAGAIN;
			continue;
		}
		uint64_t end = d && c->rx_split && h->b - c->zc_base > vd_desc_room(d) ?
			       c->zc_base + vd_desc_room(d) : h->b;
		if (d && !atomic_load(&c->zc_err)) {
			int err = zc_pull_recv(c, d, &z, c->zc_base, end);
			if (err == -EAGAIN) {
				vd_ofi_zc_retry(c);
				return false;
			}
			if (err)
				atomic_store(&c->zc_err, err == -EACCES ? EACCES : EIO);
		}
		if (atomic_load(&c->zc_out))
			return false;   /* their completions kick us again */
		if (!d || atomic_load(&c->zc_err) || c->zc_off >= h->b)
			return rx_send_zc_end(vi, c, h, d);
		complete_more(vi, c->zc_off - c->zc_base);
		c->zc_base = c->zc_off;
	}
}

/* false: kept for later (flow control, no receive yet). */
bool vd_ofi_rx_send(struct vd_vi *vi, struct vd_ofi_conn *c, const struct vd_ofi_hdr *h,
		    const uint8_t *p)
{
	VIP_DESCRIPTOR *d;

	if (h->flags & VD_OFI_F_ZC)
		return rx_send_zc(vi, c, h, p);
	if (!c->rx_active) {
		if (h->a != 0 || h->b > VD_MAX_TRANSFER) {
			vd_ofi_rx_fail(c, VIP_ERROR_CONN_LOST);
			return true;
		}
		int err = rx_start(vi, c, h);
		if (err)
			return err != -EAGAIN;
	}
	bool last = h->flags & VD_OFI_F_LAST;

	/* Chunks in order, within the announced total, the last one ending
	 * exactly there: nothing else is what an honest sender writes. */
	if (h->seq != c->rx_seq || h->a != c->rx_got || h->b < h->a + h->len ||
	    last != (h->a + h->len == h->b)) {
		vd_log("ofi: send chunk out of sequence (seq %u/%u, offset %llu/%llu)",
		       h->seq, c->rx_seq, (unsigned long long)h->a,
		       (unsigned long long)c->rx_got);
		vd_ofi_rx_fail(c, VIP_ERROR_CONN_LOST);    /* not what this peer sent */
		return true;
	}
	d = c->rx_drop ? NULL : vd_ofi_front_recv(vi);
	if (d && c->rx_got == 0 && c->rx_coff == 0 && !rx_fits(vi, d, h->b, &c->rx_split)) {
		c->rx_drop = true;
		if (vd_ofi_reliable(vi)) {
			vd_ofi_rx_fail(c, VIP_ERROR_RECVQ_EMPTY);
			return true;
		}
	}
	int err = place_chunk(vi, c, h, p);
	if (err)
		return err != -EAGAIN;
	c->rx_got += h->len;
	c->rx_coff = 0;
	if (last)
		rx_end(vi, c, h);
	return true;
}
