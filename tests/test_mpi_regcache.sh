#!/bin/bash
# SPDX-License-Identifier: MIT
# The registration cache holds a window of distinct buffers: 100 messages
# of 160 KiB (get) from and into buffers of their own, four rounds, data
# checked; VIADUCT_DEBUG=1 reports how often each rank registered.  Each
# buffer once (100, and some for the switch-point measurement at
# MPI_Init and the collectives) passes; a cache of 64
# entries registered most messages again (over 200).
. "$(dirname "$0")/mpi/runlib.sh"
mt_need regwindow
for proto in auto get rndv; do
	env=(VIADUCT_DEBUG=1 VIADUCT_MPI_REGCACHE_BYTES=64m)
	[ $proto = auto ] || env+=(VIADUCT_MPI_PROTOCOL=$proto)
	mt_run "window of 100 buffers, $proto" 2 "${env[@]}" -- regwindow
	for r in 0 1; do
		n=$(sed -n "s/^viaduct MPI: rank $r: registration cache: [0-9]* hits, \([0-9]*\) registrations.*/\1/p" "$mt_log")
		if [ -n "$n" ] && [ "$n" -ge 100 ] && [ "$n" -le 130 ]; then
			mt_ok "$proto: rank $r registered $n times"
		else
			mt_bad "$proto: rank $r registered ${n:-?} times (expected 100-130)"
			grep "registration cache" "$mt_log" | sed 's/^/     | /'
		fi
	done
done
mt_done
