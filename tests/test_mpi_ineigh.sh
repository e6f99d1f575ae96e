#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/ineigh.c (nonblocking neighbourhood collectives) under vdrun
# for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need ineigh
for n in $MT_RANKS; do
	mt_run ineigh "$n" -- ineigh
done
mt_done
