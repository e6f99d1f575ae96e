#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/env.c: every Init_thread level and plain MPI_Init; arguments
# (one with a space) reach the ranks unchanged.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need env
for n in 1 3; do
	for mode in init single funneled serialized multiple; do
		mt_run "env $mode" "$n" -- env "$mode" arg1 "two words"
	done
done
# A call before MPI_Init, a second MPI_Init, a call after MPI_Finalize:
# the job stops, and the message says which (not a guess at the cause).
out=$(mktemp /tmp/mpitest-envmsg.XXXXXX)
for m in "before:MPI_Comm_rank: other error: MPI is not initialised" \
	"twice:MPI_Init: other error: MPI is already initialised" \
	"after:MPI_Comm_rank: other error: MPI is already finalised"; do
	mode=${m%%:*}
	if [ "$mode" = before ]; then
		timeout 30 "$(mt_prog env)" "$mode" >"$out" 2>&1
	else
		timeout 30 "$VDRUN" -n 1 "$(mt_prog env)" "$mode" >"$out" 2>&1
	fi
	rc=$?
	if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "${m#*:}" "$out" && ! grep -q "e\.g\." "$out"; then
		mt_ok "env $mode: fatal, saying so (exit $rc)"
	else
		mt_bad "env $mode: exit $rc, expected a message: ${m#*:}"
		sed 's/^/     | /' "$out" | tail -5
	fi
done
rm -f "$out"
mt_done
