#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vdrun across hosts: two network namespaces joined by veth stand for
# hosts A and B (tests/netns.sh); vdrun runs on A and reaches B through a
# launch agent that runs the command in B's namespace (as ssh would on B).
# Checked: the PMI key-value space and fences across hosts; placement by
# slot and by node, from a host list and from hostfiles in Open MPI and
# MPICH formats (read from each rank's own namespace); -x / -genv reach
# the ranks of both hosts; -wdir; --tag-output; more ranks than slots is
# refused unless --oversubscribe; a rank killed or aborting on B ends the
# job naming the rank and host B, within seconds, and nothing is left on
# either host -- nor after vdrun is stopped or killed; an agent that fails
# or never connects is named; a connection without the job's cookie is
# refused; usage errors exit 2.  When the ofi provider opens here, real
# MPI programs run across the two hosts under vdrun (point to point,
# collectives), and an MPI rank killed on B ends the job.
#
# Usage: test_vdrun_hosts.sh BUILD_DIR        (exit 0 pass, 1 fail, 77 skip)
set -u

B=${1:-${VIADUCT_BUILD:-}}
B=$(cd "$B" && pwd)
VDRUN=$B/tools/vdrun
PROBE_BUILT=$B/tests/vdrun_probe
fails=0
for f in "$VDRUN" "$PROBE_BUILT"; do
	[ -x "$f" ] || { echo "FAIL: $f was not built"; exit 1; }
done

# shellcheck source=tests/netns.sh
. "$(dirname "$0")/netns.sh"
# shellcheck source=tests/stacks.sh
. "$(dirname "$0")/stacks.sh"
vd_netns_up
TMP=$(mktemp -d) || exit 1
chmod 755 "$TMP"
# The probe under a name of its own, so that pgrep finds only our ranks.
NAME=vdhprobe$$
PROBE=$TMP/$NAME
cp "$PROBE_BUILT" "$PROBE" || exit 1
cleanup() {
	# shellcheck disable=SC2046 # a list of pids
	kill -KILL $(live) 2>/dev/null
	rm -rf "$TMP"
	vd_netns_cleanup
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# The launch agent: AGENT HOST COMMAND... runs COMMAND in HOST's
# namespace, its arguments as they are (an ssh would hand them to a shell).
# Not by exec: as with ssh, the proxy is not the agent's own process, so
# only its connection tells it that vdrun is gone.
AGENT=$TMP/nsagent
cat >"$AGENT" <<EOS
#!/bin/bash
case \$1 in
$VD_IP_A) ns=$VD_NS_A ;;
$VD_IP_B) ns=$VD_NS_B ;;
*) echo "nsagent: unknown host \$1" >&2; exit 255 ;;
esac
shift
ip netns exec "\$ns" "\$@"
EOS
chmod 755 "$AGENT"
A=$VD_IP_A
HB=$VD_IP_B

# run CMD...: vdrun on host A (at most 30 s) with the agent $AG; sets rc,
# out, err, ms.
AG=$AGENT
run() {
	local t0
	t0=$(now_ms)
	: >"$TMP/out"
	: >"$TMP/err"
	vd_run_watched "${RUN_LIMIT:-30}" - vd_in A "$VDRUN" --launch-agent "$AG" "$@" \
		>>"$TMP/out" 2>>"$TMP/err"
	rc=$?
	ms=$(($(now_ms) - t0))
	out=$(cat "$TMP/out")
	err=$(cat "$TMP/err")
	# A sanitizer build's report, of vdrun or of a proxy, fails the test.
	[[ $err != *Sanitizer* && $err != *"runtime error"* ]] || fail "sanitizer report: $err"
}

# Our live ranks and proxies, by pid (zombies are dead: an orphan waits
# for init to reap it, which some containers' init never does).
live() {
	ps -C "$NAME" -o pid=,stat= | awk '$2 !~ /^Z/ {print $1}'
	pgrep -f "^$VDRUN --proxy"
}

# Nothing of the job may be left on either host once vdrun is gone (the
# namespaces share the pid space, so one look sees both).
check_nothing_left() {
	local left
	for _ in $(seq 40); do
		left=$(live)
		[ -z "$left" ] && return 0
		sleep 0.05
	done
	fail "$1: left running: $(ps -o pid=,args= -p "$(paste -sd, <<<"$left")")"
	# shellcheck disable=SC2086 # a list of pids
	kill -KILL $left 2>/dev/null
}

# ---- PMI across hosts -------------------------------------------------------
for hosts in "$A:2,$HB:2" "$A:1,$HB:3" "$A:3,$HB:4"; do
	n=$(($(echo "$hosts" | tr ',' '\n' | cut -d: -f2 | paste -sd+)))
	run -H "$hosts" -n "$n" "$PROBE" kvs 700
	ranks=$(printf '%s\n' "$out" | awk '/ ok$/ {print $2}' | sort -n | tr '\n' ' ')
	jobs=$(printf '%s\n' "$out" | awk '{print $6}' | sort -u | wc -l)
	if [ "$rc" -ne 0 ] || [ "$ranks" != "$(seq 0 $((n - 1)) | tr '\n' ' ')" ] || [ "$jobs" -ne 1 ]; then
		fail "kvs over -H $hosts: exit $rc, ranks '$ranks': $err"
	else
		echo "ok: put/fence/get across hosts, -H $hosts, $n ranks in one job"
	fi
	check_nothing_left "kvs -H $hosts"
done

# ---- binding on hosts of one machine ------------------------------------------
# The two namespace hosts share this machine and its CPUs (the proxy's
# hello names its boot id and a hash of its CPU set): bound by default,
# host B's rank takes the CPU after host A's, not the same first CPU (which put both ranks of a job across
# the two "hosts" on one CPU, and a rendezvous of 64 KiB ran at a tenth
# of its speed).
if [ "$(nproc)" -ge 2 ] && [ -r /proc/sys/kernel/random/boot_id ]; then
	run -H "$A:1,$HB:1" -n 2 sh -c 'echo "cpus $(grep Cpus_allowed_list /proc/self/status | cut -f2)"'
	cpus=$(printf '%s\n' "$out" | awk '/^cpus / {print $2}' | sort | tr '\n' ' ')
	if [ "$rc" -ne 0 ] || [ "$(echo $cpus | wc -w)" -ne 2 ] || [[ $cpus == *[-,]* ]] ||
		[ "$(echo $cpus | tr ' ' '\n' | sort -u | wc -l)" -ne 2 ]; then
		fail "binding over two hosts of one machine: exit $rc, CPUs '$cpus': $err"
	else
		echo "ok: ranks of two hosts of one machine bound to two CPUs ($cpus)"
	fi
	check_nothing_left "binding"
fi

# ---- placement --------------------------------------------------------------
# placement WHAT WANT vdrun-args...: each rank prints its namespace; WANT
# lists them by rank (A or B).
WHERE='echo "$PMI_RANK $(ip netns identify)"'
placement() {
	local what=$1 want=$2 got
	shift 2
	run "$@" sh -c "$WHERE"
	got=$(printf '%s\n' "$out" | sort -n | awk '{print $2}' |
		sed "s/^$VD_NS_A\$/A/; s/^$VD_NS_B\$/B/" | tr -d '\n')
	if [ "$rc" -ne 0 ] || [ "$got" != "$want" ]; then
		fail "$what: exit $rc, ranks on '$got', want '$want': $err"
	else
		echo "ok: $what: ranks on $got"
	fi
}
placement "--map-by slot (default)" AABB -H "$A:2,$HB:2" -n 4
placement "--map-by node" ABAB -H "$A:2,$HB:2" --map-by node -n 4
placement "--map-by node, uneven slots" ABBB -H "$A:1,$HB:3" --map-by node -n 4
placement "-H without slots: one each" AB -H "$A,$HB" -n 2
placement "-ppn 1" AB -H "$A:4,$HB:4" -ppn 1 -n 2
placement "no -n: one rank per slot" ABB -H "$A:1,$HB:2"
placement "no -n, -ppn 2: two per host" AABB -H "$A,$HB" -ppn 2
placement "--oversubscribe wraps around" ABAB --host "$A,$HB" --oversubscribe -n 4
placement "--map-by core: the list's slots, in order" AABB -H "$A:2,$HB:2" --map-by core -n 4
# ... and each rank bound to one CPU, the ranks of a host to different
# ones (host B's counted after A's: the namespaces share this machine).
if [ "$(nproc)" -ge 2 ]; then
	run -H "$A:2,$HB:2" --map-by core -n 4 sh -c \
		'echo "$PMI_RANK $(ip netns identify) $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'
	got=$(sort -n <<<"$out" | awk '{print $3}' | tr '\n' ' ')
	set -- $got
	if [ "$rc" -ne 0 ] || [ $# -ne 4 ] || [[ $got == *[-,]* ]] || [ "$1" = "$2" ] || [ "$3" = "$4" ]; then
		fail "--map-by core across hosts: exit $rc, CPUs by rank '$got': $err"
	else
		echo "ok: --map-by core binds each rank of both hosts to one CPU: $got"
	fi
fi

printf '# Open MPI format\n\n%s slots=1   # first\n%s slots=3\n' "$A" "$HB" >"$TMP/hosts.ompi"
placement "hostfile, Open MPI format" ABBB --hostfile "$TMP/hosts.ompi" -n 4
printf '%s:3\n  # MPICH format\n%s:1\n\n' "$A" "$HB" >"$TMP/hosts.mpich"
placement "hostfile, MPICH format" AAAB -f "$TMP/hosts.mpich" -n 4
placement "hostfile, MPICH format, by node" ABAA -machinefile "$TMP/hosts.mpich" --map-by node -n 4

# ---- environment, directory, output -------------------------------------------
export VDH_FROM_HERE="from here"
run -H "$A:1,$HB:1" -n 2 -x VDH_FROM_HERE -x VDH_SET=set=1 -genv VDH_G "g v" \
	sh -c 'echo "$PMI_RANK|$VDH_FROM_HERE|$VDH_SET|$VDH_G"'
want="0|from here|set=1|g v
1|from here|set=1|g v"
[ "$rc" -eq 0 ] && [ "$(sort <<<"$out")" = "$want" ] && echo "ok: -x VAR, -x VAR=VAL, -genv reach both hosts" ||
	fail "-x/-genv: exit $rc: $out $err"

mkdir -p "$TMP/wd dir"
run -H "$A:1,$HB:1" -n 2 -wdir "$TMP/wd dir" sh -c 'echo "$PMI_RANK $(pwd)"'
[ "$rc" -eq 0 ] && [ "$(sort <<<"$out")" = "0 $TMP/wd dir
1 $TMP/wd dir" ] && echo "ok: -wdir on both hosts" || fail "-wdir: exit $rc: $out $err"
run -H "$A:1,$HB:1" -n 2 -wdir "$TMP/no-such-dir" true
[ "$rc" -ne 0 ] && [[ $err == *"cannot change to directory"* ]] &&
	echo "ok: a -wdir that does not exist fails the job" || fail "-wdir missing: exit $rc: $err"
# Only host B runs ranks: vdrun does not try the directory here, B's
# ranks say, each on a line of its own.
run -H "$HB:2" -n 2 -wdir "$TMP/no-such-dir" true
bad=$(grep -cvE "^vdrun: rank [01] on host $HB: cannot change to directory $TMP/no-such-dir: No such file or directory\$|^vdrun: rank [01] on host $HB exited with status 1; stopping the job\$" <<<"$err")
[ "$rc" -eq 1 ] && [ "$bad" -eq 0 ] && [[ $err == *"on host $HB: cannot change to directory"* ]] &&
	echo "ok: a -wdir missing on B alone fails the job there" || fail "-wdir missing on B: exit $rc: $err"

run -H "$A:1,$HB:1" -n 2 --tag-output sh -c 'echo "out $PMI_RANK"; echo "err $PMI_RANK" >&2; printf "no newline"'
got_out=$(sort <<<"$out" | tr '\n' ,)
got_err=$(sort <<<"$err" | tr '\n' ,)
if [ "$rc" -eq 0 ] && [ "$got_out" = "[0] no newline,[0] out 0,[1] no newline,[1] out 1," ] &&
	[ "$got_err" = "[0] err 0,[1] err 1," ]; then
	echo "ok: --tag-output prefixes the lines of both hosts, stdout and stderr apart"
else
	fail "--tag-output: exit $rc: out '$got_out' err '$got_err'"
fi
run -H "$A:1,$HB:1" -n 2 -l sh -c 'echo hi'
[ "$(sort <<<"$out" | tr '\n' ,)" = "[0] hi,[1] hi," ] || fail "-l: $out"
# A proxy tags its ranks' lines as vdrun does: long lines stay whole there
# too (they were cut every 1024 bytes).
run -H "$A:1,$HB:1" -n 2 -l sh -c 'head -c 100000 /dev/zero | tr "\0" a; echo; echo short'
got=$(awk '{print substr($0, 1, 5), length($0)}' <<<"$out" | sort | tr '\n' ,)
[ "$rc" -eq 0 ] && [ "$got" = "[0] a 100004,[0] s 9,[1] a 100004,[1] s 9," ] &&
	echo "ok: --tag-output keeps a line of 100000 bytes whole on both hosts" ||
	fail "--tag-output with a long line across hosts: exit $rc: '$got'"

# ---- slots ------------------------------------------------------------------------
run -H "$A:1,$HB:1" -n 3 true
[ "$rc" -eq 2 ] && [[ $err == *"3 ranks, but only 2 slot(s) on 2 host(s)"*"--oversubscribe"* ]] &&
	echo "ok: more ranks than slots is refused: $(head -1 <<<"$err")" || fail "oversubscription: exit $rc: $err"

# ---- job control across hosts ----------------------------------------------------
# expect_failure WHAT WANT_RC WANT_MSG vdrun-args...
expect_failure() {
	local what=$1 want_rc=$2 want_msg=$3
	shift 3
	run "$@"
	if [ "$rc" -ne "$want_rc" ]; then
		fail "$what: vdrun exit $rc, want $want_rc ($err)"
	elif [[ $err != *"$want_msg"* ]]; then
		fail "$what: stderr lacks '$want_msg': $err"
	elif [ "$ms" -ge 5000 ]; then
		fail "$what: the job took $ms ms to stop"
	else
		echo "ok: $what: exit $rc in $ms ms: $(grep vdrun: <<<"$err" | head -1)"
	fi
	check_nothing_left "$what"
}
expect_failure "a rank killed on host B" 137 "rank 3 on host $HB killed by signal SIGKILL" \
	-H "$A:2,$HB:2" -n 4 "$PROBE" kill 3
expect_failure "a rank killed on B, the others ignore SIGTERM" 137 "rank 2 on host $HB killed" \
	-H "$A:2,$HB:2" -n 4 "$PROBE" kill 2 stubborn
expect_failure "a rank on B exits 3" 3 "rank 1 on host $HB exited with status 3" \
	-H "$A,$HB" -n 2 "$PROBE" exit 1 3
expect_failure "a rank on B aborts" 7 "rank 3 on host $HB called MPI_Abort(7)" \
	-H "$A:2,$HB:2" -n 4 "$PROBE" abort 3 7
expect_failure "a rank on A aborts, B's ranks stop" 5 "rank 0 on host $A called MPI_Abort(5)" \
	-H "$A:1,$HB:3" -n 4 "$PROBE" abort 0 5
expect_failure "a rank on B breaks the protocol" 1 "rank 1 on host $HB broke the PMI protocol" \
	-H "$A,$HB" -n 2 sh -c '[ "$PMI_RANK" = 1 ] && echo garbage >&"$PMI_FD"; exec "$0" sleep' "$PROBE"
expect_failure "a rank on B sends an endless line" 1 \
	"rank 1 on host $HB broke the PMI protocol (a line longer than 4096 bytes)" \
	-H "$A,$HB" -n 2 sh -c '[ "$PMI_RANK" = 1 ] && head -c 10000 /dev/zero | tr "\0" x >&"$PMI_FD"; exec "$0" sleep' "$PROBE"
expect_failure "a program missing on B" 127 "rank 1 on host $HB exited with status 127" \
	-H "$A,$HB" -n 1 "$PROBE" sleep : -n 1 no-such-program-$$
AG=$TMP/no-such-agent expect_failure "an agent that fails" 1 "host $HB: the launch agent" \
	-H "$A,$HB" -n 2 "$PROBE" kvs
# An agent that never reaches the host: named within the time limit.
printf '#!/bin/sh\nexec sleep 600\n' >"$TMP/hang-agent"
chmod 755 "$TMP/hang-agent"
VIADUCT_VDRUN_TIMEOUT=2 AG=$TMP/hang-agent expect_failure "a host that never connects" 1 \
	"host $HB: its proxy did not connect within 2 s" -H "$A,$HB" -n 2 "$PROBE" kvs
pgrep -f "$TMP/hang-agent" >/dev/null && fail "the hanging agent was left running"
# The proxy starts on B but cannot reach vdrun (no network where it runs):
# it says so, and vdrun names the host.
printf '#!/bin/sh\nshift\nexec unshare -n "$@"\n' >"$TMP/isolated-agent"
chmod 755 "$TMP/isolated-agent"
AG=$TMP/isolated-agent expect_failure "a proxy that cannot connect back" 1 \
	"vdrun proxy on $HB: cannot connect back to vdrun at $A port" -H "$A,$HB" -n 2 "$PROBE" kvs
[[ $err == *"host $HB: the launch agent"*"exited (status 1)"* ]] ||
	fail "a proxy that cannot connect back: vdrun does not name the host: $err"

# vdrun stopped (SIGTERM) or killed (SIGKILL) while ranks run on both hosts.
# wait_ranks N: until N ranks of ours run (at most 10 s).
wait_ranks() {
	for _ in $(seq 200); do
		[ "$(live | wc -l)" -ge "$1" ] && return 0
		sleep 0.05
	done
	return 1
}
for sig in TERM KILL; do
	# Not through vd_in: $! must be vdrun itself (ip netns exec execs it).
	ip netns exec "$VD_NS_A" "$VDRUN" --launch-agent "$AGENT" -H "$A:2,$HB:2" -n 4 \
		"$PROBE" sleep stubborn >/dev/null 2>"$TMP/err" &
	pid=$!
	if ! wait_ranks 5; then   # 4 ranks and a proxy
		fail "SIG$sig: the ranks did not start: $(cat "$TMP/err")"
	fi
	t0=$(now_ms)
	kill -"$sig" "$pid"
	{ wait "$pid"; } 2>/dev/null
	rc=$?
	check_nothing_left "vdrun killed by SIG$sig"
	echo "ok: vdrun ended by SIG$sig (exit $rc): nothing left on either host after $(($(now_ms) - t0)) ms"
done

# Host B drops off the network mid-job (no FIN, no RST): both sides learn
# it after VIADUCT_VDRUN_LINK_TIMEOUT (2 s), whether the link was idle (TCP
# keepalive) or data was in flight (TCP_USER_TIMEOUT; retransmissions
# alone take 15 min), and the job is gone within 3 s and a little (the
# bound allows 7 for a loaded machine).
# vdrun names B, B's proxy stops its ranks.
# link_down WHAT NPROCS vdrun-args...: NPROCS of ours (probes, proxies) run
# before the cut.
link_down() {
	local what=$1 nprocs=$2
	shift 2
	ip netns exec "$VD_NS_A" env VIADUCT_VDRUN_LINK_TIMEOUT=2 \
		timeout -k 2 60 "$VDRUN" --launch-agent "$AGENT" "$@" >/dev/null 2>"$TMP/err" &
	pid=$!
	wait_ranks "$nprocs" || fail "$what: the ranks did not start: $(cat "$TMP/err")"
	sleep 0.5
	t0=$(now_ms)
	vd_link down
	wait "$pid"
	rc=$?
	ms=$(($(now_ms) - t0))
	vd_link up
	if [ "$rc" -eq 1 ] && grep -q "host $HB: lost the connection to its proxy" "$TMP/err" &&
		[ "$ms" -lt 7000 ]; then
		echo "ok: $what: the job ends in $ms ms naming B"
	else
		fail "$what: exit $rc after $ms ms: $(cat "$TMP/err")"
	fi
	check_nothing_left "$what"
}
link_down "host B unreachable, the link idle" 5 -H "$A:2,$HB:2" -n 4 "$PROBE" sleep
# Rank 1 on B asks for PMI's limits in a loop: replies are always in flight.
link_down "host B unreachable, PMI traffic in flight" 2 -H "$A,$HB" -n 1 "$PROBE" sleep : \
	-n 1 bash -c 'echo "cmd=init pmi_version=1 pmi_subversion=1" >&"$PMI_FD"
		read -r _ <&"$PMI_FD"
		while echo cmd=get_maxes >&"$PMI_FD" && read -r _ <&"$PMI_FD"; do :; done
		exec "$0" sleep' "$PROBE"

# A connection that does not bring the job's cookie is refused, and the
# job goes on: this agent knocks with a wrong cookie first.
cat >"$TMP/knock-agent" <<EOS
#!/bin/bash
read -r magic ver idx host addr port cookie timeout
exec 3<>/dev/tcp/\$addr/\$port && echo "hello 1 \$idx 0123456789abcdef0123456789abcdef" >&3
echo "\$magic \$ver \$idx \$host \$addr \$port \$cookie \$timeout" | "$AGENT" "\$@"
EOS
chmod 755 "$TMP/knock-agent"
AG=$TMP/knock-agent run -H "$A,$HB" -n 2 "$PROBE" kvs
[ "$rc" -eq 0 ] && [[ $err == *"refused a connection that did not bring the job's cookie"* ]] &&
	echo "ok: a connection with a wrong cookie is refused, the job runs" ||
	fail "wrong cookie: exit $rc: $err"
# Past the cookie, a proxy's lines are still checked: a fake proxy with
# the right cookie sends what $TMP/bad holds (or hangs up if nothing);
# vdrun ends the job naming the host, and does not wait for it.
cat >"$TMP/fake-agent" <<EOS
#!/bin/bash
read -r magic ver idx host addr port cookie timeout
exec 3<>/dev/tcp/\$addr/\$port || exit 1
echo "hello 1 \$idx \$cookie" >&3
[ -s "$TMP/bad" ] || exit 0    # nothing to say: hang up
cat "$TMP/bad" >&3
cat <&3 >/dev/null
EOS
chmod 755 "$TMP/fake-agent"
bad_proxy() {
	local what=$1 want=$2
	printf '%s' "$3" >"$TMP/bad"
	AG=$TMP/fake-agent run -H "$A,$HB" -n 2 "$PROBE" kvs
	if [ "$rc" -eq 1 ] && [[ $err == *"host $HB: $want"* ]] && [ "$ms" -lt 10000 ]; then
		echo "ok: $what: $(grep vdrun: <<<"$err" | head -1)"
	else
		fail "$what: exit $rc in $ms ms: $err"
	fi
}
bad_proxy "a proxy reports a rank of another host" "its proxy sent a malformed line" $'exit 0 0\n'
bad_proxy "a proxy names a rank out of range" "its proxy sent a malformed line" $'pmi 99999 cmd=init\n'
bad_proxy "a proxy sends an unknown line" "its proxy sent a malformed line" $'hello again\n'
bad_proxy "a proxy sends an endless line" "its proxy sent a line too long" "$(head -c 9000 /dev/zero | tr '\0' x)"
bad_proxy "a proxy hangs up with its ranks alive" "lost the connection to its proxy, with 1 rank(s)" ""
check_nothing_left "fake proxies"

out=$(echo "garbage" | timeout 10 "$VDRUN" --proxy 2>&1)
[ $? -eq 1 ] && [[ $out == *"no job on stdin"* ]] || fail "vdrun --proxy with garbage on stdin: $out"
# A vdrun of another version: the proxy says so rather than "no job".
out=$(echo "vdrun-proxy 7 0 h 127.0.0.1 1 0123456789abcdef0123456789abcdef 30 2 x" |
	timeout 10 "$VDRUN" --proxy 2>&1)
[ $? -eq 1 ] && [[ $out == *"speaks version 7"*"run the same viaduct on every host"* ]] ||
	fail "vdrun --proxy given a start line of version 7: $out"
# Version 2 carries the link timeout, range-checked.
out=$(echo "vdrun-proxy 2 0 h 127.0.0.1 1 0123456789abcdef0123456789abcdef 30 1" |
	timeout 10 "$VDRUN" --proxy 2>&1)
[ $? -eq 1 ] && [[ $out == *"no job on stdin"* ]] || fail "vdrun --proxy, link timeout 1: $out"

# ---- usage errors ------------------------------------------------------------------
expect_usage() {
	local what=$1 want=$2
	shift 2
	run "$@"
	if [ "$rc" -ne 2 ] || [[ $err != *"$want"* ]] || [[ $err != *usage:* ]]; then
		fail "$what: exit $rc (want 2), stderr: $err"
	else
		echo "ok: $what: exit 2: $(head -1 <<<"$err")"
	fi
}
expect_usage "bad --map-by" "'socket' is not 'slot', 'node' or 'core'" --map-by socket -n 2 true
expect_usage "0 slots" "'0' is not a number of slots" -H "$A:0" -n 1 true
expect_usage "slots not a number" "'x' is not a number of slots" -H "$A:x" -n 1 true
expect_usage "empty host" "empty host name" -H "$A,,$HB" -n 1 true
expect_usage "a host like an option" "'-oProxyCommand=x' is not a host name" \
	-H "-oProxyCommand=x" -n 1 true
expect_usage "missing hostfile" "--hostfile $TMP/none" --hostfile "$TMP/none" -n 1 true
printf '%s slots=2 max_slots=4\n' "$A" >"$TMP/hosts.bad"
expect_usage "hostfile with a bad word" "$TMP/hosts.bad:1: 'max_slots=4' is not 'slots=N'" \
	-f "$TMP/hosts.bad" -n 1 true
printf '# nothing\n\n' >"$TMP/hosts.empty"
expect_usage "empty hostfile" "no hosts in it" -f "$TMP/hosts.empty" -n 1 true
expect_usage "-x of an unset variable" "VDH_UNSET is not set here" -x VDH_UNSET -n 1 true
expect_usage "-x bad name" "'1X' is not a variable name" -x 1X=2 -n 1 true
expect_usage "-genv without value" "-genv VDH needs a value" -n 1 -genv VDH
expect_usage "no -n in MPMD" "context 2: the number of ranks is missing" -H "$A,$HB" -n 1 true : true
expect_usage "-ppn 0" "-ppn: '0' is not a number" -ppn 0 -n 1 true
expect_usage "-wdir twice" "-wdir given twice" -wdir /a -wdir /b -n 1 true
expect_usage "--tag-output with a value" "unknown option '--tag-output=yes'" --tag-output=yes -n 1 true
VIADUCT_VDRUN_TIMEOUT=soon run -H "$A,$HB" -n 2 true
[ "$rc" -eq 2 ] && [[ $err == *"VIADUCT_VDRUN_TIMEOUT: 'soon'"* ]] || fail "bad VIADUCT_VDRUN_TIMEOUT: exit $rc: $err"
VIADUCT_VDRUN_LINK_TIMEOUT=1 run -H "$A,$HB" -n 2 true
[ "$rc" -eq 2 ] && [[ $err == *"VIADUCT_VDRUN_LINK_TIMEOUT: '1'"* ]] ||
	fail "VIADUCT_VDRUN_LINK_TIMEOUT=1: exit $rc: $err"
out=$("$VDRUN" --version)
[[ $out == "vdrun (viaduct) "[0-9]* ]] || fail "--version: $out"
out=$("$VDRUN" --help)
for w in --host --hostfile -x -genv --map-by -ppn --oversubscribe -wdir --tag-output \
	--launch-agent --version VIADUCT_RSH VIADUCT_VDRUN_TIMEOUT VIADUCT_VDRUN_LINK_TIMEOUT; do
	[[ $out == *"$w"* ]] || fail "--help does not mention $w"
done
# VIADUCT_RSH names the agent when --launch-agent is not given.
out=$(vd_in A env VIADUCT_RSH="$AGENT" timeout 30 "$VDRUN" -H "$A,$HB" -n 2 sh -c "$WHERE" 2>&1 | sort | awk '{print $2}' | tr '\n' ' ')
[ "$out" = "$VD_NS_A $VD_NS_B " ] && echo "ok: VIADUCT_RSH is the launch agent" || fail "VIADUCT_RSH: $out"

# ---- a real MPI program across the hosts -------------------------------------------
if [ -x "$B/tests/mpi/mpitest_p2p" ] && [ -x "$B/tests/mpi/mpitest_coll" ] &&
	[ -x "$B/tests/mpi/mpitest_jobctl" ] &&
	VIADUCT_PROVIDER=ofi:tcp "$B/tests/test_vipl_api_vi" >/dev/null 2>&1; then
	supp=$(cd "$(dirname "$0")" && pwd)/ofi/tsan.supp
	[ -z "${TSAN_OPTIONS:-}" ] || export TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$supp"
	export VIADUCT_OFI_PROVIDER=tcp     # passed on to B's ranks by vdrun
	# The whole p2p test, run across hosts: 25 s at n=2 under TSan on a
	# loaded 2-core machine was seen.  The bound is just under the ranks'
	# own watchdog (60 s), so that a hang shows every rank's stacks.
	for t in "p2p 2" "p2p 4" "coll 3"; do
		set -- $t
		RUN_LIMIT=55 run -H "$A:$(($2 / 2 + $2 % 2)),$HB:$(($2 / 2))" -n "$2" "$B/tests/mpi/mpitest_$1"
		if [ "$rc" -ne 0 ]; then
			fail "mpitest_$1 across two hosts n=$2: exit $rc: $(sed '/^=== hung after/q' <<<"$out$err" | tail -5)"
			sed -n '/^=== hung after/,$p' <<<"$err" | head -300
		else
			echo "ok: mpitest_$1 across two hosts under vdrun, n=$2, $ms ms"
		fi
		check_nothing_left "mpitest_$1 n=$2"
	done
	# The last rank, on B, kills itself while rank 0 on A blocks in a receive.
	run -H "$A,$HB" -n 2 "$B/tests/mpi/mpitest_jobctl" kill
	if [ "$rc" -eq 137 ] && [[ $err == *"rank 1 on host $HB killed by signal SIGKILL"* ]] &&
		[ "$ms" -lt 10000 ]; then
		echo "ok: an MPI rank killed on B ends the job: exit $rc in $ms ms"
	else
		fail "MPI rank killed on B: exit $rc in $ms ms: $err"
	fi
	check_nothing_left "mpitest_jobctl kill"
elif [ "${VDTEST_STRICT:-0}" = 1 ]; then
	fail "the ofi provider does not open here, and VDTEST_STRICT=1 wants the MPI programs across hosts"
else
	echo "note: the ofi provider does not open here; no MPI program across hosts"
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "all vdrun host checks passed"
exit 0
