#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/env.c: every Init_thread level and plain MPI_Init; arguments
# (one with a space) reach the ranks unchanged.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need env
for n in 1 3; do
	for mode in init single funneled serialized multiple; do
		mt_run "env $mode" "$n" -- env "$mode" arg1 "two words"
	done
done
mt_done
