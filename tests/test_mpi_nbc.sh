#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/nbc.c under vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need nbc
for n in $MT_RANKS; do
	mt_run nbc "$n" -- nbc
done
mt_done
