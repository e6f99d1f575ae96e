#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/reduce.c under vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need reduce
for n in $MT_RANKS; do
	mt_run reduce "$n" -- reduce
done
mt_done
