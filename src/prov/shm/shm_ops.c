/* SPDX-License-Identifier: MIT */
/* The shm provider's operation table (one node: shared memory + CMA). */
#include <stdio.h>
#include <string.h>

#include "prov/shm/shm.h"
#include "prov/shm/shm_conn.h"

static void shm_query(struct vd_nic *nic, struct vd_prov_caps *c)
{
	(void)nic;
	c->flags = VD_PROV_MOVES_BY_ADDRESS |   /* process_vm_readv/writev */
		   VD_PROV_RINGS | VD_PROV_RDMA_READ | VD_PROV_RING_SOLO;
	c->addr_len = VD_SHM_ADDR_LEN;
	c->max_discriminator = VD_SHM_MAX_DISCRIMINATOR;
	c->inline_max = 40;
	c->max_transfer = VD_MAX_TRANSFER;
	c->max_vi = VD_SHM_MAX_VI;
	c->max_cq = VD_SHM_MAX_CQ;
	c->max_segs = VD_MAX_SEGS;
	c->reliability = VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY |
			 VIP_SERVICE_RELIABLE_RECEPTION;
	snprintf(c->fabric, sizeof(c->fabric), "%s", "shared memory + CMA");
}

const struct vd_prov_ops vd_shm_ops = {
	.size = sizeof(struct vd_prov_ops),
	.version = VD_PROV_OPS_VERSION,
	.name = "shm",
	.nic_open = vd_shm_nic_open,
	.nic_close = vd_shm_nic_close,
	.query = shm_query,
	.node_address = vd_shm_node_address,
	.ns_lookup = vd_shm_ns_lookup,
	.ns_reverse = vd_shm_ns_reverse,
	.mr_reg = vd_shm_mr_reg,
	.mr_update = vd_shm_mr_update,
	.mr_dereg = vd_shm_mr_dereg,
	.connect_wait = vd_shm_connect_wait,
	.conn_req_info = vd_shm_conn_req_info,
	.connect_accept = vd_shm_connect_accept,
	.connect_reject = vd_shm_connect_reject,
	.connect_request = vd_shm_connect_request,
	.peer_request = vd_shm_peer_request,
	.peer_progress = vd_shm_peer_progress,
	.disconnect = vd_shm_disconnect,
	.conn_ready = vd_shm_conn_ready,
	.conn_attrs_changed = vd_shm_conn_attrs_changed,
	.wake = vd_shm_wake,
	.send_progress = vd_shm_send_progress,
	.recv_publish = vd_shm_recv_publish,
	.recv_progress = vd_shm_recv_progress,
	.send_sleep = vd_shm_send_sleep,
	.recv_sleep = vd_shm_recv_sleep,
	.cq_open = vd_shm_cq_open,
	.cq_close = vd_shm_cq_close,
	.cq_pop = vd_shm_cq_pop,
	.cq_push_local = vd_shm_cq_push_local,
	.cq_sleep = vd_shm_cq_sleep,
	.cq_ready = vd_shm_cq_ready,
	.cq_arm = vd_shm_cq_arm,
	.cq_disarm = vd_shm_cq_disarm,
	.ring_send = vd_shm_ring_send,
	.ring_peek = vd_shm_ring_peek,
	.ring_release = vd_shm_ring_release,
};
