/* SPDX-License-Identifier: MIT */
/*
 * Message rings (viaduct extension, docs/vipl.md "Message rings"): small
 * messages outside the descriptor queues.  This file checks handles and
 * state and serialises callers on the VI's queue locks; the provider
 * moves the bytes.
 */
#include <errno.h>

#include "vipl/vipl_internal.h"

/* VIADUCT_VI_RING_SOLO: the caller serialises, so no lock (the flag is
 * read once per call; changing it while a ring call runs is the caller's
 * own race, as the flag's contract says) -- where the provider allows it:
 * ofi's progress thread applies arrivals under the queue locks too, so
 * there the locks stay. */
static bool solo(const struct vd_vi *vi)
{
	return (vi->nic->caps->flags & VD_PROV_RING_SOLO) &&
	       (atomic_load_explicit(&vi->ext_flags, memory_order_relaxed) & VIADUCT_VI_RING_SOLO);
}

static void q_lock(struct vd_wq *q, bool skip)
{
	if (!skip)
		vd_lock(&q->lock);
}

static void q_unlock(struct vd_wq *q, bool skip)
{
	if (!skip)
		vd_unlock(&q->lock);
}

VIP_RETURN viaduct_ring_send(VIP_VI_HANDLE vh, const void *hdr, VIP_UINT32 hdr_len,
			     const void *data, VIP_UINT32 data_len)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	bool unlocked;
	int err;

	if (!vi || (hdr_len && !hdr) || (data_len && !data) ||
	    (uint64_t)hdr_len + data_len > VIADUCT_RING_MAX_MSG)
		return VIP_INVALID_PARAMETER;
	if (!(vi->nic->caps->flags & VD_PROV_RINGS))
		return VIP_ERROR_NOT_SUPPORTED;
	unlocked = solo(vi);
	q_lock(&vi->sq, unlocked);
	err = atomic_load_explicit(&vi->state, memory_order_relaxed) == VIP_STATE_CONNECTED ?
	      vi->nic->ops->ring_send(vi, hdr, hdr_len, data, data_len) : -ENOTCONN;
	q_unlock(&vi->sq, unlocked);
	return vd_ret(err);
}

/* Peek, after releasing the message peeked before when `release` (there
 * may be none).  viaduct_ring_next does both under one lookup and one
 * lock: a reader's cost per message is mostly the calls themselves
 * (8-byte windowed MPI traffic inside a host spent a tenth of the
 * receiver's time in handle lookups and entry checks).  Messages that
 * arrived before the connection broke stay readable until the VI
 * disconnects; then "empty" becomes VIP_INVALID_STATE. */
static VIP_RETURN ring_read(VIP_VI_HANDLE vh, const void **msg, VIP_UINT32 *len, bool release)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	uint32_t n = 0;
	bool unlocked;
	int err = 0;

	if (!vi || !msg || !len)
		return VIP_INVALID_PARAMETER;
	if (!(vi->nic->caps->flags & VD_PROV_RINGS))
		return VIP_ERROR_NOT_SUPPORTED;
	unlocked = solo(vi);
	q_lock(&vi->rq, unlocked);
	if (release)
		err = vi->nic->ops->ring_release(vi);
	if (err == 0 || err == -EINVAL) {       /* -EINVAL: nothing peeked */
		err = vi->nic->ops->ring_peek(vi, msg, &n);
		if (err == -EAGAIN && atomic_load(&vi->state) != VIP_STATE_CONNECTED)
			err = -ENOTCONN;
	}
	q_unlock(&vi->rq, unlocked);
	*len = n;
	return vd_ret(err);
}

VIP_RETURN viaduct_ring_peek(VIP_VI_HANDLE vh, const void **msg, VIP_UINT32 *len)
{
	return ring_read(vh, msg, len, false);
}

VIP_RETURN viaduct_ring_next(VIP_VI_HANDLE vh, const void **msg, VIP_UINT32 *len)
{
	return ring_read(vh, msg, len, true);
}

VIP_RETURN viaduct_ring_release(VIP_VI_HANDLE vh)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	bool unlocked;
	int err;

	if (!vi)
		return VIP_INVALID_PARAMETER;
	if (!(vi->nic->caps->flags & VD_PROV_RINGS))
		return VIP_ERROR_NOT_SUPPORTED;
	unlocked = solo(vi);
	q_lock(&vi->rq, unlocked);
	err = vi->nic->ops->ring_release(vi);
	q_unlock(&vi->rq, unlocked);
	return err == -EINVAL ? VIP_INVALID_STATE : vd_ret(err);
}
