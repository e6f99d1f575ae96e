#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/mpi/run.sh -- the MPI benchmark (docs/bench-mpi.md).
#
# Builds the plain MPI sources of bench/mpi with viaduct's vdcc, Open MPI's
# mpicc.openmpi and MPICH's mpicc.mpich, runs each on 2 ranks bound to
# cores 0 and 1, and prints the three side by side with ratios to viaduct,
# then the MPICH-PM/CLUMP paper's Table 4 (viaduct with each protocol forced), figure 5
# (process_vm_readv against memcpy) and the project's targets.  Writes
# OUT/mpi.csv and OUT/mpi.png.
#
# Usage: bench/mpi/run.sh [--build DIR] [--out DIR] [--quick] [--impl LIST]
#                         [--rounds N] [--no-install] [--no-table4] [--no-fig5]
#                         [--offset B]
#   --build DIR   viaduct build tree with tools/vdcc, tools/vdrun (default build)
#   --out DIR     results (default DIR/bench-results of the build tree)
#   --quick       sizes in powers of four, short runs (about a minute)
#   --impl LIST   comma-separated subset of viaduct,openmpi,mpich
#   --rounds N    run every comparison N times, alternating the libraries;
#                 the report takes the median per size (default 1)
#   --no-install  never call apt-get; skip what is missing
#   --no-table4, --no-fig5   leave those sections out
#   --offset B    every library's buffers B bytes past a page boundary
#                 (default 0: page aligned, as the standard suites; malloc
#                 gives 16 from 128 KiB up)
# Environment: VDCC, VDRUN (override the build tree's), PYTHON (default
# /usr/bin/python3), MPI_BENCH_TIMEOUT (seconds per program run),
# MPI_BENCH_PROBE_WAIT (seconds a program may wait for the CPU placement
# the run began with, bench/mpi/probelib.sh; default 20, 0: never),
# VIADUCT_MPI_EAGER_TABLE_MAX (largest size of the forced-eager column).
#
# Exit status: 0 when every run that was attempted succeeded (comparisons
# that cannot be built or installed are skipped with a message); 1 if a run
# failed (crash, wrong data, timeout) or the plot could not be drawn; 2 on
# a usage error.  The numbers never decide the status.

set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=$REPO/build
OUT=
QUICK=
OFFSET=()
IMPLS=viaduct,openmpi,mpich
ROUNDS=1
INSTALL=1
TABLE4=1
FIG5=1
PYTHON=${PYTHON:-/usr/bin/python3}
PROGS="latency bw bibw allreduce"
# One ring message at most (VIADUCT_RING_MAX_MSG - the 32-byte header).
EAGER_MAX=${VIADUCT_MPI_EAGER_TABLE_MAX:-32728}
# The engine's eager switch point (src/mpi/wire.c: 32728 unless set).
EAGER_SMALL=${VIADUCT_MPI_EAGER_MAX:-32728}
FAILED=0

usage() { sed -n 's/^# \{0,1\}//; 5,31p' "${BASH_SOURCE[0]}" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	--build) [ $# -ge 2 ] || usage; BUILD=$2; shift ;;
	--out) [ $# -ge 2 ] || usage; OUT=$2; shift ;;
	--quick) QUICK=--quick ;;
	--impl) [ $# -ge 2 ] || usage; IMPLS=$2; shift ;;
	--rounds) [ $# -ge 2 ] && [ "$2" -ge 1 ] 2>/dev/null || usage; ROUNDS=$2; shift ;;
	--no-install) INSTALL=0 ;;
	--no-table4) TABLE4=0 ;;
	--no-fig5) FIG5=0 ;;
	--offset) [ $# -ge 2 ] && [ "$2" -ge 0 ] 2>/dev/null && [ "$2" -lt 4096 ] || usage
		OFFSET=(--offset "$2"); shift ;;
	-h|--help) usage ;;
	*) echo "run.sh: unknown option $1" >&2; usage ;;
	esac
	shift
done
BUILD_ABS=$(cd "$BUILD" 2>/dev/null && pwd) || { echo "run.sh: no build tree at '$BUILD' (run make build first, or pass --build DIR)" >&2; exit 2; }
BUILD=$BUILD_ABS
OUT=${OUT:-$BUILD/bench-results}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
WORK=$OUT/mpi            # binaries and logs
CSV=$OUT/mpi.csv
PNG=$OUT/mpi.png
TMO=${MPI_BENCH_TIMEOUT:-$([ -n "$QUICK" ] && echo 120 || echo 300)}
mkdir -p "$WORK/bin" "$WORK/logs"
rm -f "$CSV"

want() { case ",$IMPLS," in *,"$1",*) return 0 ;; esac; return 1; }
note() { printf 'run.sh: %s\n' "$*" >&2; }
skip() { note "skipping $1: $2"; IMPLS=$(echo ",$IMPLS," | sed "s/,$1,/,/; s/^,//; s/,$//"); }

# ---------------------------------------------------------------- packages

APT_UPDATED=0
apt_install() {
	command -v apt-get >/dev/null || { note "no apt-get on this system"; return 1; }
	local SUDO=
	if [ "$(id -u)" != 0 ]; then
		if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo -n"
		else note "not root and no password-less sudo: cannot install $*"; return 1; fi
	fi
	if [ $APT_UPDATED = 0 ]; then
		note "apt-get update"
		$SUDO apt-get -o DPkg::Lock::Timeout=300 update -q >"$WORK/logs/apt.log" 2>&1 ||
			{ note "apt-get update failed (see $WORK/logs/apt.log)"; return 1; }
		APT_UPDATED=1
	fi
	note "apt-get install -y $*"
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
		install -y -q "$@" >>"$WORK/logs/apt.log" 2>&1 ||
		{ note "apt-get install $* failed (see $WORK/logs/apt.log)"; return 1; }
}

# The commands each comparison needs, and the Debian packages giving them.
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

want openmpi && ensure_impl openmpi libopenmpi-dev openmpi-bin -- mpicc.openmpi mpirun.openmpi
want mpich && ensure_impl mpich mpich -- mpicc.mpich mpiexec.mpich
VDCC=${VDCC:-$BUILD/tools/vdcc}
VDRUN=${VDRUN:-$BUILD/tools/vdrun}
if want viaduct; then
	if [ ! -x "$VDCC" ] || [ ! -x "$VDRUN" ]; then
		skip viaduct "$VDCC or $VDRUN not built (make build)"
	fi
fi
if [ -z "$IMPLS" ] && [ $FIG5 = 0 ]; then note "nothing to run"; exit 0; fi

# ---------------------------------------------------------------- build

compiler() {
	case $1 in
	viaduct) echo "$VDCC" ;;
	openmpi) echo mpicc.openmpi ;;
	mpich) echo mpicc.mpich ;;
	esac
}

# The same sources, the same flags, one binary per program and library.
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
if [ $FIG5 = 1 ]; then
	${CC:-cc} -O2 -o "$WORK/bin/mpi_pvread" "$HERE/pvread.c" >"$WORK/logs/build-pvread.log" 2>&1 ||
		{ note "building pvread.c failed (see $WORK/logs/build-pvread.log)"; FIG5=0; FAILED=1; }
fi

# ---------------------------------------------------------------- run

OMPI_BTL=vader
if want openmpi && command -v ompi_info >/dev/null; then
	# Open MPI 5 renamed the shared-memory BTL from vader to sm.
	ompi_info --parsable 2>/dev/null | grep -q '^mca:btl:vader:' || OMPI_BTL=sm
fi

# launch IMPL ENV... -- PROG ARGS...: 2 ranks on cores 0 and 1.
launch() {
	local impl=$1 envs=()
	shift
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	case $impl in
	viaduct) env "${envs[@]}" timeout -k 5 "$TMO" "$VDRUN" -n 2 --bind-to core "$@" ;;
	openmpi) env "${envs[@]}" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		timeout -k 5 "$TMO" mpirun.openmpi -np 2 --bind-to core --map-by core \
		--allow-run-as-root --mca btl "self,$OMPI_BTL" "$@" ;;
	mpich) env "${envs[@]}" timeout -k 5 "$TMO" mpiexec.mpich -n 2 -bind-to core "$@" ;;
	esac
}

# Where the two CPUs are (bench/mpi/probelib.sh): each program waits for
# the placement the benchmark began with, and one during which it moved
# is run once more; only the kept run's rows, with its probes, reach the
# CSV.
. "$HERE/probelib.sh"
PROBE_TMP=$WORK/run

# one_run IMPL LABEL PROG LOG ENV... -- ARGS...: the program, its rows
# into $PROBE_CSV; its exit status.
one_run() {
	local impl=$1 label=$2 prog=$3 log=$4 envs=()
	shift 4
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	launch "$impl" "${envs[@]}" -- "$WORK/bin/mpi_$prog.$impl" --label "$label" \
		--csv "$PROBE_CSV" $QUICK "${OFFSET[@]}" "$@" 2>&1 | tee -a "$log"
	return "${PIPESTATUS[0]}"
}

# run IMPL LABEL PROG [ENV...] [-- ARGS...]
run() {
	local impl=$1 label=$2 prog=$3 envs=() args=() log rc n=1
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	args=("$@")
	log=$WORK/logs/$prog-$label.log
	while [ -e "$log" ]; do n=$((n + 1)); log=$WORK/logs/$prog-$label-$n.log; done
	echo
	: >"$log"
	[ ${#envs[@]} -gt 0 ] && echo "# environment: ${envs[*]}" | tee -a "$log"
	probe_measure "$CSV" "$label" "run.sh: $prog $label" \
		one_run "$impl" "$label" "$prog" "$log" "${envs[@]}" -- "${args[@]}"
	rc=$?
	if [ "$rc" != 0 ]; then
		local why="exit $rc"
		[ "$rc" = 124 ] && why="killed after ${TMO}s (MPI_BENCH_TIMEOUT)"
		note "FAILED: $prog with $label: $why; log $log"
		context failed "$prog $label ${envs[*]}: $why"
		FAILED=1
	fi
}

context() {     # metric value: one context row of the whole run
	printf 'context,run,0,%s,"%s"\n' "$1" "$(echo "$2" | tr -d '"\n')" >>"$CSV"
}

echo "section,case,x,metric,value" >"$CSV"
context cpu_model "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
context cpus "$(nproc) online"
context kernel "$(uname -sr)"
context load_before "$(cut -d' ' -f1-3 /proc/loadavg)"
context date "$(date -u '+%Y-%m-%d %H:%M UTC')"
context impls "$IMPLS"
context mode "${QUICK:-full}, $ROUNDS round(s)${OFFSET[1]:+, buffers ${OFFSET[1]} bytes past a page}"
probe_init "$BUILD/bench/line_probe"
context probe_reference_ns "${PROBE_REF:-none (no $BUILD/bench/line_probe)}"
context probe_wait_s "$PROBE_WAIT"
LOAD=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$LOAD" 'BEGIN { exit !(l > 0.5) }'; then
	note "load average is $LOAD: other work competes for the 2 cores; figures will scatter"
fi

# Program by program, the libraries one after the other, ROUNDS times:
# a change of the machine's load then hits every library alike.
for prog in $PROGS; do
	for round in $(seq "$ROUNDS"); do
		for impl in ${IMPLS//,/ }; do run "$impl" "$impl" "$prog"; done
	done
done

if [ $TABLE4 = 1 ] && want viaduct; then
	# The MPICH-PM/CLUMP paper's Table 4: each protocol forced (VIADUCT_MPI_PROTOCOL).  The
	# engine sends eager only up to VIADUCT_MPI_EAGER_MAX, so the eager
	# column runs in two parts: up to the switch point as configured, and
	# above it with the switch point raised to EAGER_MAX (larger eager
	# buffers for every message, which is why small sizes are not taken
	# from that second part), stopping there rather than report another
	# protocol under eager's name.
	for prog in latency bw; do
		run viaduct viaduct_eager "$prog" VIADUCT_MPI_PROTOCOL=eager -- \
			--max-size "$EAGER_SMALL"
		if [ "$EAGER_MAX" -gt "$EAGER_SMALL" ]; then
			run viaduct viaduct_eager "$prog" VIADUCT_MPI_PROTOCOL=eager \
				VIADUCT_MPI_EAGER_MAX="$EAGER_MAX" -- \
				--min-size $((EAGER_SMALL * 2)) --max-size "$EAGER_MAX"
		fi
		for proto in get rndv; do
			run viaduct "viaduct_$proto" "$prog" VIADUCT_MPI_PROTOCOL=$proto
		done
	done
fi

if [ $FIG5 = 1 ]; then
	echo
	"$WORK/bin/mpi_pvread" --csv "$CSV" $QUICK 2>&1 | tee "$WORK/logs/pvread.log" ||
		{ note "FAILED: pvread (log $WORK/logs/pvread.log)"; FAILED=1; }
fi

# ---------------------------------------------------------------- report

context probe_repeated "$PROBE_REPEATED"
echo
"$PYTHON" "$HERE/report.py" --targets-to-csv "$CSV" || FAILED=1
if "$PYTHON" "$HERE/plot.py" "$CSV" "$PNG"; then
	echo "run.sh: results in $CSV, plot in $PNG, logs in $WORK/logs"
else
	note "the plot was not drawn"
	FAILED=1
fi
exit $FAILED
