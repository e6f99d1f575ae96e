/* SPDX-License-Identifier: MIT */
/*
 * Connection API: argument checks and VI state; the provider does the
 * rendezvous (for shm: an abstract Unix socket per address).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "vipl/vipl_internal.h"

/* A pending request from VipConnectWait, until accepted or rejected. */
struct vd_conn {
	struct vd_obj obj;
	struct vd_nic *nic;
	struct vd_conn_req *req;
};

static bool addr_valid(const struct vd_nic *nic, const VIP_NET_ADDRESS *a)
{
	return a && a->HostAddressLen == nic->caps->addr_len &&
	       a->DiscriminatorLen <= nic->caps->max_discriminator;
}

VIP_RETURN VipConnectWait(VIP_NIC_HANDLE nh, VIP_NET_ADDRESS *local, VIP_ULONG timeout,
			  VIP_NET_ADDRESS *remote, VIP_VI_ATTRIBUTES *attrs,
			  VIP_CONN_HANDLE *out)
{
	struct vd_nic *nic = vd_obj_lookup(nh, VD_OBJ_NIC);
	struct vd_conn_req *req;
	struct vd_conn *c;
	int err;

	if (!nic || !addr_valid(nic, local) || !remote || !attrs || !out)
		return VIP_INVALID_PARAMETER;
	err = nic->ops->connect_wait(nic, local, vd_timeout_ms(timeout), &req);
	if (err)
		return vd_ret(err);
	c = vd_obj_new(VD_OBJ_CONN, sizeof(*c));
	if (!c) {
		nic->ops->connect_reject(req);
		return VIP_ERROR_RESOURCE;
	}
	c->nic = nic;
	c->req = req;
	/* The caller sized RemoteAddr like its own address (clients do). */
	nic->ops->conn_req_info(req, remote,
				offsetof(VIP_NET_ADDRESS, HostAddress) +
				local->HostAddressLen + local->DiscriminatorLen, attrs);
	*out = vd_obj_handle(c);
	return VIP_SUCCESS;
}

/* The request stays valid after an attribute mismatch: the server may
 * change its VI and accept again. */
VIP_RETURN VipConnectAccept(VIP_CONN_HANDLE ch, VIP_VI_HANDLE vh)
{
	struct vd_conn *c = vd_obj_lookup(ch, VD_OBJ_CONN);
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	int err;

	if (!c || !vi || vi->nic != c->nic)
		return VIP_INVALID_PARAMETER;
	if (atomic_load(&vi->state) != VIP_STATE_IDLE || vi->conn)
		return VIP_INVALID_STATE;
	atomic_store(&vi->early_break, 0);
	err = c->nic->ops->connect_accept(c->req, vi);
	if (err == -EBADSLT || err == -EMSGSIZE || err == -EXDEV)
		return vd_ret(err);
	vd_obj_free(c);
	return vd_ret(err);
}

VIP_RETURN VipConnectReject(VIP_CONN_HANDLE ch)
{
	struct vd_conn *c = vd_obj_lookup(ch, VD_OBJ_CONN);

	if (!c)
		return VIP_INVALID_PARAMETER;
	c->nic->ops->connect_reject(c->req);
	vd_obj_free(c);
	return VIP_SUCCESS;
}

/* Idle -> Pending for the duration of a connection attempt; back to Idle
 * on failure.  False when the VI was not Idle. */
static bool enter_pending(struct vd_vi *vi)
{
	int idle = VIP_STATE_IDLE;

	if (vi->conn)
		return false;
	atomic_store(&vi->early_break, 0);      /* none from an earlier attempt */
	return atomic_compare_exchange_strong(&vi->state, &idle, VIP_STATE_CONNECT_PENDING);
}

static void leave_pending(struct vd_vi *vi)
{
	int pending = VIP_STATE_CONNECT_PENDING;

	atomic_compare_exchange_strong(&vi->state, &pending, VIP_STATE_IDLE);
}

VIP_RETURN VipConnectRequest(VIP_VI_HANDLE vh, VIP_NET_ADDRESS *local,
			     VIP_NET_ADDRESS *remote, VIP_ULONG timeout,
			     VIP_VI_ATTRIBUTES *attrs)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	VIP_VI_ATTRIBUTES dummy;
	int err;

	if (!vi || !addr_valid(vi->nic, local) || !addr_valid(vi->nic, remote) || timeout == 0)
		return VIP_INVALID_PARAMETER;
	if (!enter_pending(vi))
		return VIP_INVALID_STATE;
	err = vi->nic->ops->connect_request(vi, local, remote, vd_timeout_ms(timeout),
					    attrs ? attrs : &dummy);
	if (err)
		leave_pending(vi);
	return vd_ret(err);
}

VIP_RETURN VipDisconnect(VIP_VI_HANDLE vh)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);

	if (!vi)
		return VIP_INVALID_PARAMETER;
	if (atomic_load(&vi->state) == VIP_STATE_IDLE && !vi->conn)
		return VIP_SUCCESS;     /* lenient: clients disconnect twice */
	vd_vi_disconnect(vi);
	return VIP_SUCCESS;
}

VIP_RETURN VipConnectPeerRequest(VIP_VI_HANDLE vh, VIP_NET_ADDRESS *local,
				 VIP_NET_ADDRESS *remote, VIP_ULONG timeout)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	int err;

	if (!vi || !addr_valid(vi->nic, local) || !addr_valid(vi->nic, remote) || timeout == 0)
		return VIP_INVALID_PARAMETER;
	if (!enter_pending(vi))
		return VIP_INVALID_STATE;
	err = vi->nic->ops->peer_request(vi, local, remote, vd_timeout_ms(timeout));
	if (err)
		leave_pending(vi);
	return vd_ret(err);
}

static VIP_RETURN peer_progress(VIP_VI_HANDLE vh, int timeout_ms, VIP_VI_ATTRIBUTES *attrs)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	VIP_VI_ATTRIBUTES dummy;
	int err;

	if (!vi)
		return VIP_INVALID_PARAMETER;
	if (atomic_load(&vi->state) != VIP_STATE_CONNECT_PENDING)
		return atomic_load(&vi->state) == VIP_STATE_CONNECTED ?
		       VIP_SUCCESS : VIP_INVALID_STATE;
	err = vi->nic->ops->peer_progress(vi, timeout_ms, attrs ? attrs : &dummy);
	if (err == -EINPROGRESS)
		return VIP_NOT_DONE;
	if (err)
		leave_pending(vi);
	return vd_ret(err);
}

VIP_RETURN VipConnectPeerDone(VIP_VI_HANDLE vh, VIP_VI_ATTRIBUTES *attrs)
{
	return peer_progress(vh, 0, attrs);
}

/* Blocks until connected or the PeerRequest's own timeout passes. */
VIP_RETURN VipConnectPeerWait(VIP_VI_HANDLE vh, VIP_VI_ATTRIBUTES *attrs)
{
	return peer_progress(vh, -1, attrs);
}
