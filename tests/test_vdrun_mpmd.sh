#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vdrun's MPMD form, as mpiexec has it: "-n 1 a : -n 2 b" starts one job
# of three ranks, numbered in order, with one MPI_COMM_WORLD; each context
# runs its own program with its own arguments.  It used to run one rank of
# `a` with ": -n 2 b" as its arguments.  Malformed colon syntax is a usage
# error (exit 2), never a job.
#
# Usage: test_vdrun_mpmd.sh BUILD_DIR         (exit 0 pass, 1 fail, 77 skip)
set -u
B=${1:-${VIADUCT_BUILD:-}}
VDRUN=$B/tools/vdrun
HELLO=$B/examples/mpi_hello
[ -x "$VDRUN" ] && [ -x "$HELLO" ] || { echo "SKIP: vdrun or mpi_hello not built"; exit 77; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Context 2 is another program (env) with other arguments, which then
# runs the MPI program: all three ranks must be one job.
out=$(timeout 60 "$VDRUN" -n 1 "$HELLO" : -np 2 env MPMD_CONTEXT=2 "$HELLO" 2>&1)
rc=$?
want="hello from rank 0 of 3
hello from rank 1 of 3
hello from rank 2 of 3
sum of ranks: 3 (expected 3)"
got=$(sed -E 's/ on .*//' <<<"$out" | sort)
if [ "$rc" -ne 0 ] || [ "$got" != "$want" ]; then
	fail "MPMD -n 1 : -n 2 (exit $rc): $out"
else
	echo "ok: -n 1 prog : -n 2 env ... prog is one job of 3 ranks"
fi

# Each context's own arguments reach only its ranks.
out=$(timeout 30 "$VDRUN" -n 1 /bin/echo first : -n 2 /bin/echo second 2>&1 | sort | tr '\n' ' ')
[ "$out" = "first second second " ] || fail "arguments per context: '$out'"

for bad in "-n 1 /bin/true :" "-n 1 /bin/true : /bin/true" ": -n 1 /bin/true" \
	"-n 1 /bin/true : -n 1" "-n 1 /bin/true : : -n 1 /bin/true"; do
	# shellcheck disable=SC2086 # the command line is split on purpose
	timeout 30 "$VDRUN" $bad >/dev/null 2>"$B/mpmd.err"
	rc=$?
	if [ "$rc" -ne 2 ] || ! grep -q "usage" "$B/mpmd.err"; then
		fail "'vdrun $bad' exit $rc (want 2, a usage error): $(cat "$B/mpmd.err")"
	fi
done
rm -f "$B/mpmd.err"
[ "$fails" -eq 0 ] && echo "ok: malformed ':' lines are usage errors"
[ "$fails" -eq 0 ]
