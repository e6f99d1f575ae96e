#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/adversarial.c, adversarial_fin.c and (when Fortran is
# built) tests/fortran/adversarial_attr.f90 under vdrun for 1, 2, 3, 4
# and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need adversarial adversarial_fin
for n in $MT_RANKS; do
	mt_run adversarial "$n" -- adversarial
	mt_run adversarial_fin "$n" -- adversarial_fin
	[ ! -x "$(mt_prog adversarial_attr)" ] ||
		mt_run adversarial_attr "$n" -- adversarial_attr
done
mt_done
