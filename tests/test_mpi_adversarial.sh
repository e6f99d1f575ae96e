#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/adversarial.c, adversarial_fin.c and (when Fortran is
# built) tests/fortran/adversarial_*.f90 under vdrun for 1, 2, 3, 4 and 7
# ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need adversarial adversarial_fin
for n in $MT_RANKS; do
	mt_run adversarial "$n" -- adversarial
	mt_run adversarial_fin "$n" -- adversarial_fin
	for f in adversarial_attr adversarial_graph; do
		[ ! -x "$(mt_prog $f)" ] || mt_run $f "$n" -- $f
	done
done
mt_done
