#!/bin/bash
# SPDX-License-Identifier: MIT
# Windows of 100 nonblocking messages in flight per rank, under every
# protocol (regression test for a hang with full send rings).
. "$(dirname "$0")/mpi/runlib.sh"
mt_need window
for proto in auto eager get rndv; do
	for n in 2 3; do
		mt_run "window $proto" "$n" VIADUCT_MPI_PROTOCOL=$proto -- window
	done
done
mt_done
