/* SPDX-License-Identifier: MIT */
/*
 * ofi provider completion queues: events live in this process (a ring of
 * VI handle | recv bit under a queue lock); nothing another process
 * writes is involved.  Waiting drives the fabric's progress.
 */
#include <errno.h>
#include <stdlib.h>

#include "prov/ofi/ofi.h"

#define RECV_BIT (1ull << 63)

struct vd_ofi_cq {
	vd_lock_t lock;
	uint64_t *ev;               /* VD_MAX_CQ_ENTRIES */
	uint32_t head, tail;
	_Atomic int32_t ring_unread;    /* see vd_ofi_cq_ring_count */
};

int vd_ofi_cq_open(struct vd_cq *cq)
{
	struct vd_ofi_cq *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	q->ev = malloc(VD_MAX_CQ_ENTRIES * sizeof(*q->ev));
	if (!q->ev) {
		free(q);
		return -ENOMEM;
	}
	vd_lock_init(&q->lock);
	cq->prov = q;
	return 0;
}

void vd_ofi_cq_close(struct vd_cq *cq)
{
	struct vd_ofi_cq *q = cq->prov;

	cq->prov = NULL;
	if (q) {
		free(q->ev);
		free(q);
	}
}

static int cq_take(struct vd_ofi_cq *q, uint64_t *vi_bits, bool *recv)
{
	int err = -EAGAIN;

	vd_lock(&q->lock);
	if (q->head != q->tail) {
		uint64_t e = q->ev[q->head % VD_MAX_CQ_ENTRIES];
		/* Relaxed store: vd_ofi_cq_ready reads it without this lock. */
		__atomic_store_n(&q->head, q->head + 1, __ATOMIC_RELAXED);
		*vi_bits = e & ~RECV_BIT;
		*recv = (e & RECV_BIT) != 0;
		err = 0;
	}
	vd_unlock(&q->lock);
	return err;
}

/* An empty CQ drives the fabric once and looks again: a VipCQDone loop
 * is what busy-polls a CQ server, and it must not wait for the service
 * thread (which may share its CPU).  Called with the core's CQ lock,
 * which no completion path takes. */
int vd_ofi_cq_pop(struct vd_cq *cq, uint64_t *vi_bits, bool *recv)
{
	struct vd_ofi_cq *q = cq->prov;

	if (!q)
		return -EAGAIN;
	if (cq_take(q, vi_bits, recv) == 0)
		return 0;
	vd_ofi_poll(vd_ofi_nic(cq->nic));
	return cq_take(q, vi_bits, recv);
}

/* A handle's top bit is always clear (its type sits in bits 56..63 and is
 * small), so it carries "receive". */
int vd_ofi_cq_push_local(struct vd_cq *cq, struct vd_vi *vi, bool recv)
{
	struct vd_ofi_cq *q = cq->prov;
	uint64_t bits = vd_obj_handle_bits(vi);
	int err = 0;

	if (!q || (bits & RECV_BIT))
		return -EINVAL;
	vd_lock(&q->lock);
	if (q->tail - q->head < cq->entries) {
		q->ev[q->tail % VD_MAX_CQ_ENTRIES] = bits | (recv ? RECV_BIT : 0);
		/* Relaxed store: see cq_take. */
		__atomic_store_n(&q->tail, q->tail + 1, __ATOMIC_RELAXED);
	} else {
		err = -ENOSPC;
	}
	vd_unlock(&q->lock);
	if (err)
		vd_async_error(cq->nic, NULL, cq, NULL, VIP_RESOURCE_CQ, VIP_ERROR_CATASTROPHIC);
	vd_event_bump(&vd_ofi_nic(cq->nic)->events);
	return err;
}

/* Under the core's CQ lock: a VipCQWait or notify thread may look while
 * VipDestroyCQ closes the queue (vd_ofi_cq_close runs under that lock),
 * and must see prov == NULL rather than freed memory.  rings: an unread
 * ring message counts too (viaduct_cq_wait_any; VipCQWait waits for
 * events only). */
static bool cq_has(struct vd_cq *cq, bool rings)
{
	struct vd_ofi_cq *q;
	bool ready;

	vd_lock(&cq->lock);
	q = cq->prov;
	/* Relaxed: a hint; the pop takes the queue lock. */
	ready = q && (__atomic_load_n(&q->head, __ATOMIC_RELAXED) !=
		      __atomic_load_n(&q->tail, __ATOMIC_RELAXED) ||
		      (rings && atomic_load_explicit(&q->ring_unread, memory_order_relaxed) > 0));
	vd_unlock(&cq->lock);
	return ready;
}

/* As vd_ofi_cq_pop: the fabric's data progress is manual, so a caller
 * that spins on readiness must also drive it, or nothing it waits for
 * can arrive until it gives up and sleeps. */
bool vd_ofi_cq_ready(struct vd_cq *cq)
{
	if (cq_has(cq, true))
		return true;
	vd_ofi_poll(vd_ofi_nic(cq->nic));
	return cq_has(cq, true);
}

/* The CQ outlives every VI bound to it (VipDestroyCQ refuses while one
 * is), so a ring's count always finds its queue. */
void vd_ofi_cq_ring_count(struct vd_cq *cq, int delta)
{
	struct vd_ofi_cq *q = cq->prov;

	if (q)
		atomic_fetch_add_explicit(&q->ring_unread, delta, memory_order_relaxed);
}

/* A sleep on a set of CQs: on `events`, which every progress pass that
 * recorded something bumps, while the service thread reads the fabric
 * for us (no thread of ours can sleep in its poll() and on the other
 * CQs' words at once). */
int vd_ofi_cq_arm(struct vd_cq *cq, struct vd_waitv *w, void **armed)
{
	struct vd_ofi_nic *on = vd_ofi_nic(cq->nic);

	vd_event_arm(&on->events, w);
	vd_ofi_handoff(on, 1);
	*armed = on;
	if (cq_has(cq, true)) {
		vd_ofi_cq_disarm(cq, on, false);
		return 1;
	}
	return 0;
}

void vd_ofi_cq_disarm(struct vd_cq *cq, void *armed, bool timed_out)
{
	struct vd_ofi_nic *on = armed;

	(void)cq, (void)timed_out;
	vd_ofi_handoff(on, -1);
	vd_event_disarm(&on->events);
}

int vd_ofi_cq_sleep(struct vd_cq *cq, uint64_t deadline_ns, bool rings)
{
	if (deadline_ns && vd_now_ns() >= deadline_ns)
		return -ETIMEDOUT;
	if (cq_has(cq, rings))
		return 0;
	vd_ofi_progress(vd_ofi_nic(cq->nic), deadline_ns, true);
	return 0;
}
