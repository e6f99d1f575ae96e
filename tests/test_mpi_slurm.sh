#!/bin/bash
# SPDX-License-Identifier: MIT
#
# MPI programs under a real single-node Slurm: srun --mpi=pmi2 serves the
# PMI-1 wire protocol on PMI_FD that src/mpi/pmi.c speaks.  As root, the
# test starts its own munged, slurmctld and slurmd, all in a private
# temporary directory with ports of their own (the system's /etc/slurm and
# /etc/munge are never read or touched), waits for the node to be idle and
# checks:
#   - srun --mpi=pmi2 -n 4: mpitest_p2p, mpitest_coll and mpitest_comm pass;
#   - srun --mpi=pmi2 -n 2 mpitest_jobctl kill: a rank killed ends the job
#     non-zero within a bounded time and leaves no process behind;
#     mpitest_jobctl abort on 3 tasks: MPI_Abort (PMI's cmd=abort) ends it;
#   - srun --mpi=none -n 2: MPI_Init refuses, naming srun and --mpi=pmi2
#     (never two copies of rank 0 of 1);
#   - srun -n 1 (no PMI) and srun --mpi=pmi2 -n 1: rank 0 of 1;
#   - if this Slurm has the pmix plugin: srun --mpi=pmix -n 2 runs as one
#     job of 2 ranks (then mpitest_coll and mpitest_p2p on 4 tasks pass
#     too), or, without viaduct's PMIx client, is refused in MPI_Init with
#     a message naming PMIx -- never as 2 singletons.
# Every daemon, job step and rank is stopped on every exit path (trap; a
# watchdog if this shell is killed outright), and the temporary directory
# removed.  VD_SLURM_KEEP=1 keeps the directory (its logs) for a
# post-mortem; VD_SLURM_TIMEOUT (default 45) bounds each srun, in seconds;
# VD_SLURM_FIRST_JOB_ID sets the first job id (default: random).
#
# Usage: test_mpi_slurm.sh BUILD_DIR        (exit 0 pass, 1 fail, 77 skip)
# Skips only when not root or when Slurm/munge are not installed (Debian:
# slurm-wlm and munge, which tools/deps.sh installs).
# shellcheck source=tests/mpi/runlib.sh
. "$(dirname "$0")/mpi/runlib.sh"
mt_need p2p coll comm jobctl
HELLO=$B/examples/mpi_hello
[ -x "$HELLO" ] || { echo "SKIP: $HELLO not built"; exit 77; }
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (starts its own slurmctld, slurmd and munged)"
	exit 77
fi
for cmd in munged slurmctld slurmd srun sinfo squeue scancel; do
	if ! command -v "$cmd" >/dev/null; then
		echo "SKIP: $cmd not installed (Debian packages slurm-wlm and munge; make deps)"
		exit 77
	fi
done

# Ranks under srun --mpi=pmix use libpmix, which is not built with the
# sanitizers: its own doings are suppressed (srun passes the environment).
supp=$(cd "$(dirname "$0")" && pwd)/mpi
[ -z "${ASAN_OPTIONS:-}" ] || [ ! -f "$supp/lsan-pmix.supp" ] ||
	export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$supp/lsan-pmix.supp"
[ -z "${TSAN_OPTIONS:-}" ] || [ ! -f "$supp/tsan-pmix.supp" ] ||
	export TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$supp/tsan-pmix.supp"

# ---- the private Slurm ---------------------------------------------------

SD=$(mktemp -d /tmp/viaduct-slurm.XXXXXX) || { echo "FAIL: mktemp"; exit 1; }
# munged wants its socket's folders searchable by all (not writable).
chmod 0711 "$SD"
# Every daemon and srun this test starts carries VD_SLURM_MARK=$SD in its
# environment (and srun passes it to the ranks); slurmstepd, which gets an
# empty environment, holds slurmd's log open.  The cleanup finds them all
# by these two signs.
MARK=VD_SLURM_MARK=$SD
# Nothing of a Slurm job or launcher around this test (CI inside a job)
# reaches our srun or its ranks.
for v in $(compgen -e | grep -E '^(SLURM_|SRUN_|SALLOC_|SBATCH_|PMI_|PMIX_|MUNGE_)'); do
	unset "$v"
done
export SLURM_CONF=$SD/slurm.conf

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

cleanup() {
	local pids=() i
	trap - EXIT INT TERM HUP
	if [ -n "${ctld_pid:-}" ] && kill -0 "$ctld_pid" 2>/dev/null; then
		timeout 5 scancel --quiet --user=root --full 2>/dev/null
		timeout 5 scancel --quiet --user=root 2>/dev/null
	fi
	stop_pid "${slurmd_pid:-}"
	stop_pid "${ctld_pid:-}"
	stop_pid "${munged_pid:-}"
	# Job steps (slurmstepd), ranks, anything left.
	for i in 1 2 3; do
		mapfile -t pids < <(marked_pids)
		[ ${#pids[@]} -eq 0 ] && break
		[ "$i" = 1 ] && echo "cleanup: processes left: ${pids[*]}" >&2
		kill -KILL "${pids[@]}" 2>/dev/null
		sleep 0.2
	done
	rm -f "$mt_log"
	[ -z "${watchdog_pid:-}" ] || kill -KILL "$watchdog_pid" 2>/dev/null
	if [ "${VD_SLURM_KEEP:-0}" = 1 ]; then
		echo "kept $SD"
	else
		rm -rf "$SD"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
# If this shell is killed outright (SIGKILL: no trap runs), a watchdog
# stops what it started and removes $SD within 2 s.
(
	trap '' INT TERM HUP
	while kill -0 $$ 2>/dev/null; do sleep 1; done
	sleep 1
	mapfile -t pids < <(marked_pids)
	[ ${#pids[@]} -eq 0 ] || kill -KILL "${pids[@]}" 2>/dev/null
	rm -rf "$SD"
) </dev/null >/dev/null 2>&1 &
watchdog_pid=$!
disown "$watchdog_pid"

# show_log LABEL FILE: the last lines of a daemon's log.
show_log() {
	echo "     --- $1 ($2) ---"
	if [ -s "$2" ]; then tail -n 40 "$2" | sed 's/^/     | /'; else echo "     | (empty)"; fi
}

daemon_logs() {
	show_log munged "$SD/munged.log"
	show_log slurmctld "$SD/slurmctld.log"
	show_log slurmd "$SD/slurmd.log"
}

fatal() {
	echo "FAIL $*"
	daemon_logs
	exit 1
}

# free_port [NOT]: a TCP port that no socket uses now (and is not NOT),
# below the kernel's range of ephemeral ports (or above it), so that no
# outgoing connection takes it before the daemon binds it.
free_port() {
	local p i lo hi base span
	read -r lo hi 2>/dev/null </proc/sys/net/ipv4/ip_local_port_range || { lo=32768 hi=60999; }
	if [ "$lo" -ge 12000 ]; then base=10000 span=$((lo - 10000)); else base=$((hi + 1)) span=$((65000 - hi)); fi
	[ "$span" -gt 100 ] || { base=20000 span=40000; }
	for i in $(seq 100); do
		p=$((base + (RANDOM * 32768 + RANDOM) % span))
		[ "$p" = "${1:-}" ] && continue
		if ! ss -Htan "( sport = :$p )" 2>/dev/null | grep -q .; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

t_start=$(date +%s.%N)

# munge: its own key, socket, pid, log and seed files.
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
if ! munge -n -S "$MUNGE_SOCK" 2>"$SD/munge.err" | unmunge -S "$MUNGE_SOCK" >/dev/null 2>>"$SD/munge.err"; then
	cat "$SD/munge.err"
	fatal "munge cannot encode and decode a credential through $MUNGE_SOCK"
fi

host=$(hostname -s)
ncpu=$(nproc)
mkdir -m 0700 "$SD/state" "$SD/spool"
# Job ids from a random start: viaduct names a job after its kvsname,
# which Slurm makes "JOBID.STEPID", so two of these clusters running at
# once (this test in two build trees) must not both run job 1.0.
first_job=${VD_SLURM_FIRST_JOB_ID:-$((1000 + (RANDOM * 32768 + RANDOM) % 1000000))}
: >"$SD/plugstack.conf"

# write_conf: slurm.conf with two fresh ports.
write_conf() {
	if ! ctld_port=$(free_port) || ! slurmd_port=$(free_port "$ctld_port"); then
		fatal "no free TCP ports"
	fi
	cat >"$SLURM_CONF" <<-EOF
	# written by tests/test_mpi_slurm.sh: a one-node cluster for one test
	ClusterName=viaduct$$
	FirstJobId=$first_job
	SlurmctldHost=$host(127.0.0.1)
	SlurmctldPort=$ctld_port
	SlurmdPort=$slurmd_port
	SlurmUser=root
	SlurmdUser=root
	AuthType=auth/munge
	AuthInfo=socket=$MUNGE_SOCK
	CredType=cred/munge
	StateSaveLocation=$SD/state
	SlurmdSpoolDir=$SD/spool
	SlurmctldPidFile=$SD/slurmctld.pid
	SlurmdPidFile=$SD/slurmd.pid
	SlurmctldLogFile=$SD/slurmctld.log
	SlurmdLogFile=$SD/slurmd.log
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
	NodeName=$host NodeAddr=127.0.0.1 CPUs=$ncpu State=UNKNOWN
	PartitionName=vd Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=NO
	EOF
}

# start_slurm: 0 when the node is idle; 2 when a daemon could not bind its
# port (taken since free_port looked); fails the test otherwise.
start_slurm() {
	local i d pid
	: >"$SD/slurmctld.log"
	: >"$SD/slurmd.log"
	env "$MARK" slurmctld -D -i -f "$SLURM_CONF" >"$SD/slurmctld.out" 2>&1 &
	ctld_pid=$!
	env "$MARK" slurmd -D -f "$SLURM_CONF" >"$SD/slurmd.out" 2>&1 &
	slurmd_pid=$!
	# Up to 30 s for the node to register and be idle.
	state=
	for i in $(seq 300); do
		for d in slurmctld slurmd; do
			[ "$d" = slurmctld ] && pid=$ctld_pid || pid=$slurmd_pid
			kill -0 "$pid" 2>/dev/null && continue
			if grep -qs "Address already in use" "$SD/$d.out" "$SD/$d.log"; then
				echo "---- $d: its port was taken meanwhile; again with new ports"
				stop_pid "$ctld_pid"
				stop_pid "$slurmd_pid"
				return 2
			fi
			cat "$SD/$d.out"
			fatal "$d exited"
		done
		state=$(timeout 5 sinfo -h -N -n "$host" -o '%T' 2>/dev/null)
		[ "$state" = idle ] && return 0
		sleep 0.1
	done
	timeout 5 sinfo -N -l 2>&1 | sed 's/^/     | /'
	fatal "the node is '$state', not idle, 30 s after the daemons started"
}

for attempt in 1 2 3; do
	write_conf
	start_slurm && break
	[ "$attempt" = 3 ] && fatal "no ports to be had in 3 attempts"
done
t_up=$(date +%s.%N)
printf 'ok   slurm up: node %s, %s CPUs, ports %s/%s, %.1fs\n' "$host" "$ncpu" \
	"$ctld_port" "$slurmd_port" "$(echo "$t_up - $t_start" | bc)"
mt_pass=$((mt_pass + 1))

# ---- the checks ------------------------------------------------------------

# Each srun takes under 5 s even in the TSan build (ranks of 4 tasks on
# 2 CPUs: --overcommit); 45 s is a hang.  The whole test stays within
# ctest's 300 s: past BUDGET seconds the remaining runs are failed
# without running them.
SRUN_TIMEOUT=${VD_SLURM_TIMEOUT:-45}
BUDGET=200

# run_srun [SRUN OPTIONS...] -- PROG ARGS...: srun under timeout, output in
# $mt_log; sets rc and secs.
run_srun() {
	local opts=() t0 t1
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	if [ $(($(date +%s) - ${t_start%.*})) -ge "$BUDGET" ]; then
		echo "(not run: the test is past its ${BUDGET} s budget)" >"$mt_log"
		rc=124 secs=0
		return
	fi
	t0=$(date +%s.%N)
	timeout -k 5 "$SRUN_TIMEOUT" env "$MARK" srun --overcommit --quit-on-interrupt \
		--time=5 "${opts[@]}" "$@" >"$mt_log" 2>&1
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
		case " $munged_pid $ctld_pid $slurmd_pid " in *" $p "*) continue ;; esac
		[ "$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')" = "$ctld_pid" ] && continue
		echo "$p"
	done
}

# No job in the queue and no job process left, within 10 s.
no_leftovers() {
	local i
	for i in $(seq 50); do
		[ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && [ -z "$(job_pids)" ] &&
			return 0
		sleep 0.2
	done
	return 1
}

for prog in p2p coll comm; do
	run_srun --mpi=pmi2 -n 4 -- "$(mt_prog "$prog")"
	if [ "$rc" = 0 ] && grep -q ": 4 ranks: ok" "$mt_log"; then
		mt_ok "srun --mpi=pmi2 -n 4 mpitest_$prog (${secs}s)"
	else
		mt_bad "srun --mpi=pmi2 -n 4 mpitest_$prog: exit $rc after ${secs}s"
		show_out
	fi
done

# The last rank kills itself once both are past a barrier; the other
# learns it from VIPL and aborts, or Slurm ends the step.
run_srun --mpi=pmi2 -n 2 -- "$(mt_prog jobctl)" kill
# (srun exits 128+9 when a task was killed; a timeout takes 45 s.)
if [ "$rc" != 0 ] && grep -q FAILTIME "$mt_log" && [ "${secs%.*}" -lt 30 ]; then
	if no_leftovers; then
		how="srun ended the step"
		grep -q "lost the connection to rank 1" "$mt_log" && how="rank 0 saw it through VIPL"
		mt_ok "srun --mpi=pmi2 -n 2, a rank killed: the job ends (exit $rc, ${secs}s, $how), no process left"
	else
		mt_bad "srun --mpi=pmi2 -n 2, a rank killed: job or processes left 10 s after the job ended:"
		timeout 5 squeue 2>&1 | sed 's/^/     | /'
		ps -o pid,ppid,stat,etime,args -p "$(job_pids | tr '\n' ',' | sed 's/,$//')" 2>/dev/null | sed 's/^/     | /'
	fi
else
	mt_bad "srun --mpi=pmi2 -n 2, a rank killed: exit $rc after ${secs}s"
	show_out
fi

# MPI_Abort goes to Slurm as PMI's cmd=abort; Slurm cancels the step.
run_srun --mpi=pmi2 -n 3 -- "$(mt_prog jobctl)" abort
if [ "$rc" != 0 ] && grep -q "MPI_Abort(5)" "$mt_log" && [ "${secs%.*}" -lt 30 ]; then
	mt_ok "srun --mpi=pmi2 -n 3, MPI_Abort(5) in a rank: the job ends (exit $rc, ${secs}s)"
else
	mt_bad "srun --mpi=pmi2 -n 3, MPI_Abort(5) in a rank: exit $rc after ${secs}s"
	show_out
fi

# srun without PMI and 2 tasks: each would be rank 0 of 1; MPI_Init must
# say so, naming srun and the option to use.
run_srun --mpi=none -n 2 -- "$(mt_prog p2p)"
if [ "$rc" != 0 ] && [ "$rc" != 124 ] &&
	grep -q "srun with 2 tasks and no PMI" "$mt_log" &&
	grep -q "srun --mpi=pmi2" "$mt_log" && ! grep -q ": 1 ranks: ok" "$mt_log"; then
	mt_ok "srun --mpi=none -n 2 refused in MPI_Init (exit $rc, ${secs}s): $(grep -m1 -o 'started by srun[^,;]*' "$mt_log")"
else
	mt_bad "srun --mpi=none -n 2 mpitest_p2p: exit $rc after ${secs}s, without viaduct's message about srun"
	show_out
fi

# One task: a singleton without PMI, and rank 0 of 1 through pmi2.
for mpi in none pmi2; do
	run_srun --mpi=$mpi -n 1 -- "$HELLO"
	if [ "$rc" = 0 ] && grep -q "hello from rank 0 of 1" "$mt_log"; then
		mt_ok "srun --mpi=$mpi -n 1 mpi_hello: rank 0 of 1 (${secs}s)"
	else
		mt_bad "srun --mpi=$mpi -n 1 mpi_hello: exit $rc after ${secs}s"
		show_out
	fi
done

# PMIx: the tasks run as one job of 2 ranks (viaduct's PMIx client), or
# stop in MPI_Init naming PMIx (a build without the client, or without
# libpmix.so.2 here) -- never as 2 singletons.
if timeout 10 srun --mpi=list 2>&1 | grep -qw pmix; then
	run_srun --mpi=pmix -n 2 -- "$HELLO"
	if [ "$rc" = 0 ] && grep -q "hello from rank 0 of 2" "$mt_log" &&
		grep -q "hello from rank 1 of 2" "$mt_log"; then
		mt_ok "srun --mpi=pmix -n 2 mpi_hello: one job of 2 ranks (${secs}s)"
		for prog in coll p2p; do
			run_srun --mpi=pmix -n 4 -- "$(mt_prog "$prog")"
			if [ "$rc" = 0 ] && grep -q ": 4 ranks: ok" "$mt_log"; then
				mt_ok "srun --mpi=pmix -n 4 mpitest_$prog (${secs}s)"
			else
				mt_bad "srun --mpi=pmix -n 4 mpitest_$prog: exit $rc after ${secs}s"
				show_out
			fi
		done
	elif [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "^viaduct PMI.*PMIx" "$mt_log" &&
		! grep -q "hello from rank" "$mt_log"; then
		# A build without the PMIx client, or no libpmix.so.2 here.
		mt_ok "srun --mpi=pmix -n 2 refused in MPI_Init (exit $rc, ${secs}s): $(grep -m1 '^viaduct PMI' "$mt_log" | cut -c1-100)"
	elif [ "$rc" != 0 ] && grep -qi "mpi/pmix" "$mt_log" && ! grep -q "hello from rank" "$mt_log"; then
		# Slurm's own plugin could not start (e.g. libpmix missing):
		# the program never ran, which is no fault of viaduct's.
		mt_ok "srun --mpi=pmix -n 2: Slurm's pmix plugin fails before the program runs: $(grep -m1 -i 'pmix' "$mt_log")"
	else
		mt_bad "srun --mpi=pmix -n 2 mpi_hello: exit $rc after ${secs}s: neither one job of 2 ranks nor refused naming PMIx"
		show_out
	fi
else
	echo "---- srun --mpi=list shows no pmix: srun --mpi=pmix is not checked"
fi

if [ "$mt_fail" -ne 0 ]; then
	daemon_logs
fi
printf 'total %.1fs\n' "$(echo "$(date +%s.%N) - $t_start" | bc)"
mt_done
