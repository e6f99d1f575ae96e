/* SPDX-License-Identifier: MIT */
/*
 * VI objects: creation, attributes, destruction, and the viaduct
 * extensions (flow control, request splitting, transfer mode, stats).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vipl/vipl_internal.h"

static bool level_valid(VIP_RELIABILITY_LEVEL l)
{
	return l == VIP_SERVICE_UNRELIABLE || l == VIP_SERVICE_RELIABLE_DELIVERY ||
	       l == VIP_SERVICE_RELIABLE_RECEPTION;
}

/* Ptag of a VI: NULL means "any ptag of this NIC" (clients create VIs with
 * a zeroed attribute struct but register memory with a real ptag), unless
 * strict checking is on.  Returns the ptag to hold, NULL for "any", or
 * sets *err. */
static struct vd_ptag *vi_ptag(struct vd_nic *nic, VIP_PROTECTION_HANDLE h, int *err)
{
	struct vd_ptag *p = NULL;

	*err = vd_ptag_get(nic, h, &p);     /* holds p */
	if (!*err && !p && nic->strict_ptag) {
		p = nic->default_ptag;
		vd_ptag_hold(p);
	}
	return p;
}

static VIP_RETURN attrs_check(const VIP_VI_ATTRIBUTES *a)
{
	if (!level_valid(a->ReliabilityLevel))
		return VIP_INVALID_RELIABILITY_LEVEL;
	if (a->MaxTransferSize > VD_MAX_TRANSFER)
		return VIP_INVALID_MTU;
	return VIP_SUCCESS;
}

/* Takes over the caller's hold on p; drops the hold on the old one. */
static void vi_set_ptag(struct vd_vi *vi, struct vd_ptag *p)
{
	vd_ptag_release(vi->ptag);
	vi->ptag = p;
	vi->attrs.Ptag = p ? vd_obj_handle(p) : NULL;
	vi->ptag_id = p ? p->id : 0;
}

static struct vd_cq *cq_arg(struct vd_nic *nic, VIP_CQ_HANDLE h, int *err)
{
	struct vd_cq *cq;

	if (!h)
		return NULL;
	cq = vd_obj_lookup(h, VD_OBJ_CQ);
	if (!cq || cq->nic != nic)
		*err = -EINVAL;
	return cq;
}

static int vi_init_queues(struct vd_vi *vi)
{
	vd_lock_init(&vi->sq.lock);
	vd_lock_init(&vi->rq.lock);
	vi->sq.cap = vi->rq.cap = 64;
	vi->sq.ring = calloc(64, sizeof(VIP_DESCRIPTOR *));
	vi->rq.ring = calloc(64, sizeof(VIP_DESCRIPTOR *));
	return vi->sq.ring && vi->rq.ring ? 0 : -ENOMEM;
}

VIP_RETURN VipCreateVi(VIP_NIC_HANDLE nh, VIP_VI_ATTRIBUTES *a, VIP_CQ_HANDLE sh,
		       VIP_CQ_HANDLE rh, VIP_VI_HANDLE *out)
{
	struct vd_nic *nic = vd_obj_lookup(nh, VD_OBJ_NIC);
	struct vd_cq *scq, *rcq;
	struct vd_ptag *p;
	struct vd_vi *vi;
	VIP_RETURN r;
	int err = 0;

	if (!nic || !a || !out)
		return VIP_INVALID_PARAMETER;
	r = attrs_check(a);
	if (r != VIP_SUCCESS)
		return r;
	scq = cq_arg(nic, sh, &err);
	rcq = cq_arg(nic, rh, &err);
	if (err)
		return VIP_INVALID_PARAMETER;
	p = vi_ptag(nic, a->Ptag, &err);
	if (err)
		return VIP_INVALID_PTAG;
	if (!vd_nic_reserve(nic, &nic->nvis, nic->caps->max_vi)) {
		vd_ptag_release(p);
		return VIP_ERROR_RESOURCE;      /* MaxVI of VipQueryNic */
	}
	vi = vd_obj_new(VD_OBJ_VI, sizeof(*vi));
	if (!vi || vi_init_queues(vi)) {
		if (vi) {
			free(vi->sq.ring);
			free(vi->rq.ring);
			vd_obj_free(vi);
		}
		vd_ptag_release(p);
		vd_nic_unreserve(nic, &nic->nvis);
		return VIP_ERROR_RESOURCE;
	}
	vi->nic = nic;
	vi->attrs = *a;
	vi->attrs.Ptag = NULL;
	vi_set_ptag(vi, p);
	vi->send_cq = scq;
	vi->recv_cq = rcq;
	if (scq)
		atomic_fetch_add(&scq->bound, 1);
	if (rcq)
		atomic_fetch_add(&rcq->bound, 1);
	atomic_store(&vi->state, VIP_STATE_IDLE);
	pthread_mutex_lock(&nic->lock);
	vd_list_add(&nic->vis, &vi->nic_link);
	pthread_mutex_unlock(&nic->lock);
	*out = vd_obj_handle(vi);
	return VIP_SUCCESS;
}

static void vi_destroy(struct vd_vi *vi)
{
	struct vd_nic *nic = vi->nic;

	if (atomic_load(&vi->state) != VIP_STATE_IDLE || vi->conn)
		vd_vi_disconnect(vi);
	pthread_mutex_lock(&nic->lock);
	vd_list_del(&vi->nic_link);
	nic->nvis--;
	pthread_mutex_unlock(&nic->lock);
	vi_set_ptag(vi, NULL);
	if (vi->send_cq)
		atomic_fetch_sub(&vi->send_cq->bound, 1);
	if (vi->recv_cq)
		atomic_fetch_sub(&vi->recv_cq->bound, 1);
	/* Empty the queues under their locks (a racing call sees an empty
	 * VI, never a freed ring), wake sleepers, and only then recycle the
	 * object: vd_obj_free invalidates the handle. */
	vd_lock(&vi->sq.lock);
	vd_lock(&vi->rq.lock);
	free(vi->sq.ring);
	free(vi->rq.ring);
	memset(&vi->sq.ring, 0, sizeof(vi->sq) - offsetof(struct vd_wq, ring));
	memset(&vi->rq.ring, 0, sizeof(vi->rq) - offsetof(struct vd_wq, ring));
	vd_unlock(&vi->rq.lock);
	vd_unlock(&vi->sq.lock);
	vd_wq_wake_local(&vi->sq);
	vd_wq_wake_local(&vi->rq);
	vd_obj_free(vi);
}

VIP_RETURN VipDestroyVi(VIP_VI_HANDLE vh)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);

	if (!vi)
		return VIP_INVALID_PARAMETER;
	vi_destroy(vi);
	return VIP_SUCCESS;
}

/* VipCloseNic's lenient teardown. */
void vd_vi_destroy_all(struct vd_nic *nic)
{
	for (;;) {
		struct vd_vi *vi = NULL;

		pthread_mutex_lock(&nic->lock);
		if (nic->vis.next != &nic->vis)
			vi = vd_container_of(nic->vis.next, struct vd_vi, nic_link);
		pthread_mutex_unlock(&nic->lock);
		if (!vi)
			return;
		vi_destroy(vi);
	}
}

VIP_RETURN VipQueryVi(VIP_VI_HANDLE vh, VIP_VI_STATE *state, VIP_VI_ATTRIBUTES *a,
		      VIP_BOOLEAN *sq_empty, VIP_BOOLEAN *rq_empty)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);

	if (!vi)
		return VIP_INVALID_PARAMETER;
	if (state)
		*state = (VIP_VI_STATE)atomic_load(&vi->state);
	if (a)
		*a = vi->attrs;
	if (sq_empty) {
		vd_lock(&vi->sq.lock);
		*sq_empty = vi->sq.head == vi->sq.tail;
		vd_unlock(&vi->sq.lock);
	}
	if (rq_empty) {
		vd_lock(&vi->rq.lock);
		*rq_empty = vi->rq.head == vi->rq.tail;
		vd_unlock(&vi->rq.lock);
	}
	return VIP_SUCCESS;
}

/* Reliability level and MTU are fixed while a connection exists; ptag and
 * RDMA enables may change at any time and are republished to the peer. */
VIP_RETURN VipSetViAttributes(VIP_VI_HANDLE vh, VIP_VI_ATTRIBUTES *a)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	struct vd_ptag *p;
	VIP_RETURN r;
	int err;

	if (!vi || !a)
		return VIP_INVALID_PARAMETER;
	r = attrs_check(a);
	if (r != VIP_SUCCESS)
		return r;
	p = vi_ptag(vi->nic, a->Ptag, &err);
	if (err)
		return VIP_INVALID_PTAG;
	vd_lock(&vi->sq.lock);
	vd_lock(&vi->rq.lock);
	if (atomic_load(&vi->state) != VIP_STATE_IDLE &&
	    (a->ReliabilityLevel != vi->attrs.ReliabilityLevel ||
	     a->MaxTransferSize != vi->attrs.MaxTransferSize)) {
		r = VIP_INVALID_STATE;
		vd_ptag_release(p);
	} else {
		vi->attrs.ReliabilityLevel = a->ReliabilityLevel;
		vi->attrs.MaxTransferSize = a->MaxTransferSize;
		vi->attrs.QoS = a->QoS;
		vi->attrs.EnableRdmaWrite = a->EnableRdmaWrite;
		vi->attrs.EnableRdmaRead = a->EnableRdmaRead;
		vi_set_ptag(vi, p);
		if (vi->conn)
			vi->nic->ops->conn_attrs_changed(vi);
	}
	vd_unlock(&vi->rq.lock);
	vd_unlock(&vi->sq.lock);
	return r;
}

/* ---- viaduct extensions ------------------------------------------------------ */

VIP_RETURN viaduct_vi_set_ext(VIP_VI_HANDLE vh, const struct viaduct_vi_ext *ext)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);

	if (!vi || !ext || (ext->flags & ~VIADUCT_VI_FLAGS_ALL) ||
	    ext->xfer_mode > VIADUCT_XFER_DMA)
		return VIP_INVALID_PARAMETER;
	vd_lock(&vi->sq.lock);
	vd_lock(&vi->rq.lock);
	atomic_store(&vi->ext_flags, ext->flags);
	atomic_store(&vi->xfer_mode, ext->xfer_mode);
	if (vi->conn)
		vi->nic->ops->conn_attrs_changed(vi);
	vd_unlock(&vi->rq.lock);
	vd_unlock(&vi->sq.lock);
	return VIP_SUCCESS;
}

VIP_RETURN viaduct_vi_get_ext(VIP_VI_HANDLE vh, struct viaduct_vi_ext *ext)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);

	if (!vi || !ext)
		return VIP_INVALID_PARAMETER;
	ext->flags = atomic_load(&vi->ext_flags);
	ext->xfer_mode = atomic_load(&vi->xfer_mode);
	return VIP_SUCCESS;
}

VIP_RETURN viaduct_vi_get_stats(VIP_VI_HANDLE vh, struct viaduct_vi_stats *out)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);

	if (!vi || !out)
		return VIP_INVALID_PARAMETER;
	vd_lock(&vi->sq.lock);
	vd_lock(&vi->rq.lock);
	*out = vi->stats;
	vd_unlock(&vi->rq.lock);
	vd_unlock(&vi->sq.lock);
	return VIP_SUCCESS;
}

/* ---- Giganet user data ----------------------------------------------------- */

VIP_PVOID VipGetUserData(VIP_VI_HANDLE vh)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);

	return vi ? vi->user_data : NULL;
}

void VipSetUserData(VIP_VI_HANDLE vh, VIP_PVOID data)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);

	if (vi)
		vi->user_data = data;
}
