/* SPDX-License-Identifier: MIT */
/*
 * Completion queues.  The provider keeps the event ring (for shm, a
 * shared ring that peers append to as they deliver, the CLAN event
 * queue); this file maps events back to VIs.  VipCQDone and VipCQWait
 * cost O(1) per event whatever the number of VIs bound to the CQ.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "vipl/vipl_internal.h"

VIP_RETURN VipCreateCQ(VIP_NIC_HANDLE nh, VIP_ULONG entries, VIP_CQ_HANDLE *out)
{
	struct vd_nic *nic = vd_obj_lookup(nh, VD_OBJ_NIC);
	struct vd_cq *cq;
	int err;

	if (!nic || !out || entries == 0 || entries > VD_MAX_CQ_ENTRIES)
		return VIP_INVALID_PARAMETER;
	if (!vd_nic_reserve(nic, &nic->ncqs, nic->caps->max_cq))
		return VIP_ERROR_RESOURCE;      /* MaxCQ of VipQueryNic */
	cq = vd_obj_new(VD_OBJ_CQ, sizeof(*cq));
	if (!cq) {
		vd_nic_unreserve(nic, &nic->ncqs);
		return VIP_ERROR_RESOURCE;
	}
	cq->nic = nic;
	cq->entries = (uint32_t)entries;
	vd_lock_init(&cq->lock);
	err = nic->ops->cq_open(cq);
	if (err) {
		vd_obj_free(cq);
		vd_nic_unreserve(nic, &nic->ncqs);
		return vd_ret(err);
	}
	pthread_mutex_lock(&nic->lock);
	vd_list_add(&nic->cqs, &cq->nic_link);
	pthread_mutex_unlock(&nic->lock);
	*out = vd_obj_handle(cq);
	return VIP_SUCCESS;
}

static void cq_destroy(struct vd_cq *cq)
{
	struct vd_nic *nic = cq->nic;

	pthread_mutex_lock(&nic->lock);
	vd_list_del(&cq->nic_link);
	nic->ncqs--;
	pthread_mutex_unlock(&nic->lock);
	vd_lock(&cq->lock);
	while (cq->notify_head) {       /* pending notifies are cancelled */
		struct vd_notify *n = cq->notify_head;
		cq->notify_head = n->next;
		free(n);
	}
	cq->notify_tail = &cq->notify_head;
	/* Under the lock: a racing VipCQDone sees prov == NULL, not an
	 * unmapped ring. */
	nic->ops->cq_close(cq);
	vd_unlock(&cq->lock);
	vd_obj_free(cq);
}

VIP_RETURN VipDestroyCQ(VIP_CQ_HANDLE ch)
{
	struct vd_cq *cq = vd_obj_lookup(ch, VD_OBJ_CQ);

	if (!cq)
		return VIP_INVALID_PARAMETER;
	if (atomic_load(&cq->bound))
		return VIP_INVALID_STATE;       /* a VI still feeds it */
	cq_destroy(cq);
	return VIP_SUCCESS;
}

/* VipCloseNic's lenient teardown (after every VI is gone). */
void vd_cq_destroy_all(struct vd_nic *nic)
{
	for (;;) {
		struct vd_cq *cq = NULL;

		pthread_mutex_lock(&nic->lock);
		if (nic->cqs.next != &nic->cqs)
			cq = vd_container_of(nic->cqs.next, struct vd_cq, nic_link);
		pthread_mutex_unlock(&nic->lock);
		if (!cq)
			return;
		cq_destroy(cq);
	}
}

/* The ring is sized for VD_MAX_CQ_ENTRIES at creation, so a resize only
 * records the new size. */
VIP_RETURN VipResizeCQ(VIP_CQ_HANDLE ch, VIP_ULONG entries)
{
	struct vd_cq *cq = vd_obj_lookup(ch, VD_OBJ_CQ);

	if (!cq || entries == 0 || entries > VD_MAX_CQ_ENTRIES)
		return VIP_INVALID_PARAMETER;
	cq->entries = (uint32_t)entries;
	return VIP_SUCCESS;
}

/* Next event whose VI still exists (events of destroyed VIs are
 * skipped).  CQ lock held. */
static VIP_RETURN cq_take(struct vd_cq *cq, VIP_VI_HANDLE *vh, VIP_BOOLEAN *recv)
{
	uint64_t bits;
	bool is_recv;

	while (cq->nic->ops->cq_pop(cq, &bits, &is_recv) == 0) {
		void *h = (void *)(uintptr_t)bits;
		struct vd_vi *vi = vd_obj_lookup(h, VD_OBJ_VI);

		if (!vi || vi->nic != cq->nic)
			continue;
		*vh = h;
		*recv = is_recv ? VIP_TRUE : VIP_FALSE;
		return VIP_SUCCESS;
	}
	return VIP_NOT_DONE;
}

static VIP_RETURN cq_done(struct vd_cq *cq, VIP_VI_HANDLE *vh, VIP_BOOLEAN *recv)
{
	VIP_RETURN r;

	if (atomic_load_explicit(&cq->nic->stalled, memory_order_relaxed))
		vd_nic_progress_stalled(cq->nic);

	vd_lock(&cq->lock);
	r = cq_take(cq, vh, recv);
	vd_unlock(&cq->lock);
	return r;
}

VIP_RETURN VipCQDone(VIP_CQ_HANDLE ch, VIP_VI_HANDLE *vh, VIP_BOOLEAN *recv)
{
	struct vd_cq *cq = vd_obj_lookup(ch, VD_OBJ_CQ);
	VIP_BOOLEAN dummy;

	if (!cq || !vh)
		return VIP_INVALID_PARAMETER;
	return cq_done(cq, vh, recv ? recv : &dummy);
}

struct cq_waiter {
	struct vd_cq *cq;
	VIP_CQ_HANDLE handle;
	VIP_VI_HANDLE *vh;
	VIP_BOOLEAN *recv;
	bool rings;                     /* viaduct_cq_wait_any */
};

static VIP_RETURN cq_poll(void *arg)
{
	struct cq_waiter *w = arg;

	if (vd_obj_lookup(w->handle, VD_OBJ_CQ) != w->cq)
		return VIP_INVALID_PARAMETER;   /* destroyed meanwhile */
	return cq_done(w->cq, w->vh, w->recv);
}

/* Stalled sends complete on a peer's receive, which does not wake this
 * ring: while there are any, look again every millisecond. */
static int cq_sleep_fn(void *arg, uint64_t deadline)
{
	struct cq_waiter *w = arg;
	uint64_t slice = vd_now_ns() + 1000000;

	if (atomic_load(&w->cq->nic->stalled) && (!deadline || deadline > slice)) {
		w->cq->nic->ops->cq_sleep(w->cq, slice, w->rings);
		return 0;
	}
	return w->cq->nic->ops->cq_sleep(w->cq, deadline, w->rings);
}

VIP_RETURN VipCQWait(VIP_CQ_HANDLE ch, VIP_ULONG timeout, VIP_VI_HANDLE *vh,
		     VIP_BOOLEAN *recv)
{
	struct vd_cq *cq = vd_obj_lookup(ch, VD_OBJ_CQ);
	VIP_BOOLEAN dummy;
	struct cq_waiter w = { cq, ch, vh, recv ? recv : &dummy, false };

	if (!cq || !vh)
		return VIP_INVALID_PARAMETER;
	return vd_poll_wait(cq->nic, cq_poll, cq_sleep_fn, &w, timeout);
}

/* ---- viaduct_cq_wait_any ------------------------------------------------------ */

static VIP_RETURN cq_any_poll(void *arg)
{
	struct cq_waiter *w = arg;

	if (vd_obj_lookup(w->handle, VD_OBJ_CQ) != w->cq)
		return VIP_INVALID_PARAMETER;   /* destroyed meanwhile */
	if (atomic_load_explicit(&w->cq->nic->stalled, memory_order_relaxed))
		vd_nic_progress_stalled(w->cq->nic);
	return w->cq->nic->ops->cq_ready(w->cq) ? VIP_SUCCESS : VIP_NOT_DONE;
}

VIP_RETURN viaduct_cq_wait_any(VIP_CQ_HANDLE ch, VIP_ULONG timeout)
{
	struct vd_cq *cq = vd_obj_lookup(ch, VD_OBJ_CQ);
	struct cq_waiter w = { cq, ch, NULL, NULL, true };

	if (!cq)
		return VIP_INVALID_PARAMETER;
	return vd_poll_wait(cq->nic, cq_any_poll, cq_sleep_fn, &w, timeout);
}

/* ---- viaduct_cq_wait_set ------------------------------------------------------ */

/* The longest sleep of a set: providers' safety nets (a look at every
 * connection after a quiet slice) run between two. */
#define VD_SET_SLICE_NS 50000000ull

struct cq_set {
	unsigned n;
	VIP_CQ_HANDLE handle[VIADUCT_CQ_SET_MAX];
	struct vd_cq *cq[VIADUCT_CQ_SET_MAX];
};

static VIP_RETURN cq_set_poll(void *arg)
{
	struct cq_set *s = arg;

	for (unsigned i = 0; i < s->n; i++) {
		struct cq_waiter w = { s->cq[i], s->handle[i], NULL, NULL, true };
		VIP_RETURN r = cq_any_poll(&w);

		if (r != VIP_NOT_DONE)
			return r;
	}
	return VIP_NOT_DONE;
}

/* Arm every CQ, then one futex_waitv over their words: whichever
 * provider completes first wakes us, without polling the others. */
static int cq_set_sleep(void *arg, uint64_t deadline)
{
	struct cq_set *s = arg;
	struct vd_waitv w[VIADUCT_CQ_SET_MAX];
	void *armed_as[VIADUCT_CQ_SET_MAX];
	uint64_t now = vd_now_ns(), until = deadline;
	uint64_t slice = now + VD_SET_SLICE_NS;
	unsigned armed = 0;
	int err = 0, r = 0;

	for (; armed < s->n; armed++) {
		/* Stalled sends complete on a peer's receive, which rings no
		 * word: look again every millisecond (as cq_sleep_fn). */
		if (atomic_load(&s->cq[armed]->nic->stalled))
			slice = now + 1000000;
		r = s->cq[armed]->nic->ops->cq_arm(s->cq[armed], &w[armed], &armed_as[armed]);
		if (r)
			break;
	}
	if (!until || until > slice)
		until = slice;
	if (!r) {
		err = vd_futex_waitv_recheck(w, armed, until);
	} else if (r < 0) {
		/* A provider that cannot arm: short naps, never a spin. */
		struct timespec nap = { 0, 200000 };
		nanosleep(&nap, NULL);
	}
	while (armed--)
		s->cq[armed]->nic->ops->cq_disarm(s->cq[armed], armed_as[armed],
						  err == -ETIMEDOUT);
	/* A slice that ran out is not the caller's timeout. */
	return err == -ETIMEDOUT && until != deadline ? 0 : err;
}

static VIP_RETURN wait_set(const VIP_CQ_HANDLE *cqs, unsigned n, VIP_ULONG timeout,
			   bool spin)
{
	struct cq_set s = { .n = n };
	uint64_t spin_ns = 0;

	if (!cqs || n == 0 || n > VIADUCT_CQ_SET_MAX)
		return VIP_INVALID_PARAMETER;
	for (unsigned i = 0; i < n; i++) {
		s.handle[i] = cqs[i];
		s.cq[i] = vd_obj_lookup(cqs[i], VD_OBJ_CQ);
		if (!s.cq[i])
			return VIP_INVALID_PARAMETER;
		/* The longest budget of the set's providers. */
		uint64_t own = spin ? vd_spin_ns(s.cq[i]->nic) : 0;

		if (own > spin_ns)
			spin_ns = own;
	}
	if (n == 1) {
		/* One CQ sleeps in its provider's own wait (for ofi, the
		 * fabric's fd), without handing progress to another thread. */
		struct cq_waiter w = { s.cq[0], cqs[0], NULL, NULL, true };

		return vd_poll_wait_spin(cq_any_poll, cq_sleep_fn, &w, timeout, spin_ns);
	}
	return vd_poll_wait_spin(cq_set_poll, cq_set_sleep, &s, timeout, spin_ns);
}

VIP_RETURN viaduct_cq_wait_set(const VIP_CQ_HANDLE *cqs, unsigned n, VIP_ULONG timeout)
{
	return wait_set(cqs, n, timeout, true);
}

VIP_RETURN viaduct_cq_sleep_set(const VIP_CQ_HANDLE *cqs, unsigned n, VIP_ULONG timeout)
{
	return wait_set(cqs, n, timeout, false);
}
