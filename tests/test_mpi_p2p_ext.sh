#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/p2p_ext.c (persistent requests, matched probe, Testsome,
# generalized requests, ...) under vdrun for 1, 2, 3, 4 and 7 ranks, then
# with the large protocols forced in turn.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need p2p_ext
for n in $MT_RANKS; do
	mt_run p2p_ext "$n" -- p2p_ext
done
for proto in rndv get; do
	for n in 2 3; do
		mt_run "p2p_ext VIADUCT_MPI_PROTOCOL=$proto" "$n" VIADUCT_MPI_PROTOCOL=$proto -- p2p_ext
	done
done
mt_done
