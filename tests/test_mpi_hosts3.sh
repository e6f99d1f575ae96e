#!/bin/bash
# SPDX-License-Identifier: MIT
# MPI across three hosts (network namespaces on one bridge) with 1, 2 and
# 3 ranks on them: each rank reaches its own host's ranks through shm and
# the others through ofi.  Point to point, collectives (node-aware over
# three nodes of different sizes), communicators and reductions under
# Hydra and vdrun, in mixed placements; then a rank killed on the third
# host ends the whole job -- every rank on every host gone within 3 s of
# the death (10 under the sanitizers), a non-zero exit, vdrun naming the
# rank and its host, no process of the job left on any host.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need p2p coll comm reduce jobctl
mt_need_ofi
# shellcheck source=tests/netns.sh
. "$(dirname "$0")/netns.sh"
vd_netns_up 3
rsh=$(mktemp /tmp/viaduct-nsrsh.XXXXXX)
trap 'rm -f "$mt_log" "$rsh"; vd_netns_cleanup' EXIT
vd_netns_agent "$rsh"
export VIADUCT_OFI_PROVIDER=tcp
A=$VD_IP_A HB=$VD_IP_B HC=$VD_IP_C
bound_ms=3000
[ -z "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ] || bound_ms=10000
HYDRA=$(command -v mpiexec.hydra || true)

hydra() {
	local hosts=$1 n=$2
	shift 2
	vd_in A timeout -k 5 "$MT_TIMEOUT" "$HYDRA" -hosts "$hosts" -launcher ssh \
		-launcher-exec "$rsh" -n "$n" "$@"
}
vdrun_on() {
	local hosts=$1 n=$2
	shift 2
	vd_in A timeout -k 5 "$MT_TIMEOUT" "$VDRUN" --launch-agent "$rsh" -H "$hosts" -n "$n" "$@"
}
# Processes of the job still alive on any host.
leftovers() {
	local ns p
	for ns in "$VD_NS_A" "$VD_NS_B" "$VD_NS_C"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			grep -qs mpitest_ "/proc/$p/cmdline" && echo "$p"
		done
	done
}
# check LABEL CMD...: the job passes
check() {
	local label=$1
	shift
	if "$@" >"$mt_log" 2>&1; then
		mt_ok "$label"
	else
		mt_bad "$label"
		grep -v "^viaduct\[" "$mt_log" | sed 's/^/     | /' | tail -20
	fi
}

if [ -n "$HYDRA" ]; then
	for p in p2p coll comm reduce; do
		check "$p, Hydra, 3 hosts with 1, 2 and 3 ranks" \
			hydra "$A:1,$HB:2,$HC:3" 6 "$(mt_prog $p)"
	done
	check "coll, Hydra, one rank on each of 3 hosts" hydra "$A,$HB,$HC" 3 "$(mt_prog coll)"
else
	echo "note: mpiexec.hydra not installed (Debian package mpich): vdrun only"
fi
# Which peers each rank reaches how, and the node-aware collectives over
# three nodes: rank 5 (host C's third) has shm to 3 and 4, ofi to the rest.
if VIADUCT_DEBUG=1 vdrun_on "$A:1,$HB:2,$HC:3" 6 "$(mt_prog coll)" >"$mt_log" 2>&1 &&
	grep -q "rank 5: peers through shm: 3 4; through ofi: 0 1 2$" "$mt_log" &&
	grep -q "rank 0: peers through shm: none; through ofi: 1 2 3 4 5$" "$mt_log" &&
	grep -q "node-aware collectives over 3 nodes" "$mt_log"; then
	mt_ok "coll, vdrun, 3 hosts with 1, 2 and 3 ranks: shm inside, ofi across, node-aware"
else
	mt_bad "coll, vdrun, 3 hosts with 1, 2 and 3 ranks"
	grep -v "^viaduct\[" "$mt_log" | sed 's/^/     | /' | tail -20
fi
check "p2p, vdrun, 3 hosts with 3, 1 and 2 ranks" vdrun_on "$A:3,$HB:1,$HC:2" 6 "$(mt_prog p2p)"

# Rank 5, on C, kills itself while the others block in a receive.
now() { date +%s.%N; }
kill_case() {
	local how=$1 rc t1 died ms
	shift
	"$@" "$(mt_prog jobctl)" kill >"$mt_log" 2>&1
	rc=$?
	t1=$(now)
	died=$(sed -n 's/^FAILTIME //p' "$mt_log" | head -n 1)
	ms=$(echo "($t1 - ${died:-0}) * 1000 / 1" | bc)
	local left
	left=$(leftovers)
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ -n "$died" ] && [ "$ms" -le "$bound_ms" ] &&
		[ -z "$left" ] && { [ "$how" != vdrun ] ||
		grep -q "rank 5 on host $HC killed by signal SIGKILL" "$mt_log"; }; then
		mt_ok "a rank killed on host C ends the job under $how: exit $rc, $ms ms after the death"
	else
		mt_bad "rank killed on host C under $how: exit $rc, ${ms} ms after the death" \
			"(bound $bound_ms), left: ${left:-none}"
		sed 's/^/     | /' "$mt_log" | tail -12
		for p in $left; do kill -9 "$p" 2>/dev/null; done
	fi
}
kill_case vdrun vdrun_on "$A:1,$HB:2,$HC:3" 6
[ -z "$HYDRA" ] || kill_case Hydra hydra "$A:1,$HB:2,$HC:3" 6
mt_done
