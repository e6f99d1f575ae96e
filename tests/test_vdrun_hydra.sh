#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Ranks start under MPICH's Hydra launcher too (mpiexec.hydra, Debian
# package mpich): the PMI-1 client in src/mpi/pmi.c gets distinct ranks,
# the right size and a working key-value space from Hydra, and an abort
# stops the job.  When libviaduct_mpi is built, an MPI program compiled
# with vdcc runs under Hydra as well.  Skipped (77) without mpiexec.hydra.
#
# Usage: test_vdrun_hydra.sh BUILD_DIR        (exit 0 pass, 1 fail, 77 skip)
set -u

B=${1:-${VIADUCT_BUILD:-}}
PROBE=$B/tests/vdrun_probe
VDCC=$B/tools/vdcc
fails=0

HYDRA=$(command -v mpiexec.hydra)
if [ -z "$HYDRA" ]; then
	echo "SKIP: mpiexec.hydra is not installed (Debian package mpich)"
	exit 77
fi
if [ ! -x "$PROBE" ]; then
	echo "FAIL: $PROBE was not built"
	exit 1
fi
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# hydra N ARGS...: at most 30 s; sets rc, out, err.
hydra() {
	local n=$1
	shift
	timeout -k 2 30 "$HYDRA" -n "$n" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	out=$(cat "$TMP/out")
	err=$(cat "$TMP/err")
}

for n in 1 3 4; do
	hydra "$n" "$PROBE" kvs 700
	if [ "$rc" -ne 0 ]; then
		fail "kvs under Hydra, n=$n: exit $rc: $err"
		continue
	fi
	ranks=$(printf '%s\n' "$out" | awk '{print $2}' | sort -n | tr '\n' ' ')
	sizes=$(printf '%s\n' "$out" | awk '{print $4}' | sort -u | tr '\n' ' ')
	jobs=$(printf '%s\n' "$out" | awk '{print $6}' | sort -u | wc -l)
	if [ "$ranks" != "$(seq 0 $((n - 1)) | tr '\n' ' ')" ] || [ "$sizes" != "$n " ] ||
		[ "$jobs" -ne 1 ]; then
		fail "kvs under Hydra, n=$n: $out"
	else
		echo "ok: kvs under Hydra with $n ranks, job $(printf '%s\n' "$out" | awk 'NR==1 {print $6}')"
	fi
done

hydra 3 "$PROBE" abort 1 7
if [ "$rc" -eq 0 ]; then
	fail "abort under Hydra: mpiexec.hydra exited 0"
else
	echo "ok: abort under Hydra: mpiexec.hydra exit $rc"
fi

# A real MPI program, once the library links.
if [ -x "$VDCC" ] && ls "$B"/src/mpi/libviaduct_mpi.so >/dev/null 2>&1; then
	cat >"$TMP/ring.c" <<'EOC'
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int rank, size, token = -1, sum = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (rank == 0) {
		token = 1;
		MPI_Send(&token, 1, MPI_INT, 1 % size, 0, MPI_COMM_WORLD);
		MPI_Recv(&token, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(&token, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		token++;
		MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
	}
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	printf("rank %d of %d token %d sum %d\n", rank, size, token, sum);
	MPI_Finalize();
	return 0;
}
EOC
	if ! "$VDCC" "$TMP/ring.c" -o "$TMP/ring" 2>"$TMP/cc.err"; then
		fail "vdcc ring.c: $(cat "$TMP/cc.err")"
	else
		hydra 3 "$TMP/ring"
		want="rank 0 of 3 token 3 sum 3"
		if [ "$rc" -ne 0 ] || [ "$(printf '%s\n' "$out" | grep -c 'of 3 token . sum 3')" -ne 3 ] ||
			[[ $out != *"$want"* ]]; then
			fail "MPI ring under Hydra: exit $rc: $out $err"
		else
			echo "ok: an MPI program built with vdcc runs under Hydra with 3 ranks"
		fi
	fi
else
	echo "note: libviaduct_mpi is not built; the MPI program part was not run"
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "all Hydra checks passed"
exit 0
