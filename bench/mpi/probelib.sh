# SPDX-License-Identifier: MIT
#
# bench/mpi/probelib.sh -- where the two CPUs are, for run.sh and coll.sh
# (docs/bench-mpi.md, "Noise").  A virtual machine's two CPUs move between
# physical cores every few seconds (this VM: one cache line's half round
# trip between them about 55 ns, then 240, then 55 again), and every figure
# between two ranks moves with them, up to 2x.  So each measured program
# waits until the CPUs sit as they did when the benchmark began, and a
# program during which they moved is run once more: every library is then
# measured on the same machine.  Source it, then
#   probe_init BINARY      the reference placement: median of 7 probes
#                          (PROBE_REF ns; empty without the binary)
#   probe_now              one probe, ns (empty without the binary)
#   probe_settle           probe until within PROBE_SPREAD of PROBE_REF,
#                          at most PROBE_WAIT seconds (MPI_BENCH_PROBE_WAIT,
#                          default 20; 0: never wait); prints the last probe
#   probe_near A B         true when A and B are within PROBE_SPREAD
#                          (or either is empty)
#   probe_measure DST CASE WHAT CMD ARGS...
#                          run CMD ARGS..., which writes one program's rows
#                          into the file $PROBE_CSV names: after
#                          probe_settle, and once more when the CPUs moved
#                          during it (a note on stderr names WHAT); the kept
#                          run's rows go to DST (without the header line a
#                          program writes into an empty CSV), with its probes
#                          as rows probe,CASE,RUN,line_half_rtt_ns_before|after.
#                          Returns CMD's status (a failed repeat fails, and
#                          the first run's rows stay); PROBE_REPEATED counts
#                          the repeats.  Set PROBE_TMP (a path prefix) first.

PROBE_BIN=
PROBE_REF=
PROBE_TMP=
PROBE_CSV=
PROBE_RUN=0
PROBE_REPEATED=0
PROBE_SPREAD=1.5
PROBE_WAIT=${MPI_BENCH_PROBE_WAIT:-20}
case $PROBE_WAIT in
''|*[!0-9]*)
	echo "MPI_BENCH_PROBE_WAIT='$PROBE_WAIT': a whole number of seconds, please" >&2
	exit 2 ;;
esac

probe_now() {
	[ -n "$PROBE_BIN" ] || return 0
	"$PROBE_BIN" 2>/dev/null | awk '$1 == "line_half_rtt_ns" { print $2 }'
}

probe_init() {
	local i all=
	PROBE_BIN=
	PROBE_REF=
	[ -x "$1" ] || return 0
	PROBE_BIN=$1
	for i in 1 2 3 4 5 6 7; do all="$all $(probe_now)"; sleep 0.1; done
	PROBE_REF=$(echo $all | tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }')
	# A probe that answers nothing (a CPU it cannot pin) is left out.
	[ -n "$PROBE_REF" ] || PROBE_BIN=
}

probe_near() {
	[ -n "$1" ] && [ -n "$2" ] || return 0
	awk -v a="$1" -v b="$2" -v s="$PROBE_SPREAD" 'BEGIN { exit !(a <= b * s && b <= a * s) }'
}

# probe_once CASE CMD ARGS...: one run into $PROBE_CSV, its probes after
# its rows; sets BEFORE and AFTER, returns CMD's status.
probe_once() {
	local case=$1 rc
	shift
	PROBE_RUN=$((PROBE_RUN + 1))
	BEFORE=$(probe_settle)
	: >"$PROBE_CSV"
	"$@"
	rc=$?
	AFTER=$(probe_now)
	[ -n "$BEFORE" ] && printf 'probe,%s,%d,line_half_rtt_ns_before,%s\n' "$case" "$PROBE_RUN" "$BEFORE" >>"$PROBE_CSV"
	[ -n "$AFTER" ] && printf 'probe,%s,%d,line_half_rtt_ns_after,%s\n' "$case" "$PROBE_RUN" "$AFTER" >>"$PROBE_CSV"
	return $rc
}

probe_measure() {
	local dst=$1 case=$2 what=$3 rc keep=1
	shift 3
	PROBE_CSV=$PROBE_TMP-1.csv
	probe_once "$case" "$@"
	rc=$?
	if [ $rc = 0 ] && ! probe_near "$BEFORE" "$AFTER"; then
		echo "$what: the CPUs moved while it ran ($BEFORE -> $AFTER ns): once more" >&2
		PROBE_REPEATED=$((PROBE_REPEATED + 1))
		PROBE_CSV=$PROBE_TMP-2.csv
		probe_once "$case" "$@"
		rc=$?
		[ $rc = 0 ] && keep=2
	fi
	grep -vx 'section,case,x,metric,value' "$PROBE_TMP-$keep.csv" >>"$dst"
	return $rc
}

probe_settle() {
	local v t=0
	v=$(probe_now)
	while [ -n "$PROBE_REF" ] && ! probe_near "$v" "$PROBE_REF" &&
		awk -v t="$t" -v w="$PROBE_WAIT" 'BEGIN { exit !(t < w) }'; do
		sleep 0.25
		t=$(awk -v t="$t" 'BEGIN { print t + 0.25 }')
		v=$(probe_now)
	done
	echo "$v"
}
