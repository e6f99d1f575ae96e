#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/p2p.c (and p2p_nb.c) under every protocol forced in turn, for
# 1, 2, 3, 4 and 7 ranks; then with the split protocol from 8 KiB up, and
# with every message above 1 KiB pipelined; p2p_pipe.c for the pipelined
# protocol's own cases.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need p2p p2p_nb p2p_pipe
for proto in auto eager rndv get; do
	for n in $MT_RANKS; do
		mt_run "p2p VIADUCT_MPI_PROTOCOL=$proto" "$n" VIADUCT_MPI_PROTOCOL=$proto -- p2p
	done
	for n in 2 3; do
		mt_run "p2p_nb VIADUCT_MPI_PROTOCOL=$proto" "$n" VIADUCT_MPI_PROTOCOL=$proto -- p2p_nb
	done
done
# Split from 8 KiB: eager and pipelining kept below it.
split=(VIADUCT_MPI_SPLIT_MIN=8192 VIADUCT_MPI_EAGER_MAX=8192 VIADUCT_MPI_PIPELINE_MAX=0)
for n in 2 3 7; do
	mt_run "p2p split from 8 KiB" "$n" "${split[@]}" -- p2p
done
mt_run "p2p_nb split from 8 KiB" 3 "${split[@]}" -- p2p_nb
# Pipelined from 1 KiB to 16 MiB: every larger message in 16 KiB parts.
pipe=(VIADUCT_MPI_EAGER_MAX=1024 VIADUCT_MPI_PIPELINE_MAX=16m)
for n in 2 3 7; do
	mt_run "p2p pipelined from 1 KiB" "$n" "${pipe[@]}" -- p2p
done
mt_run "p2p_nb pipelined from 1 KiB" 3 "${pipe[@]}" -- p2p_nb
# The built-in limit, whatever MPI_Init measured here (tune.c).
for n in 2 3 4; do
	mt_run "p2p_pipe" "$n" VIADUCT_MPI_PIPELINE_MAX=131072 -- p2p_pipe
done
mt_run "p2p_pipe, pipelining off" 2 VIADUCT_MPI_PIPELINE_MAX=0 -- p2p_pipe
mt_done
