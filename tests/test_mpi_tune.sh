#!/bin/bash
# SPDX-License-Identifier: MIT
# The switch points inside a host (from the ring to get, from get to
# split), measured at MPI_Init (src/mpi/tune.c): the host's first rank
# measures, once, and
# every rank of the host reports the same result (VIADUCT_DEBUG=1);
# nothing is measured when the switch points are set by hand or
# VIADUCT_MPI_TUNE=0, and a pair that disagrees about it (one rank's
# environment differs) neither hangs nor measures.  The data checks of
# p2p.c run under the measured switch point.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need lazy p2p

# tune_run N WANT_MEASURED WANT_REPORT [VAR=VALUE...] -- ARGS: rank 0
# measures WANT_MEASURED times (0 or 1), and every rank's report matches
# WANT_REPORT ("measured" or "built-in"), the same on all of them.
tune_run() {
	local label=$1 n=$2 measured=$3 want=$4 out lines kinds
	shift 4
	local envs=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	out=$(vd_run_watched "$((MT_TIMEOUT - 5))" - env VIADUCT_DEBUG=1 "${envs[@]}" \
		"$VDRUN" -n "$n" "$@" 2>&1)
	local rc=$?
	lines=$(grep -c ": inside this host, " <<<"$out")
	kinds=$(grep ": inside this host, " <<<"$out" | sed 's/.*: inside this host, //' | sort -u)
	if [ $rc -ne 0 ] || [ "$(grep -c ': round trips inside this host' <<<"$out")" != "$measured" ] ||
		[ "$lines" != "$n" ] || [ "$(wc -l <<<"$kinds")" != 1 ] ||
		! grep -q -- "$want" <<<"$kinds"; then
		mt_bad "$label n=$n: want rc 0, $measured measurement, $n reports alike ($want)"
		echo "     | rc=$rc reports=$lines"
		grep -E "inside this host|FAIL|viaduct MPI" <<<"$out" | head -20 | sed 's/^/     | /'
		sed -n '/^=== hung after/,$p' <<<"$out" | head -300 | sed 's/^/     | /'
	else
		mt_ok "$label n=$n ($kinds)"
	fi
}

# The measurement decides "measured" or "built-in" by the machine:
# either is right, as long as every rank says the same.
for n in 2 3 4; do
	tune_run "measured at MPI_Init" "$n" 1 "" -- "$(mt_prog lazy)" init
	tune_run "measured, point to point" "$n" 1 "" -- "$(mt_prog p2p)"
done
tune_run "VIADUCT_MPI_PROTOCOL=auto measures" 2 1 "" VIADUCT_MPI_PROTOCOL=auto -- \
	"$(mt_prog lazy)" init
tune_run "VIADUCT_MPI_TUNE=0" 3 0 "built-in" VIADUCT_MPI_TUNE=0 -- "$(mt_prog lazy)" init
tune_run "VIADUCT_MPI_PIPELINE_MAX given" 3 0 "built-in" VIADUCT_MPI_PIPELINE_MAX=65536 -- \
	"$(mt_prog lazy)" init
tune_run "VIADUCT_MPI_EAGER_MAX given" 2 0 "built-in" VIADUCT_MPI_EAGER_MAX=4096 -- \
	"$(mt_prog lazy)" init
tune_run "VIADUCT_MPI_SPLIT_MIN given" 2 0 "built-in" VIADUCT_MPI_SPLIT_MIN=65536 -- \
	"$(mt_prog lazy)" init
tune_run "VIADUCT_MPI_PROTOCOL=get" 2 0 "built-in" VIADUCT_MPI_PROTOCOL=get -- \
	"$(mt_prog p2p)"
# One rank of the pair opts out, the other not (its environment differs):
# the handshake settles it, nobody waits for a measurement.
for r in 0 1; do
	tune_run "rank $r alone sets VIADUCT_MPI_TUNE=0" 3 0 "built-in" -- \
		sh -c "[ \"\$PMI_RANK\" = $r ] && export VIADUCT_MPI_TUNE=0; exec \"\$0\" init" \
		"$(mt_prog lazy)"
done
# A rank outside the pair that sets a switch point keeps its own: the
# pair measures, rank 2 reports the built-in points (where the pair's
# result moved none, both say the same, and this proves nothing).
out=$(vd_run_watched "$((MT_TIMEOUT - 5))" - env VIADUCT_DEBUG=1 "$VDRUN" -n 3 sh -c \
	'[ "$PMI_RANK" = 2 ] && export VIADUCT_MPI_PIPELINE_MAX=131072; exec "$0" init' \
	"$(mt_prog lazy)" 2>&1)
rc=$?
r2=$(sed -n 's/.*rank 2: inside this host, //p' <<<"$out")
if [ $rc -eq 0 ] && [ "$(grep -c ': round trips inside this host' <<<"$out")" = 1 ] &&
	[ "$r2" = "the built-in switch points, split from the built-in size" ]; then
	mt_ok "rank 2 alone sets VIADUCT_MPI_PIPELINE_MAX: it keeps the built-in points"
else
	mt_bad "rank 2 alone sets VIADUCT_MPI_PIPELINE_MAX: rc=$rc, rank 2: $r2"
	grep -E "inside this host|viaduct MPI" <<<"$out" | head -20 | sed 's/^/     | /'
fi
# On an oversubscribed host (more ranks than cores) the measurement
# still ends, and the data still arrives whole.
tune_run "7 ranks" 7 1 "" -- "$(mt_prog p2p)"
mt_done
