#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/coll_shm.c under vdrun for 1, 2, 3, 4 and 7 ranks (node-local
# collectives through the shared segment), once with the segment switched
# off (VIADUCT_MPI_COLL_SHM=0), and a rank SIGKILLed inside a node-local
# Allreduce: the job must end non-zero within a few seconds, name the
# rank, and leave nothing in /dev/shm.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need coll_shm
prog=$(mt_prog coll_shm)
for n in $MT_RANKS; do
	mt_run coll_shm "$n" -- coll_shm
done
mt_run "coll_shm without the segment" 3 VIADUCT_MPI_COLL_SHM=0 -- coll_shm
# Blocks read straight from the member holding them: at every size (1;
# reductions from 4 bytes), and never (0: every byte through the segment).
for n in 2 4; do
	mt_run "coll_shm, every block read directly" "$n" VIADUCT_MPI_COLL_DIRECT_MIN=1 -- coll_shm
done
mt_run "coll_shm, no block read directly" 2 VIADUCT_MPI_COLL_DIRECT_MIN=0 -- coll_shm
# More members than CPUs here, but told the host is not crowded: the
# direct Allgather and reductions with 3 and 4 members (slices, pushes
# into several outputs).
for n in 3 4; do
	mt_run "coll_shm, read directly, not crowded" "$n" VIADUCT_MPI_COLL_CROWDED=no -- coll_shm
done
mt_run "coll_shm, every block read directly, not crowded" 3 VIADUCT_MPI_COLL_CROWDED=no \
	VIADUCT_MPI_COLL_DIRECT_MIN=1 -- coll_shm

# Whether the members read each other directly: by default yes (every
# one can, here), and no on every member when one of them alone sets
# VIADUCT_MPI_COLL_DIRECT_MIN=0 -- they must all take the same path.
direct_says() {
	local what=$1 want=$2 out rc got
	shift 2
	out=$(vd_run_watched "$((MT_TIMEOUT - 5))" - env VIADUCT_DEBUG=1 "$VDRUN" -n 2 "$@" 2>&1)
	rc=$?
	got=$(grep -o 'blocks never read directly\|larger blocks read directly' <<<"$out" | sort | uniq -c |
	      awk '{ $1 = $1; print }' | paste -sd, -)
	if [ $rc -eq 0 ] && [ "$got" = "$want" ]; then
		mt_ok "$what: $got"
	else
		mt_bad "$what: exit $rc, the ranks said: ${got:-nothing} (expected $want)"
		grep -E 'viaduct|FAIL' <<<"$out" | head -10 | sed 's/^/     | /'
	fi
}
# Each rank says it for two communicators: the world and its dup.
direct_says "two ranks, defaults" "4 larger blocks read directly" "$prog"
direct_says "rank 1 alone sets VIADUCT_MPI_COLL_DIRECT_MIN=0" "4 blocks never read directly" \
	sh -c '[ "$PMI_RANK" = 1 ] && export VIADUCT_MPI_COLL_DIRECT_MIN=0; exec "$0"' "$prog"

shm_files() { ls /dev/shm 2>/dev/null | grep -Ei 'viaduct|^vd' | sort; }
out=$(mktemp /tmp/mpitest-out.XXXXXX)
trap 'rm -f "$mt_log" "$out"' EXIT
for n in 2 4; do
	before=$(shm_files)
	t0=$(date +%s)
	timeout -k 5 30 "$VDRUN" -n "$n" "$prog" kill >"$out" 2>"$mt_log"
	rc=$?
	dt=$(($(date +%s) - t0))
	after=$(shm_files)
	what="rank killed in a node-local allreduce, n=$n"
	if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $dt -ge 25 ]; then
		mt_bad "$what: vdrun exit $rc after ${dt}s (expected non-zero, no timeout)"
		sed 's/^/     | /' "$mt_log" | head -20
	elif ! grep -q FAILTIME "$out"; then
		mt_bad "$what: the rank never got to kill itself (exit $rc)"
		sed 's/^/     | /' "$mt_log" | head -20
	elif ! grep -Eiq "rank[^0-9a-z]{0,3}$((n - 1))([^0-9]|\$)" "$mt_log"; then
		mt_bad "$what: stderr does not name rank $((n - 1))"
		sed 's/^/     | /' "$mt_log" | head -10
	elif [ "$before" != "$after" ]; then
		mt_bad "$what: /dev/shm changed: $(comm -13 <(echo "$before") <(echo "$after") | tr '\n' ' ')"
	else
		mt_ok "$what: vdrun exit $rc after ${dt}s: $(grep -Ei rank "$mt_log" | head -1)"
	fi
done
mt_done
