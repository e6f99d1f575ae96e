#!/bin/bash
# SPDX-License-Identifier: MIT
# Job control: the last rank exits 3, is SIGKILLed, or calls
# MPI_Abort(MPI_COMM_WORLD, 5) while the others block in a receive.  vdrun
# must exit non-zero within 1 s of the failure, name the rank and the cause
# on stderr, and leave no process and no viaduct file in /dev/shm behind.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need jobctl
prog=$(mt_prog jobctl)
limit=${MT_STOP_LIMIT:-1.0}
out=$(mktemp /tmp/mpitest-out.XXXXXX)
trap 'rm -f "$mt_log" "$out"' EXIT

shm_files() { ls /dev/shm 2>/dev/null | grep -Ei 'viaduct|^vd' | sort; }

check_failure() {
	local mode=$1 n=$2 cause=$3 tok="mtjob$$x$1x$2" rc t_end t_fail dt fr=$(($2 - 1))
	local shm_before shm_after left fails=$mt_fail
	shm_before=$(shm_files)
	timeout -k 5 20 "$VDRUN" -n "$n" "$prog" "$mode" "$tok" >"$out" 2>"$mt_log"
	rc=$?
	t_end=$(date +%s.%N)
	local what="$mode n=$n"
	t_fail=$(sed -n 's/^FAILTIME //p' "$out" | head -1)
	if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
		mt_bad "$what: vdrun exit $rc (expected non-zero, no timeout)"
		sed 's/^/     | /' "$mt_log" | head -20
		return
	fi
	if [ -z "$t_fail" ]; then
		mt_bad "$what: the failing rank never reported (exit $rc)"
		sed 's/^/     | /' "$mt_log" | head -20
		return
	fi
	dt=$(echo "$t_end - $t_fail" | bc)
	[ "$(echo "$dt > $limit" | bc)" = 1 ] &&
		mt_bad "$what: vdrun took ${dt}s after the failure (limit ${limit}s)"
	if ! grep -Eiq "rank[^0-9a-z]{0,3}$fr([^0-9]|\$)" "$mt_log"; then
		mt_bad "$what: stderr does not name rank $fr"
		sed 's/^/     | /' "$mt_log" | head -10
	fi
	if ! grep -Eiq "$cause" "$mt_log"; then
		mt_bad "$what: stderr does not give the cause (/$cause/)"
		sed 's/^/     | /' "$mt_log" | head -10
	fi
	left=$(pgrep -f "$tok")
	if [ -n "$left" ]; then
		mt_bad "$what: processes left behind: $(echo $left)"
		sleep 1
		kill -9 $left 2>/dev/null   # by id: our own uniquely tagged ranks
	fi
	shm_after=$(shm_files)
	if [ "$shm_before" != "$shm_after" ]; then
		mt_bad "$what: /dev/shm changed: $(comm -13 <(echo "$shm_before") <(echo "$shm_after") | tr '\n' ' ')"
	fi
	[ "$mt_fail" -eq "$fails" ] && mt_ok "$what: vdrun exit $rc, ${dt}s after the failure: $(grep -Ei "rank" "$mt_log" | head -1)"
}

for n in 1 2 4 7; do
	mt_run "jobctl ok" "$n" -- jobctl ok
	check_failure exit3 "$n" 'exit(ed)?[^0-9]*(status|code)?[^0-9]*3([^0-9]|$)'
	check_failure kill "$n" 'signal|kill'
	check_failure abort "$n" 'abort'
done

# The last rank leaves without MPI_Finalize (exit 0) while the others are
# in it, under a launcher that does not notice such an exit (the minimal
# PMI-1 server waits for every process): MPI_Finalize must not wait for it
# for good.  The others' MPI ends the job, naming the rank, within the
# limit; the old finalize waited in the PMI fence until killed.
server="$(cd "$(dirname "$0")" && pwd)/mpi/pmi1_server.py"
if command -v python3 >/dev/null; then
	for n in 2 3 4 7; do
		timeout -k 5 20 python3 "$server" "mtjob$$" "$n" "$prog" leave >"$out" 2>"$mt_log"
		rc=$?
		t_end=$(date +%s.%N)
		t_fail=$(sed -n 's/^FAILTIME //p' "$out" | head -1)
		dt=$(echo "$t_end - ${t_fail:-0}" | bc)
		if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ -n "$t_fail" ] &&
			[ "$(echo "$dt <= 3" | bc)" = 1 ] &&
			grep -q "lost the connection to rank $((n - 1))" "$mt_log"; then
			mt_ok "leave n=$n: a rank gone before MPI_Finalize ends the job, ${dt}s after"
		else
			mt_bad "leave n=$n: exit $rc, ${dt}s after the rank left (limit 3s)"
			sed 's/^/     | /' "$mt_log" | head -10
		fi
	done
fi
mt_done
