/* SPDX-License-Identifier: MIT */
/*
 * shm provider: RDMA write and read into arbitrary registered user memory
 * of the peer (seed 002 as VIA RDMA).  The initiator checks the target's
 * translation-and-protection table, which the target publishes read-only,
 * then moves the bytes with one process_vm_writev / process_vm_readv.
 *
 * Revocation is immediate: the initiator announces the handle it is about
 * to use (rdma_active) before it checks the table, and a deregistration
 * revokes the key and then waits until no initiator announces that
 * handle (vd_shm_mr_quiesce).  With a seq_cst fence on both sides, either
 * the initiator sees the revoked key, or the target sees the announcement
 * and waits for the copy to end.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "prov/shm/shm.h"

static bool reliable(const struct vd_vi *vi)
{
	return vi->attrs.ReliabilityLevel != VIP_SERVICE_UNRELIABLE;
}

/* The target VI's permission and the region's, as published. */
static int rdma_permitted(struct vd_shm_conn *c, VIP_MEM_HANDLE h, uint64_t addr,
			  uint64_t len, bool write)
{
	/* Acquire pairs with publish_rx_attrs()'s release stores. */
	uint32_t f = atomic_load_explicit(&c->tx->ra.rx_flags, memory_order_acquire);
	uint32_t ptag = atomic_load_explicit(&c->tx->ra.rx_ptag, memory_order_acquire);

	if (!(f & (write ? VD_RXF_RDMA_WRITE : VD_RXF_RDMA_READ)))
		return -EACCES;
	if (!c->peer_tpt)
		return -EACCES;
	return vd_tpt_check_remote(c->peer_tpt, h, addr, len, ptag,
				   write ? VD_TPT_RDMA_WRITE : VD_TPT_RDMA_READ);
}

/* Check and copy with the handle announced; 0, -EACCES (refused: nothing
 * moved), -EIO (the copy failed or was short). */
static int rdma_move(struct vd_shm_conn *c, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE h,
		     uint64_t raddr, uint64_t total, bool write)
{
	struct iovec l[VD_MAX_SEGS], r = { (void *)(uintptr_t)raddr, total };
	unsigned nl = vd_shm_local_iov(d, 1, l);
	ssize_t n = 0;
	int err;

	atomic_store_explicit(&c->tx->s2.rdma_active, h ? h : 1, memory_order_relaxed);
	/* Pairs with the fence in VipDeregisterMem after it revokes the key. */
	atomic_thread_fence(memory_order_seq_cst);
	err = rdma_permitted(c, h, raddr, total, write);
	if (!err && total) {
		n = write ? process_vm_writev(c->peer_pid, l, nl, &r, 1, 0)
			  : process_vm_readv(c->peer_pid, l, nl, &r, 1, 0);
		if (n != (ssize_t)total)
			err = -EIO;
	}
	/* Release pairs with vd_shm_mr_quiesce()'s loads: the copy is over. */
	atomic_store_explicit(&c->tx->s2.rdma_active, 0, memory_order_release);
	return err == -EIO ? -EIO : (err ? -EACCES : 0);
}

/* A write with immediate needs a receive at the target before any byte
 * moves; without one it waits (flow control) or fails per level. */
static int imm_ready(struct vd_vi *vi, struct vd_shm_conn *c, VIP_DESCRIPTOR *d)
{
	unsigned n;
	int err = vd_shm_plan_send(vi, c, 0, &n);

	if (err == -EAGAIN)
		return vd_shm_defer(vi, d);
	return err ? -ENOSPC : 0;
}

static void refused(struct vd_vi *vi, struct vd_shm_conn *c, bool write)
{
	vi->stats.protection_errors++;
	vd_wq_complete_send(vi, VIP_STATUS_RDMA_PROT_ERROR);
	vd_shm_notice(c, write ? VD_SHM_NOTICE_RDMAW_PROT : VD_SHM_NOTICE_RDMAR_PROT,
		      reliable(vi));
	if (reliable(vi))
		vd_vi_break_locked(vi);
}

int vd_shm_rdma(struct vd_vi *vi, struct vd_shm_conn *c, VIP_DESCRIPTOR *d)
{
	VIP_ADDRESS_SEGMENT *as = (VIP_ADDRESS_SEGMENT *)vd_desc_seg(d, 0);
	bool write = (d->CS.Control & VIP_CONTROL_OP_MASK) == VIP_CONTROL_OP_RDMAWRITE;
	bool imm = write && (d->CS.Control & VIP_CONTROL_IMMEDIATE);
	uint64_t total;
	uint32_t st = vd_desc_check_segs(vi, d, 1, &total);
	int err;

	if (st) {
		vd_wq_complete_send(vi, st);
		return 0;
	}
	if (imm) {
		err = imm_ready(vi, c, d);
		if (err == -EAGAIN)
			return err;
		if (err) {
			vd_wq_complete_send(vi, vd_shm_no_receive(vi, c, VD_SHM_NOTICE_RECVQ_EMPTY));
			vd_shm_break_after(vi, c, VD_SHM_NOTICE_RECVQ_EMPTY);
			return 0;
		}
	}
	d->CS.Reserved = 0;
	err = rdma_move(c, d, as->Handle, (uint64_t)(uintptr_t)vd_pv(as->Data), total, write);
	if (err == -EACCES) {
		refused(vi, c, write);
		return 0;
	}
	if (err) {
		vd_wq_complete_send(vi, VIP_STATUS_TRANSPORT_ERROR);
		if (reliable(vi)) {
			vd_shm_conn_fail(c, "process_vm_readv/writev failed");
			vd_vi_break_locked(vi);
		}
		return 0;
	}
	if (write)
		vi->stats.rdma_writes++;
	else
		vi->stats.rdma_reads++;
	vi->stats.rdma_bytes += total;
	if (imm)
		vd_shm_post_imm(vi, c, d->CS.ImmediateData, (uint32_t)total,
				VIP_STATUS_OP_REMOTE_RDMA_WRITE | VIP_STATUS_IMMEDIATE);
	vd_wq_complete_send(vi, 0);
	return 0;
}
