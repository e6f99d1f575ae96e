#!/bin/bash
# SPDX-License-Identifier: MIT
# MPI over the ofi provider on one host (VIADUCT_MPI_NET=ofi: what a job
# spread over several hosts uses for every pair): point to point, many
# messages in flight, collectives, communicators, under the default
# protocols and forced eager, get and rendezvous (an RDMA write with
# immediate data under flow control waits for the target's receive), and
# pipelined.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need p2p p2p_nb p2p_pipe window coll comm nbc
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
	# libfabric's net provider, the default next to tcp;ofi_rxm: p2p's
	# idle check fails on a rank that cannot sleep there.
	mt_run "p2p over ofi (net)" "$n" VIADUCT_OFI_PROVIDER=net -- p2p
	mt_run "window over ofi (net)" "$n" VIADUCT_OFI_PROVIDER=net -- window
	# Above the pipelined sizes get goes up to VIADUCT_MPI_NET_GET_MAX
	# (1 MiB), rendezvous above; with 0, rendezvous from there on.
	mt_run "p2p over ofi (net), no get" "$n" VIADUCT_OFI_PROVIDER=net \
		VIADUCT_MPI_NET_GET_MAX=0 -- p2p
	mt_run "window over ofi (net), no get" "$n" VIADUCT_OFI_PROVIDER=net \
		VIADUCT_MPI_NET_GET_MAX=0 -- window
	# Pipelined across hosts: p2p_pipe's own cases (every message up to
	# its 128 KiB in parts), and p2p with every message above 1 KiB.
	mt_run "p2p_pipe over ofi" "$n" VIADUCT_MPI_NET_PIPELINE_MAX=131072 -- p2p_pipe
	mt_run "p2p over ofi, pipelined from 1 KiB" "$n" VIADUCT_MPI_NET_EAGER_MAX=1024 \
		VIADUCT_MPI_NET_PIPELINE_MAX=16m -- p2p
done
# What a rank keeps resident after MPI_Init over the fabric: 165 MiB when
# rxm sized its connections' receive queues from the tcp provider's
# (docs/mpi.md, "Across hosts"); about 30-60 MiB with the default the
# library sets.  The bound leaves room for other libfabric versions.
# Sanitizers' shadow memory is resident too: release builds only.
startup=$B/bench/mpi_startup
if [ -x "$startup" ] && [ -z "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ]; then
	rss=$(timeout 60 "$VDRUN" -n 2 "$startup" init 2>/dev/null | awk '{print $NF}' | sort -n | tail -1)
	if [ -n "$rss" ] && [ "$rss" -le $((100 * 1024)) ]; then
		mt_ok "peak RSS of a rank over ofi: $((rss / 1024)) MiB (at most 100)"
	else
		mt_bad "peak RSS of a rank over ofi: '${rss:-no figure}' KiB, more than 100 MiB"
	fi
fi
# libfabric is loaded by ranks that use the fabric only: a job on one
# host over shm never maps it (its dependencies sleep 0.2 s at load).
hello=$B/examples/mpi_hello
if [ -x "$hello" ]; then
	loads() { LD_DEBUG=files timeout 60 "$VDRUN" -n 2 "$hello" 2>&1 | grep -c "file=[^ ]*libfabric[.]so[^ ]* .*loaded by"; }
	over_ofi=$(loads)
	over_shm=$(VIADUCT_MPI_NET=shm loads)
	if [ "$over_ofi" -eq 2 ] && [ "$over_shm" -eq 0 ]; then
		mt_ok "libfabric loaded by 2 ranks over ofi, by none over shm"
	else
		mt_bad "libfabric loaded by $over_ofi ranks over ofi (2 expected), $over_shm over shm (0)"
	fi
fi
mt_done
