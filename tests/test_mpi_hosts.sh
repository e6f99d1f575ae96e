#!/bin/bash
# SPDX-License-Identifier: MIT
# MPI across two hosts (network namespaces joined by veth): MPICH's Hydra
# starts the ranks on both (its launcher runs each host's part in that
# host's namespace); each rank reaches the ranks of its own host through
# shm and the others through the ofi provider.  Point to point, many
# messages in flight, collectives, communicators, for 2, 3 and 4 ranks
# round robin and for two ranks on each host; and a rank killed on the
# second host ends the whole job with a non-zero status.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need p2p window coll comm reduce jobctl coll_shm
HYDRA=$(command -v mpiexec.hydra || true)
if [ -z "$HYDRA" ]; then
	echo "SKIP: mpiexec.hydra not installed (Debian package mpich)"
	exit 77
fi
mt_need_ofi
# shellcheck source=tests/netns.sh
. "$(dirname "$0")/netns.sh"
vd_netns_up
rsh=$(mktemp /tmp/viaduct-nsrsh.XXXXXX)
trap 'rm -f "$mt_log" "$rsh"; vd_netns_cleanup' EXIT
# Hydra's launcher, called as ssh would be: [options] HOST COMMAND.
vd_netns_agent "$rsh"
export VIADUCT_OFI_PROVIDER=tcp
# hydra N PROG ARGS...: ranks round-robin over the two hosts (HOSTS
# overrides: "a:2,b:2" puts ranks 0-1 on a, 2-3 on b)
hydra() {
	local n=$1
	shift
	vd_in A timeout -k 5 60 "$HYDRA" -hosts "${HOSTS:-$VD_IP_A,$VD_IP_B}" -launcher ssh \
		-launcher-exec "$rsh" -n "$n" "$@"
}
for n in 2 3 4; do
	for p in p2p window coll comm reduce; do
		if hydra "$n" "$(mt_prog $p)" >"$mt_log" 2>&1; then
			mt_ok "$p across two hosts n=$n"
		else
			mt_bad "$p across two hosts n=$n"
			sed 's/^/     | /' "$mt_log" | tail -20
		fi
	done
done
# With no provider named, libfabric's net (native RDM over TCP) rather
# than tcp;ofi_rxm, where it offers both (VIADUCT_DEBUG=1 names it).
for p in p2p window; do
	if VIADUCT_OFI_PROVIDER= VIADUCT_DEBUG=1 hydra 2 "$(mt_prog $p)" >"$mt_log" 2>&1 &&
		{ ! fi_info -p net >/dev/null 2>&1 || grep -q "ofi: net on" "$mt_log"; }; then
		mt_ok "$p across two hosts, the default fabric ($(sed -n 's/.* ofi: \([^ ]*\) on .*/\1/p' "$mt_log" | head -n 1))"
	else
		mt_bad "$p across two hosts, the default fabric"
		sed 's/^/     | /' "$mt_log" | tail -20
	fi
done
# Two ranks on each host: each reaches its neighbour through shm and the
# other host's ranks through ofi, each host's first rank measures the
# switch point from the ring to get, and the collectives go node-local first
# (VIADUCT_DEBUG=1 says which is which), through each node's shared
# segment.
for p in p2p coll comm reduce coll_shm; do
	if HOSTS="$VD_IP_A:2,$VD_IP_B:2" VIADUCT_DEBUG=1 hydra 4 "$(mt_prog $p)" >"$mt_log" 2>&1 &&
		grep -q "rank 0: peers through shm: 1; through ofi: 2 3$" "$mt_log" &&
		grep -q "rank 3: peers through shm: 2; through ofi: 0 1$" "$mt_log" &&
		[ "$(grep -c ": round trips inside this host" "$mt_log")" = 2 ] &&
		[ "$(grep -c ": inside this host, " "$mt_log")" = 4 ] &&
		{ [ $p = p2p ] || grep -q "rank 2: a communicator of 4 ranks: node-aware collectives over 2 nodes, 2 ranks on this one, its leader$" "$mt_log"; } &&
		{ [ $p = p2p ] || [ $p = comm ] ||
		  grep -q "rank 1: a communicator of 2 ranks on this node: collectives through a shared segment" "$mt_log"; }; then
		mt_ok "$p, two ranks on each host: shm inside a host, ofi across"
	else
		mt_bad "$p, two ranks on each host"
		grep -v "^viaduct\[" "$mt_log" | sed 's/^/     | /' | tail -20
	fi
done
# The last rank (on host B for n=2) kills itself; the other must not hang.
t0=$(date +%s)
hydra 2 "$(mt_prog jobctl)" kill >"$mt_log" 2>&1
rc=$?
t1=$(date +%s)
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $((t1 - t0)) -lt 30 ]; then
	mt_ok "a rank killed on the second host ends the job (exit $rc, $((t1 - t0)) s)"
else
	mt_bad "a rank killed on the second host: exit $rc after $((t1 - t0)) s"
	sed 's/^/     | /' "$mt_log" | tail -20
fi
mt_done
