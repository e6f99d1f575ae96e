#!/bin/bash
# SPDX-License-Identifier: MIT
#
# MPI programs under a real Slurm of two nodes, each a host of its own (a
# network namespace joined to the other by veth, tests/netns.sh).  As
# root, the test starts one munged with its own key (its socket, a file,
# reaches both namespaces), slurmctld and `slurmd -N node1` in host A,
# `slurmd -N node2` in host B (each node its own NodeAddr, spool folder,
# pid file and log: %n in slurm.conf), all in a temporary folder, waits
# for both nodes to be idle and checks:
#   - srun --mpi=pmi2 -N 2 with 2, 4 (2+2) and 3 (2+1) tasks:
#     mpitest_p2p, mpitest_coll and mpitest_comm pass, and with
#     VIADUCT_DEBUG=1 each rank reaches the ranks of its own node through
#     shm and those of the other node through ofi; 4 tasks dealt round
#     robin (--distribution=cyclic: nodes of non-consecutive ranks);
#     2 tasks with the ofi provider libfabric picks itself;
#   - a rank killed on node2 ends the job non-zero within 10 s, and no
#     process of the job is left on either host; MPI_Abort on node2 too;
#   - if this Slurm has the pmix plugin: srun --mpi=pmix -N 2 -n 4
#     mpitest_coll and mpitest_p2p, shm and ofi as above.
# Every daemon, job step and rank is stopped and the namespaces and the
# folder removed on every exit path (trap; a watchdog if this shell is
# killed outright).  VD_SLURM_KEEP=1 keeps the folder (its logs);
# VD_SLURM_TIMEOUT (default 45) bounds each srun, in seconds.
#
# Usage: test_mpi_slurm_hosts.sh BUILD_DIR   (exit 0 pass, 1 fail, 77 skip)
# Skips only when not root, when Slurm/munge are not installed (Debian:
# slurm-wlm and munge, which tools/deps.sh installs), when the ofi
# provider cannot open or when network namespaces are refused.
# shellcheck source=tests/mpi/runlib.sh
. "$(dirname "$0")/mpi/runlib.sh"
mt_need p2p coll comm jobctl
# shellcheck source=tests/slurmlib.sh
. "$(dirname "$0")/slurmlib.sh"
vs_need
mt_need_ofi
# shellcheck source=tests/netns.sh
. "$(dirname "$0")/netns.sh"
vd_netns_up
command -v nsenter >/dev/null || { echo "SKIP: no nsenter (util-linux)"; exit 77; }
# The daemons enter a host's network namespace alone (nsenter): ip netns
# exec would mount a /sys of its own, without the cgroup file system that
# slurmd looks for.
# srun, sinfo, squeue and scancel run on host A, where slurmctld is.
VS_IN=(nsenter --net="/run/netns/$VD_NS_A")
VS_CLEANUP_HOOK=vd_netns_cleanup
vs_init
vs_start_munged

# Ranks use libfabric (ofi) and, under --mpi=pmix, libpmix, neither built
# with the sanitizers: one suppression file of both, since a sanitizer
# reads one.
src=$(cd "$(dirname "$0")" && pwd)
if [ -n "${ASAN_OPTIONS:-}" ]; then
	cat "$src/ofi/lsan.supp" "$src/mpi/lsan-pmix.supp" >"$SD/lsan.supp" 2>/dev/null
	export LSAN_OPTIONS=suppressions=$SD/lsan.supp
fi
if [ -n "${TSAN_OPTIONS:-}" ]; then
	cat "$src/ofi/tsan.supp" "$src/mpi/tsan-pmix.supp" >"$SD/tsan.supp" 2>/dev/null
	# shellcheck disable=SC2001
	TSAN_OPTIONS=$(sed 's/:*suppressions=[^:]*//g' <<<"$TSAN_OPTIONS")
	export TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$SD/tsan.supp"
fi
# The fabric between the hosts: libfabric's tcp over the veth pair.
export VIADUCT_OFI_PROVIDER=tcp

# ---- the private Slurm: two nodes ------------------------------------------

host=$(hostname -s)
ncpu=$(nproc)
# The namespaces are ours alone: no other socket can hold these ports.
# slurmctld needs SlurmctldHost to name this machine (both namespaces
# share its host name); the nodes are told apart by -N and NodeAddr.
# Slurm's pmix plugin names its folder under TmpFS after the job step
# alone, and the two nodes share this machine's /tmp: TmpFS per node.
mkdir -m 0700 "$SD/spool/node1" "$SD/spool/node2"
mkdir -m 0755 "$SD/tmp" "$SD/tmp/node1" "$SD/tmp/node2"
{
	echo "# written by tests/test_mpi_slurm_hosts.sh: two nodes, one per network namespace"
	vs_conf_common
	cat <<-EOF
	SlurmctldHost=$host($VD_IP_A)
	SlurmctldPort=6817
	SlurmdPort=6818
	SlurmdSpoolDir=$SD/spool/%n
	SlurmdPidFile=$SD/slurmd-%n.pid
	SlurmdLogFile=$SD/slurmd-%n.log
	TmpFS=$SD/tmp/%n
	NodeName=node1 NodeAddr=$VD_IP_A CPUs=$ncpu State=UNKNOWN
	NodeName=node2 NodeAddr=$VD_IP_B CPUs=$ncpu State=UNKNOWN
	PartitionName=vd Nodes=node1,node2 Default=YES MaxTime=10 State=UP OverSubscribe=NO
	EOF
} >"$SLURM_CONF"

vs_start slurmctld "${VS_IN[@]}" env "$MARK" slurmctld -D -i -f "$SLURM_CONF"
vs_start slurmd-node1 "${VS_IN[@]}" env "$MARK" slurmd -D -N node1 -f "$SLURM_CONF"
vs_start slurmd-node2 nsenter --net="/run/netns/$VD_NS_B" env "$MARK" slurmd -D -N node2 -f "$SLURM_CONF"
vs_wait_idle node1 node2 || fatal "a daemon could not bind its port in our own namespace"
printf 'ok   slurm up: node1 %s, node2 %s, %s CPUs each, %.1fs\n' "$VD_IP_A" "$VD_IP_B" \
	"$ncpu" "$(echo "$(date +%s.%N) - $t_start" | bc)"
mt_pass=$((mt_pass + 1))

# ---- the checks ------------------------------------------------------------

# peers_line RANK N: what VIADUCT_DEBUG=1 prints for RANK of N tasks over
# 2 nodes, placed by Slurm's default block distribution (the first
# ceil(N/2) on node1).
peers_line() {
	local r=$1 n=$2 first=$((($2 + 1) / 2)) p shm='' ofi=''
	for ((p = 0; p < n; p++)); do
		[ "$p" = "$r" ] && continue
		if [ $((p < first)) = $((r < first)) ]; then shm+=" $p"; else ofi+=" $p"; fi
	done
	echo "rank $r: peers through shm:${shm:- none}; through ofi:${ofi:- none}\$"
}

# transports_ok N: the first and last rank said they reach their node's
# ranks through shm and the other node's through ofi.
transports_ok() {
	grep -q "$(peers_line 0 "$1")" "$mt_log" &&
		grep -q "$(peers_line $(($1 - 1)) "$1")" "$mt_log"
}

# mpi_runs MPI N PROG...: srun --mpi=MPI -N 2 -n N, each program passes
# and takes shm inside a node, ofi across.
mpi_runs() {
	local mpi=$1 n=$2 prog
	shift 2
	for prog in "$@"; do
		VIADUCT_DEBUG=1 run_srun --mpi="$mpi" -N 2 -n "$n" -- "$(mt_prog "$prog")"
		if [ "$rc" = 0 ] && grep -q ": $n ranks: ok" "$mt_log" && transports_ok "$n"; then
			mt_ok "srun --mpi=$mpi -N 2 -n $n mpitest_$prog: shm inside a node, ofi across (${secs}s)"
		else
			mt_bad "srun --mpi=$mpi -N 2 -n $n mpitest_$prog: exit $rc after ${secs}s" \
				"(want \"$(peers_line 0 "$n")\")"
			grep -v "^viaduct MPI: rank [0-9]*: a blocking wait" "$mt_log" >"$mt_log.out"
			mv "$mt_log.out" "$mt_log"
			show_out
		fi
	done
}

for n in 2 4 3; do
	mpi_runs pmi2 "$n" p2p coll comm
done

# Tasks dealt round robin (ranks 0 and 2 on node1, 1 and 3 on node2):
# the node map and the node-aware collectives with nodes whose ranks are
# not consecutive.
VIADUCT_DEBUG=1 run_srun --mpi=pmi2 -N 2 -n 4 --distribution=cyclic -- "$(mt_prog coll)"
if [ "$rc" = 0 ] && grep -q ": 4 ranks: ok" "$mt_log" &&
	grep -q "rank 0: peers through shm: 2; through ofi: 1 3$" "$mt_log" &&
	grep -q "rank 3: peers through shm: 1; through ofi: 0 2$" "$mt_log" &&
	grep -q "rank 1: a communicator of 4 ranks: node-aware collectives over 2 nodes, 2 ranks on this one, its leader$" "$mt_log"; then
	mt_ok "srun --mpi=pmi2 -N 2 -n 4 --distribution=cyclic mpitest_coll: node 1 has ranks 0 2, node 2 ranks 1 3 (${secs}s)"
else
	mt_bad "srun --mpi=pmi2 -N 2 -n 4 --distribution=cyclic mpitest_coll: exit $rc after ${secs}s"
	show_out
fi

# The ofi provider libfabric picks itself when the site names none.
unset VIADUCT_OFI_PROVIDER
VIADUCT_DEBUG=1 run_srun --mpi=pmi2 -N 2 -n 2 -- "$(mt_prog p2p)"
export VIADUCT_OFI_PROVIDER=tcp
if [ "$rc" = 0 ] && grep -q ": 2 ranks: ok" "$mt_log" && transports_ok 2; then
	mt_ok "srun --mpi=pmi2 -N 2 -n 2 mpitest_p2p, VIADUCT_OFI_PROVIDER unset: libfabric picked $(sed -n 's/.* ofi: \([^ ]*\) on .*/\1/p' "$mt_log" | head -n 1) (${secs}s)"
else
	mt_bad "srun --mpi=pmi2 -N 2 -n 2 mpitest_p2p, VIADUCT_OFI_PROVIDER unset: exit $rc after ${secs}s"
	show_out
fi

# Processes in either host's namespace other than its daemons.
ns_strays() {
	local ns p
	for ns in "$VD_NS_A" "$VD_NS_B"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			case " ${vs_pids[*]} " in *" $p "*) continue ;; esac
			[ "$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')" = "$vs_ctld_pid" ] && continue
			echo "$ns:$p"
		done
	done
}

# The last rank, on node2, kills itself once all are past a barrier;
# the others (with 4 tasks, one on node2 through shm, two on node1
# through the fabric) learn it through VIPL, or Slurm ends the step.
for n in 2 4; do
	what="srun --mpi=pmi2 -N 2 -n $n, a rank killed on node2"
	run_srun --mpi=pmi2 -N 2 -n "$n" -- "$(mt_prog jobctl)" kill
	if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q FAILTIME "$mt_log" && [ "${secs%.*}" -lt 10 ]; then
		if no_leftovers && [ -z "$(ns_strays)" ]; then
			how="srun ended the step"
			grep -q "lost the connection to rank $((n - 1))" "$mt_log" && how="a rank saw it through VIPL"
			mt_ok "$what: the job ends (exit $rc, ${secs}s, $how), no process left on either host"
		else
			mt_bad "$what: job or processes left 10 s after the job ended: $(ns_strays)"
			show_leftovers
		fi
	else
		mt_bad "$what: exit $rc after ${secs}s"
		show_out
	fi
done

# MPI_Abort in the last rank (node2) reaches srun on node1 as PMI's abort.
run_srun --mpi=pmi2 -N 2 -n 3 -- "$(mt_prog jobctl)" abort
if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "MPI_Abort(5)" "$mt_log" &&
	[ "${secs%.*}" -lt 10 ] && no_leftovers && [ -z "$(ns_strays)" ]; then
	mt_ok "srun --mpi=pmi2 -N 2 -n 3, MPI_Abort(5) on node2: the job ends (exit $rc, ${secs}s), no process left"
else
	mt_bad "srun --mpi=pmi2 -N 2 -n 3, MPI_Abort(5) on node2: exit $rc after ${secs}s $(ns_strays)"
	show_out
fi

if vs_cmd srun --mpi=list 2>&1 | grep -qw pmix; then
	mpi_runs pmix 4 coll p2p
elif [ "${VDTEST_STRICT:-0}" = 1 ]; then
	mt_bad "srun --mpi=list shows no pmix, and VDTEST_STRICT=1 wants srun --mpi=pmix checked"
else
	echo "---- srun --mpi=list shows no pmix: srun --mpi=pmix is not checked"
fi

slurm_done
