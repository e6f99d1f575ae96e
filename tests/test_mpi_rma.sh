#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/rma.c (one-sided communication) under vdrun for 1, 2, 3, 4 and
# 7 ranks; over the ofi provider where it opens; and, as root with
# MPICH's Hydra, across two hosts (network namespaces): windows whose
# members come through shm and ofi at once, shared windows refused.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need rma
for n in $MT_RANKS; do
	mt_run rma "$n" -- rma
done
if ! VIADUCT_PROVIDER=ofi:tcp "$B/tests/test_vipl_api_vi" >/dev/null 2>&1; then
	echo "skip: the ofi provider cannot open here"
	mt_done
	exit
fi
vd_ofi_suppressions
for n in 2 3; do
	mt_run "rma over ofi" "$n" VIADUCT_MPI_NET=ofi VIADUCT_OFI_PROVIDER=tcp -- rma
done

# Across two hosts, in a subshell: without root or Hydra it exits 77.
across_hosts() {
	local HYDRA rsh spec n
	HYDRA=$(command -v mpiexec.hydra) || exit 77
	# shellcheck source=tests/netns.sh
	. "$(dirname "$0")/netns.sh"
	vd_netns_up
	rsh=$(mktemp /tmp/viaduct-nsrsh.XXXXXX)
	trap 'rm -f "$rsh"; vd_netns_cleanup' EXIT
	vd_netns_agent "$rsh"
	for spec in "3 $VD_IP_A,$VD_IP_B" "4 $VD_IP_A:2,$VD_IP_B:2"; do
		n=${spec%% *}
		VIADUCT_OFI_PROVIDER=tcp vd_in A timeout -k 5 60 "$HYDRA" -hosts "${spec#* }" \
			-launcher ssh -launcher-exec "$rsh" -n "$n" "$(mt_prog rma)" hosts ||
			exit 1
	done
}
(across_hosts) >"$mt_log" 2>&1
case $? in
0) mt_ok "rma across two hosts n=3, n=4" ;;
77) echo "skip: rma across two hosts ($(tail -1 "$mt_log"))" ;;
*) mt_bad "rma across two hosts"; tail -20 "$mt_log" | sed 's/^/     | /' ;;
esac
mt_done
