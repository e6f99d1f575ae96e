#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/p2p.c (and p2p_nb.c) under every protocol forced in turn, for
# 1, 2, 3, 4 and 7 ranks; then with the split protocol from 8 KiB up.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need p2p p2p_nb
for proto in auto eager rndv get; do
	for n in $MT_RANKS; do
		mt_run "p2p VIADUCT_MPI_PROTOCOL=$proto" "$n" VIADUCT_MPI_PROTOCOL=$proto -- p2p
	done
	for n in 2 3; do
		mt_run "p2p_nb VIADUCT_MPI_PROTOCOL=$proto" "$n" VIADUCT_MPI_PROTOCOL=$proto -- p2p_nb
	done
done
for n in 2 3 7; do
	mt_run "p2p split from 8 KiB" "$n" VIADUCT_MPI_SPLIT_MIN=8192 -- p2p
done
mt_run "p2p_nb split from 8 KiB" 3 VIADUCT_MPI_SPLIT_MIN=8192 -- p2p_nb
mt_done
