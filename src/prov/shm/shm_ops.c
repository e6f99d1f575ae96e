/* SPDX-License-Identifier: MIT */
/* The shm provider's operation table (one node: shared memory + CMA). */
#include "prov/shm/shm.h"
#include "prov/shm/shm_conn.h"

const struct vd_prov_ops vd_shm_ops = {
	.name = "shm",
	.caps = VD_PROV_MOVES_BY_ADDRESS,   /* process_vm_readv/writev */
	.nic_open = vd_shm_nic_open,
	.nic_close = vd_shm_nic_close,
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
	.ring_send = vd_shm_ring_send,
	.ring_peek = vd_shm_ring_peek,
	.ring_release = vd_shm_ring_release,
	.mr_quiesce = vd_shm_mr_quiesce,
};
