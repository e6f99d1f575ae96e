/* SPDX-License-Identifier: MIT */
/*
 * Work queues: posting, completion in FIFO order, *Done and *Wait, and
 * what happens to outstanding descriptors when a connection ends.
 *
 * The provider moves data; this file owns the descriptor rings and every
 * write to a descriptor's Status.  A descriptor belongs to the provider
 * from VipPost* until *Done returns it.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "vipl/vipl_internal.h"

void vd_wq_wake_local(struct vd_wq *q)
{
	vd_futex_bump(&q->wake_seq);
}

static int wq_grow(struct vd_wq *q)
{
	uint32_t ncap = q->cap ? q->cap * 2 : 64;
	VIP_DESCRIPTOR **nr;

	if (ncap > VD_MAX_QUEUE_DESC)
		return -ENOMEM;
	nr = malloc(ncap * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	for (uint64_t i = q->head; i < q->tail; i++)
		nr[i & (ncap - 1)] = vd_wq_at(q, i);
	free(q->ring);
	q->ring = nr;
	q->cap = ncap;
	return 0;
}

/* ---- descriptor checks ---------------------------------------------------- */

/* The descriptor itself: aligned, in registered memory of this NIC (the
 * handle given to VipPost*), sane control word.  Reads nothing before the
 * control segment is known to be registered. */
static int desc_check(struct vd_vi *vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh, bool recv)
{
	uint64_t a = (uint64_t)(uintptr_t)d;
	uint16_t ctl, nseg;

	if (!d || (a & (VIP_DESCRIPTOR_ALIGNMENT - 1)))
		return -EINVAL;
	if (vd_tpt_check_local(vi->nic, mh, a, sizeof(VIP_CONTROL_SEGMENT), vi->ptag_id))
		return -EINVAL;
	ctl = d->CS.Control;
	nseg = d->CS.SegCount;
	if (ctl & VIP_CONTROL_RESERVED || nseg > VD_MAX_SEGS)
		return -EINVAL;
	if ((ctl & VIP_CONTROL_OP_MASK) == VIP_CONTROL_OP_RESERVED)
		return -EINVAL;
	if (recv && (ctl & VIP_CONTROL_OP_MASK) != VIP_CONTROL_OP_SENDRECV)
		return -EINVAL;
	if ((ctl & VIP_CONTROL_OP_MASK) != VIP_CONTROL_OP_SENDRECV && nseg < 1)
		return -EINVAL;
	if (vd_tpt_check_local(vi->nic, mh, a,
			       sizeof(VIP_CONTROL_SEGMENT) + nseg * sizeof(VIP_DATA_SEGMENT),
			       vi->ptag_id))
		return -EINVAL;
	return 0;
}

uint32_t vd_desc_check_segs(struct vd_vi *vi, VIP_DESCRIPTOR *d, unsigned first,
			    uint64_t *total)
{
	uint64_t sum = 0;

	for (unsigned i = first; i < d->CS.SegCount; i++) {
		VIP_DATA_SEGMENT *s = vd_desc_seg(d, i);
		if (s->Length && vd_tpt_check_local(vi->nic, s->Handle,
						    (uint64_t)(uintptr_t)vd_pv(s->Data),
						    s->Length, vi->ptag_id))
			return VIP_STATUS_PROTECTION_ERROR;
		sum += s->Length;
	}
	*total = sum;
	return sum > vi->attrs.MaxTransferSize || sum > VD_MAX_TRANSFER ?
		VIP_STATUS_LENGTH_ERROR : 0;
}

/* A receive's segments at post time: each must start in memory registered
 * with the VI's ptag, but may be declared longer than its registration.
 * Only the bytes that land are checked against it, when they land
 * (vd_recv_room, and the provider at placement), as VIA clients that
 * post generous lengths expect. */
uint32_t vd_desc_check_recv_segs(struct vd_vi *vi, VIP_DESCRIPTOR *d, uint64_t *total)
{
	uint64_t sum = 0, room;

	for (unsigned i = 0; i < d->CS.SegCount; i++) {
		VIP_DATA_SEGMENT *s = vd_desc_seg(d, i);
		if (s->Length && vd_tpt_local_room(vi->nic, s->Handle,
						   (uint64_t)(uintptr_t)vd_pv(s->Data),
						   vi->ptag_id, &room))
			return VIP_STATUS_PROTECTION_ERROR;
		sum += s->Length;
	}
	*total = sum;
	return sum > vi->attrs.MaxTransferSize || sum > VD_MAX_TRANSFER ?
		VIP_STATUS_LENGTH_ERROR : 0;
}

/* Registered bytes of receive segment s from its start, at most its
 * Length (0 if the registration is gone). */
uint64_t vd_recv_seg_room(struct vd_vi *vi, const VIP_DATA_SEGMENT *s)
{
	uint64_t room;

	if (vd_tpt_local_room(vi->nic, s->Handle, (uint64_t)(uintptr_t)vd_pv(s->Data),
			      vi->ptag_id, &room))
		return 0;
	return room < s->Length ? room : s->Length;
}

uint64_t vd_desc_room(VIP_DESCRIPTOR *d)
{
	uint64_t room = 0;

	for (unsigned i = 0; i < d->CS.SegCount; i++)
		room += vd_desc_seg(d, i)->Length;
	return room;
}

bool vd_recv_lands_registered(struct vd_vi *vi, VIP_DESCRIPTOR *d, uint64_t len)
{
	for (unsigned i = 0; i < d->CS.SegCount && len; i++) {
		VIP_DATA_SEGMENT *s = vd_desc_seg(d, i);
		uint64_t take = s->Length < len ? s->Length : len;

		if (take > vd_recv_seg_room(vi, s))
			return false;
		len -= take;
	}
	return true;
}

/* ---- completion ------------------------------------------------------------- */

static void desc_finish(VIP_DESCRIPTOR *d, uint32_t status)
{
	/* Release: a client polling Status directly sees Length and
	 * ImmediateData written before it. */
	__atomic_store_n(&d->CS.Status, status | VIP_STATUS_DONE, __ATOMIC_RELEASE);
}

void vd_wq_complete_send(struct vd_vi *vi, uint32_t status)
{
	VIP_DESCRIPTOR *d = vd_wq_at(&vi->sq, vi->sq.done);
	uint32_t op = d->CS.Control & VIP_CONTROL_OP_MASK;

	if (op == VIP_CONTROL_OP_RDMAWRITE)
		status |= VIP_STATUS_OP_RDMA_WRITE;
	else if (op == VIP_CONTROL_OP_RDMAREAD)
		status |= VIP_STATUS_OP_RDMA_READ;
	desc_finish(d, status);
	vi->sq.done++;
	vi->sq.sent = vi->sq.done;
	if (!(status & VIP_STATUS_ERROR_MASK))
		vi->stats.sends++;
	if (vi->send_cq)
		vi->nic->ops->cq_push_local(vi->send_cq, vi, false);
}

void vd_wq_complete_recv(struct vd_vi *vi, uint32_t status, uint32_t length,
			 uint32_t imm, bool announce)
{
	VIP_DESCRIPTOR *d = vd_wq_at(&vi->rq, vi->rq.done);

	d->CS.Length = length;
	if (status & VIP_STATUS_IMMEDIATE)
		d->CS.ImmediateData = imm;
	if (!(status & VIP_STATUS_OP_MASK))
		status |= VIP_STATUS_OP_RECEIVE;
	desc_finish(d, status);
	vi->rq.done++;
	if (vi->rq.sent < vi->rq.done)
		vi->rq.sent = vi->rq.done;
	if (!(status & VIP_STATUS_ERROR_MASK)) {
		vi->stats.recvs++;
		vi->stats.recv_bytes += length;
	}
	if (announce && vi->recv_cq)
		vi->nic->ops->cq_push_local(vi->recv_cq, vi, true);
}

static void set_stalled(struct vd_vi *vi, bool stalled)
{
	if (stalled == vi->send_stalled)
		return;
	vi->send_stalled = stalled;
	atomic_fetch_add(&vi->nic->stalled, stalled ? 1u : (uint32_t)-1);
}

void vd_sq_progress(struct vd_vi *vi)
{
	bool live = vi->conn && atomic_load(&vi->state) == VIP_STATE_CONNECTED;

	if (live && vi->sq.done < vi->sq.tail)
		vi->nic->ops->send_progress(vi);
	set_stalled(vi, live && vi->sq.done < vi->sq.tail);
}

void vd_nic_progress_stalled(struct vd_nic *nic)
{
	pthread_mutex_lock(&nic->lock);
	for (struct vd_list *l = nic->vis.next; l != &nic->vis; l = l->next) {
		struct vd_vi *vi = vd_container_of(l, struct vd_vi, nic_link);

		vd_lock(&vi->sq.lock);
		if (vi->send_stalled)
			vd_sq_progress(vi);
		vd_unlock(&vi->sq.lock);
	}
	pthread_mutex_unlock(&nic->lock);
}

/* Every outstanding descriptor of both queues completes as flushed.
 * Both locks held. */
static void flush_locked(struct vd_vi *vi)
{
	while (vi->sq.done < vi->sq.tail)
		vd_wq_complete_send(vi, VIP_STATUS_DESC_FLUSHED_ERROR);
	set_stalled(vi, false);
	while (vi->rq.done < vi->rq.tail)
		vd_wq_complete_recv(vi, VIP_STATUS_DESC_FLUSHED_ERROR, 0, 0, true);
}

static void wake_all(struct vd_vi *vi)
{
	vd_wq_wake_local(&vi->sq);
	vd_wq_wake_local(&vi->rq);
}

/* Both locks held; returns true when this call moved the VI to Error. */
static bool break_both_locked(struct vd_vi *vi)
{
	int st = atomic_load(&vi->state);

	if (st != VIP_STATE_CONNECTED && st != VIP_STATE_CONNECT_PENDING)
		return false;
	if (vi->conn)
		vi->nic->ops->recv_progress(vi);   /* data already delivered */
	atomic_store(&vi->state, VIP_STATE_ERROR);
	flush_locked(vi);
	return true;
}

void vd_vi_break_locked(struct vd_vi *vi)
{
	vd_lock(&vi->rq.lock);
	bool broke = break_both_locked(vi);
	vd_unlock(&vi->rq.lock);
	if (broke) {
		atomic_store(&vi->break_unreported, true);
		vi->nic->ops->wake(vi);
		wake_all(vi);
	}
}

void vd_vi_conn_broken(struct vd_vi *vi, VIP_ERROR_CODE code)
{
	vd_lock(&vi->sq.lock);
	vd_lock(&vi->rq.lock);
	/* An accepting VI stays Idle until vd_vi_connected, but its provider
	 * already watches the connection: a break now is applied there. */
	bool early = atomic_load(&vi->state) == VIP_STATE_IDLE;
	if (early)
		atomic_store(&vi->early_break, (uint32_t)code + 1);
	bool broke = !early && break_both_locked(vi);
	vd_unlock(&vi->rq.lock);
	vd_unlock(&vi->sq.lock);
	if (early)
		return;
	/* A break the data path made itself (e.g. a copy to a peer that just
	 * died) is reported when the service thread learns why. */
	if (!broke && !atomic_exchange(&vi->break_unreported, false))
		return;
	if (vi->conn)
		vi->nic->ops->wake(vi);
	wake_all(vi);
	vd_async_error(vi->nic, vi, NULL, NULL, VIP_RESOURCE_VI, code);
}

void vd_vi_connected(struct vd_vi *vi)
{
	vi->nic->ops->conn_ready(vi);
	vd_lock(&vi->sq.lock);
	vd_lock(&vi->rq.lock);
	/* A peer may break the connection the moment the provider watches
	 * it, before we get here (vd_vi_conn_broken from the service
	 * thread): Error stays, or that break would be lost. */
	uint32_t early = atomic_exchange(&vi->early_break, 0);
	if (atomic_load(&vi->state) != VIP_STATE_ERROR) {
		atomic_store(&vi->state, VIP_STATE_CONNECTED);
		vi->nic->ops->recv_publish(vi);
	}
	if (early && !break_both_locked(vi))
		early = 0;
	vd_unlock(&vi->rq.lock);
	vd_unlock(&vi->sq.lock);
	if (early && vi->conn)
		vi->nic->ops->wake(vi);
	wake_all(vi);
	if (early)
		vd_async_error(vi->nic, vi, NULL, NULL, VIP_RESOURCE_VI,
			       (VIP_ERROR_CODE)(early - 1));
}

/* Disconnect or destroy: deliver what already arrived, drop the
 * connection, flush the rest, back to Idle. */
void vd_vi_disconnect(struct vd_vi *vi)
{
	/* A peer-to-peer request still pending is the provider's to cancel. */
	bool pending = atomic_load(&vi->state) == VIP_STATE_CONNECT_PENDING;

	/* Leave Connected under both locks first: from then on no data-path
	 * call uses the connection, and sleepers, once woken, sleep on the
	 * private words instead of the shared region about to go away. */
	vd_lock(&vi->sq.lock);
	vd_lock(&vi->rq.lock);
	if (vi->conn && atomic_load(&vi->state) == VIP_STATE_CONNECTED)
		vi->nic->ops->recv_progress(vi);
	atomic_store(&vi->state, VIP_STATE_IDLE);
	vd_unlock(&vi->rq.lock);
	vd_unlock(&vi->sq.lock);
	if (vi->conn)
		vi->nic->ops->wake(vi);
	if (vi->conn || pending)
		vi->nic->ops->disconnect(vi);   /* no VI lock: see the op */
	vd_lock(&vi->sq.lock);
	vd_lock(&vi->rq.lock);
	flush_locked(vi);
	atomic_store(&vi->state, VIP_STATE_IDLE);
	atomic_store(&vi->break_unreported, false);
	vd_unlock(&vi->rq.lock);
	vd_unlock(&vi->sq.lock);
	wake_all(vi);
}

/* ---- posting ------------------------------------------------------------------ */

static int wq_append(struct vd_wq *q, VIP_DESCRIPTOR *d)
{
	if (q->tail - q->head >= q->cap) {
		int err = wq_grow(q);
		if (err)
			return err;
	}
	q->ring[q->tail & (q->cap - 1)] = d;
	q->tail++;
	return 0;
}

VIP_RETURN VipPostSend(VIP_VI_HANDLE vh, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	int err, st;

	if (!vi || desc_check(vi, d, mh, false))
		return VIP_INVALID_PARAMETER;
	st = atomic_load(&vi->state);
	if (st == VIP_STATE_IDLE || st == VIP_STATE_CONNECT_PENDING)
		return VIP_INVALID_STATE;   /* never transmitted */
	d->CS.Status = 0;
	vd_lock(&vi->sq.lock);
	err = wq_append(&vi->sq, d);
	if (!err) {
		if (atomic_load(&vi->state) == VIP_STATE_CONNECTED && vi->conn)
			vd_sq_progress(vi);
		else
			vd_wq_complete_send(vi, VIP_STATUS_DESC_FLUSHED_ERROR);
	}
	vd_unlock(&vi->sq.lock);
	return err == -ENOMEM ? VIP_ERROR_RESOURCE : VIP_SUCCESS;
}

VIP_RETURN VipPostRecv(VIP_VI_HANDLE vh, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	uint64_t total;
	int err;

	if (!vi || desc_check(vi, d, mh, true))
		return VIP_INVALID_PARAMETER;
	d->CS.Status = 0;
	d->CS.Length = 0;
	vd_lock(&vi->rq.lock);
	err = wq_append(&vi->rq, d);
	if (!err) {
		uint32_t bad = vd_desc_check_recv_segs(vi, d, &total);
		if (bad || atomic_load(&vi->state) == VIP_STATE_ERROR) {
			/* Completes in order, once it reaches the front. */
			d->CS.Reserved = bad ? bad : VIP_STATUS_DESC_FLUSHED_ERROR;
		} else {
			d->CS.Reserved = 0;
		}
		if (vi->conn && atomic_load(&vi->state) == VIP_STATE_CONNECTED)
			vi->nic->ops->recv_publish(vi);
		else if (atomic_load(&vi->state) == VIP_STATE_ERROR)
			vd_wq_complete_recv(vi, VIP_STATUS_DESC_FLUSHED_ERROR, 0, 0, true);
	}
	vd_unlock(&vi->rq.lock);
	return err ? VIP_ERROR_RESOURCE : VIP_SUCCESS;
}

/* ---- reaping ---------------------------------------------------------------- */

/* Head of a queue: VIP_SUCCESS / VIP_DESCRIPTOR_ERROR with the descriptor,
 * VIP_NOT_DONE, or VIP_DESCRIPTOR_ERROR with NULL for an empty queue.
 * Lock held. */
static VIP_RETURN wq_take(struct vd_wq *q, VIP_DESCRIPTOR **out)
{
	VIP_DESCRIPTOR *d;

	if (q->head == q->tail) {
		*out = NULL;
		return VIP_DESCRIPTOR_ERROR;
	}
	if (q->head == q->done) {
		*out = NULL;
		return VIP_NOT_DONE;
	}
	d = vd_wq_at(q, q->head++);
	d->CS.Reserved = 0;
	*out = d;
	return d->CS.Status & VIP_STATUS_ERROR_MASK ? VIP_DESCRIPTOR_ERROR : VIP_SUCCESS;
}

static VIP_RETURN send_done(struct vd_vi *vi, VIP_DESCRIPTOR **out)
{
	VIP_RETURN r;

	vd_lock(&vi->sq.lock);
	if (vi->sq.done < vi->sq.tail)
		vd_sq_progress(vi);
	r = wq_take(&vi->sq, out);
	vd_unlock(&vi->sq.lock);
	return r;
}

static VIP_RETURN recv_done(struct vd_vi *vi, VIP_DESCRIPTOR **out)
{
	VIP_RETURN r;

	vd_lock(&vi->rq.lock);
	if (vi->conn && atomic_load(&vi->state) == VIP_STATE_CONNECTED)
		vi->nic->ops->recv_progress(vi);
	r = wq_take(&vi->rq, out);
	vd_unlock(&vi->rq.lock);
	return r;
}

VIP_RETURN VipSendDone(VIP_VI_HANDLE vh, VIP_DESCRIPTOR **out)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);

	if (!vi || !out)
		return VIP_INVALID_PARAMETER;
	return send_done(vi, out);
}

VIP_RETURN VipRecvDone(VIP_VI_HANDLE vh, VIP_DESCRIPTOR **out)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);

	if (!vi || !out)
		return VIP_INVALID_PARAMETER;
	return recv_done(vi, out);
}

/* Provider sleep when connected, else the private word (connection
 * set-up and teardown bump it). */
static int queue_sleep(struct vd_vi *vi, bool recv, uint64_t deadline)
{
	struct vd_wq *q = recv ? &vi->rq : &vi->sq;
	uint32_t seen = atomic_load_explicit(&q->wake_seq, memory_order_acquire);

	if (vi->conn && atomic_load(&vi->state) == VIP_STATE_CONNECTED)
		return recv ? vi->nic->ops->recv_sleep(vi, deadline)
			    : vi->nic->ops->send_sleep(vi, deadline);
	return vd_futex_wait(&q->wake_seq, seen, deadline);
}

struct queue_waiter {
	struct vd_vi *vi;
	bool recv;
	VIP_DESCRIPTOR **out;
};

static VIP_RETURN queue_poll(void *arg)
{
	struct queue_waiter *w = arg;

	if (vd_obj_lookup(vd_obj_handle(w->vi), VD_OBJ_VI) != w->vi)
		return VIP_INVALID_PARAMETER;   /* destroyed meanwhile */
	return w->recv ? recv_done(w->vi, w->out) : send_done(w->vi, w->out);
}

static int queue_sleep_fn(void *arg, uint64_t deadline)
{
	struct queue_waiter *w = arg;

	return queue_sleep(w->vi, w->recv, deadline);
}

static VIP_RETURN queue_wait(struct vd_vi *vi, bool recv, VIP_ULONG timeout,
			     VIP_DESCRIPTOR **out)
{
	struct queue_waiter w = { vi, recv, out };

	return vd_poll_wait(vi->nic, queue_poll, queue_sleep_fn, &w, timeout);
}

VIP_RETURN VipSendWait(VIP_VI_HANDLE vh, VIP_ULONG timeout, VIP_DESCRIPTOR **out)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);

	if (!vi || !out)
		return VIP_INVALID_PARAMETER;
	return queue_wait(vi, false, timeout, out);
}

VIP_RETURN VipRecvWait(VIP_VI_HANDLE vh, VIP_ULONG timeout, VIP_DESCRIPTOR **out)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);

	if (!vi || !out)
		return VIP_INVALID_PARAMETER;
	return queue_wait(vi, true, timeout, out);
}
