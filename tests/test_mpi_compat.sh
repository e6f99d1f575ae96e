#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/compat.c (MPI_Reduce_local, MPI_Op_commutative, MPI_Pcontrol
# and the MPI-1 names MPI-3.0 removed) under vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need compat
for n in $MT_RANKS; do
	mt_run compat "$n" -- compat
done
mt_done
