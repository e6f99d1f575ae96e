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
# shellcheck source=tests/slurmlib.sh
. "$(dirname "$0")/slurmlib.sh"
vs_need

# Ranks under srun --mpi=pmix use libpmix, which is not built with the
# sanitizers: its own doings are suppressed (srun passes the environment).
supp=$(cd "$(dirname "$0")" && pwd)/mpi
[ -z "${ASAN_OPTIONS:-}" ] || [ ! -f "$supp/lsan-pmix.supp" ] ||
	export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$supp/lsan-pmix.supp"
[ -z "${TSAN_OPTIONS:-}" ] || [ ! -f "$supp/tsan-pmix.supp" ] ||
	export TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$supp/tsan-pmix.supp"

# ---- the private Slurm ---------------------------------------------------

vs_init
vs_start_munged
host=$(hostname -s)
ncpu=$(nproc)
# write_conf: slurm.conf with two fresh ports.
write_conf() {
	if ! ctld_port=$(free_port) || ! slurmd_port=$(free_port "$ctld_port"); then
		fatal "no free TCP ports"
	fi
	{
		echo "# written by tests/test_mpi_slurm.sh: a one-node cluster for one test"
		vs_conf_common
		cat <<-EOF
		SlurmctldHost=$host(127.0.0.1)
		SlurmctldPort=$ctld_port
		SlurmdPort=$slurmd_port
		SlurmdSpoolDir=$SD/spool
		SlurmdPidFile=$SD/slurmd.pid
		SlurmdLogFile=$SD/slurmd.log
		NodeName=$host NodeAddr=127.0.0.1 CPUs=$ncpu State=UNKNOWN
		PartitionName=vd Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=NO
		EOF
	} >"$SLURM_CONF"
}

# start_slurm: 0 when the node is idle; 2 when a daemon could not bind its
# port (taken since free_port looked); fails the test otherwise.
start_slurm() {
	vs_start slurmctld env "$MARK" slurmctld -D -i -f "$SLURM_CONF"
	vs_start slurmd env "$MARK" slurmd -D -f "$SLURM_CONF"
	vs_wait_idle "$host"
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
		show_leftovers
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
elif [ "${VDTEST_STRICT:-0}" = 1 ]; then
	mt_bad "srun --mpi=list shows no pmix, and VDTEST_STRICT=1 wants srun --mpi=pmix checked"
else
	echo "---- srun --mpi=list shows no pmix: srun --mpi=pmix is not checked"
fi

slurm_done
