#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/dtype.c (derived datatypes, Pack/Unpack, Get_elements) under
# vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need dtype
for n in $MT_RANKS; do
	mt_run dtype "$n" -- dtype
done
mt_done
