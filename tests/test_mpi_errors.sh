#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/errors.c: error classes under MPI_ERRORS_RETURN for every rank
# count; then under the default MPI_ERRORS_ARE_FATAL a bad MPI_Send must
# end the whole job with a non-zero status and a message naming the call.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need errors
for n in $MT_RANKS; do
	mt_run errors "$n" -- errors
done
prog=$(mt_prog errors)
for n in 1 3; do
	t0=$(date +%s.%N)
	timeout -k 5 20 "$VDRUN" -n "$n" "$prog" fatal >"$mt_log" 2>&1
	rc=$?
	dt=$(echo "$(date +%s.%N) - $t0" | bc)
	if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		mt_bad "fatal handler n=$n: vdrun exit $rc (expected non-zero, no timeout) in ${dt}s"
		sed 's/^/     | /' "$mt_log" | head -20
	elif ! grep -q 'MPI_Send' "$mt_log"; then
		mt_bad "fatal handler n=$n: no message naming MPI_Send"
		sed 's/^/     | /' "$mt_log" | head -20
	else
		mt_ok "fatal handler n=$n: vdrun exit $rc in ${dt}s"
	fi
done
mt_done
