/* SPDX-License-Identifier: MIT */
/*
 * shm provider: RDMA write and read into arbitrary registered user memory
 * of the peer (the SCI paper as VIA RDMA).  The initiator checks the target's
 * translation-and-protection table, which the target publishes read-only,
 * then moves the bytes with one process_vm_writev / process_vm_readv.
 *
 * Revocation is immediate: the initiator announces the handle it is about
 * to use (rdma_active) before it checks the table, and a deregistration
 * revokes the key and then waits until no initiator announces that
 * handle (vd_shm_mr_quiesce).  With a seq_cst fence on both sides, either
 * the initiator sees the revoked key, or the target sees the announcement
 * and waits for the copy to end.  Copies go in chunks and the initiator
 * checks the key again before each, so it leaves within one chunk.
 *
 * What the target cannot do is stop a same-user process that passed its
 * check and then stalls (stopped, or hostile): it may still write later.
 * So a deregistration whose holder stays inside breaks the holder's
 * connection after VD_QUIESCE_BREAK_NS and fails with -EBUSY after
 * VD_QUIESCE_GIVE_UP_NS, the region revoked but still pinned and its
 * memory still the application's to keep; it never reports success while
 * a live peer may be copying.  A retry waits again.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

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
	return vd_shm_tpt_check(c->peer_tpt, h, addr, len, ptag,
				   write ? VD_TPT_RDMA_WRITE : VD_TPT_RDMA_READ);
}

/* ---- copies between the two processes ---------------------------------------- */

/* One chunk of a cross-process copy: long enough that the syscall costs
 * nothing next to it (a 4 MiB copy takes 0.3-1 ms), short enough that
 * the peer's death or a revocation is noticed within about a millisecond. */
#define VD_SHM_COPY_CHUNK (4ull << 20)

/* The peer process has exited (its connection may still look fine). */
bool vd_shm_peer_dead(const struct vd_shm_conn *c)
{
	struct pollfd p = { .fd = c->pidfd, .events = POLLIN };

	if (c->pidfd >= 0)
		return poll(&p, 1, 0) > 0;
	return kill(c->peer_pid, 0) != 0 && errno == ESRCH;
}

int vd_shm_copy(struct vd_shm_conn *c, const struct iovec *l, unsigned nl,
		const struct iovec *r, unsigned nr, uint64_t total, bool write,
		int (*recheck)(struct vd_shm_conn *c, uint64_t off, uint64_t len, void *arg),
		void *arg)
{
	for (uint64_t off = 0; off < total;) {
		uint64_t len = total - off < VD_SHM_COPY_CHUNK ? total - off : VD_SHM_COPY_CHUNK;
		struct iovec lp[VD_MAX_SEGS], rp[VD_MAX_SEGS];
		unsigned nlp = vd_shm_iov_slice(l, nl, off, len, lp);
		unsigned nrp = vd_shm_iov_slice(r, nr, off, len, rp);
		ssize_t n;
		int err;

		if (off && (atomic_load(&c->broken) || vd_shm_peer_dead(c)))
			return -EIO;
		if (off && recheck && (err = recheck(c, off, len, arg)) != 0)
			return err;
		n = write ? process_vm_writev(c->peer_pid, lp, nlp, rp, nrp, 0)
			  : process_vm_readv(c->peer_pid, lp, nlp, rp, nrp, 0);
		if (n != (ssize_t)len)
			return -EIO;
		off += len;
	}
	/* A long copy into a process that died meanwhile landed nowhere. */
	if (total > VD_SHM_COPY_CHUNK && vd_shm_peer_dead(c))
		return -EIO;
	return 0;
}

/* ---- RDMA ------------------------------------------------------------------------ */

struct rdma_check {
	VIP_MEM_HANDLE h;
	uint64_t raddr;
	bool write;
};

/* Between chunks: the region may have been revoked meanwhile. */
static int rdma_recheck(struct vd_shm_conn *c, uint64_t off, uint64_t len, void *arg)
{
	const struct rdma_check *k = arg;

	return rdma_permitted(c, k->h, k->raddr + off, len, k->write) ? -EACCES : 0;
}

/* Check and copy with the handle announced; 0, -EACCES (refused: nothing
 * moved, or revoked during the copy), -EIO (the copy failed or was short,
 * or the peer died). */
static int rdma_move(struct vd_shm_conn *c, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE h,
		     uint64_t raddr, uint64_t total, bool write)
{
	struct iovec l[VD_MAX_SEGS], r = { (void *)(uintptr_t)raddr, total };
	struct rdma_check k = { h, raddr, write };
	unsigned nl = vd_shm_local_iov(d, 1, l);
	int err;

	atomic_store_explicit(&c->tx->s2.rdma_active, h ? h : 1, memory_order_relaxed);
	/* Pairs with the fence in VipDeregisterMem after it revokes the key;
	 * the same announcement covers the checks between chunks. */
	atomic_thread_fence(memory_order_seq_cst);
	err = rdma_permitted(c, h, raddr, total, write) ? -EACCES : 0;
	if (!err)
		err = vd_shm_copy(c, l, nl, &r, 1, total, write, rdma_recheck, &k);
	/* Release pairs with vd_shm_mr_quiesce()'s loads: the copy is over. */
	atomic_store_explicit(&c->tx->s2.rdma_active, 0, memory_order_release);
	return err;
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

/* ---- revocation ---------------------------------------------------------------- */

#define VD_QUIESCE_BREAK_NS 100000000ull        /* 100 ms: break the holder */
#define VD_QUIESCE_GIVE_UP_NS 1000000000ull     /* 1 s: fail, keep the pin */

/* Peers of this NIC inside an RDMA on TPT index idx; those in for longer
 * than VD_QUIESCE_BREAK_NS lose their connection.  A broken connection
 * still counts while its process lives: a stalled copy may resume. */
static unsigned quiesce_holders(struct vd_nic *nic, uint32_t idx, bool break_them,
				pid_t *who)
{
	unsigned holders = 0;

	/* Lock order nic -> queue, as everywhere; both held only to look. */
	pthread_mutex_lock(&nic->lock);
	for (struct vd_list *l = nic->vis.next; l != &nic->vis; l = l->next) {
		struct vd_vi *vi = vd_container_of(l, struct vd_vi, nic_link);
		struct vd_shm_conn *c;

		vd_lock(&vi->rq.lock);
		c = vi->conn;
		if (c) {
			/* seq_cst: pairs with the initiator's fence after its
			 * store (rdma_move). */
			uint32_t a = atomic_load(&c->rx->s2.rdma_active);

			if (a && (a & (VD_TPT_MAX - 1)) == idx && !vd_shm_peer_dead(c)) {
				holders++;
				*who = c->peer_pid;
				if (break_them && !atomic_load(&c->broken))
					vd_shm_conn_fail(c, "stays inside an RDMA on a region "
							 "being deregistered");
			}
		}
		vd_unlock(&vi->rq.lock);
	}
	pthread_mutex_unlock(&nic->lock);
	return holders;
}

/* Wait until no peer is inside an RDMA on TPT index idx.  The caller
 * revoked the key and issued a seq_cst fence; pairs with the initiator's
 * store of rdma_active + fence before it reads the TPT.  No lock is held
 * while waiting.  0, or -EBUSY: a live peer stayed inside. */
int vd_shm_mr_quiesce(struct vd_nic *nic, uint32_t idx)
{
	uint64_t t0 = vd_now_ns();
	pid_t who = 0;

	for (unsigned spins = 0;; spins++) {
		uint64_t waited = vd_now_ns() - t0;

		if (!quiesce_holders(nic, idx, waited > VD_QUIESCE_BREAK_NS, &who))
			return 0;
		if (waited > VD_QUIESCE_GIVE_UP_NS) {
			vd_log("shm: pid %d stays inside an RDMA on a region being "
			       "deregistered; it stays registered", (int)who);
			return -EBUSY;
		}
		if (spins < 64)
			sched_yield();  /* an honest copy ends within a chunk */
		else
			usleep(1000);
	}
}
