#!/bin/bash
# SPDX-License-Identifier: MIT
# 7 ranks on 2 cores: 1000 barrier + allreduce iterations must take a few
# seconds, not minutes (waiting ranks yield or sleep instead of spinning),
# also beside CPU hogs.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need oversub
# Sanitizer builds (their runtime options are in the environment) run
# several times slower: the bound is about spinning, not speed.
if [ -n "${TSAN_OPTIONS:-}${ASAN_OPTIONS:-}" ]; then
	limit=${MT_OVERSUB_LIMIT:-30}
else
	limit=${MT_OVERSUB_LIMIT:-5}
fi
prog=$(mt_prog oversub)
# timed_run N LIMIT LABEL: 1000 rounds on N ranks pinned to cores 0,1,
# within LIMIT seconds of wall time.
timed_run() {
	local n=$1 lim=$2 label=$3 t0 rc dt
	t0=$(date +%s.%N)
	timeout -k 5 60 taskset -c 0,1 "$VDRUN" -n "$n" "$prog" 1000 >"$mt_log" 2>&1
	rc=$?
	dt=$(echo "$(date +%s.%N) - $t0" | bc)
	if [ $rc -ne 0 ]; then
		mt_bad "oversub n=$n $label: exit $rc after ${dt}s"
		sed 's/^/     | /' "$mt_log" | head -20
	elif [ "$(echo "$dt > $lim" | bc)" = 1 ]; then
		mt_bad "oversub n=$n $label: ${dt}s > ${lim}s"
	else
		mt_ok "oversub n=$n $label: ${dt}s ($(grep -o 'in [0-9.]* s' "$mt_log"))"
	fi
}
for n in 4 7; do
	timed_run "$n" "$limit" "on cores 0,1"
done
# The same 7 ranks beside two CPU hogs on those cores: a yield then gives
# the CPU to a hog for its whole slice (about 2 ms a wait: 4 s here), so
# waiting ranks must stop yielding and sleep, and a wake-up preempts the
# hog (0.3-0.8 s).
if [ -n "${TSAN_OPTIONS:-}${ASAN_OPTIONS:-}" ]; then
	hog_limit=${MT_OVERSUB_HOG_LIMIT:-60}
else
	hog_limit=${MT_OVERSUB_HOG_LIMIT:-3}
fi
hogs=()
for cpu in 0 1; do
	timeout 90 taskset -c "$cpu" sh -c 'while :; do :; done' &
	hogs+=($!)
done
timed_run 7 "$hog_limit" "beside two CPU hogs"
kill "${hogs[@]}" 2>/dev/null
wait "${hogs[@]}" 2>/dev/null
# The spin budget: a full one for ranks pinned one per core (pinning
# alone is not oversubscription), a short one for more ranks than cores.
spin_of() {     # n bind -> the budgets the ranks report, sorted, unique
	VIADUCT_DEBUG=1 timeout -k 5 60 taskset -c 0,1 "$VDRUN" -n "$1" --bind-to "$2" "$prog" 1 2>&1 |
		sed -n 's/.*a blocking wait spins \([0-9]*\) us.*/\1/p' | sort -u | tr '\n' ' '
}
for c in "2 core 20 " "2 none 20 " "4 none 1 "; do
	set -- $c
	got=$(spin_of "$1" "$2")
	if [ "$got" = "$3 " ]; then
		mt_ok "spin budget, $1 ranks on 2 cores, --bind-to $2: $3 us"
	else
		mt_bad "spin budget, $1 ranks on 2 cores, --bind-to $2: '$got' us, want $3"
	fi
done
mt_done
