#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/comm.c under vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need comm
for n in $MT_RANKS; do
	mt_run comm "$n" -- comm
done
mt_done
