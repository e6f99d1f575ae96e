#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vdrun: ranks, sizes and the PMI key-value space for 1, 2, 3 and 7 ranks;
# job control (a rank exits non-zero, is killed, aborts, skips finalize;
# vdrun itself is stopped or killed): the job ends within 1 s, the cause
# is named, nothing is left running; usage errors; CPU binding.
#
# Usage: test_vdrun_basic.sh BUILD_DIR        (exit 0 pass, 1 fail, 77 skip)
set -u

B=${1:-${VIADUCT_BUILD:-}}
VDRUN=$B/tools/vdrun
PROBE_BUILT=$B/tests/vdrun_probe
fails=0

for f in "$VDRUN" "$PROBE_BUILT"; do
	if [ ! -x "$f" ]; then
		echo "FAIL: $f was not built"
		exit 1
	fi
done

# The probe under a name of its own, so that ps -C finds only our ranks.
TMP=$(mktemp -d) || exit 1
NAME=vdprobe$$
PROBE=$TMP/$NAME
cp "$PROBE_BUILT" "$PROBE" || exit 1
# Leftovers (only after a failure): ours by their unique name, killed by id.
cleanup() {
	local pids
	pids=$(ps -C "$NAME" -o pid=)
	[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

# run NAME CMD...: runs CMD (at most 20 s), sets rc, out, err and ms.
run() {
	local t0
	t0=$(now_ms)
	timeout -k 1 20 "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	ms=$(($(now_ms) - t0))
	out=$(cat "$TMP/out")
	err=$(cat "$TMP/err")
}

# Ranks of ours still alive (zombies are dead: an orphan waits for init
# to reap it, which some containers' init never does).
live_ranks() {
	ps -C "$NAME" -o stat= | grep -vc '^Z'
}

# No rank of ours may be left once vdrun is gone.
check_no_ranks() {
	local left
	sleep 0.05
	left=$(live_ranks)
	[ "$left" -eq 0 ] || fail "$1: $left rank(s) still running after vdrun exited"
}

# ---- ranks, size, key-value space ----------------------------------------
for n in 1 2 3 7; do
	run "$VDRUN" -n "$n" "$PROBE" kvs 700
	if [ "$rc" -ne 0 ]; then
		fail "kvs n=$n: exit $rc: $err"
		continue
	fi
	ranks=$(printf '%s\n' "$out" | awk '{print $2}' | sort -n | tr '\n' ' ')
	want=$(seq 0 $((n - 1)) | tr '\n' ' ')
	[ "$ranks" = "$want" ] || fail "kvs n=$n: ranks '$ranks', want '$want'"
	sizes=$(printf '%s\n' "$out" | awk '{print $4}' | sort -u | tr '\n' ' ')
	[ "$sizes" = "$n " ] || fail "kvs n=$n: sizes '$sizes'"
	jobs=$(printf '%s\n' "$out" | awk '{print $6}' | sort -u)
	[ "$(printf '%s\n' "$jobs" | wc -l)" -eq 1 ] || fail "kvs n=$n: several job ids: $jobs"
	[[ $jobs == vd-* ]] || fail "kvs n=$n: job id '$jobs' is not vdrun's"
	echo "ok: kvs with $n rank(s), job $jobs"
done
run "$VDRUN" -n 2 "$PROBE" kvs 64
job1=$(printf '%s\n' "$out" | awk 'NR==1 {print $6}')
run "$VDRUN" -n 2 "$PROBE" kvs 64
job2=$(printf '%s\n' "$out" | awk 'NR==1 {print $6}')
[ -n "$job1" ] && [ "$job1" != "$job2" ] || fail "two jobs had the same id '$job1'"

run env -u PMI_FD "$PROBE" singleton
[ "$rc" -eq 0 ] || fail "singleton: exit $rc: $out $err"

# ---- job control -----------------------------------------------------------
# expect_failure WHAT WANT_RC WANT_MSG vdrun-args...
expect_failure() {
	local what=$1 want_rc=$2 want_msg=$3
	shift 3
	run "$VDRUN" "$@"
	if [ "$rc" -ne "$want_rc" ]; then
		fail "$what: vdrun exit $rc, want $want_rc ($err)"
	elif [[ $err != *"$want_msg"* ]]; then
		fail "$what: stderr lacks '$want_msg': $err"
	elif [ "$ms" -ge 1000 ]; then
		fail "$what: the job took $ms ms to stop"
	else
		echo "ok: $what: exit $rc in $ms ms: $(printf '%s\n' "$err" | grep vdrun: | head -1)"
	fi
	check_no_ranks "$what"
}

expect_failure "rank exits 3" 3 "rank 1 exited with status 3; stopping the job" \
	-n 3 "$PROBE" exit 1 3
expect_failure "rank exits 3, others ignore SIGTERM" 3 "rank 2 exited with status 3" \
	-n 3 "$PROBE" exit 2 3 stubborn
expect_failure "rank killed" 137 "rank 2 killed by signal SIGKILL" -n 3 "$PROBE" kill 2
expect_failure "rank aborts" 5 "rank 1 called MPI_Abort(5)" -n 3 "$PROBE" abort 1 5
expect_failure "rank 0 of 7 aborts" 9 "rank 0 called MPI_Abort(9)" -n 7 "$PROBE" abort 0 9
expect_failure "rank skips finalize" 1 "rank 0 exited without MPI_Finalize" \
	-n 3 "$PROBE" nofinalize 0
expect_failure "plain program fails" 1 "exited with status 1" -n 2 false

expect_failure "a rank never joins the barrier" 1 \
	"rank 1 exited while other ranks wait in a PMI barrier" \
	-n 2 sh -c '[ "$PMI_RANK" = 1 ] && exit 0; exec "$0" kvs' "$PROBE"
expect_failure "a rank sends garbage" 1 "rank 1 broke the PMI protocol" \
	-n 2 sh -c '[ "$PMI_RANK" = 1 ] && echo garbage >&"$PMI_FD"; exec "$0" sleep' "$PROBE"
expect_failure "a rank sends an endless line" 1 "rank 0 broke the PMI protocol" \
	-n 2 sh -c '[ "$PMI_RANK" = 0 ] && head -c 10000 /dev/zero | tr "\0" x >&"$PMI_FD"; exec "$0" sleep' "$PROBE"

run "$VDRUN" -n 3 true
[ "$rc" -eq 0 ] || fail "vdrun -n 3 true: exit $rc: $err"

# Messages of ranks that fail at once stay lines of their own (a child's
# message was written in three pieces, and two ranks' pieces mixed:
# "vdrun: rank 1: vdrun: rank 0: cannot ...").
printf 'not a program\n' >"$TMP/garbage"
chmod 755 "$TMP/garbage"
mixed=0
for _ in $(seq 15); do
	run "$VDRUN" -n 8 "$TMP/garbage"
	bad=$(grep -cvE "^vdrun: rank [0-9]+: cannot execute $TMP/garbage: Exec format error\$|^vdrun: rank [0-9]+ exited with status 126; stopping the job\$" <<<"$err")
	[ "$rc" -eq 126 ] || fail "a program that cannot be executed: exit $rc: $err"
	[ "$bad" -eq 0 ] || { mixed=$((mixed + 1)); echo "$err" | head -4; }
done
[ "$mixed" -eq 0 ] && echo "ok: the failure messages of 8 ranks at once are whole lines" ||
	fail "the failure messages of ranks mixed in $mixed of 15 jobs"

# A -wdir this machine cannot enter is said once, before any rank starts.
for d in "$TMP/no-such-dir" "$TMP/garbage"; do
	run "$VDRUN" -n 4 -wdir "$d" sh -c 'echo started'
	if [ "$rc" -ne 1 ] || [ -n "$out" ] || [ "$(wc -l <<<"$err")" -ne 1 ] ||
		[[ $err != "vdrun: cannot change to directory $d: "* ]]; then
		fail "-wdir $d: exit $rc, out '$out', err '$err'"
	else
		echo "ok: -wdir $d: exit 1 before the start: $err"
	fi
done

# vdrun stopped by SIGTERM / killed by SIGKILL: no rank survives.
# wait_ranks N: until N ranks of ours run (at most 5 s).
wait_ranks() {
	for _ in $(seq 100); do
		[ "$(live_ranks)" -ge "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

"$VDRUN" -n 3 "$PROBE" sleep 2>"$TMP/err" &
pid=$!
wait_ranks 3 || fail "SIGTERM: the ranks did not start"
t0=$(now_ms)
kill -TERM "$pid"
wait "$pid"
rc=$?
ms=$(($(now_ms) - t0))
[ "$rc" -eq 143 ] || fail "SIGTERM: vdrun exit $rc, want 143"
grep -q "caught SIGTERM; stopping the job" "$TMP/err" || fail "SIGTERM: $(cat "$TMP/err")"
[ "$ms" -lt 1000 ] || fail "SIGTERM: the job took $ms ms to stop"
check_no_ranks "SIGTERM"
echo "ok: vdrun stopped by SIGTERM in $ms ms"

"$VDRUN" -n 3 "$PROBE" sleep stubborn 2>/dev/null &
pid=$!
wait_ranks 3 || fail "SIGKILL: the ranks did not start"
kill -KILL "$pid"
{ wait "$pid"; } 2>/dev/null
for _ in $(seq 20); do
	[ "$(live_ranks)" -eq 0 ] && break
	sleep 0.05
done
check_no_ranks "vdrun killed by SIGKILL"
echo "ok: ranks die with vdrun"

# ---- usage errors ----------------------------------------------------------
# expect_usage WHAT WANT_RC WANT_MSG vdrun-args...
expect_usage() {
	local what=$1 want_rc=$2 want_msg=$3
	shift 3
	run "$VDRUN" "$@"
	if [ "$rc" -ne "$want_rc" ] || [[ $err != *"$want_msg"* ]]; then
		fail "$what: exit $rc (want $want_rc), stderr: $err"
	else
		echo "ok: $what: exit $rc: $(printf '%s\n' "$err" | head -1)"
	fi
}
touch "$TMP/not-executable"
expect_usage "no arguments" 2 "number of ranks is missing"
expect_usage "-n 0" 2 "'0' is not a number of ranks" -n 0 true
expect_usage "-n abc" 2 "'abc' is not a number of ranks" -n abc true
expect_usage "-n 99999" 2 "not a number of ranks" -np 99999 true
expect_usage "-n without value" 2 "needs a value" -n
expect_usage "no program" 2 "program to run is missing" -n 2
expect_usage "bad --bind-to" 2 "neither 'core' nor 'none'" -n 2 --bind-to socket true
expect_usage "unknown option" 2 "unknown option '--frobnicate'" --frobnicate -n 2 true
expect_usage "program not found" 127 "command not found" -n 2 no-such-program-$$
expect_usage "path not found" 127 "No such file" -n 2 "$TMP/no-such-program"
expect_usage "not executable" 126 "not an executable" -n 2 "$TMP/not-executable"
run "$VDRUN" --help
[ "$rc" -eq 0 ] && [[ $out == usage:* ]] || fail "--help: exit $rc: $out"
[[ $out == *"-v, --verbose"* ]] || fail "--help does not mention -v, --verbose"
# A single letter is a short option or an error: -o and -t must not run a
# job as --oversubscribe / --tag-output, nor "--v" mean --version.
expect_usage "-o is no abbreviation" 2 "unknown option '-o'" -o -n 1 true
expect_usage "-t is no abbreviation" 2 "unknown option '-t'" -t -n 1 true
expect_usage "-b is no abbreviation" 2 "unknown option '-b'" -b none -n 1 true
expect_usage "--v is ambiguous" 2 "ambiguous option '--v'" --v -n 1 true
run "$VDRUN" -ov -n 1 true
[ "$rc" -eq 0 ] || fail "-ov (--oversubscribe in two letters): exit $rc: $err"

# -v, the verbose flag of mpirun and Hydra, runs the job (it used to be
# taken for --version: exit 0 and nothing run) and first says where each
# rank runs and what.
for v in -v --verbose; do
	run "$VDRUN" "$v" -n 2 sh -c 'echo "ran $PMI_RANK"' : -n 1 /bin/echo "two words"
	host=$(hostname)
	want="vdrun: rank 0 on $host (context 1): $(command -v sh) -c 'echo \"ran \$PMI_RANK\"'
vdrun: rank 1 on $host (context 1): $(command -v sh) -c 'echo \"ran \$PMI_RANK\"'
vdrun: rank 2 on $host (context 2): /bin/echo 'two words'"
	if [ "$rc" -ne 0 ] || [ "$(sort <<<"$out" | tr '\n' ,)" != "ran 0,ran 1,two words," ] ||
		[ "$err" != "$want" ]; then
		fail "$v: exit $rc, out '$out', err '$err', want '$want'"
	else
		echo "ok: $v runs the job and prints its mapping first"
	fi
done

# ---- --tag-output --------------------------------------------------------------
# Lines longer than a read are kept whole (a line of 1500 bytes came out as
# two tagged lines of 1024 and 476); only past 1 MiB are they cut, into
# tagged pieces of 1 MiB.
run "$VDRUN" -n 2 -l sh -c 'head -c 1500 /dev/zero | tr "\0" a; echo
	head -c 300000 /dev/zero | tr "\0" b; echo; echo short
	head -c 1500000 /dev/zero | tr "\0" c; echo'
got=$(awk '{print substr($0, 1, 5), length($0)}' <<<"$out" | sort | tr '\n' ,)
want="[0] a 1504,[0] b 300004,[0] c 1048580,[0] c 451428,[0] s 9,[1] a 1504,[1] b 300004,[1] c 1048580,[1] c 451428,[1] s 9,"
if [ "$rc" -ne 0 ] || [ "$got" != "$want" ]; then
	fail "--tag-output with long lines: exit $rc, lines '$got', want '$want'"
else
	echo "ok: --tag-output keeps lines of 1500 and 300000 bytes whole, cuts one past 1 MiB"
fi
# One rank's lines stay in order, whole, whatever their length.
run "$VDRUN" -n 1 -l sh -c 'for n in 10 5000 70000 10 200000 3; do head -c $n /dev/zero | tr "\0" x; echo; done'
got=$(awk '{print length($0) - 4}' <<<"$out" | tr '\n' ' ')
[ "$rc" -eq 0 ] && [ "$got" = "10 5000 70000 10 200000 3 " ] || fail "--tag-output, lines in order: '$got'"

# ---- environment and binding ----------------------------------------------
run "$VDRUN" -np 3 sh -c 'echo "$PMI_RANK $PMI_SIZE $PMI_FD"'
[ "$rc" -eq 0 ] && [ "$(printf '%s\n' "$out" | awk '{print $1, $2}' | sort | tr '\n' ,)" = "0 3,1 3,2 3," ] ||
	fail "PMI_RANK/PMI_SIZE: $out $err"

allowed=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
ncpus=$(nproc)
if [ "$ncpus" -ge 2 ]; then
	run "$VDRUN" -n 2 --bind-to core sh -c \
		'echo "$PMI_RANK $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'
	lists=$(printf '%s\n' "$out" | sort | awk '{print $2}' | tr '\n' ' ')
	set -- $lists
	if [ "$rc" -ne 0 ] || [ $# -ne 2 ] || [ "$1" = "$2" ] || [[ $1 == *[-,]* ]]; then
		fail "--bind-to core: ranks on '$lists' ($err)"
	else
		echo "ok: --bind-to core: rank 0 on CPU $1, rank 1 on CPU $2"
	fi
	run "$VDRUN" -n 2 --bind-to none sh -c 'sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status'
	[ "$(printf '%s\n' "$out" | sort -u)" = "$allowed" ] ||
		fail "--bind-to none: ranks on '$out', vdrun may use '$allowed'"
fi

# --map-by core: without -n a rank per CPU vdrun may use, rank i bound to
# the i-th of them; more ranks than CPUs only with --oversubscribe (they
# are then unbound, or wrap around with --bind-to core); --bind-to none
# still unbinds.
cpu_list=$(awk -v RS=, -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) printf "%d ", c }' <<<"$allowed")
CPUS='echo "$PMI_RANK $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'
run "$VDRUN" --map-by core sh -c "$CPUS"
got=$(sort -n <<<"$out" | awk '{printf "%s ", $2}')
if [ "$rc" -ne 0 ] || [ "$got" != "$cpu_list" ]; then
	fail "--map-by core: exit $rc, ranks on CPUs '$got', want '$cpu_list': $err"
else
	echo "ok: --map-by core: one rank per CPU, in order: $got"
fi
expect_usage "--map-by core, more ranks than CPUs" 2 \
	"$((ncpus + 1)) ranks, but only $ncpus slot(s)" --map-by core -n $((ncpus + 1)) true
run "$VDRUN" --map-by core --oversubscribe -n $((ncpus + 1)) sh -c "$CPUS"
got=$(awk '{print $2}' <<<"$out" | sort -u)
[ "$rc" -eq 0 ] && [ "$got" = "$allowed" ] ||
	fail "--map-by core --oversubscribe: exit $rc, ranks on CPUs '$got', want all unbound: $err"
run "$VDRUN" --map-by core --oversubscribe --bind-to core -n $((ncpus + 1)) sh -c "$CPUS"
got=$(sort -n <<<"$out" | awk '{printf "%s ", $2}')
[ "$rc" -eq 0 ] && [ "$got" = "$cpu_list${cpu_list%% *} " ] ||
	fail "--map-by core --oversubscribe --bind-to core: exit $rc, ranks on CPUs '$got': $err"
run "$VDRUN" --map-by core --bind-to none -n 1 sh -c "$CPUS"
[ "$rc" -eq 0 ] && [ "$out" = "0 $allowed" ] || fail "--map-by core --bind-to none: '$out' $err"

# More ranks than CPUs: no binding by default, and the job still runs.
run "$VDRUN" -n $((ncpus + 1)) "$PROBE" kvs 32
[ "$rc" -eq 0 ] || fail "kvs with more ranks than CPUs: exit $rc: $err"

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "all vdrun checks passed"
exit 0
