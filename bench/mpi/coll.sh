#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/mpi/coll.sh -- node-local collectives (docs/bench-mpi.md,
# "Collectives on one node"): barrier, bcast, reduce and allreduce of
# bench/mpi at 2 ranks (bound to cores 0 and 1) and 4 ranks (unbound:
# more ranks than cores), for viaduct with its shared-segment collectives,
# viaduct with them off (VIADUCT_MPI_COLL_SHM=0: point to point), Open MPI
# and MPICH.  Every round runs each program once per library, the
# libraries in rotating order; the report takes per size the median over
# rounds of each run's median, and prints the ratios to viaduct.
#
# Usage: bench/mpi/coll.sh [--build DIR] [--out DIR] [--rounds N] [--ranks "2 4"]
#                          [--progs "barrier bcast reduce allreduce"]
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=$HERE/../../build
OUT=
ROUNDS=3
RANKS="2 4"
PROGS="barrier bcast reduce allreduce"
PYTHON=${PYTHON:-/usr/bin/python3}
TMO=${MPI_BENCH_TIMEOUT:-300}
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2; shift ;;
	--out) OUT=$2; shift ;;
	--rounds) ROUNDS=$2; shift ;;
	--ranks) RANKS=$2; shift ;;
	--progs) PROGS=$2; shift ;;
	*) sed -n 's/^# \{0,1\}//; 4,15p' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
	esac
	shift
done
BUILD=$(cd "$BUILD" && pwd) || exit 2
OUT=${OUT:-$BUILD/bench-results/coll}
mkdir -p "$OUT/bin" "$OUT/logs" || exit 2
IMPLS="viaduct viaduct-p2p openmpi mpich"
OMPI_BTL=vader
ompi_info --parsable 2>/dev/null | grep -q '^mca:btl:vader:' || OMPI_BTL=sm

build() {       # impl prog
	local cc
	case $1 in
	viaduct) cc=$BUILD/tools/vdcc ;;
	openmpi) cc=mpicc.openmpi ;;
	mpich) cc=mpicc.mpich ;;
	esac
	"$cc" -O2 -o "$OUT/bin/$1-$2" "$HERE/$2.c" "$HERE/common.c" -lm
}

launch() {      # impl n prog args...
	local impl=$1 n=$2 bind
	shift 2
	case $impl in
	viaduct|viaduct-p2p)
		bind=(); [ "$n" -le 2 ] && bind=(--bind-to core)
		env $([ $impl = viaduct-p2p ] && echo VIADUCT_MPI_COLL_SHM=0) \
			timeout -k 5 "$TMO" "$BUILD/tools/vdrun" -n "$n" "${bind[@]}" \
			"$OUT/bin/viaduct-$1" "${@:2}" ;;
	openmpi)
		bind=(--bind-to none --oversubscribe); [ "$n" -le 2 ] && bind=(--bind-to core --map-by core)
		OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 5 "$TMO" \
			mpirun.openmpi -np "$n" "${bind[@]}" --allow-run-as-root \
			--mca btl "self,$OMPI_BTL" "$OUT/bin/openmpi-$1" "${@:2}" ;;
	mpich)
		bind=(); [ "$n" -le 2 ] && bind=(-bind-to core)
		timeout -k 5 "$TMO" mpiexec.mpich -n "$n" "${bind[@]}" "$OUT/bin/mpich-$1" "${@:2}" ;;
	esac
}

for p in $PROGS; do
	for i in viaduct openmpi mpich; do
		build "$i" "$p" >"$OUT/logs/build-$i-$p.log" 2>&1 || { echo "build $i $p failed"; exit 1; }
	done
done
rm -f "$OUT"/coll-*.csv
set -- $IMPLS
for r in $(seq 1 "$ROUNDS"); do
	for n in $RANKS; do
		for p in $PROGS; do
			for i in "$@"; do
				echo "round $r: $p n=$n $i"
				launch "$i" "$n" "$p" --quick --label "$i" \
					--csv "$OUT/coll-$n-$r.csv" >>"$OUT/logs/$p-$n-$i.log" 2>&1 ||
					echo "  failed (see $OUT/logs/$p-$n-$i.log)"
			done
		done
	done
	set -- "${@:2}" "$1"    # the next round starts with the next library
done
"$PYTHON" "$HERE/coll_report.py" "$OUT" $RANKS
