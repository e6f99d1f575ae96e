#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/dtype_ext.c (f90 parameterised types, external32 packing)
# under vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need dtype_ext
for n in $MT_RANKS; do
	mt_run dtype_ext "$n" -- dtype_ext
done
mt_done
