#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/mpi/hosts.sh -- the MPI benchmark across two hosts (docs/bench-mpi.md,
# "Across two hosts").
#
# The programs of bench/mpi/run.sh (latency, bw, bibw, allreduce) and
# MPI_Bcast (coll.c as bench/mpi/coll.sh has it), built
# with viaduct's vdcc, mpicc.openmpi and mpicc.mpich, run between two
# "hosts" made of Linux namespaces on this machine (as root), next to the
# raw TCP floor (build/bench/tcp_floor) and libfabric's own ping-pong
# (fi_pingpong, Debian libfabric-bin) between the same two hosts.
#
# Usage: bench/mpi/hosts.sh BUILD_DIR [--quick] [--rounds N] [--impl LIST]
#                           [--no-install] [--no-table4]
#   BUILD_DIR     viaduct build tree (tools/vdcc, bench/tcp_floor)
#   --quick       sizes in powers of four, short runs (a few minutes)
#   --rounds N    run every comparison N times, alternating the libraries;
#                 the tables take the median per size (default 1)
#   --impl LIST   comma-separated subset of viaduct,openmpi,mpich
#   --no-install  never call apt-get; skip what is missing
#   --no-table4   leave out the MPICH-PM/CLUMP paper's Table 4 (viaduct,
#                 each protocol forced, in one node and between the two)
# Environment: PYTHON (default /usr/bin/python3), MPI_BENCH_TIMEOUT
# (seconds per program run), MPI_HOSTS_QUIET_WAIT (seconds to wait before
# each run for the CPUs to be >= 90 % idle for a second; default 30),
# MPI_HOSTS_PROGS (a subset of "latency bw bibw allreduce bcast"),
# MPI_HOSTS_OFI_PROVIDER (viaduct's VIADUCT_OFI_PROVIDER, default empty:
# viaduct's own choice, net where libfabric offers it next to tcp;ofi_rxm;
# also fi_pingpong's provider, net or else tcp when empty),
# MPI_HOSTS_ENV
# (VAR=VALUE words for every measured run, e.g. VIADUCT_MPI_PROTOCOL=get).
#
# Each host has its own network namespace (a veth pair joins the two),
# UTS namespace (hostname) and SysV-IPC namespace, kept in files under
# /run/vdmh.PID for the whole run: with the network namespace alone, UCX
# takes the two hosts for one machine and talks through shared memory.
# The launchers run inside host A; their remote agent behaves like ssh
# (skips options, joins the words, runs them with bash inside host B).
# Two ranks: rank 0 on host A pinned to CPU 0, rank 1 on host B pinned to
# CPU 1.  Allreduce and Bcast also run with 4 ranks, two per host, not pinned
# (4 ranks on 2 CPUs: oversubscribed).
#   viaduct   mpiexec.hydra -hosts A,B -launcher ssh -launcher-exec AGENT,
#             VIADUCT_OFI_PROVIDER=MPI_HOSTS_OFI_PROVIDER (shm or
#             ofi per peer, by itself)
#   Open MPI  mpirun.openmpi --host A,B --mca plm_rsh_agent AGENT, ob1 with
#             btl self,tcp (4 ranks: self,vader,tcp), --bind-to none
#   MPICH     mpiexec.hydra as viaduct (ch4:ucx; UCX picks its transports)
# Before measuring, one short run per library checks the path: viaduct's
# VIADUCT_DEBUG=1 line, UCX's UCX_LOG_LEVEL=info endpoint lines, and the
# hostnames every rank reports; a library whose check fails is not measured.
#
# Writes BUILD_DIR/bench-results/mpi-hosts.csv (rows section,case,x,
# metric,value as bench/mpi/run.sh; cases viaduct, openmpi, mpich, tcp,
# fabric (libfabric's fi_pingpong) and *_n4 for 4 ranks) and logs under
# BUILD_DIR/bench-results/mpi-hosts/.
# Everything it set up (namespaces, processes in them) goes on exit.
#
# Exit status: 0 when every attempted run succeeded; 1 if a run or a check
# failed; 2 on a usage error; 77 when not root or namespaces are refused.

set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
QUICK=
ROUNDS=1
IMPLS=viaduct,openmpi,mpich
INSTALL=1
TABLE4=1
PYTHON=${PYTHON:-/usr/bin/python3}
FAILED=0

usage() { sed -n '/^# Usage:/,/^#$/{/^#$/d; s/^# \{0,1\}//; p}' "${BASH_SOURCE[0]}" >&2; exit 2; }

[ $# -ge 1 ] || usage
case $1 in -h|--help) usage ;; esac
BUILD=$1
shift
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=--quick ;;
	--rounds) [ $# -ge 2 ] && [ "$2" -ge 1 ] 2>/dev/null || usage; ROUNDS=$2; shift ;;
	--impl) [ $# -ge 2 ] || usage; IMPLS=$2; shift ;;
	--no-install) INSTALL=0 ;;
	--no-table4) TABLE4=0 ;;
	-h|--help) usage ;;
	*) echo "hosts.sh: unknown option $1" >&2; usage ;;
	esac
	shift
done
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || { echo "hosts.sh: no build tree at '$1'" >&2; exit 2; }
OUT=$BUILD/bench-results
WORK=$OUT/mpi-hosts
CSV=$OUT/mpi-hosts.csv
TMO=${MPI_BENCH_TIMEOUT:-$([ -n "$QUICK" ] && echo 120 || echo 300)}
VDCC=$BUILD/tools/vdcc
TCP_FLOOR=$BUILD/bench/tcp_floor
PROGS=${MPI_HOSTS_PROGS:-latency bw bibw allreduce bcast}
OFI_PROVIDER=${MPI_HOSTS_OFI_PROVIDER:-}
# VAR=VALUE words added to every measured run (e.g. VIADUCT_MPI_PROTOCOL=get)
read -r -a EXTRA_ENV <<<"${MPI_HOSTS_ENV:-}"

note() { printf 'hosts.sh: %s\n' "$*" >&2; }
want() { case ",$IMPLS," in *,"$1",*) return 0 ;; esac; return 1; }
skip() { note "skipping $1: $2"; IMPLS=$(echo ",$IMPLS," | sed "s/,$1,/,/; s/^,//; s/,$//"); }

if [ "$(id -u)" -ne 0 ]; then
	echo "hosts.sh: SKIP: the namespace hosts need root (CAP_NET_ADMIN, CAP_SYS_ADMIN)"
	exit 77
fi
for c in ip unshare nsenter taskset timeout; do
	command -v $c >/dev/null || { echo "hosts.sh: SKIP: no $c command"; exit 77; }
done
rm -rf "$WORK/logs"
mkdir -p "$WORK/bin" "$WORK/logs" || exit 2
rm -f "$CSV"

# ---------------------------------------------------------------- packages
# (as bench/mpi/run.sh: apt-get only for what is missing, and only as root)

APT_UPDATED=0
apt_install() {
	command -v apt-get >/dev/null || { note "no apt-get on this system"; return 1; }
	if [ $APT_UPDATED = 0 ]; then
		note "apt-get update"
		apt-get -o DPkg::Lock::Timeout=300 update -q >"$WORK/logs/apt.log" 2>&1 ||
			{ note "apt-get update failed (see $WORK/logs/apt.log)"; return 1; }
		APT_UPDATED=1
	fi
	note "apt-get install -y $*"
	env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
		install -y -q "$@" >>"$WORK/logs/apt.log" 2>&1 ||
		{ note "apt-get install $* failed (see $WORK/logs/apt.log)"; return 1; }
}

ensure_impl() {       # name packages... -- commands...
	local name=$1 pkgs=() cmds=() c missing=
	shift
	while [ "$1" != -- ]; do pkgs+=("$1"); shift; done
	shift
	cmds=("$@")
	for c in "${cmds[@]}"; do command -v "$c" >/dev/null || missing="$missing $c"; done
	[ -z "$missing" ] && return 0
	if [ $INSTALL = 1 ] && apt_install "${pkgs[@]}"; then
		missing=
		for c in "${cmds[@]}"; do command -v "$c" >/dev/null || missing="$missing $c"; done
		[ -z "$missing" ] && return 0
	fi
	skip "$name" "missing$missing (Debian: ${pkgs[*]})"
}

# Hydra launches viaduct's ranks as well as MPICH's.
if want viaduct || want mpich; then
	command -v mpiexec.hydra >/dev/null || [ $INSTALL = 0 ] || apt_install mpich
fi
want openmpi && ensure_impl openmpi libopenmpi-dev openmpi-bin -- mpicc.openmpi mpirun.openmpi
want mpich && ensure_impl mpich mpich libmpich-dev -- mpicc.mpich mpiexec.hydra

# The compiler wrapper can be there without the headers (Debian's mpich
# without libmpich-dev): try one include before building.
ensure_headers() {    # name compiler dev-package
	printf '#include <mpi.h>\nint main(void) { return MPI_Init(0, 0); }\n' >"$WORK/bin/probe.c"
	"$2" -o "$WORK/bin/probe" "$WORK/bin/probe.c" >/dev/null 2>&1 && return 0
	[ $INSTALL = 1 ] && apt_install "$3" &&
		"$2" -o "$WORK/bin/probe" "$WORK/bin/probe.c" >/dev/null 2>&1 && return 0
	skip "$1" "$2 cannot compile an MPI program (Debian: $3)"
}
want openmpi && ensure_headers openmpi mpicc.openmpi libopenmpi-dev
want mpich && ensure_headers mpich mpicc.mpich libmpich-dev
if want viaduct; then
	if [ ! -x "$VDCC" ]; then skip viaduct "$VDCC not built (make build)"
	elif ! command -v mpiexec.hydra >/dev/null; then skip viaduct "no mpiexec.hydra to launch it (Debian: mpich)"
	fi
fi
TCP=1
[ -x "$TCP_FLOOR" ] || { note "no $TCP_FLOOR (make build): no raw TCP column"; TCP=0; }
# libfabric's own send/receive ping-pong over the provider viaduct runs
# on: a reference for what the fabric does by itself (not a floor for
# viaduct's RMA reads, which can beat it), next to the latencies.
FABRIC=0
case " $PROGS " in *" latency "*) FABRIC=1 ;; esac
if [ $FABRIC = 1 ]; then
	command -v fi_pingpong >/dev/null || { [ $INSTALL = 1 ] && apt_install libfabric-bin; }
	command -v fi_pingpong >/dev/null ||
		{ note "no fi_pingpong (Debian: libfabric-bin): no libfabric column"; FABRIC=0; }
fi
FI_PROV=${OFI_PROVIDER:-net}
[ $FABRIC = 0 ] || [ -n "$OFI_PROVIDER" ] || fi_info -p net >/dev/null 2>&1 || FI_PROV=tcp
if [ -z "$IMPLS" ]; then note "no MPI library to run"; exit 0; fi

# ---------------------------------------------------------------- build

compiler() {
	case $1 in
	viaduct) echo "$VDCC" ;;
	openmpi) echo mpicc.openmpi ;;
	mpich) echo mpicc.mpich ;;
	esac
}

build_impl() {
	local impl=$1 cc p src log=$WORK/logs/build-$1.log
	cc=$(compiler "$impl")
	: >"$log"
	for p in $PROGS; do
		# A program without a source of its own is a collective of coll.c.
		src=("$HERE/$p.c")
		[ -e "${src[0]}" ] || src=(-DCOLL_OP="$p" "$HERE/coll.c")
		echo "+ $cc -O2 -o mpi_$p.$impl ${src[*]##*/} common.c" >>"$log"
		if ! "$cc" -O2 -o "$WORK/bin/mpi_$p.$impl" "${src[@]}" "$HERE/common.c" >>"$log" 2>&1; then
			skip "$impl" "building $p.c with $cc failed (see $log)"
			FAILED=1
			return 1
		fi
	done
}
for impl in ${IMPLS//,/ }; do build_impl "$impl"; done
[ -n "$IMPLS" ] || exit 1
# viaduct's programs find its libraries in the build tree (RUNPATH); a
# copy taken now keeps one build for the whole run even if the tree is
# rebuilt meanwhile (LD_LIBRARY_PATH goes before RUNPATH).
VD_LIBS=$WORK/lib
if want viaduct; then
	rm -rf "$VD_LIBS" && mkdir -p "$VD_LIBS" &&
		cp -L "$BUILD/src/libviaduct.so.0" "$BUILD/src/mpi/libviaduct_mpi.so.0" "$VD_LIBS/" ||
		{ note "cannot copy viaduct's libraries from $BUILD/src"; exit 1; }
fi

# ---------------------------------------------------------------- the hosts

. "$HERE/nslib.sh"
ns_hosts_up vdmh 2 10.232
case $? in
0) ;;
77) exit 77 ;;
*) exit 1 ;;
esac
NS_A=${NS_NAME[0]} NS_B=${NS_NAME[1]}
IP_A=${NS_IP[0]} IP_B=${NS_IP[1]}
SUBNET=$NS_SUBNET
AGENT=$NSDIR/agent
PIN=$NSDIR/pin
in_host() { ns_in "$@"; }
reap() { ns_reap; }
ns_agent "$AGENT"

# Every rank says where it runs (host, network namespace, CPUs); with two
# ranks, rank r goes on CPU r (rank 0 on host A, rank 1 on host B).
cat >"$PIN" <<'EOS'
#!/bin/sh
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-}}
[ -n "$r" ] || { echo "hosts.sh pin: no rank in the environment" >&2; exit 126; }
[ "$1" = --pin ] && { shift; taskset -pc "$r" $$ >/dev/null || exit 126; }
echo "hosts.sh: rank $r on $(hostname), $(readlink /proc/self/ns/net), cpus $(taskset -pc $$ | sed 's/.*: //')${LD_LIBRARY_PATH:+, LD_LIBRARY_PATH $LD_LIBRARY_PATH}" >&2
exec "$@"
EOS
chmod 700 "$PIN"

# ---------------------------------------------------------------- launching

# launch IMPL NRANKS ENV... -- PROG ARGS...  (the launcher runs on host A;
# HOSTS_PLACE=node puts both of 2 ranks there, pinned to CPUs 0 and 1)
launch() {
	local impl=$1 n=$2 envs=() hosts pin
	shift 2
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	if [ "${HOSTS_PLACE:-}" = node ]; then hosts=$IP_A:2 pin="$PIN --pin"
	elif [ "$n" = 2 ]; then hosts=$IP_A,$IP_B pin="$PIN --pin"
	else hosts=$IP_A:$((n / 2)),$IP_B:$((n - n / 2)) pin=$PIN
	fi
	case $impl in
	viaduct|mpich)
		[ $impl = viaduct ] && envs+=(VIADUCT_OFI_PROVIDER="$OFI_PROVIDER" LD_LIBRARY_PATH="$VD_LIBS")
		in_host A env "${envs[@]}" timeout -k 5 "$TMO" mpiexec.hydra -hosts "$hosts" \
			-launcher ssh -launcher-exec "$AGENT" -n "$n" $pin "$@" ;;
	openmpi)
		local btl=self,tcp fwd=() e
		[ "$n" = 2 ] || btl=self,vader,tcp
		# mpirun passes only what -x names to the other host's ranks.
		for e in "${envs[@]}"; do fwd+=(-x "${e%%=*}"); done
		in_host A env "${envs[@]}" timeout -k 5 "$TMO" mpirun.openmpi --allow-run-as-root \
			-np "$n" --host "$hosts" --mca plm_rsh_agent "$AGENT" "${fwd[@]}" \
			--mca btl "$btl" --mca pml ob1 --mca btl_tcp_if_include "$SUBNET" \
			--mca oob_tcp_if_include "$SUBNET" --bind-to none $pin "$@" ;;
	esac
}

context() {     # case metric value
	printf 'context,%s,0,%s,"%s"\n' "$1" "$2" "$(echo "$3" | tr -d '"\n')" >>"$CSV"
}

# Other work on the machine's 2 CPUs moves every figure: before each
# measured run, wait (up to QUIET_WAIT s) for a second in which the CPUs
# were at least 90 % idle; runs started without one are counted.
QUIET_WAIT=${MPI_HOSTS_QUIET_WAIT:-30}
LOADED=0
idle_pct() {
	local c u n s i w q sq st t1 i1
	read -r c u n s i w q sq st _ </proc/stat
	t1=$((u + n + s + i + w + q + sq + st)) i1=$((i + w))
	sleep 1
	read -r c u n s i w q sq st _ </proc/stat
	echo $((100 * (i + w - i1) / (u + n + s + i + w + q + sq + st - t1 + 1)))
}
quiet() {
	local t=0 p=0
	while [ $t -lt "$QUIET_WAIT" ]; do
		p=$(idle_pct)
		[ "$p" -ge 90 ] && return 0
		t=$((t + 1))
	done
	note "$1: started under load (CPUs ${p} % idle)"
	LOADED=$((LOADED + 1))
}

# run IMPL NRANKS PROG [ENV...] [-- ARGS...]: one measured run, appending
# to the CSV as case HOSTS_LABEL (default IMPL, or IMPL_nN for N ranks).
run() {
	local impl=$1 n=$2 prog=$3 label=${HOSTS_LABEL:-$1} log rc k=1 envs=()
	shift 3
	[ "$n" = 2 ] || label=${impl}_n$n
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	log=$WORK/logs/$prog-$label.log
	while [ -e "$log" ]; do k=$((k + 1)); log=$WORK/logs/$prog-$label-$k.log; done
	echo
	quiet "$prog $label"
	launch "$impl" "$n" "${EXTRA_ENV[@]}" "${envs[@]}" -- "$WORK/bin/mpi_$prog.$impl" --label "$label" \
		--csv "$CSV" $QUICK "$@" >"$log" 2>&1
	rc=$?
	grep -v '^hosts.sh: rank ' "$log"
	if [ "$rc" != 0 ]; then
		local why="exit $rc"
		[ "$rc" = 124 ] && why="killed after ${TMO}s (MPI_BENCH_TIMEOUT)"
		note "FAILED: $prog with $label: $why; log $log"
		context "$label" failed "$prog: $why"
		FAILED=1
		reap
	fi
}

# check IMPL NRANKS: a short run that shows which way the ranks talk.
check() {
	local impl=$1 n=$2 label=$1 log prog=latency args ok=1 want
	[ "$n" = 2 ] || { label=${impl}_n$n; prog=$COLL4; }
	log=$WORK/logs/check-$label.log
	args=(--max-size 8 --runs 1 --time 0.01)
	case $impl in
	viaduct) launch viaduct "$n" VIADUCT_DEBUG=1 -- "$WORK/bin/mpi_$prog.$impl" "${args[@]}" >"$log" 2>&1 ;;
	mpich) launch mpich "$n" UCX_LOG_LEVEL=info -- "$WORK/bin/mpi_$prog.$impl" "${args[@]}" >"$log" 2>&1 ;;
	openmpi) launch openmpi "$n" -- "$WORK/bin/mpi_$prog.$impl" "${args[@]}" >"$log" 2>&1 ;;
	esac || { note "check of $label: the run failed (log $log)"; reap; ok=0; }
	# The wrapper's lines: rank r on HOST, net:[ino], cpus LIST
	local where
	where=$(grep -o 'hosts.sh: rank [0-9]* on .*' "$log" | sed 's/^hosts.sh: //' | sort -n -k2 | tr '\n' ';' | sed 's/;$//; s/;/; /g')
	if [ "$n" = 2 ]; then want="rank 0 on $NS_A, [^;]*, cpus 0(, [^;]*)?; rank 1 on $NS_B, [^;]*, cpus 1(,|\$)"
	else want="rank 0 on $NS_A,.*rank 1 on $NS_A,.*rank 2 on $NS_B,.*rank 3 on $NS_B,"
	fi
	echo "$where" | grep -Eq "$want" || { note "check of $label: placement '$where' is not $want"; ok=0; }
	local path=
	case $impl in
	viaduct)
		if [ "$n" = 2 ]; then want="rank 0: peers through shm: none; through ofi: 1$"
		else want="rank 0: peers through shm: 1; through ofi: 2 3$"
		fi
		path="$(grep -o "rank 0: peers through.*" "$log" | head -1); libfabric provider: $(sed -n 's/.* ofi: \([^ ]*\) on .*/\1/p' "$log" | head -1)"
		grep -q "$want" "$log" || { note "check of $label: viaduct did not say '$want'"; ok=0; } ;;
	mpich)
		# UCX names the transports of each endpoint it opens: ep_cfg[i]:
		# tag(tcp/eth0) ...; the one of a rank to itself has self/memory.
		local peers
		peers=$(grep -o 'ep_cfg\[[0-9]*\]: .*' "$log" | grep -v 'self/')
		path=$(echo "$peers" | grep -o 'tag([^)]*)' | sort | uniq -c | sed 's/^ *//' | tr '\n' ';' | sed 's/;$//; s/;/; /g')
		path="UCX endpoints to other ranks (count, transports): $path"
		if ! echo "$peers" | grep -q 'tag([^)]*tcp/eth0'; then
			note "check of $label: UCX log shows no tcp/eth0 endpoint"; ok=0
		elif [ "$n" = 2 ] && echo "$peers" | grep -Eq 'sysv|posix|cma|xpmem|knem'; then
			note "check of $label: UCX uses shared memory between the hosts"; ok=0
		fi ;;
	openmpi)
		path="btl forced: $([ "$n" = 2 ] && echo self,tcp || echo self,vader,tcp), pml ob1" ;;
	esac
	echo "  $label: $where"
	echo "  $label: $path"
	context "$label" placement "$where"
	context "$label" path "$path"
	if [ $ok = 0 ]; then
		context "$label" failed "transport check (log $log)"
		FAILED=1
		return 1
	fi
}

# ---------------------------------------------------------------- run

echo "section,case,x,metric,value" >"$CSV"
context run cpu_model "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
context run cpus "$(nproc) online"
context run kernel "$(uname -sr)"
context run load_before "$(cut -d' ' -f1-3 /proc/loadavg)"
context run date "$(date -u '+%Y-%m-%d %H:%M UTC')"
context run viaduct_ofi_provider "${OFI_PROVIDER:-(viaduct default)}"
[ $FABRIC = 1 ] && context run fabric_provider "$FI_PROV"
context run mode "${QUICK:-full}, $ROUNDS round(s)"
[ -n "${MPI_HOSTS_ENV:-}" ] && context run extra_env "$MPI_HOSTS_ENV"
context run hosts "$NS_A $IP_A <-> $NS_B $IP_B, veth, own net+uts+ipc namespaces"
# The build tree may hold work not yet committed: say so.
command -v git >/dev/null && context run viaduct_commit "$(git -C "$HERE" describe --always --dirty 2>/dev/null)"
want viaduct && context run viaduct_libs "copied from $BUILD/src at $(date -u +%H:%M:%S), built $(stat -c %y "$BUILD/src/mpi/libviaduct_mpi.so.0" | cut -c1-19)"
command -v dpkg-query >/dev/null &&
	context run packages "$(dpkg-query -W -f '${Package} ${Version}, ' openmpi-bin mpich libucx0 libfabric1 2>/dev/null | sed 's/, $//')"
LOAD=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$LOAD" 'BEGIN { exit !(l > 0.5) }'; then
	note "load average is $LOAD: other work competes for the 2 cores; figures will scatter"
fi

echo "== MPI across hosts: $NS_A ($IP_A) <-> $NS_B ($IP_B), veth; libraries: $IMPLS"
echo "== transport checks"
IMPLS4=
ALL=$IMPLS
# The collective whose 4-rank run shows the transports.
COLL4=allreduce
case " $PROGS " in *" allreduce "*) ;; *) COLL4=bcast ;; esac
for impl in ${ALL//,/ }; do
	check "$impl" 2 || skip "$impl" "its transport check failed (see above)"
	# The 4-rank runs are the collectives' alone.
	case " $PROGS " in *" allreduce "* | *" bcast "*) ;; *) continue ;; esac
	if want "$impl"; then check "$impl" 4 && IMPLS4=$IMPLS4,$impl; fi
done
IMPLS4=${IMPLS4#,}

# tcp_floor ROUND: raw TCP between the hosts, as rows of sections latency and bw.
tcp_floor() {
	local log=$WORK/logs/tcp-$1.log sp
	quiet "tcp_floor"
	in_host B taskset -c 1 "$TCP_FLOOR" server 47999 >/dev/null 2>&1 &
	sp=$!
	sleep 0.3
	if in_host A timeout 120 taskset -c 0 "$TCP_FLOOR" client "$IP_B" 47999 >"$log" 2>&1; then
		awk '$1 == "latency" { printf "latency,tcp,%s,half_rtt_us,%.3f\n", $2, $3 / 1000 }
		     $1 == "bandwidth" { printf "bw,tcp,%s,mb_per_s,%s\n", $2, $3 }' "$log" >>"$CSV"
		echo
		echo "# raw TCP (tcp_floor, busy-polled recv), round $1: $(tr '\n' ' ' <"$log")"
	else
		note "FAILED: tcp_floor (log $log)"
		FAILED=1
	fi
	kill "$sp" 2>/dev/null
	wait "$sp" 2>/dev/null
}

# The latency program's sizes (bench/mpi/common.c, next_size).
latency_sizes() {
	local s=0
	while [ $s -le $((4 << 20)) ]; do
		echo $s
		if [ $s = 0 ]; then s=1
		elif [ -n "$QUICK" ] && [ $s != 4 ] && [ $s != 8 ]; then s=$((s * 4))
		else s=$((s * 2)); fi
	done
}

# fi_pp N ITERS LOG: one fi_pingpong of N bytes between the hosts (server
# on B, client on A); prints its "usec/xfer" (a half round trip: two
# transfers an iteration), nothing if it failed.  The client's connect
# is tried a few times: the server may not be listening yet.
fi_pp() {
	local n=$1 iters=$2 log=$3 sp us try
	for try in 1 2 3; do
		in_host B taskset -c 1 timeout 60 fi_pingpong -p "$FI_PROV" -e rdm -S "$n" \
			-I "$iters" >/dev/null 2>>"$log.server" &
		sp=$!
		sleep 0.3
		us=$(in_host A timeout 60 taskset -c 0 fi_pingpong -p "$FI_PROV" -e rdm -S "$n" \
			-I "$iters" "$IP_B" 2>>"$log" | tee -a "$log" | awk 'END { print $7 }')
		kill "$sp" 2>/dev/null
		wait "$sp" 2>/dev/null
		if [[ $us =~ ^[0-9.]+$ ]]; then
			echo "$us"
			return
		fi
		echo "fi_pingpong at $n bytes, try $try: no result" >>"$log"
	done
}

# fabric_floor ROUND: fi_pp at the latency sizes (1 B for 0 B), as rows of
# section latency, case fabric.
fabric_floor() {
	local log=$WORK/logs/fabric-$1.log s n iters us
	quiet "fi_pingpong"
	: >"$log"
	for s in $(latency_sizes); do
		n=$((s > 0 ? s : 1))
		iters=$(((64 << 20) / n))
		[ $iters -gt 2000 ] && iters=2000
		[ $iters -lt 50 ] && iters=50
		us=$(fi_pp "$n" "$iters" "$log")
		if [ -z "$us" ]; then
			note "FAILED: fi_pingpong -p $FI_PROV at $n bytes (log $log)"
			context fabric failed "fi_pingpong -p $FI_PROV at $n bytes"
			FAILED=1
			return
		fi
		echo "latency,fabric,$s,half_rtt_us,$us" >>"$CSV"
	done
	echo
	echo "# libfabric's fi_pingpong over $FI_PROV, round $1: see $log"
}

for prog in $PROGS; do
	for round in $(seq "$ROUNDS"); do
		[ "$prog" = latency ] && [ $TCP = 1 ] && tcp_floor "$round"
		[ "$prog" = latency ] && [ $FABRIC = 1 ] && fabric_floor "$round"
		for impl in ${IMPLS//,/ }; do run "$impl" 2 "$prog"; done
		if [ "$prog" = allreduce ] || [ "$prog" = bcast ]; then
			for impl in ${IMPLS4//,/ }; do run "$impl" 4 "$prog"; done
		fi
	done
done

# The MPICH-PM/CLUMP paper's Table 4: viaduct with each protocol forced
# (VIADUCT_MPI_PROTOCOL), both ranks on host A ("node": shm) and one on
# each host ("net": ofi), cases viaduct_PLACE_PROTO.  Forced eager exists
# only up to the switch point: 32728 bytes inside a host and across by
# default, less where MPI_HOSTS_ENV lowers either.
eager_max() {
	local max=32728 v b
	for v in "${EXTRA_ENV[@]}"; do
		case $v in
		VIADUCT_MPI_EAGER_MAX=*|VIADUCT_MPI_NET_EAGER_MAX=*) b=$(size_bytes "${v#*=}") ;;
		*) continue ;;
		esac
		[ -n "$b" ] && [ "$b" -lt "$max" ] && max=$b
	done
	echo "$max"
}
# size_bytes N[k|m|g]: N with its suffix (as VIADUCT_* sizes take it) in
# bytes; nothing for a value that is not a size (the library refuses it).
size_bytes() {
	local v=${1,,} m=1
	case $v in
	*k) m=1024; v=${v%k} ;;
	*m) m=$((1024 * 1024)); v=${v%m} ;;
	*g) m=$((1024 * 1024 * 1024)); v=${v%g} ;;
	esac
	[[ $v =~ ^[0-9]{1,9}$ ]] && echo $((10#$v * m))
}
table4_runs() {
	local place proto prog max
	for place in node net; do
		for proto in eager get rndv; do
			for prog in latency bw; do
				max=()
				[ $proto = eager ] && max=(--max-size "$(eager_max)")
				HOSTS_PLACE=$place HOSTS_LABEL=viaduct_${place}_$proto run viaduct 2 "$prog" \
					VIADUCT_MPI_PROTOCOL=$proto -- "${max[@]}"
			done
		done
	done
}
if [ $TABLE4 = 1 ] && want viaduct; then
	case " $PROGS " in *" latency "*) case " $PROGS " in *" bw "*) table4_runs ;; esac ;; esac
fi

context run load_after "$(cut -d' ' -f1-3 /proc/loadavg)"
context run runs_started_under_load "$LOADED"
[ $LOADED = 0 ] || note "$LOADED run(s) started while other work kept the CPUs busy"
echo
"$PYTHON" "$HERE/hosts_table.py" "$CSV" || FAILED=1
echo "hosts.sh: results in $CSV, logs in $WORK/logs"
exit $FAILED
