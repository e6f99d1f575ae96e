#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/group.c under vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need group
for n in $MT_RANKS; do
	mt_run group "$n" -- group
done
mt_done
