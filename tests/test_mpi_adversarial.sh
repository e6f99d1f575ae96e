#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/adversarial.c under vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need adversarial
for n in $MT_RANKS; do
	mt_run adversarial "$n" -- adversarial
done
mt_done
