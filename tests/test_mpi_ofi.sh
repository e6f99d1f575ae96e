#!/bin/bash
# SPDX-License-Identifier: MIT
# MPI over the ofi provider on one host (VIADUCT_MPI_NET=ofi: what a job
# spread over several hosts uses for every pair): point to point, many
# messages in flight, collectives, communicators, under the default
# protocols and forced eager, get and rendezvous (an RDMA write with
# immediate data under flow control waits for the target's receive).
. "$(dirname "$0")/mpi/runlib.sh"
mt_need p2p p2p_nb window coll comm nbc
mt_need_ofi
export VIADUCT_MPI_NET=ofi VIADUCT_OFI_PROVIDER=tcp
for n in 2 3; do
	for p in p2p p2p_nb window coll comm nbc; do
		mt_run "$p over ofi" "$n" -- "$p"
	done
	mt_run "window over ofi, eager" "$n" VIADUCT_MPI_PROTOCOL=eager -- window
	mt_run "window over ofi, get" "$n" VIADUCT_MPI_PROTOCOL=get -- window
	mt_run "window over ofi, rendezvous" "$n" VIADUCT_MPI_PROTOCOL=rndv -- window
	mt_run "p2p over ofi, rendezvous" "$n" VIADUCT_MPI_PROTOCOL=rndv -- p2p
done
mt_done
