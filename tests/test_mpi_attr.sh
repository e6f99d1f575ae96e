#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/attr.c under vdrun for 1, 2, 3, 4 and 7 ranks.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need attr
for n in $MT_RANKS; do
	mt_run attr "$n" -- attr
done
# MPI_APPNUM: which command of an MPMD line started the rank, under vdrun
# and under Hydra.
prog=$(mt_prog attr)
for launcher in "$VDRUN" "$(command -v mpiexec.hydra || true)"; do
	[ -n "$launcher" ] || continue
	if timeout "$MT_TIMEOUT" "$launcher" -n 1 env MT_APPNUM=0 "$prog" : \
		-n 2 env MT_APPNUM=1 "$prog" >"$mt_log" 2>&1; then
		mt_ok "MPI_APPNUM 0 and 1 under $(basename "$launcher") -n 1 : -n 2"
	else
		mt_bad "MPI_APPNUM under $(basename "$launcher") -n 1 : -n 2"
		sed 's/^/     | /' "$mt_log" | tail -8
	fi
done
mt_done
