#!/bin/bash
# SPDX-License-Identifier: MIT
# A receiver out of lockable memory must not leave its sender waiting:
# run as an ordinary user with a 1 MiB RLIMIT_MEMLOCK (root only: it
# needs to drop privileges; otherwise skipped).
. "$(dirname "$0")/mpi/runlib.sh"
mt_need regfail
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
	echo "SKIP: needs root, setpriv and user nobody"
	exit 77
fi
prog=$(mt_prog regfail)
for proto in get rndv; do
	out=$(VIADUCT_MPI_PROTOCOL=$proto timeout -k 5 60 prlimit --memlock=1048576 \
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$VDRUN" -n 2 "$prog" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		mt_ok "regfail $proto"
	else
		mt_bad "regfail $proto: exit $rc"
		echo "$out" | head -20 | sed 's/^/     | /'
	fi
done
mt_done
