#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/coll_shm_hostile.c under vdrun: one rank writes garbage into
# the shared segment of the node-local collectives while the others wait
# in Barrier, Bcast (small and pipelined), Reduce, Allreduce (one- and
# two-phase), Allgather (one and several chunks), Alltoall (one and
# several phases, a strided type) or Reduce_scatter(_block) (small,
# varying counts; several chunks), on 2, 3 and 4 ranks.
# Whatever it does, no rank may crash (a signal, a sanitizer report) and
# the job must end within a few seconds.  Beyond that, per attack:
#   detect   counters made impossible (or the pages dropped: zeros),
#            in the middle of a collective or between two, and the
#            hostile rank alive but gone quiet: the job ends non-zero
#            with the library's "segment ... was overwritten" message
#            (no other way out: a hang otherwise);
#   correct  sleeper counts and spare bytes scribbled, or the segment's
#            file cut short: every honest rank finishes with every
#            result right;
#   survive  plausible lies (a counter one phase off), garbage data and
#            garbage signatures (Alltoall's and Reduce_scatter's sizes):
#            either a clear message or the end of the job; wrong
#            results here are what the library cannot see (counted).
# Optional arguments after the build directory: COLL... to run only those.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need coll_shm_hostile
prog=$(mt_prog coll_shm_hostile)
shift
COLLS=${*:-barrier bcast bcast_large reduce reduce_large allreduce allreduce_large
	allgather allgather_large alltoall alltoall_large alltoall_strided
	reduce_scatter reduce_scatter_large reduce_scatter_block}
BOUND=${HOSTILE_BOUND:-5}        # seconds a case may take
out=$(mktemp /tmp/mpitest-out.XXXXXX)
trap 'rm -f "$mt_log" "$out"' EXIT
case_no=0
undetected=0

# Lines that must never appear: a rank killed by a signal (vdrun names
# it), the test's watchdog, a sanitizer -- except LeakSanitizer's report
# of a rank that aborted the job, which exits holding what it held.
crash_pattern='SIG(SEGV|BUS|ILL|FPE|ALRM)|terminated with signal|ERROR: AddressSanitizer'
crash_pattern+='|runtime error:|Segmentation fault'

# run_case COLL ATTACK AFTER EXPECT [now]
run_case() {
	local coll=$1 attack=$2 after=$3 expect=$4 when=${5:-} n hostile rc t0 dt what results
	n=$((2 + case_no % 3))
	hostile=$(((case_no / 3) % n))
	case_no=$((case_no + 1))
	what="$coll: rank $hostile of $n: $attack${when:+ $when}, then $after"
	t0=$(date +%s.%N)
	timeout -k 2 $((BOUND * 3)) "$VDRUN" -n "$n" "$prog" "$coll" "$attack" "$after" \
		"$hostile" ${when:+"$when"} >"$out" 2>"$mt_log"
	rc=$?
	dt=$(echo "$(date +%s.%N) - $t0" | bc)
	results=$(grep -c '^RESULT' "$out")
	local crash=$crash_pattern
	[ $rc -ne 0 ] || crash="$crash|LeakSanitizer"
	if [ $rc -eq 124 ] || [ $rc -eq 137 ] || [ "$(echo "$dt > $BOUND" | bc)" = 1 ]; then
		mt_bad "$what: still running after ${dt}s (exit $rc)"
	elif grep -Eq "$crash" "$mt_log"; then
		mt_bad "$what: crashed (exit $rc): $(grep -Em1 "$crash" "$mt_log")"
	elif ! grep -q '^HOSTILE' "$out"; then
		mt_bad "$what: the hostile rank never attacked (exit $rc)"
	elif [ "$attack" = truncate ] && grep -q '^SKIP truncate' "$out"; then
		echo "skip $what: $(grep -m1 '^SKIP' "$out")"
		return
	elif [ "$attack" = truncate ] && grep -q '^TRUNCATED' "$out"; then
		mt_bad "$what: the segment's file could be shrunk"
	else
		case $expect in
		detect)
			if [ $rc -ne 0 ] && grep -q 'segment of a node-local collective was overwritten' "$mt_log"; then
				mt_ok "$what: exit $rc after ${dt}s: $(grep -m1 overwritten "$mt_log" | cut -c1-150)"
				return
			fi
			mt_bad "$what: exit $rc after ${dt}s without the library's message";;
		correct)
			if [ $rc -eq 0 ] && [ "$results" -eq $((n - 1)) ] &&
			   ! grep '^RESULT' "$out" | grep -vq ' wrong 0 '; then
				mt_ok "$what: every result right, ${dt}s"
				return
			fi
			mt_bad "$what: exit $rc, $results of $((n - 1)) ranks finished:" \
				"$(grep '^RESULT' "$out" | tr '\n' ' ')";;
		survive)
			local wrong
			wrong=$(awk '/^RESULT/ { w += $5 } END { print w + 0 }' "$out")
			undetected=$((undetected + wrong))
			if [ $rc -eq 0 ] && [ "$results" -eq $((n - 1)) ]; then
				mt_ok "$what: finished, $wrong wrong rounds (undetectable), ${dt}s"
				return
			elif [ $rc -ne 0 ] && grep -Eq '^(viaduct MPI|vdrun): ' "$mt_log"; then
				mt_ok "$what: exit $rc after ${dt}s: $(grep -Ev '^HOSTILE' "$mt_log" | head -1 | cut -c1-150)"
				return
			fi
			mt_bad "$what: exit $rc without a message, $results of $((n - 1)) finished";;
		esac
	fi
	sed 's/^/     | /' "$mt_log" | head -12
	sed 's/^/     > /' "$out" | head -6
}

for coll in $COLLS; do
	for attack in ahead behind max random own_ahead remove; do
		run_case "$coll" "$attack" stop detect
	done
	run_case "$coll" random stop detect now
	run_case "$coll" sleepers continue correct
	run_case "$coll" truncate continue correct
	run_case "$coll" plus1 continue survive
	run_case "$coll" minus1 continue survive
	run_case "$coll" minus1 exit survive
	run_case "$coll" data continue survive
	run_case "$coll" sigs continue survive
done
echo "wrong results nobody could detect (plausible counters, garbage data): $undetected rounds"
mt_done
