#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/mpi/scale.sh -- MPI start-up at scale over namespace hosts
# (docs/bench-mpi.md, "Scale over four hosts").
#
# Usage: bench/mpi/scale.sh BUILD_DIR [--ranks "16 64 256"] [--reps N]
#                           [--impl LIST] [--hosts H] [--quick]
#   --ranks LIST  rank counts, each a multiple of H (default "16 64 256")
#   --reps N      runs per rank count, program and library (default 3)
#   --impl LIST   comma-separated subset of viaduct,viaduct-hydra,openmpi,mpich
#                 (viaduct: vdrun -H; viaduct-hydra: viaduct's ranks
#                 started by mpiexec.hydra)
#   --hosts H     namespace hosts (default 4)
#   --quick       --ranks "16 64" --reps 1 unless given
# Environment: MPI_SCALE_TIMEOUT (seconds per run, default 300),
# MPI_SCALE_OFI_PROVIDER (viaduct's VIADUCT_OFI_PROVIDER; default empty:
# viaduct's own choice, net where libfabric offers tcp;ofi_rxm first),
# PYTHON.
#
# bench/mpi/startup.c ("init": MPI_Init + MPI_Finalize; "ring": one ring
# exchange between them), built with vdcc, mpicc.openmpi and mpicc.mpich,
# runs with N ranks spread evenly over H hosts (N/H each), oversubscribed
# and not bound: every host is a network + UTS + IPC namespace of this
# machine (bench/mpi/nslib.sh), joined by a bridge, and every launcher
# runs in the first host and reaches the others through an ssh-like
# agent that enters their namespaces:
#   viaduct        vdrun -H h1:N/H,... --launch-agent AGENT --oversubscribe
#   viaduct-hydra  mpiexec.hydra -hosts h1:N/H,... -launcher ssh
#                  -launcher-exec AGENT
#   Open MPI       mpirun.openmpi --host h1:N/H,... --oversubscribe
#                  --mca plm_rsh_agent AGENT, ob1, btl self,vader,tcp,
#                  --bind-to none
#   MPICH          mpiexec.hydra as viaduct-hydra (ch4:ucx)
# viaduct runs with VIADUCT_DEBUG=1, whose lines give every rank's PMI
# requests (put, get, fence) and connections.
# The libraries alternate within each repetition.  Every run is bounded
# (MPI_SCALE_TIMEOUT, then killed with whatever it left in the hosts); a
# timeout or failure is recorded with the last line of its log.  A run
# whose ranks would need more than 80 % of the memory available (the
# largest rank RSS the library had at a smaller size, times N) is not
# started but recorded as skipped: the machine is shared.
#
# Prints two Markdown tables (bench/mpi/scale_table.py): per rank count,
# program and library, the job wall time, median rank MPI_Init and
# MPI_Finalize, slowest rank Init..Finalize, median and largest peak RSS
# (medians over the runs; viaduct/better-peer ratios), and viaduct's PMI
# and connection counts.  Raw lines in BUILD_DIR/bench-results/
# mpi-scale.raw, logs under BUILD_DIR/bench-results/mpi-scale/.
#
# Exit status: 0 when every run succeeded; 1 if one failed or timed out;
# 2 on a usage error; 77 when not root or namespaces are refused.

set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RANKS=
REPS=
IMPLS=viaduct,viaduct-hydra,openmpi,mpich
NHOSTS=4
QUICK=0
PYTHON=${PYTHON:-/usr/bin/python3}
TMO=${MPI_SCALE_TIMEOUT:-300}
OFI_PROVIDER=${MPI_SCALE_OFI_PROVIDER:-}
# viaduct's environment: the fabric only when one is named.
VD_ENV=(VIADUCT_DEBUG=1)
[ -z "$OFI_PROVIDER" ] || VD_ENV+=(VIADUCT_OFI_PROVIDER="$OFI_PROVIDER")
FAILED=0

usage() { sed -n 's/^# \{0,1\}//; 7,17p' "${BASH_SOURCE[0]}" >&2; exit 2; }
note() { printf 'scale.sh: %s\n' "$*" >&2; }

[ $# -ge 1 ] || usage
case $1 in -h|--help) usage ;; esac
BUILD=$1
shift
while [ $# -gt 0 ]; do
	case $1 in
	--ranks) [ $# -ge 2 ] || usage; RANKS=$2; shift ;;
	--reps) [ $# -ge 2 ] && [ "$2" -ge 1 ] 2>/dev/null || usage; REPS=$2; shift ;;
	--impl) [ $# -ge 2 ] || usage; IMPLS=$2; shift ;;
	--hosts) [ $# -ge 2 ] && [ "$2" -ge 2 ] 2>/dev/null && [ "$2" -le 26 ] || usage; NHOSTS=$2; shift ;;
	--quick) QUICK=1 ;;
	-h|--help) usage ;;
	*) note "unknown option $1"; usage ;;
	esac
	shift
done
[ $QUICK = 1 ] && RANKS=${RANKS:-16 64} REPS=${REPS:-1}
RANKS=${RANKS:-16 64 256}
REPS=${REPS:-3}
for n in $RANKS; do
	[ "$n" -ge "$NHOSTS" ] 2>/dev/null && [ $((n % NHOSTS)) = 0 ] ||
		{ note "--ranks: $n is not a positive multiple of $NHOSTS hosts"; exit 2; }
done
for impl in ${IMPLS//,/ }; do
	case $impl in viaduct|viaduct-hydra|openmpi|mpich) ;;
	*) note "--impl: unknown library $impl"; exit 2 ;;
	esac
done
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || { note "no build tree at '$1'"; exit 2; }
OUT=$BUILD/bench-results
WORK=$OUT/mpi-scale
RAW=$OUT/mpi-scale.raw
VDCC=$BUILD/tools/vdcc
VDRUN=$BUILD/tools/vdrun

want() { case ",$IMPLS," in *,"$1",*) return 0 ;; esac; return 1; }
skip() { note "skipping $1: $2"; IMPLS=$(echo ",$IMPLS," | sed "s/,$1,/,/; s/^,//; s/,$//"); }

if [ "$(id -u)" -ne 0 ]; then
	echo "scale.sh: SKIP: the namespace hosts need root (CAP_NET_ADMIN, CAP_SYS_ADMIN)"
	exit 77
fi
command -v timeout >/dev/null || { echo "scale.sh: SKIP: no timeout command"; exit 77; }
rm -rf "$WORK"
mkdir -p "$WORK/bin" "$WORK/logs" || exit 2

# ---------------------------------------------------------------- build

compiler() {
	case $1 in
	viaduct*) echo "$VDCC" ;;
	openmpi) echo mpicc.openmpi ;;
	mpich) echo mpicc.mpich ;;
	esac
}
launcher() {
	case $1 in
	viaduct) echo "$VDRUN" ;;
	openmpi) echo mpirun.openmpi ;;
	*) echo mpiexec.hydra ;;
	esac
}
for impl in ${IMPLS//,/ }; do
	cc=$(compiler "$impl") run=$(launcher "$impl") log=$WORK/logs/build-$impl.log
	if ! command -v "$cc" >/dev/null; then skip "$impl" "no $cc"; continue; fi
	if ! command -v "$run" >/dev/null; then skip "$impl" "no $run"; continue; fi
	[ -x "$WORK/bin/startup.${impl%-hydra}" ] && continue
	"$cc" -O2 -o "$WORK/bin/startup.${impl%-hydra}" "$HERE/startup.c" >"$log" 2>&1 ||
		{ skip "$impl" "$cc cannot build startup.c (see $log)"; FAILED=1; }
done
[ -n "$IMPLS" ] || { note "no MPI library to run"; exit 1; }

# ---------------------------------------------------------------- the hosts

. "$HERE/nslib.sh"
ns_hosts_up vdsc "$NHOSTS" 10.233
case $? in
0) ;;
77) exit 77 ;;
*) exit 1 ;;
esac
AGENT=$NSDIR/agent
ns_agent "$AGENT"

# hostlist N: h1:N/H,h2:N/H,...
hostlist() {
	local i list=
	for i in "${!NS_IP[@]}"; do list=$list,${NS_IP[i]}:$(($1 / NHOSTS)); done
	echo "${list#,}"
}

# launch IMPL N MODE: one job, its output on stdout and stderr.
launch() {
	local impl=$1 n=$2 mode=$3 prog hosts
	prog=$WORK/bin/startup.${impl%-hydra}
	hosts=$(hostlist "$n")
	case $impl in
	viaduct)
		ns_in 0 env "${VD_ENV[@]}" timeout -k 5 "$TMO" \
			"$VDRUN" -H "$hosts" --launch-agent "$AGENT" --oversubscribe \
			-n "$n" "$prog" "$mode" ;;
	viaduct-hydra|mpich)
		local envs=()
		[ "$impl" = mpich ] || envs=("${VD_ENV[@]}")
		ns_in 0 env "${envs[@]}" timeout -k 5 "$TMO" mpiexec.hydra -hosts "$hosts" \
			-launcher ssh -launcher-exec "$AGENT" -n "$n" "$prog" "$mode" ;;
	openmpi)
		ns_in 0 timeout -k 5 "$TMO" mpirun.openmpi --allow-run-as-root -np "$n" \
			--host "$hosts" --oversubscribe --mca plm_rsh_agent "$AGENT" \
			--mca pml ob1 --mca btl self,vader,tcp --mca btl_tcp_if_include "$NS_SUBNET" \
			--mca oob_tcp_if_include "$NS_SUBNET" --bind-to none "$prog" "$mode" ;;
	esac
}

# Largest rank RSS (KiB) seen per library, for the memory guard.
declare -A RSS_KB

# fits IMPL N: whether N ranks of IMPL fit in 80 % of the free memory.
fits() {
	local avail need
	[ -n "${RSS_KB[$1]:-}" ] || return 0
	avail=$(awk '/MemAvailable/ { print $2 }' /proc/meminfo)
	need=$((RSS_KB[$1] * $2))
	[ "$need" -le $((avail * 8 / 10)) ] && return 0
	WHY="$2 ranks x $((RSS_KB[$1] / 1024)) MiB (its largest rank so far) = $((need / 1048576)) GiB > 80 % of $((avail / 1048576)) GiB available"
	return 1
}

# run IMPL N MODE REP: one measured job, appended to RAW.
run() {
	local impl=$1 n=$2 mode=$3 rep=$4 log t0 t1 rc status got load rss
	log=$WORK/logs/$mode-$n-$impl-$rep.log
	if ! fits "$impl" "$n"; then
		echo "job $impl $mode $n $rep skipped 0 0" >>"$RAW"
		echo "why $impl $mode $n $rep skipped: not started, $WHY" >>"$RAW"
		note "$impl, $n ranks, $mode, run $rep: not started, $WHY"
		return
	fi
	load=$(cut -d' ' -f1 /proc/loadavg)
	t0=$(date +%s%N)
	launch "$impl" "$n" "$mode" >"$log" 2>&1
	rc=$?
	t1=$(date +%s%N)
	got=$(grep -c "^startup $mode " "$log")
	status=ok
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then status=timeout
	elif [ "$rc" != 0 ]; then status=exit$rc
	elif [ "$got" != "$n" ]; then status=ranks$got
	fi
	echo "job $impl $mode $n $rep $status $(((t1 - t0) / 1000)) $load" >>"$RAW"
	if [ $status != ok ]; then
		local why
		why=$(grep -v '^startup \|^viaduct MPI: rank' "$log" | grep -v '^\s*$' | tail -1 | cut -c1-200)
		echo "why $impl $mode $n $rep $status: ${why:-no message}" >>"$RAW"
		note "$impl, $n ranks, $mode, run $rep: $status (${why:-no message}; log $log)"
		FAILED=1
		ns_reap
		return
	fi
	sed -n "s/^startup /rank $impl $rep /p" "$log" >>"$RAW"
	rss=$(awk -v m="${RSS_KB[$impl]:-0}" '$1 == "startup" && $8 > m { m = $8 } END { print m }' "$log")
	RSS_KB[$impl]=$rss
	sed -n "s/^viaduct MPI: rank \([0-9]*\): PMI requests: \([0-9]*\) put, \([0-9]*\) get, \([0-9]*\) fence$/pmi $impl $mode $n $rep \1 \2 \3 \4/p
		s/^viaduct MPI: rank \([0-9]*\): \([0-9]*\) connections .*/conn $impl $mode $n $rep \1 \2/p" "$log" >>"$RAW"
	printf '  %-14s %4d ranks %-4s run %d: %6d ms (load %s)\n' "$impl" "$n" "$mode" "$rep" \
		$(((t1 - t0) / 1000000)) "$load"
}

# ---------------------------------------------------------------- run

{
	echo "context date $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "context cpus $(nproc) $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "context memory $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "context limits open files $(ulimit -n), processes $(ulimit -u)"
	echo "context load_before $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "context viaduct $(git -C "$HERE" describe --always --dirty 2>/dev/null)"
	command -v dpkg-query >/dev/null &&
		echo "context packages $(dpkg-query -W -f '${Package} ${Version}, ' openmpi-bin mpich libucx0 libfabric1 2>/dev/null | sed 's/, $//')"
	echo "context hosts $NHOSTS namespace hosts on a bridge, $NS_SUBNET"
	echo "context viaduct_ofi_provider ${OFI_PROVIDER:-default}"
} >"$RAW"
echo "== MPI start-up over $NHOSTS namespace hosts; ranks: $RANKS; $REPS run(s); libraries: $IMPLS"
echo "== load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
for n in $RANKS; do
	for mode in init ring; do
		for ((rep = 1; rep <= REPS; rep++)); do
			for impl in ${IMPLS//,/ }; do run "$impl" "$n" "$mode" "$rep"; done
		done
	done
done
echo "context load_after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$RAW"
echo
"$PYTHON" "$HERE/scale_table.py" "$RAW" || FAILED=1
echo "scale.sh: raw lines in $RAW, logs in $WORK/logs"
exit $FAILED
