#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/rma.c (one-sided communication) under vdrun for 1, 2, 3, 4 and
# 7 ranks, over shm and (where it opens) over the ofi provider.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need rma
for n in $MT_RANKS; do
	mt_run rma "$n" -- rma
done
if VIADUCT_PROVIDER=ofi:tcp "$B/tests/test_vipl_api_vi" >/dev/null 2>&1; then
	vd_ofi_suppressions
	for n in 2 3; do
		mt_run "rma over ofi" "$n" VIADUCT_MPI_NET=ofi VIADUCT_OFI_PROVIDER=tcp -- rma
	done
fi
mt_done
