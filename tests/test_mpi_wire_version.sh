#!/bin/bash
# SPDX-License-Identifier: MIT
# Ranks of two viaduct builds whose MPI wire versions differ drop each
# other's messages, so a job that mixed them (two installations across
# hosts, a stale LD_LIBRARY_PATH on one) hung.  Each rank's node
# identity now names its wire version, and rank 0 refuses a job that
# mixes them at MPI_Init with a message naming the rank.  The launcher
# is the minimal PMI-1 server (tests/mpi/pmi1_server.py), which stores
# what another build would have published for rank 1.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need coll
PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "SKIP: no python3"; exit 77; }
SERVER="$(cd "$(dirname "$0")" && pwd)/mpi/pmi1_server.py"
log=$(mktemp /tmp/mpitest-wirever.XXXXXX)
trap 'rm -f "$log"' EXIT

# check NAME TAMPER PATTERN: the job fails (not at the time limit), saying PATTERN
check() {
	local rc=0
	PMI1_TAMPER="$2" timeout -k 5 "$MT_TIMEOUT" "$PY" "$SERVER" wirever 3 "$(mt_prog coll)" >"$log" 2>&1 ||
		rc=$?
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] && grep -q "$3" "$log"; then
		mt_ok "$1: refused at MPI_Init (exit $rc)"
	else
		mt_bad "$1: exit $rc, expected a refusal saying: $3"
		sed 's/^/     | /' "$log" | tail -8
	fi
}

check "rank 1 of wire version 2" "vd-node-1=w2:boot-1" \
	"rank 1 speaks MPI wire version 2, rank 0 speaks [0-9]"
check "rank 2 of a build before wire versions" "vd-node-2=boot-1" \
	"rank 2 speaks MPI wire version 0 (an older viaduct)"
if timeout -k 5 "$MT_TIMEOUT" "$PY" "$SERVER" wirever 3 "$(mt_prog coll)" >"$log" 2>&1 &&
	grep -q "^coll: 3 ranks: ok" "$log"; then
	mt_ok "the same job untampered runs"
else
	mt_bad "the same job untampered"
	sed 's/^/     | /' "$log" | tail -8
fi
mt_done
