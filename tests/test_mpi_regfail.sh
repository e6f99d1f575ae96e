#!/bin/bash
# SPDX-License-Identifier: MIT
# A receiver out of lockable memory must not leave its sender waiting:
# run with pinned message buffers (VIADUCT_MPI_PIN=1; by default they are
# not pinned) as an ordinary user with a 1 MiB RLIMIT_MEMLOCK (root only: it
# needs to drop privileges; otherwise skipped).  The programs run from a
# copy nobody can read, so a checkout in a 0700 directory passes too.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need regfail
mt_as_nobody_setup regfail
prog=$MT_NB_DIR/mpitest_regfail
for proto in get rndv; do
	out=$(cd / && env "$MT_NB_ENV" VIADUCT_MPI_PIN=1 VIADUCT_MPI_PROTOCOL=$proto timeout -k 5 60 \
		prlimit --memlock=1048576 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$MT_NB_VDRUN" -n 2 "$prog" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		mt_ok "regfail $proto"
	else
		mt_bad "regfail $proto: exit $rc"
		echo "$out" | head -20 | sed 's/^/     | /'
	fi
done
mt_done
