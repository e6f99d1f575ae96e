#!/bin/bash
# SPDX-License-Identifier: MIT
# Two jobs that their launchers gave the same name (Slurm's JOBID.STEPID
# in two clusters on one host, a launcher's pid in two containers) run at
# the same time on one host: each must find only its own ranks.  They
# used to meet -- the connection addresses came from the job's name
# alone -- and fail with "Connection refused" (or worse, connect across
# jobs); rank 0's random nonce now tells them apart.  The launcher is a
# minimal PMI-1 server (tests/mpi/pmi1_server.py) that takes the name.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need coll
PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "SKIP: no python3"; exit 77; }
SERVER="$(cd "$(dirname "$0")" && pwd)/mpi/pmi1_server.py"
logs=()
for round in 1 2; do
	pids=()
	for job in 1 2 3; do
		log=$(mktemp /tmp/mpitest-same.XXXXXX)
		logs+=("$log")
		timeout -k 5 "$MT_TIMEOUT" "$PY" "$SERVER" "samename" 2 "$(mt_prog coll)" \
			>"$log" 2>&1 &
		pids+=($!)
	done
	for i in 0 1 2; do
		log=${logs[$((${#logs[@]} - 3 + i))]}
		if wait "${pids[$i]}" && grep -q "^coll: 2 ranks: ok" "$log"; then
			mt_ok "round $round: job $((i + 1)) of 3 named alike ran alone"
		else
			mt_bad "round $round: job $((i + 1)) of 3 named alike"
			sed 's/^/     | /' "$log" | tail -10
		fi
	done
done
rm -f "${logs[@]}"
mt_done
