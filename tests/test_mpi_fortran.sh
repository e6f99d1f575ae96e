#!/bin/bash
# SPDX-License-Identifier: MIT
# The Fortran bindings: tests/fortran/*.f* under vdrun for 1, 2, 3, 4 and 7
# ranks; vdfort (and its other names vdf77, vdf90) builds a program with
# mpif.h and one with `use mpi` that runs without LD_LIBRARY_PATH; the mpi
# module's interfaces reject a call with a missing argument at compile time.
. "$(dirname "$0")/mpi/runlib.sh"
SRC=$(cd "$(dirname "$0")/.." && pwd)
# absolute: the wrapper checks below run in a scratch folder
[ -z "$B" ] || { B=$(cd "$B" && pwd); VDRUN=$B/tools/vdrun; }
if [ ! -x "$B/tools/vdfort" ]; then
	if grep -q '^CMAKE_Fortran_COMPILER:FILEPATH=.*NOTFOUND' "$B/CMakeCache.txt" 2>/dev/null ||
		! grep -q '^CMAKE_Fortran_COMPILER' "$B/CMakeCache.txt" 2>/dev/null; then
		echo "SKIP: configured without a Fortran compiler (install gfortran)"
		exit 77
	fi
	echo "FAIL: $B/tools/vdfort was not generated although Fortran is enabled"
	exit 1
fi
mt_need f77_basic f90_module f90_families
for n in $MT_RANKS; do
	mt_run f77_basic "$n" -- f77_basic
	mt_run f90_module "$n" -- f90_module
	mt_run f90_families "$n" -- f90_families
done

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
wrapper_check() {
	local label=$1
	shift
	if "$@" >"$tmp/out" 2>&1; then
		mt_pass=$((mt_pass + 1))
		echo "ok   $label"
	else
		mt_fail=$((mt_fail + 1))
		echo "FAIL $label: $*"
		sed -n '1,20p' "$tmp/out" | sed 's/^/     | /'
	fi
}
(cd "$tmp" && "$B/tools/vdf77" -o f77 "$SRC/tests/fortran/f77_basic.f") >"$tmp/out" 2>&1
wrapper_check "vdf77 builds f77_basic.f" test -x "$tmp/f77"
(cd "$tmp" && "$B/tools/vdf90" -o f90 "$SRC/tests/fortran/f90_module.f90") >"$tmp/out" 2>&1
wrapper_check "vdf90 builds f90_module.f90" test -x "$tmp/f90"
wrapper_check "a vdfort program runs under vdrun without LD_LIBRARY_PATH" \
	env -u LD_LIBRARY_PATH timeout -k 5 60 "$VDRUN" -n 2 "$tmp/f90"
wrapper_check "vdfort -showme:libs names the Fortran library" \
	sh -c "'$B/tools/vdfort' -showme:libs | grep -q viaduct_mpifort"
wrapper_check "vdfort x.f90 --showme:libs names the Fortran library" \
	sh -c "'$B/tools/vdfort' x.f90 --showme:libs | grep -q viaduct_mpifort"
wrapper_check "vdfort -link_info links the Fortran library" \
	sh -c "'$B/tools/vdfort' -link_info | grep -q -- -lviaduct_mpifort"

cat >"$tmp/wrong.f90" <<'EOP'
program wrong
  use mpi
  integer :: ierr, buf
  call MPI_Send(buf, 1, MPI_INTEGER, 0, 0, ierr)
end program wrong
EOP
if (cd "$tmp" && "$B/tools/vdfort" -c wrong.f90) >"$tmp/wrong.out" 2>&1; then
	mt_fail=$((mt_fail + 1))
	echo "FAIL the mpi module accepted MPI_Send without its communicator"
else
	wrapper_check "the mpi module rejects MPI_Send without its communicator" \
		grep -q "Missing actual argument for argument .ierror." "$tmp/wrong.out"
fi
mt_done
