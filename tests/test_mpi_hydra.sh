#!/bin/bash
# SPDX-License-Identifier: MIT
# The same MPI programs started by MPICH's Hydra launcher (mpiexec.hydra)
# instead of vdrun: the ranks speak PMI-1 to it.  Skipped without Hydra.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need coll comm
HYDRA=$(command -v mpiexec.hydra || true)
if [ -z "$HYDRA" ]; then
	echo "SKIP: mpiexec.hydra not installed (Debian package mpich)"
	exit 77
fi
for n in 1 3 4; do
	for p in coll comm; do
		timeout -k 5 60 "$HYDRA" -n "$n" "$(mt_prog $p)" >"$mt_log" 2>&1
		rc=$?
		if [ $rc -eq 0 ]; then
			mt_ok "hydra $p n=$n"
		else
			mt_bad "hydra $p n=$n: exit $rc"
			sed 's/^/     | /' "$mt_log" | head -20
		fi
	done
done
mt_done
