/* SPDX-License-Identifier: MIT */
/* The ofi provider's operation table (VIPL across hosts over libfabric). */
#include "prov/ofi/ofi.h"

const struct vd_prov_ops vd_ofi_ops = {
	.size = sizeof(struct vd_prov_ops),
	.version = VD_PROV_OPS_VERSION,
	.name = "ofi",
	.nic_open = vd_ofi_nic_open,
	.nic_close = vd_ofi_nic_close,
	.query = vd_ofi_query,
	.node_address = vd_ofi_node_address,
	.ns_lookup = vd_ofi_ns_lookup,
	.ns_reverse = vd_ofi_ns_reverse,
	.mr_reg = vd_ofi_mr_reg,
	.mr_dereg = vd_ofi_mr_dereg,
	.connect_wait = vd_ofi_connect_wait,
	.conn_req_info = vd_ofi_conn_req_info,
	.connect_accept = vd_ofi_connect_accept,
	.connect_reject = vd_ofi_connect_reject,
	.connect_request = vd_ofi_connect_request,
	/* peer_request / peer_progress: not yet (stubs: not supported) */
	.disconnect = vd_ofi_disconnect,
	.conn_ready = vd_ofi_conn_ready,
	.wake = vd_ofi_wake,
	.send_progress = vd_ofi_send_progress,
	.recv_publish = vd_ofi_recv_publish,
	.recv_progress = vd_ofi_recv_progress,
	.send_sleep = vd_ofi_send_sleep,
	.recv_sleep = vd_ofi_recv_sleep,
	.cq_open = vd_ofi_cq_open,
	.cq_close = vd_ofi_cq_close,
	.cq_pop = vd_ofi_cq_pop,
	.cq_push_local = vd_ofi_cq_push_local,
	.cq_sleep = vd_ofi_cq_sleep,
	.cq_ready = vd_ofi_cq_ready,
};
