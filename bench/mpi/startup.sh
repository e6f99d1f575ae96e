#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/mpi/startup.sh -- MPI start-up, eager vs lazy connections
# (docs/bench-mpi.md, "Start-up").
#
# Usage: bench/mpi/startup.sh BUILD_DIR [--ranks "8 16 32 64"] [--reps N]
#
# Runs BUILD_DIR/bench/mpi_startup (bench/mpi/startup.c) under
# BUILD_DIR/tools/vdrun --oversubscribe, N times for every rank count,
# program (init: MPI_Init + MPI_Finalize; ring: one ring exchange between
# them) and VIADUCT_MPI_CONNECT (eager, lazy), the two settings
# alternating, and prints a Markdown table.  Per run: the wall time of
# the whole job (vdrun, start to exit), the median over the ranks of
# MPI_Init and of MPI_Finalize, the slowest rank's Init-to-Finalize, and
# the largest peak RSS of a rank; each cell is the median over the runs.
set -eu
B=${1:?usage: startup.sh BUILD_DIR [--ranks LIST] [--reps N]}
shift
RANKS="8 16 32 64"
REPS=5
while [ $# -gt 0 ]; do
	case $1 in
	--ranks) RANKS=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	*) echo "startup.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
PROG=$B/bench/mpi_startup
VDRUN=$B/tools/vdrun
[ -x "$PROG" ] && [ -x "$VDRUN" ] || { echo "startup.sh: build $PROG and $VDRUN first" >&2; exit 1; }
RAW=$(mktemp /tmp/vd-startup.XXXXXX)
trap 'rm -f "$RAW"' EXIT

for n in $RANKS; do
	for mode in init ring; do
		for ((rep = 0; rep < REPS; rep++)); do
			for conn in eager lazy; do
				t0=$(date +%s%N)
				out=$(VIADUCT_MPI_CONNECT=$conn timeout 300 "$VDRUN" --oversubscribe -n "$n" \
					"$PROG" "$mode")
				t1=$(date +%s%N)
				echo "job $conn $mode $n $rep $(((t1 - t0) / 1000))" >>"$RAW"
				sed "s/^startup /rank $conn $rep /" <<<"$out" >>"$RAW"
			done
		done
	done
done

python3 - "$RAW" <<'PY'
import sys, statistics as st
from collections import defaultdict
job = defaultdict(list)                 # (conn, mode, n) -> [wall us]
ranks = defaultdict(lambda: defaultdict(list))  # (conn, mode, n) -> rep -> [(init, fin, total, rss)]
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "job":
        job[(f[1], f[2], int(f[3]))].append(int(f[5]))
    elif f[0] == "rank":
        conn, rep, mode, size = f[1], int(f[2]), f[3], int(f[5])
        ranks[(conn, mode, size)][rep].append(tuple(float(x) for x in f[6:10]))
print("| ranks | program | connect | job wall (ms) | MPI_Init, median rank (ms) | MPI_Finalize, median rank (ms) | slowest rank Init..Finalize (ms) | peak RSS, largest rank (MiB) |")
print("|---:|---|---|---:|---:|---:|---:|---:|")
for key in sorted(job, key=lambda k: (k[2], k[1], k[0])):
    conn, mode, n = key
    reps = ranks[key].values()
    med = lambda xs: st.median(xs)
    init = med([st.median(r[0] for r in rs) for rs in reps]) / 1e3
    fin = med([st.median(r[1] for r in rs) for rs in reps]) / 1e3
    tot = med([max(r[2] for r in rs) for rs in reps]) / 1e3
    rss = med([max(r[3] for r in rs) for rs in reps]) / 1024
    print(f"| {n} | {mode} | {conn} | {med(job[key]) / 1e3:.0f} | {init:.1f} | {fin:.1f} | {tot:.1f} | {rss:.1f} |")
PY
