#!/bin/bash
# SPDX-License-Identifier: MIT
# viaduct MPI programs started by Open MPI's mpirun, which speaks PMIx
# only: the ranks find their PMIx server (src/mpi/pmix.c), run point to
# point, collectives and communicators for 2 and 4 ranks, and a rank that
# is killed ends the job, non-zero, in bounded time.  As srun --mpi=pmix
# is served the same way.  Skips (77) when mpirun.openmpi is not
# installed (Debian: openmpi-bin) or the library was built without
# PMIx's headers (libpmix-dev).
. "$(dirname "$0")/mpi/runlib.sh"
mt_need p2p coll comm jobctl
MPIRUN=$(command -v mpirun.openmpi || true)
if [ -z "$MPIRUN" ]; then
	echo "SKIP: mpirun.openmpi not installed (Debian package openmpi-bin)"
	exit 77
fi
if ! grep -q "PMIx_Init" "$B/src/mpi/libviaduct_mpi.so" 2>/dev/null; then
	echo "SKIP: libviaduct_mpi built without the PMIx client (libpmix-dev)"
	exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# libpmix is not built with the sanitizers: its own doings are suppressed.
[ -z "${ASAN_OPTIONS:-}" ] ||
	export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")" && pwd)/mpi/lsan-pmix.supp"
[ -z "${TSAN_OPTIONS:-}" ] ||
	export TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$(cd "$(dirname "$0")" && pwd)/mpi/tsan-pmix.supp"
# mpirun only starts the ranks and serves PMIx; the ranks talk through
# viaduct (Open MPI's transports are not in the program).
orun() {
	local n=$1
	shift
	timeout -k 5 "$MT_TIMEOUT" "$MPIRUN" -np "$n" --oversubscribe --bind-to none "$@"
}
for n in 2 4; do
	for p in p2p coll comm; do
		if orun "$n" "$(mt_prog $p)" >"$mt_log" 2>&1 &&
			grep -q "^$p: $n ranks: ok" "$mt_log"; then
			mt_ok "$p under Open MPI's mpirun, $n ranks"
		else
			mt_bad "$p under Open MPI's mpirun, $n ranks"
			sed 's/^/     | /' "$mt_log" | tail -20
		fi
	done
done
t0=$(date +%s)
orun 2 "$(mt_prog jobctl)" kill >"$mt_log" 2>&1
rc=$?
t1=$(date +%s)
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $((t1 - t0)) -lt 30 ]; then
	mt_ok "a killed rank ends the job under Open MPI's mpirun (exit $rc, $((t1 - t0)) s)"
else
	mt_bad "a killed rank under Open MPI's mpirun: exit $rc after $((t1 - t0)) s"
	sed 's/^/     | /' "$mt_log" | tail -20
fi
mt_done
