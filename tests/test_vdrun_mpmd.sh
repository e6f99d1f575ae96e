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
[ "$fails" -eq 0 ] && echo "ok: malformed ':' lines are usage errors"

# Options other than -n apply to the whole job: two contexts that give
# one two values are refused (-x FOO=a : -x FOO=b gave b to both), as is
# -n twice in a context (the last one was taken).
conflict() {
	local want=$1
	shift
	timeout 30 "$VDRUN" "$@" >/dev/null 2>"$B/mpmd.err"
	rc=$?
	if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" "$B/mpmd.err"; then
		fail "'vdrun $*' exit $rc (want 2, '$want'): $(cat "$B/mpmd.err")"
	else
		echo "ok: vdrun $*: $(head -1 "$B/mpmd.err")"
	fi
}
conflict "FOO given twice, with different values ('a' and 'b')" \
	-n 1 -x FOO=a /bin/true : -n 1 -x FOO=b /bin/true
conflict "FOO given twice, with different values" -n 1 -x FOO=a -genv FOO b /bin/true
conflict "--bind-to given twice, with different values" \
	-n 1 --bind-to none /bin/true : -n 1 --bind-to core /bin/true
conflict "--map-by given twice" -n 1 --map-by node /bin/true : -n 1 --map-by slot /bin/true
conflict "-ppn given twice" -ppn 1 -n 1 /bin/true : -ppn 2 -n 1 /bin/true
conflict "-wdir given twice" -n 1 -wdir /tmp /bin/true : -n 1 -wdir / /bin/true
conflict "context 1: -n given twice" -n 2 -n 3 /bin/true
conflict "context 2: -n given twice" -n 1 /bin/true : -np 2 -n 2 /bin/true
# The same value twice is no conflict, and a variable reaches every context.
out=$(timeout 30 "$VDRUN" -n 1 -x FOO=a --bind-to none sh -c 'echo "1 $FOO"' : \
	-n 1 -x FOO=a --bind-to none sh -c 'echo "2 $FOO"' : -n 1 sh -c 'echo "3 $FOO"' 2>&1 | sort | tr '\n' ,)
[ "$out" = "1 a,2 a,3 a," ] && echo "ok: one value given in several contexts reaches them all" ||
	fail "-x FOO=a in two contexts: '$out'"
rm -f "$B/mpmd.err"
[ "$fails" -eq 0 ]
