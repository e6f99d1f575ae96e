# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2154,SC2034
#
# A private Slurm for the tests that run MPI under srun (test_mpi_slurm,
# test_mpi_slurm_hosts).  Source it after tests/mpi/runlib.sh, then:
#     vs_need                  skip (77) unless root with Slurm and munge
#     vs_init                  $SD (a temporary folder), $MARK, $SLURM_CONF,
#                              a clean environment; the cleanup trap and a
#                              watchdog for when the test is killed outright
#     vs_start_munged          munged with the test's own key and socket
#                              ($MUNGE_SOCK)
#     vs_conf_common           the slurm.conf lines every test shares
#     vs_start NAME CMD...     a daemon in the foreground (-D) in the
#                              background; its log is $SD/NAME.log
#     vs_wait_idle NODE...     up to 30 s for the nodes to be idle: 0 when
#                              they are, 2 when a daemon found its port
#                              taken (the daemons are stopped), else fatal
#     run_srun [OPTS...] -- PROG ARGS...   srun under a timeout, output in
#                              $mt_log; sets rc and secs
#     vs_cmd CMD...            a Slurm client command (sinfo, squeue...)
#     job_pids, no_leftovers, show_out, daemon_logs, fatal, free_port
# VS_IN (an array, default empty) is the prefix that runs srun and the
# client commands where the controller is reached (e.g. "ip netns exec
# NS"); VS_CLEANUP_HOOK, when set before vs_init, is a command run last on
# every exit (and by the watchdog) after every process is stopped.
#
# Every daemon, srun and rank carries VD_SLURM_MARK=$SD in its environment
# (srun passes it to the ranks); slurmstepd, which gets an empty
# environment, holds a log of $SD open.  The cleanup finds them all by
# these two signs (one pid namespace: also inside network namespaces).
VS_IN=(${VS_IN[@]+"${VS_IN[@]}"})
VS_CLEANUP_HOOK=${VS_CLEANUP_HOOK:-}
vs_names=()
vs_pids=()
vs_ctld_pid=
munged_pid=

vs_need() {
	if [ "$(id -u)" != 0 ]; then
		echo "SKIP: needs root (starts its own slurmctld, slurmd and munged)"
		exit 77
	fi
	local cmd
	for cmd in munged munge unmunge slurmctld slurmd srun sinfo squeue scancel; do
		if ! command -v "$cmd" >/dev/null; then
			echo "SKIP: $cmd not installed (Debian packages slurm-wlm and munge; make deps)"
			exit 77
		fi
	done
}

# The pids of the processes that carry our mark or hold a file of $SD
# open (not this shell, nor the watchdog).
marked_pids() {
	{
		grep -lszxF "$MARK" /proc/[0-9]*/environ | sed 's,^/proc/,,; s,/environ$,,'
		find /proc/[0-9]*/fd -maxdepth 1 -lname "$SD/*" 2>/dev/null |
			sed 's,^/proc/,,; s,/fd/.*,,'
	} | sort -un | grep -vxF -e "$$" -e "$BASHPID" -e "${watchdog_pid:-$$}"
}

pid_of() { [ -s "$1" ] && cat "$1"; }

# stop_pid PID: SIGTERM, up to 5 s, then SIGKILL.
stop_pid() {
	local pid=$1 i
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
}

vs_cmd() { timeout 5 ${VS_IN[@]+"${VS_IN[@]}"} "$@"; }

# The Slurm daemons, last started first.
vs_stop_daemons() {
	local i
	for ((i = ${#vs_pids[@]} - 1; i >= 0; i--)); do
		stop_pid "${vs_pids[i]}"
	done
	vs_names=()
	vs_pids=()
	vs_ctld_pid=
}

vs_cleanup() {
	local pids=() i
	trap - EXIT INT TERM HUP
	if [ -n "$vs_ctld_pid" ] && kill -0 "$vs_ctld_pid" 2>/dev/null; then
		vs_cmd scancel --quiet --user=root --full 2>/dev/null
		vs_cmd scancel --quiet --user=root 2>/dev/null
	fi
	vs_stop_daemons
	stop_pid "$munged_pid"
	# Job steps (slurmstepd), ranks, anything left.
	for i in 1 2 3; do
		mapfile -t pids < <(marked_pids)
		[ ${#pids[@]} -eq 0 ] && break
		[ "$i" = 1 ] && echo "cleanup: processes left: ${pids[*]}" >&2
		kill -KILL "${pids[@]}" 2>/dev/null
		sleep 0.2
	done
	rm -f "$mt_log"
	[ -z "$VS_CLEANUP_HOOK" ] || $VS_CLEANUP_HOOK
	[ -z "${watchdog_pid:-}" ] || kill -KILL "$watchdog_pid" 2>/dev/null
	if [ "${VD_SLURM_KEEP:-0}" = 1 ]; then
		echo "kept $SD"
	else
		rm -rf "$SD"
	fi
}

vs_init() {
	SD=$(mktemp -d /tmp/viaduct-slurm.XXXXXX) || { echo "FAIL: mktemp"; exit 1; }
	# munged wants its socket's folders searchable by all (not writable).
	chmod 0711 "$SD"
	MARK=VD_SLURM_MARK=$SD
	# Nothing of a Slurm job or launcher around this test (CI inside a
	# job) reaches our srun or its ranks.
	local v
	for v in $(compgen -e | grep -E '^(SLURM_|SRUN_|SALLOC_|SBATCH_|PMI_|PMIX_|MUNGE_)'); do
		unset "$v"
	done
	export SLURM_CONF=$SD/slurm.conf
	trap vs_cleanup EXIT
	trap 'exit 1' INT TERM HUP
	# If this shell is killed outright (SIGKILL: no trap runs), a
	# watchdog stops what it started and removes $SD within 2 s.
	(
		trap '' INT TERM HUP
		while kill -0 $$ 2>/dev/null; do sleep 1; done
		sleep 1
		mapfile -t pids < <(marked_pids)
		[ ${#pids[@]} -eq 0 ] || kill -KILL "${pids[@]}" 2>/dev/null
		[ -z "$VS_CLEANUP_HOOK" ] || $VS_CLEANUP_HOOK
		rm -rf "$SD"
	) </dev/null >/dev/null 2>&1 &
	watchdog_pid=$!
	disown "$watchdog_pid"
	t_start=$(date +%s.%N)
}

# show_log LABEL FILE: the last lines of a daemon's log.
show_log() {
	echo "     --- $1 ($2) ---"
	if [ -s "$2" ]; then tail -n 40 "$2" | sed 's/^/     | /'; else echo "     | (empty)"; fi
}

# The end of a test: the daemons' logs when something failed, the time,
# the tally (mt_done exits).
slurm_done() {
	if [ "$mt_fail" -ne 0 ]; then
		daemon_logs
	fi
	printf 'total %.1fs\n' "$(echo "$(date +%s.%N) - $t_start" | bc)"
	mt_done
}

daemon_logs() {
	local f
	for f in "$SD"/*.log; do
		[ -e "$f" ] && show_log "$(basename "$f" .log)" "$f"
	done
}

fatal() {
	echo "FAIL $*"
	daemon_logs
	exit 1
}

# free_port [NOT]: a TCP port that no socket uses now (and is not NOT),
# below the kernel's range of ephemeral ports (or above it), so that no
# outgoing connection takes it before the daemon binds it, and outside
# viaduct's listener ports.
free_port() {
	local p i lo hi base span
	read -r lo hi 2>/dev/null </proc/sys/net/ipv4/ip_local_port_range || { lo=32768 hi=60999; }
	if [ "$lo" -ge 12000 ]; then base=10000 span=$((lo - 10000)); else base=$((hi + 1)) span=$((65000 - hi)); fi
	[ "$span" -gt 100 ] || { base=20000 span=40000; }
	for i in $(seq 100); do
		p=$((base + (RANDOM * 32768 + RANDOM) % span))
		[ "$p" = "${1:-}" ] && continue
		# Not where viaduct's ofi listeners bind (VIADUCT_OFI_PORT_BASE).
		[ "$p" -ge 20480 ] && [ "$p" -lt 24576 ] && continue
		if ! ss -Htan "( sport = :$p )" 2>/dev/null | grep -q .; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# munged with its own key, socket, pid, log and seed files.  A socket in
# the file system reaches every network namespace.
vs_start_munged() {
	dd if=/dev/urandom of="$SD/munge.key" bs=1 count=1024 status=none ||
		fatal "cannot write a munge key"
	chmod 0400 "$SD/munge.key"
	mkdir -m 0755 "$SD/munge"
	MUNGE_SOCK=$SD/munge/munge.socket
	env "$MARK" munged --socket="$MUNGE_SOCK" --key-file="$SD/munge.key" \
		--pid-file="$SD/munged.pid" --log-file="$SD/munged.log" \
		--seed-file="$SD/munged.seed" --num-threads=2 >"$SD/munged.out" 2>&1 ||
		{ cat "$SD/munged.out"; fatal "munged did not start"; }
	munged_pid=$(pid_of "$SD/munged.pid")
	[ -n "$munged_pid" ] || fatal "munged wrote no pid file"
	if ! munge -n -S "$MUNGE_SOCK" 2>"$SD/munge.err" |
		unmunge -S "$MUNGE_SOCK" >/dev/null 2>>"$SD/munge.err"; then
		cat "$SD/munge.err"
		fatal "munge cannot encode and decode a credential through $MUNGE_SOCK"
	fi
	mkdir -m 0700 "$SD/state" "$SD/spool"
	: >"$SD/plugstack.conf"
	# Job ids from a random start: viaduct names a job after its
	# kvsname, which Slurm makes "JOBID.STEPID", so two of these
	# clusters running at once (a test in two build trees) must not both
	# run job 1.0.
	first_job=${VD_SLURM_FIRST_JOB_ID:-$((1000 + (RANDOM * 32768 + RANDOM) % 1000000))}
}

# The slurm.conf lines of every test's cluster: munge through our
# socket, state and logs in $SD (slurmd's with %n, the node's name, so
# that several slurmds share the folder), no cgroups, no accounting.
vs_conf_common() {
	cat <<-EOF
	ClusterName=viaduct$$
	FirstJobId=$first_job
	SlurmUser=root
	SlurmdUser=root
	AuthType=auth/munge
	AuthInfo=socket=$MUNGE_SOCK
	CredType=cred/munge
	StateSaveLocation=$SD/state
	SlurmctldPidFile=$SD/slurmctld.pid
	SlurmctldLogFile=$SD/slurmctld.log
	SlurmctldDebug=info
	SlurmdDebug=info
	PlugStackConfig=$SD/plugstack.conf
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	SwitchType=switch/none
	MpiDefault=none
	SelectType=select/cons_tres
	SelectTypeParameters=CR_CPU
	SchedulerType=sched/builtin
	JobAcctGatherType=jobacct_gather/none
	AccountingStorageType=accounting_storage/none
	JobCompType=jobcomp/none
	ReturnToService=2
	KillWait=2
	MessageTimeout=10
	InactiveLimit=0
	MinJobAge=2
	SlurmdTimeout=30
	EOF
}

# vs_start NAME CMD...: CMD (a daemon kept in the foreground) in the
# background, with our mark; its output in $SD/NAME.out.
vs_start() {
	local name=$1
	shift
	: >"$SD/$name.log"
	"$@" >"$SD/$name.out" 2>&1 &
	vs_names+=("$name")
	vs_pids+=($!)
	[ "$name" = slurmctld ] && vs_ctld_pid=$!
	return 0
}

vs_wait_idle() {
	local i j want=$# state
	for i in $(seq 300); do
		for j in "${!vs_pids[@]}"; do
			kill -0 "${vs_pids[j]}" 2>/dev/null && continue
			if grep -qs "Address already in use" "$SD/${vs_names[j]}.out" "$SD/${vs_names[j]}.log"; then
				echo "---- ${vs_names[j]}: its port was taken meanwhile; again with new ports"
				vs_stop_daemons
				return 2
			fi
			cat "$SD/${vs_names[j]}.out"
			fatal "${vs_names[j]} exited"
		done
		state=$(vs_cmd sinfo -h -N -n "$(IFS=,; echo "$*")" -o '%N %T' 2>/dev/null)
		[ "$(grep -c ' idle$' <<<"$state")" = "$want" ] && return 0
		sleep 0.1
	done
	vs_cmd sinfo -N -l 2>&1 | sed 's/^/     | /'
	fatal "the nodes are not all idle 30 s after the daemons started: ${state//$'\n'/, }"
}

# Each srun takes under 5 s even in the TSan build; VD_SLURM_TIMEOUT
# (default 45) is a hang.  The whole test stays within ctest's bound:
# past VS_BUDGET seconds the remaining runs are failed without running.
SRUN_TIMEOUT=${VD_SLURM_TIMEOUT:-45}
VS_BUDGET=${VS_BUDGET:-200}

run_srun() {
	local opts=() t0 t1
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	if [ $(($(date +%s) - ${t_start%.*})) -ge "$VS_BUDGET" ]; then
		echo "(not run: the test is past its ${VS_BUDGET} s budget)" >"$mt_log"
		rc=124 secs=0
		return
	fi
	t0=$(date +%s.%N)
	timeout -k 5 "$SRUN_TIMEOUT" ${VS_IN[@]+"${VS_IN[@]}"} env "$MARK" srun \
		--overcommit --quit-on-interrupt --time=5 ${opts[@]+"${opts[@]}"} "$@" >"$mt_log" 2>&1
	rc=$?
	t1=$(date +%s.%N)
	secs=$(printf '%.2f' "$(echo "$t1 - $t0" | bc)")
}

show_out() {
	sed -n '1,40p' "$mt_log" | sed 's/^/     | /'
	[ "$rc" = 124 ] && echo "     (timed out after ${SRUN_TIMEOUT}s)"
}

# The processes of jobs (ranks, slurmstepd): ours but not the daemons
# (nor slurmctld's helper slurmscriptd).
job_pids() {
	local p
	for p in $(marked_pids); do
		case " $munged_pid ${vs_pids[*]} " in *" $p "*) continue ;; esac
		[ -n "$vs_ctld_pid" ] &&
			[ "$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')" = "$vs_ctld_pid" ] && continue
		echo "$p"
	done
}

# No job in the queue and no job process left, within 10 s.
no_leftovers() {
	local i
	for i in $(seq 50); do
		[ -z "$(vs_cmd squeue -h -o %i 2>/dev/null)" ] && [ -z "$(job_pids)" ] &&
			return 0
		sleep 0.2
	done
	return 1
}

show_leftovers() {
	vs_cmd squeue 2>&1 | sed 's/^/     | /'
	ps -o pid,ppid,stat,etime,args -p "$(job_pids | tr '\n' ',' | sed 's/,$//')" 2>/dev/null |
		sed 's/^/     | /'
}
