#!/bin/bash
# SPDX-License-Identifier: MIT
# A send inside a host splits (both cores copy) only while its rank has
# no receive open: rank 0 sends 1 MiB back while the 1 MiB it received
# (matched from the unexpected queue, never posted: MPI_Irecv after
# MPI_Probe, or MPI_Imrecv after MPI_Mprobe) is still moving.
# VIADUCT_DEBUG=1 reports the protocols each rank's sends took: rank 1's
# message splits, rank 0's must not (counting only posted receives let
# it split).  The bytes are checked either way.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need splitbusy
# The automatic protocol, whatever the caller's environment forces.
unset VIADUCT_MPI_PROTOCOL VIADUCT_MPI_LARGE VIADUCT_MPI_EAGER_MAX VIADUCT_MPI_PIPELINE_MAX
env=(VIADUCT_DEBUG=1 VIADUCT_MPI_TUNE=0 VIADUCT_MPI_SPLIT_MIN=256k)
for round in 1 2 3 mprobe; do
	arg=()
	[ $round = mprobe ] && arg=(mprobe)
	mt_run "1 MiB each way, round $round" 2 "${env[@]}" -- splitbusy "${arg[@]}"
	for r in 0 1; do
		want=$((r == 1))
		n=$(sed -n "s/^viaduct MPI: rank $r: sends: .* get (\([0-9]*\) of them split).*/\1/p" "$mt_log")
		if [ "$n" = "$want" ]; then
			mt_ok "round $round: rank $r split $n message(s)"
		else
			mt_bad "round $round: rank $r split ${n:-?} message(s) (expected $want)"
			grep "sends:" "$mt_log" | sed 's/^/     | /'
		fi
	done
done
mt_done
