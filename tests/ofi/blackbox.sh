# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The black-box VIPL tests that run over the ofi provider (sourced by
# tests/test_vipl_ofi_suite.sh, on one host, and test_vipl_ofi_netns.sh,
# their two processes on two hosts).  The others are shm-only by design
# (the sealed TPT, socket names, 6-byte addresses, the 32-slot
# window) or not yet right over ofi: xfer_rel (the sender learns of a
# dropped unreliable send only later, so its dropped_sends count lags),
# api_conn (shm's address checks), fault_revoke (white-box: shm's table).
VD_OFI_TESTS="api_vi api_cq api_limits api_post cq_basic cq_many prot_handles prot_revoke
	prot_local xfer_disc xfer_sg xfer_rdma xfer_recvreg xfer_conn fault_rdma_death
	fault_peer ext_flow ext_split ext_ring ext_deep_ring xfer_threads xfer_max prot_rdma
	xfer_rdma_burst"
# Again with every transfer moved by the fabric's RMA (zero copy, pulled
# or pushed by the target), whatever its size: the same checks must hold.
VD_OFI_ZC_TESTS="prot_handles prot_revoke prot_local xfer_sg xfer_rdma xfer_recvreg
	fault_rdma_death ext_flow ext_split prot_rdma xfer_rdma_burst"
# And with every local buffer registered with the fabric, as FI_MR_LOCAL
# fabrics (verbs) need (VIADUCT_OFI_MR_LOCAL=1), with and without zero copy.
VD_OFI_MR_LOCAL_TESTS="cq_basic xfer_sg xfer_rdma xfer_recvreg ext_split prot_rdma"
# And over libfabric's net provider (native RDM over TCP, the default
# where libfabric offers it next to tcp;ofi_rxm), the others stay on rxm.
VD_OFI_NET_TESTS="cq_basic prot_rdma xfer_sg xfer_rdma xfer_rdma_burst ext_ring ext_deep_ring
	ext_flow fault_peer"
