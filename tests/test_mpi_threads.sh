#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/threads.c (MPI_THREAD_MULTIPLE: four threads per rank sending,
# receiving, probing and reducing at once) under vdrun for 1, 2, 3, 4 and 7
# ranks, and with the large-message protocols forced.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need threads
for n in $MT_RANKS; do
	mt_run threads "$n" -- threads
done
mt_run "threads, rendezvous" 3 VIADUCT_MPI_PROTOCOL=rndv -- threads
mt_run "threads, get" 2 VIADUCT_MPI_PROTOCOL=get -- threads
mt_done
