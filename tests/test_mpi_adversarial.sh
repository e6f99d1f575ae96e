#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/adversarial.c and adversarial_fin.c under vdrun for 1, 2, 3,
# 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need adversarial adversarial_fin
for n in $MT_RANKS; do
	mt_run adversarial "$n" -- adversarial
	mt_run adversarial_fin "$n" -- adversarial_fin
done
mt_done
