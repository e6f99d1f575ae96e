#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/nbc.c under vdrun for 1, 2, 3, 4 and 7 ranks, and at 4 ranks
# with every transfer forced eager and forced rendezvous (a send then
# completes only when the receiver's schedule has moved).
. "$(dirname "$0")/mpi/runlib.sh"
mt_need nbc
for n in $MT_RANKS; do
	mt_run nbc "$n" -- nbc
done
mt_run "nbc, eager" 4 VIADUCT_MPI_PROTOCOL=eager -- nbc
mt_run "nbc, rendezvous" 4 VIADUCT_MPI_PROTOCOL=rndv -- nbc
mt_done
