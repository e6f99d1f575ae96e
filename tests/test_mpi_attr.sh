#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/attr.c under vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need attr
for n in $MT_RANKS; do
	mt_run attr "$n" -- attr
done
mt_done
