/* SPDX-License-Identifier: MIT */
/*
 * ofi provider: zero-copy transfers (see ofi.h).  The initiator exposes
 * the one buffer of one operation to its peer; the target, after its own
 * checks, moves the data between that buffer and the checked local one
 * with the fabric's RMA, so no byte is copied by a CPU on either side.
 *
 * The exposure is the fabric's memory region for exactly those bytes,
 * with exactly one access right, closed as soon as the target says DONE
 * or the connection breaks.  Its key is the provider's (FI_MR_PROV_KEY) or
 * a random one; either way only this peer learns it.
 */
#include <errno.h>
#include <string.h>

#include "prov/ofi/ofi.h"

bool vd_ofi_zc_wanted(const struct vd_ofi_conn *c, VIP_DESCRIPTOR *d, unsigned first,
		      uint64_t total)
{
	return c->zc && total >= c->on->zc_min && d->CS.SegCount == first + 1;
}

static uint64_t key_for(const struct vd_ofi_nic *on)
{
	uint64_t k = vd_random64();

	return on->key_size >= 8 ? k : k & ((1ull << (8 * on->key_size)) - 1);
}

int vd_ofi_mr_make(struct vd_ofi_nic *on, struct fid_ep *ep, void *buf, size_t len,
		   uint64_t access, struct fid_mr **out)
{
	int r = -FI_ENOKEY;

	for (int tries = 0; r == -FI_ENOKEY && tries < 4; tries++)
		r = fi_mr_reg(on->domain, buf, len, access, 0, key_for(on), 0, out, NULL);
	if (r)
		return r;
	if (on->mr_mode & FI_MR_ENDPOINT) {
		r = fi_mr_bind(*out, &ep->fid, 0);
		if (!r)
			r = fi_mr_enable(*out);
		if (r)
			fi_close(&(*out)->fid);
	}
	return r;
}

int vd_ofi_zc_expose(struct vd_ofi_conn *c, struct vd_ofi_tx *t, void *buf, size_t len,
		     uint64_t access, struct vd_ofi_zc *out)
{
	struct vd_ofi_nic *on = c->on;
	struct fid_mr *mr;
	int r;

	vd_ofi_zc_unexpose(on, t);
	pthread_mutex_lock(&on->fab_lock);
	r = vd_ofi_mr_make(on, on->data.ep, buf, len, access, &mr);
	pthread_mutex_unlock(&on->fab_lock);
	if (r)
		return -ENOMEM;
	out->addr = on->mr_mode & FI_MR_VIRT_ADDR ? (uint64_t)(uintptr_t)buf : 0;
	out->key = fi_mr_key(mr);
	/* Release: the slot's MR is complete before anyone may take it. */
	atomic_store_explicit(&t->zc_mr, mr, memory_order_release);
	return 0;
}

void vd_ofi_zc_unexpose(struct vd_ofi_nic *on, struct vd_ofi_tx *t)
{
	/* Whoever takes it closes it: the completion path (sq.lock) and a
	 * breaking connection may race. */
	struct fid_mr *mr = atomic_exchange(&t->zc_mr, NULL);

	if (!mr)
		return;
	pthread_mutex_lock(&on->fab_lock);
	fi_close(&mr->fid);
	pthread_mutex_unlock(&on->fab_lock);
}

void vd_ofi_zc_unexpose_all(struct vd_ofi_conn *c)
{
	for (unsigned i = 0; i < VD_OFI_TX_WINDOW; i++)
		vd_ofi_zc_unexpose(c->on, &c->tx[i]);
}

void vd_ofi_zc_hold(struct vd_ofi_nic *on, VIP_MEM_HANDLE h)
{
	/* Seq_cst: pairs with vd_ofi_mr_dereg's load after the core revoked
	 * the handle -- either the caller's TPT check that follows sees the
	 * revocation, or the deregistration sees the hold and waits. */
	atomic_fetch_add(&on->zc_busy[vd_tpt_index(h)], 1);
}

void vd_ofi_zc_release(struct vd_ofi_nic *on, VIP_MEM_HANDLE h)
{
	atomic_fetch_sub(&on->zc_busy[vd_tpt_index(h)], 1);
}

bool vd_ofi_zc_busy(struct vd_ofi_nic *on, uint32_t idx)
{
	return on->zc_busy && atomic_load(&on->zc_busy[idx]);
}

int vd_ofi_zc_move(struct vd_ofi_conn *c, bool pull, void *local, size_t len,
		   VIP_MEM_HANDLE h, const struct vd_ofi_zc *z, uint64_t off,
		   struct vd_ofi_zc_run *run)
{
	struct vd_ofi_nic *on = c->on;
	struct vd_ofi_op *op = vd_ofi_tx_get(on);   /* freed with the NIC if lost */
	struct iovec iov = { local, len };
	void *desc = vd_ofi_local_desc(on, h);
	struct fi_rma_iov rma = { z->addr + off, len, z->key };
	struct fi_msg_rma m = { .msg_iov = &iov, .desc = &desc, .iov_count = 1,
				.addr = c->peer, .rma_iov = &rma, .rma_iov_count = 1 };
	ssize_t r;

	if (!op)
		return -EAGAIN;
	op->kind = OP_ZC;
	op->conn = c;
	op->tpt_idx = vd_tpt_index(h);
	op->run = run;
	m.context = op;
	atomic_fetch_add(&c->zc_out, 1);
	if (run)
		atomic_fetch_add(&run->out, 1);
	vd_ofi_zc_hold(on, h);
	pthread_mutex_lock(&on->fab_lock);
	/* A push completes only once the data is in the initiator's memory:
	 * the DONE that follows must not overtake it on fabrics that do not
	 * order RMA before messages. */
	r = pull ? fi_readmsg(on->data.ep, &m, FI_COMPLETION) :
		   fi_writemsg(on->data.ep, &m, FI_COMPLETION | FI_DELIVERY_COMPLETE);
	pthread_mutex_unlock(&on->fab_lock);
	if (r == 0)
		return 0;
	vd_ofi_zc_release(on, h);
	if (run)
		atomic_fetch_sub(&run->out, 1);
	atomic_fetch_sub(&c->zc_out, 1);
	vd_ofi_tx_put(on, op);
	if (r == -FI_EAGAIN)
		return -EAGAIN;
	vd_log("ofi: connection %u: fi_%smsg: %s", c->idx, pull ? "read" : "write",
	       vd_fi.strerror((int)-r));
	return -EIO;
}

void vd_ofi_zc_complete(struct vd_ofi_op *op, int err)
{
	struct vd_ofi_conn *c = op->conn;

	if (err) {
		int none = 0;
		vd_log("ofi: connection %u: a zero-copy transfer failed: %s", c->idx,
		       vd_fi.strerror(err));
		atomic_compare_exchange_strong(op->run ? &op->run->err : &c->zc_err, &none, err);
	}
	atomic_fetch_sub(&c->on->zc_busy[op->tpt_idx], 1);
	/* The run's count before the total: a breaking connection that sees
	 * the total at 0 may reuse the runs. */
	if (op->run)
		atomic_fetch_sub(&op->run->out, 1);
	atomic_fetch_sub(&c->zc_out, 1);
	vd_ofi_tx_put(c->on, op);
	vd_ofi_kick(c, VD_OFI_KICK_RX);     /* the target's receive side waits */
}

void vd_ofi_zc_retry(struct vd_ofi_conn *c)
{
	/* Counted in `pending` while set: retry_kicks takes it back. */
	if (!atomic_exchange(&c->zc_retry, true))
		atomic_fetch_add(&c->on->pending, 1);
}
