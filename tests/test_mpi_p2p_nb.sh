#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/p2p_nb.c under vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need p2p_nb
for n in $MT_RANKS; do
	mt_run p2p_nb "$n" -- p2p_nb
done
mt_done
