#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/comm2.c under vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need comm2
for n in $MT_RANKS; do
	mt_run comm2 "$n" -- comm2
done
mt_done
