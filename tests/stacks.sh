# SPDX-License-Identifier: MIT
# Sourced by test scripts (bash): what a hung job was doing.
#
# vd_run_watched LIMIT LOG CMD...: run CMD with its output in LOG (LOG "-":
# where the caller's output goes); after LIMIT seconds, append to LOG (to
# stderr) the threads' stacks of every process under
# it (gdb, when installed), then stop it (TERM, KILL 5 s later) and
# return 124, as timeout(1) does.  A hang that happens once in a hundred
# runs is then found from that one log.

# The processes under PID (each followed by its own descendants).
vd_descendants() {
	local pid=$1 kids k
	kids=$(ps -e -o pid=,ppid= | awk -v p="$pid" '$2 == p { print $1 }')
	for k in $kids; do
		echo "$k"
		vd_descendants "$k"
	done
}

# Every thread's stack of every process under PID (and PID), to stdout.
vd_dump_stacks() {
	local p out
	if ! command -v gdb >/dev/null; then
		echo "(no gdb here: no stacks)"
		return
	fi
	for p in $(vd_descendants "$1") "$1"; do
		[ -r "/proc/$p/cmdline" ] || continue
		echo "--- pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-160)"
		# One line a frame: its number, function and place.
		out=$(timeout 10 gdb -batch -nx -p "$p" -ex "thread apply all bt 24" 2>&1)
		if ! grep -q '^Thread' <<<"$out"; then
			# Not root under Yama's ptrace_scope 1, for one.
			echo "(gdb could not attach: $(grep -m1 -iE 'ptrace|denied|not permitted' <<<"$out"))"
			continue
		fi
		grep -E '^(Thread|#)' <<<"$out" |
			sed -E 's/^(#[0-9]+) +(0x[0-9a-f]+ in )?([^ ]+) \(.*\) (at|from) /\1 \3 /'
	done
}

vd_run_watched() {
	local limit=$1 log=$2 pid sleeper rc tree
	shift 2
	if [ "$log" = - ]; then
		"$@" &
	else
		# Appending: the stacks added below must not be overwritten
		# by what the job writes after them.
		: >"$log"
		"$@" >>"$log" 2>&1 &
	fi
	pid=$!
	sleep "$limit" &
	sleeper=$!
	wait -n "$pid" "$sleeper"
	rc=$?
	if kill -0 "$sleeper" 2>/dev/null; then
		kill "$sleeper" 2>/dev/null
		wait "$sleeper" 2>/dev/null
		return "$rc"
	fi
	[ "$log" = - ] && log=/dev/stderr
	# Frozen while gdb looks, so that a rank's own watchdog cannot end
	# the job half way through the look.
	tree=$(vd_descendants "$pid")
	# shellcheck disable=SC2086
	kill -STOP "$pid" $tree 2>/dev/null
	{
		printf "\n=== hung after %ss: stacks of every process ===\n" "$limit"
		vd_dump_stacks "$pid"
	} >>"$log" 2>&1
	# shellcheck disable=SC2086
	kill -CONT "$pid" $tree 2>/dev/null
	# The job's own stop: $pid may be a shell running it (vd_in), so its
	# children too.
	# shellcheck disable=SC2046
	kill -TERM "$pid" $(ps -o pid= --ppid "$pid") 2>/dev/null
	sleep 0.2
	for _ in $(seq 48); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	# shellcheck disable=SC2086
	kill -KILL "$pid" $tree 2>/dev/null
	wait "$pid" 2>/dev/null
	return 124
}
