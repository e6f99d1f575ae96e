#!/bin/bash
# SPDX-License-Identifier: MIT
# Lazy connections (VIADUCT_MPI_CONNECT=lazy, the default): a ring makes
# 2 connections a rank, MPI_Init none (but for the measurement of tune.c,
# turned off there) and MPI_Finalize those to the rank's two neighbours in
# WORLD (its check that every rank came), and every
# first-message case works (a rendezvous as the first message, from both
# sides at once; MPI_ANY_SOURCE from peers that never sent; collectives,
# a nonblocking one and a window over all pairs) under the default and
# forced protocols, over shm and over ofi; eager start-up still connects
# every pair.  The counts come from VIADUCT_DEBUG=1's report at
# MPI_Finalize, as do the PMI requests, linear in N on one host.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need lazy

# lazy_count LABEL N WANT [VAR=VALUE...] -- ARGS: every rank reports WANT
# connections.
lazy_count() {
	local label=$1 n=$2 want=$3 out got bad
	shift 3
	local envs=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	out=$(vd_run_watched "$((MT_TIMEOUT - 5))" - env VIADUCT_DEBUG=1 "${envs[@]}" \
		"$VDRUN" -n "$n" "$(mt_prog lazy)" "$@" 2>&1)
	got=$(grep -c "connections (" <<<"$out")
	bad=$(grep "connections (" <<<"$out" | grep -vc ": $want connections (")
	if [ "$got" != "$n" ] || [ "$bad" != 0 ]; then
		mt_bad "$label n=$n: want $want connections on each of $n ranks"
		grep -E "connections \(|FAIL|viaduct MPI" <<<"$out" | head -20 | sed 's/^/     | /'
		sed -n '/^=== hung after/,$p' <<<"$out" | head -300 | sed 's/^/     | /'
	else
		mt_ok "$label n=$n ($want connections a rank)"
	fi
}

# pmi_linear N: on one host (shm), MPI_Init + MPI_Finalize ask the
# launcher for a number of keys linear in N (rank 0 reads every rank's
# node identity, the others the map, and all but rank 0 the switch point
# rank 0 measured): every rank reports its PMI requests, the same number
# of fences, and the job at most 4N gets.
pmi_linear() {
	local n=$1 out lines gets fences
	out=$(env VIADUCT_DEBUG=1 timeout -k 5 "$MT_TIMEOUT" "$VDRUN" -n "$n" \
		"$(mt_prog lazy)" init 2>&1)
	lines=$(grep -c ": PMI requests: " <<<"$out")
	gets=$(sed -n 's/.*: PMI requests: [0-9]* put, \([0-9]*\) get, .*/\1/p' <<<"$out" |
		awk '{ s += $1 } END { print s + 0 }')
	fences=$(sed -n 's/.*get, \([0-9]*\) fence$/\1/p' <<<"$out" | sort -u | wc -l)
	if [ "$lines" != "$n" ] || [ "$fences" != 1 ] || [ "$gets" -gt $((4 * n)) ]; then
		mt_bad "PMI requests n=$n: want $n reports, one fence count, <= $((4 * n)) gets; got $lines, $fences, $gets"
		grep "PMI requests" <<<"$out" | head -10 | sed 's/^/     | /'
	else
		mt_ok "PMI requests n=$n ($gets gets in the job)"
	fi
}

for n in $MT_RANKS; do
	ring=$((n - 1 < 2 ? n - 1 : 2))
	pmi_linear "$n"
	lazy_count "ring" "$n" "$ring" -- ring
	# The switch-point measurement connects a host's first two ranks
	# (test_mpi_tune.sh); without it MPI_Init connects nobody, and
	# MPI_Finalize each rank to its neighbours: the ring's count.
	lazy_count "init and finalize only" "$n" "$ring" VIADUCT_MPI_TUNE=0 -- init
	lazy_count "all pairs at once" "$n" $((n - 1)) -- storm
	lazy_count "every case" "$n" $((n - 1)) -- all
	lazy_count "ring, eager start-up" "$n" $((n - 1)) VIADUCT_MPI_CONNECT=eager -- ring
	mt_run "every case, rendezvous" "$n" VIADUCT_MPI_PROTOCOL=rndv -- lazy
	mt_run "every case, get" "$n" VIADUCT_MPI_PROTOCOL=get -- lazy
	mt_run "every case, eager start-up" "$n" VIADUCT_MPI_CONNECT=eager -- lazy
done

if VIADUCT_PROVIDER=ofi:tcp "$B/tests/test_vipl_api_vi" >/dev/null 2>&1; then
	mt_need_ofi
	for n in $MT_RANKS; do
		ring=$((n - 1 < 2 ? n - 1 : 2))
		lazy_count "ring over ofi" "$n" "$ring" VIADUCT_MPI_NET=ofi VIADUCT_OFI_PROVIDER=tcp -- ring
		lazy_count "every case over ofi" "$n" $((n - 1)) VIADUCT_MPI_NET=ofi \
			VIADUCT_OFI_PROVIDER=tcp -- all
		lazy_count "all pairs at once over ofi" "$n" $((n - 1)) VIADUCT_MPI_NET=ofi \
			VIADUCT_OFI_PROVIDER=tcp -- storm
		mt_run "every case over ofi, rendezvous" "$n" VIADUCT_MPI_NET=ofi \
			VIADUCT_OFI_PROVIDER=tcp VIADUCT_MPI_PROTOCOL=rndv -- lazy
	done
elif [ "${VDTEST_STRICT:-0}" = 1 ]; then
	mt_bad "the ofi provider cannot open here, and VDTEST_STRICT=1 wants its cases"
else
	echo "(the ofi provider cannot open here: its cases are skipped)"
fi
mt_done
