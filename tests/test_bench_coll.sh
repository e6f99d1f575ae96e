#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/mpi/coll.c (build/bench/mpi_coll) under vdrun: every collective at
# 1 to 4 ranks, small sizes and short runs -- each size's first call is
# checked against a serial computation, so a wrong result fails here --
# with and without the shared segment; bad options end with status 2; and
# bench/mpi/coll_report.py on those CSVs and on made-up figures whose
# verdict is known (MISS where viaduct is slower than the better peer).
set -u
B=${1:-${VIADUCT_BUILD:-}}
HERE=$(cd "$(dirname "$0")" && pwd)
VDRUN=$B/tools/vdrun
PROG=$B/bench/mpi_coll
PY=/usr/bin/python3
[ -x "$VDRUN" ] && [ -x "$PROG" ] || { echo "SKIP: $VDRUN or $PROG not built"; exit 77; }
[ -x "$PY" ] || { echo "SKIP: no $PY"; exit 77; }
OPS="barrier bcast reduce allreduce allgather alltoall reduce_scatter_block"
T=$(mktemp -d /tmp/bench-coll.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# run LABEL N [ENV...] -- ARGS: expect exit 0
run() {
	local label=$1 n=$2 envs=()
	shift 2
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	if env "${envs[@]}" timeout -k 5 60 "$VDRUN" -n "$n" "$PROG" "$@" >"$T/out" 2>&1; then
		return 0
	fi
	bad "$label n=$n: exit $? ($VDRUN -n $n $PROG $*)"
	sed -n '1,20p' "$T/out" | sed 's/^/     | /'
	return 1
}

# Sizes 4 .. 4 KiB in powers of four (and 8): 7 rows; barrier: 1.
for n in 1 2 3 4; do
	for op in $OPS; do
		csv=$T/coll-$n-1.csv
		run "$op" "$n" -- --op "$op" --quick --max-size 4k --runs 1 --time 0.001 \
			--label viaduct --csv "$csv" || continue
		want=7
		[ "$op" = barrier ] && want=1
		got=$(grep -c "^$op,viaduct,[0-9]*,usec," "$csv")
		if [ "$got" = "$want" ]; then ok "$op n=$n: $got sizes"
		else bad "$op n=$n: $got usec rows in the CSV, want $want"; fi
	done
	# The same binary as another library would be, for the report below.
	run "allgather, segment off" "$n" VIADUCT_MPI_COLL_SHM=0 -- --op allgather --quick \
		--max-size 4k --runs 1 --time 0.001 --label mpich --csv "$T/coll-$n-1.csv" &&
		ok "allgather n=$n without the shared segment"
done

# Bad input: a clear message and status 2, no hang.
expect_usage() {        # label pattern args...
	local label=$1 pat=$2 rc
	shift 2
	timeout -k 5 30 "$VDRUN" -n 2 "$PROG" "$@" >"$T/out" 2>&1
	rc=$?
	if [ $rc != 0 ] && [ $rc != 124 ] && grep -q -- "$pat" "$T/out"; then ok "$label: refused"
	else bad "$label: exit $rc, output: $(head -3 "$T/out" | tr '\n' ' ')"; fi
}
expect_usage "no --op" "NAME: barrier bcast"
expect_usage "--op nope" "NAME: barrier bcast" --op nope
expect_usage "reduce --min-size 6" "multiple of 4" --op reduce --min-size 6
expect_usage "--max-size 2g" "max-size" --op bcast --max-size 2048m

# The report on the real CSVs: a table and a summary per collective and rank count.
if "$PY" "$HERE/../bench/mpi/coll_report.py" --csv "$T/coll.csv" "$T"/coll-*-1.csv >"$T/report" 2>&1; then
	tables=$(grep -c '^  summary: ' "$T/report")
	rows=$(($(wc -l <"$T/coll.csv") - 1))
	if [ "$tables" = 28 ] && [ "$rows" = $((4 * (6 * 7 + 1))) ]; then
		ok "coll_report.py: $tables tables, $rows CSV rows"
	else bad "coll_report.py: $tables tables (want 28), $rows CSV rows (want 172)"; fi
	# allgather has a peer here (the segment-off run, labelled mpich): a ratio per size.
	if grep -q '^  allgather, 3 ranks: misses [0-9]* of 7 sizes, worst ratio' "$T/report"; then
		ok "coll_report.py: allgather judged at every size"
	else bad "coll_report.py: no allgather verdict over 7 sizes"; sed -n '/^Summary/,$p' "$T/report"; fi
else
	bad "coll_report.py failed: $(tail -3 "$T/report")"
fi

# Made-up figures: viaduct 2.0 us against 1.0 and 3.0 (ratio 2: MISS),
# 0.5 against 1.0 (0.5), over two rounds whose medians give these.
for r in 1 2; do
	{
		echo "section,case,x,metric,value"
		echo "bcast,viaduct,4,usec,2.0"
		echo "bcast,openmpi,4,usec,$([ $r = 1 ] && echo 0.9 || echo 1.1)"
		echo "bcast,mpich,4,usec,3.0"
		echo "bcast,viaduct,8,usec,0.5"
		echo "bcast,openmpi,8,usec,1.0"
	} >"$T/fake-$r"
	mkdir -p "$T/f$r" && mv "$T/fake-$r" "$T/f$r/coll-2-$r.csv"
done
"$PY" "$HERE/../bench/mpi/coll_report.py" --csv "$T/fake.csv" "$T"/f*/coll-2-*.csv >"$T/report" 2>&1
if grep -q 'bcast, 2 ranks: misses 1 of 2 sizes, worst ratio 2.00 at 4 B' "$T/report" &&
	grep -Eq '^ +4 B .* 2\.00 +MISS$' "$T/report" && ! grep -Eq '^ +8 B .*MISS' "$T/report" &&
	grep -q '^bcast,2,4,2,,1,3,openmpi,2.0000,1,2$' "$T/fake.csv"; then
	ok "coll_report.py: made-up figures give the known verdict"
else
	bad "coll_report.py on made-up figures:"; cat "$T/report" "$T/fake.csv"
fi

echo "$fails failure(s)"
[ $fails = 0 ]
