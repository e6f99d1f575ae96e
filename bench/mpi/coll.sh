#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/mpi/coll.sh -- node-local collectives against Open MPI and MPICH
# (docs/bench-mpi.md, "Collectives on one node").
#
# bench/mpi/coll.c (mpi_coll --op NAME) built with vdcc, mpicc.openmpi and
# mpicc.mpich from the same source; every collective at 2 ranks bound to
# cores 0 and 1 and at 4 ranks unbound (more ranks than the 2 CPUs).  Each
# round runs every collective once per library, the order of the libraries
# rotating from one run to the next; the report takes per size the median
# over rounds, prints a table per collective and rank count with viaduct's
# time over the better peer's (MISS where above 1.0), writes them to
# OUT/coll.txt and OUT/coll.csv, and draws OUT/coll-NAME.png.
#
# Usage: bench/mpi/coll.sh [--build DIR] [--out DIR] [--quick] [--rounds N]
#                          [--ranks "2 4"] [--ops LIST] [--impl LIST]
#                          [--max-size B] [--offset B] [--with-p2p]
#   --build DIR    viaduct build tree with tools/vdcc, tools/vdrun (default build)
#   --out DIR      results (default DIR/bench-results/coll)
#   --quick        sizes in powers of four, short runs, 1 round unless --rounds
#   --rounds N     rounds (default 3)
#   --ranks LIST   rank counts (default "2 4"); up to 2 bound, above unbound
#   --ops LIST     a subset of "barrier bcast reduce allreduce allgather
#                  alltoall reduce_scatter_block" (all by default)
#   --impl LIST    comma-separated subset of viaduct,openmpi,mpich
#   --max-size B   largest size (default 1 MiB)
#   --offset B     every library's buffers B bytes past a page boundary
#                  (default 0: page aligned, as the standard suites; malloc
#                  gives 16 from 128 KiB up)
#   --with-p2p     also viaduct with VIADUCT_MPI_COLL_SHM=0 ("viaduct p2p":
#                  its point-to-point algorithms instead of the shared segment)
# Environment: PYTHON (default /usr/bin/python3), MPI_BENCH_TIMEOUT (seconds
# per program run; default 120 with --quick, else 600), MPI_BENCH_PROBE_WAIT
# (seconds a program may wait for the CPU placement the run began with,
# bench/mpi/probelib.sh; default 20, 0: never).
#
# Exit status: 0 when every run succeeded (a library that is not installed
# is skipped with a message; run.sh installs them), 1 if a run failed
# (crash, wrong result, timeout) or the report or plots failed, 2 on a usage
# error.  The numbers never decide the status.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=$HERE/../../build
OUT=
QUICK=
ROUNDS=
RANKS="2 4"
OPS="barrier bcast reduce allreduce allgather alltoall reduce_scatter_block"
IMPLS=viaduct,openmpi,mpich
MAX_SIZE=
OFFSET=
P2P=0
PYTHON=${PYTHON:-/usr/bin/python3}
FAILED=0

usage() { sed -n 's/^# \{0,1\}//; 16,41p' "${BASH_SOURCE[0]}" >&2; exit 2; }
note() { printf 'coll.sh: %s\n' "$*" >&2; }

while [ $# -gt 0 ]; do
	case $1 in
	--build) [ $# -ge 2 ] || usage; BUILD=$2; shift ;;
	--out) [ $# -ge 2 ] || usage; OUT=$2; shift ;;
	--quick) QUICK=--quick ;;
	--rounds) [ $# -ge 2 ] && [ "$2" -ge 1 ] 2>/dev/null || usage; ROUNDS=$2; shift ;;
	--ranks) [ $# -ge 2 ] || usage; RANKS=$2; shift ;;
	--ops|--progs) [ $# -ge 2 ] || usage; OPS=$2; shift ;;
	--impl) [ $# -ge 2 ] || usage; IMPLS=$2; shift ;;
	--max-size) [ $# -ge 2 ] || usage; MAX_SIZE=$2; shift ;;
	--offset) [ $# -ge 2 ] && [ "$2" -ge 0 ] 2>/dev/null && [ "$2" -lt 4096 ] || usage
		OFFSET=$2; shift ;;
	--with-p2p) P2P=1 ;;
	-h|--help) usage ;;
	*) note "unknown option $1"; usage ;;
	esac
	shift
done
for n in $RANKS; do
	[ "$n" -ge 1 ] 2>/dev/null || { note "--ranks: '$n' is not a rank count"; exit 2; }
done
for op in $OPS; do
	case $op in
	barrier|bcast|reduce|allreduce|allgather|alltoall|reduce_scatter_block) ;;
	*) note "--ops: no collective '$op'"; exit 2 ;;
	esac
done
ROUNDS=${ROUNDS:-$([ -n "$QUICK" ] && echo 1 || echo 3)}
TMO=${MPI_BENCH_TIMEOUT:-$([ -n "$QUICK" ] && echo 120 || echo 600)}
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || { note "no build tree at '$BUILD' (make build, or --build DIR)"; exit 2; }
OUT=${OUT:-$BUILD/bench-results/coll}
mkdir -p "$OUT/bin" "$OUT/logs" "$OUT/raw" || exit 2
OUT=$(cd "$OUT" && pwd)

# ---------------------------------------------------------------- libraries

LIBS=()         # what runs: viaduct, viaduct-p2p, openmpi, mpich
have() {        # impl commands...: every command present
	local impl=$1 c
	shift
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || [ -x "$c" ] ||
			{ note "skipping $impl: $c missing (bench/mpi/run.sh or make bench installs it)"; return 1; }
	done
}
for impl in ${IMPLS//,/ }; do
	case $impl in
	viaduct) have viaduct "$BUILD/tools/vdcc" "$BUILD/tools/vdrun" && LIBS+=(viaduct) &&
		[ $P2P = 1 ] && LIBS+=(viaduct-p2p) ;;
	openmpi) have openmpi mpicc.openmpi mpirun.openmpi && LIBS+=(openmpi) ;;
	mpich) have mpich mpicc.mpich mpiexec.mpich && LIBS+=(mpich) ;;
	*) note "--impl: no library '$impl'"; exit 2 ;;
	esac
done
[ ${#LIBS[@]} -gt 0 ] || { note "no library to measure"; exit 1; }
OMPI_BTL=vader
if command -v ompi_info >/dev/null; then
	# Open MPI 5 renamed the shared-memory BTL from vader to sm.
	ompi_info --parsable 2>/dev/null | grep -q '^mca:btl:vader:' || OMPI_BTL=sm
fi

build() {       # impl: OUT/bin/mpi_coll.IMPL from the one source
	local cc log=$OUT/logs/build-$1.log
	case $1 in
	viaduct) cc=$BUILD/tools/vdcc ;;
	openmpi) cc=mpicc.openmpi ;;
	mpich) cc=mpicc.mpich ;;
	*) return 0 ;;  # viaduct-p2p runs viaduct's binary
	esac
	echo "+ $cc -O2 -o mpi_coll.$1 coll.c common.c" >"$log"
	"$cc" -O2 -o "$OUT/bin/mpi_coll.$1" "$HERE/coll.c" "$HERE/common.c" >>"$log" 2>&1 ||
		{ note "building coll.c with $cc failed (see $log)"; return 1; }
}
for impl in "${LIBS[@]}"; do build "$impl" || exit 1; done

# ---------------------------------------------------------------- runs

# launch IMPL N ARGS...: N ranks, bound one per core up to 2, else unbound.
launch() {
	local impl=$1 n=$2 bind=() envs=()
	shift 2
	case $impl in
	viaduct|viaduct-p2p)
		[ "$n" -le 2 ] && bind=(--bind-to core)
		[ "$impl" = viaduct-p2p ] && envs=(VIADUCT_MPI_COLL_SHM=0)
		env "${envs[@]}" timeout -k 5 "$TMO" "$BUILD/tools/vdrun" -n "$n" "${bind[@]}" \
			"$OUT/bin/mpi_coll.viaduct" "$@" ;;
	openmpi)
		bind=(--bind-to none --oversubscribe)
		[ "$n" -le 2 ] && bind=(--bind-to core --map-by core)
		OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 5 "$TMO" \
			mpirun.openmpi -np "$n" "${bind[@]}" --allow-run-as-root \
			--mca btl "self,$OMPI_BTL" "$OUT/bin/mpi_coll.openmpi" "$@" ;;
	mpich)
		[ "$n" -le 2 ] && bind=(-bind-to core)
		timeout -k 5 "$TMO" mpiexec.mpich -n "$n" "${bind[@]}" "$OUT/bin/mpi_coll.mpich" "$@" ;;
	esac
}

context() {     # csv metric text: a context row of the whole run
	printf 'context,run,0,%s,"%s"\n' "$2" "$(echo "$3" | tr -d '"\n')" >>"$1"
}

# Where the two CPUs are (bench/mpi/probelib.sh, as in run.sh): each
# program waits for the placement the benchmark began with, one during
# which it moved is run once more, and only the kept run's rows, with its
# probes, reach the round's CSV.
. "$HERE/probelib.sh"
PROBE_TMP=$OUT/run

# one_run IMPL N LOG ARGS...: the program, its rows into $PROBE_CSV.
one_run() {
	local impl=$1 n=$2 log=$3
	shift 3
	launch "$impl" "$n" "$@" --label "$impl" --csv "$PROBE_CSV" >>"$log" 2>&1
}

rm -f "$OUT"/raw/coll-*.csv "$OUT"/logs/*-n*.log
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
awk -v l="${LOAD%% *}" 'BEGIN { exit !(l > 0.5) }' &&
	note "load average is $LOAD: other work competes for the CPUs; figures will scatter"
ARGS=()
[ -n "$QUICK" ] && ARGS+=(--quick)
[ -n "$MAX_SIZE" ] && ARGS+=(--max-size "$MAX_SIZE")
[ -n "$OFFSET" ] && ARGS+=(--offset "$OFFSET")
set -- "${LIBS[@]}"
probe_init "$BUILD/bench/line_probe"
for r in $(seq 1 "$ROUNDS"); do
	for n in $RANKS; do
		csv=$OUT/raw/coll-$n-$r.csv
		rep0=$PROBE_REPEATED
		echo "section,case,x,metric,value" >"$csv"
		context "$csv" load_before "$(cut -d' ' -f1-3 /proc/loadavg)"
		context "$csv" date "$(date -u '+%Y-%m-%d %H:%M UTC')"
		context "$csv" probe_reference_ns "${PROBE_REF:-none}"
		context "$csv" probe_wait_s "$PROBE_WAIT"
		context "$csv" buffer_offset "${OFFSET:-0}"
		for op in $OPS; do
			for impl in "$@"; do
				log=$OUT/logs/$op-n$n-$impl.log
				echo "coll.sh: round $r of $ROUNDS, $op, $n ranks, $impl"
				echo "# round $r" >>"$log"
				probe_measure "$csv" "$impl" "coll.sh: $op, $n ranks, $impl" \
					one_run "$impl" "$n" "$log" --op "$op" "${ARGS[@]}"
				rc=$?
				if [ $rc != 0 ]; then
					why="exit $rc"
					[ $rc = 124 ] && why="killed after ${TMO}s (MPI_BENCH_TIMEOUT)"
					note "FAILED: $op, $n ranks, $impl: $why; log $log"
					context "$csv" failed "$op n=$n $impl: $why"
					FAILED=1
				fi
			done
			set -- "${@:2}" "$1"    # the next run starts with the next library
		done
		context "$csv" probe_repeated "$((PROBE_REPEATED - rep0))"
	done
done

"$PYTHON" "$HERE/coll_report.py" --csv "$OUT/coll.csv" "$OUT"/raw/coll-*.csv | tee "$OUT/coll.txt"
[ "${PIPESTATUS[0]}" = 0 ] || FAILED=1
"$PYTHON" "$HERE/coll_plot.py" "$OUT/coll.csv" "$OUT" || FAILED=1
echo "coll.sh: tables above and in $OUT/coll.txt, $OUT/coll.csv, plots $OUT/coll-*.png, logs $OUT/logs"
exit $FAILED
