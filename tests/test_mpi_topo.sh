#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/topo.c under vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need topo
for n in $MT_RANKS; do
	mt_run topo "$n" -- topo
done
mt_done
