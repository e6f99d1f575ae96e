#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/winattr.c (window attributes, info, error handlers) under
# vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need winattr
for n in $MT_RANKS; do
	mt_run winattr "$n" -- winattr
done
mt_done
