#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/coll.c under vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need coll
for n in $MT_RANKS; do
	mt_run coll "$n" -- coll
done
mt_done
