#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/pmpi.c: a profiling tool's MPI_ wrappers see each of the
# program's calls once and none of the library's own; every exported MPI_
# function has its PMPI_ twin.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need pmpi
so=$(ls "$B"/src/mpi/libviaduct_mpi.so 2>/dev/null || ls "$B"/src/libviaduct_mpi.so 2>/dev/null)
if [ -n "$so" ]; then
	syms=$(nm -D --defined-only "$so" | awk '{ print $3 }' | sed 's/@.*//')
	missing=$(comm -23 <(echo "$syms" | grep '^MPI_' | sort -u) \
		<(echo "$syms" | grep '^PMPI_' | sed 's/^P//' | sort -u))
	if [ -n "$missing" ]; then
		echo "FAIL: exported without a PMPI_ twin: $missing"
		mt_fail=$((mt_fail + 1))
	else
		echo "ok   every MPI_ export has its PMPI_"
		mt_pass=$((mt_pass + 1))
	fi
fi
for n in 1 2 3; do
	mt_run "pmpi" "$n" -- pmpi
done
mt_done
