#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/mpi/coll_mismatch.c under vdrun on 2, 3 and 4 ranks: erroneous
# collective calls whose ranks disagree on sizes or counts (or that one
# rank cannot carry out), under MPI_ERRORS_RETURN.  On a node's communicator (the
# shared segment) every rank must get an error, and the correct
# collectives after it on the same communicator must all work; without
# the segment (point to point, Alltoall only: its pairwise exchange goes
# on after a truncated block) a rank may complete instead, and the
# collectives after it must still work.  Each run is bounded (20 s alarm
# in the program, 30 s here).
# Optional arguments after the build directory: CASE... to run only those.
MT_TIMEOUT=${MT_TIMEOUT:-30}
. "$(dirname "$0")/mpi/runlib.sh"
mt_need coll_mismatch
shift
CASES=${*:-alltoall_small alltoall_large alltoall_zero alltoall_sides alltoall_strided
	rs_total rs_split rs_large rs_phases rs_zero rs_block
	bcast_long bcast_short bcast_split}
for c in $CASES; do
	for n in 2 3 4; do
		mt_run "mismatch $c" "$n" -- coll_mismatch "$c" strict
	done
done
# Every block read straight from its owner (coll_shm_direct.c): the
# same first-phase check must stop every rank, also where a rank reads
# from some members before it sees the one that differs (3, 4 ranks).
for c in alltoall_small alltoall_large alltoall_zero alltoall_sides alltoall_strided; do
	for n in 2 3 4; do
		mt_run "mismatch $c, read directly" "$n" VIADUCT_MPI_COLL_DIRECT_MIN=1 \
			-- coll_mismatch "$c" strict
	done
done
# Bcast at 2 ranks with a CPU each, however many this machine has: the
# root's size copied by both members, the others' by one.
for c in bcast_long bcast_short bcast_split; do
	mt_run "mismatch $c, not crowded" 2 VIADUCT_MPI_COLL_CROWDED=no -- coll_mismatch "$c" strict
done
# cases MODE RANKS CASES LABEL [VAR=VALUE...]: each case at each rank count.
cases() {
	local mode=$1 ranks=$2 list=$3 label=$4 c n
	shift 4
	for c in $list; do
		for n in $ranks; do
			mt_run "mismatch $c$label" "$n" "$@" -- coll_mismatch "$c" "$mode"
		done
	done
}
# Bcast through the segment (below the direct reads' size, or every
# size with VIADUCT_MPI_COLL_DIRECT_MIN=0: several chunks), and across
# the two paths: every rank whose size differs from the root's fails and
# the phases stay aligned; the root does not wait for the others, so it
# may not know.
cases receivers "2 3 4" "bcast_seg_long bcast_seg_short bcast_seg_direct bcast_direct_seg" ""
# Sizes small enough to travel stamped (and just past): a stamp is
# signed with its size, so one of another size (or none) never passes
# for the member's own.
cases receivers "2 3" "bcast_tiny_long bcast_tiny_short bcast_tiny_seg bcast_seg_tiny
	bcast_lines bcast_edge" ""
cases strict "2 3" "allreduce_tiny allreduce_op_tiny" ""
cases root "2 3" "reduce_tiny" ""
cases receivers "2 4" "bcast_long bcast_short" ", through the segment" VIADUCT_MPI_COLL_DIRECT_MIN=0
# Allreduce and Allgather sign their first phase with the size (and the
# op): every rank fails there and the phases stay aligned, also against
# a rank that reads directly, and over several chunks of the segment.
cases strict "2 3 4" "allreduce_count allreduce_cross allreduce_op allgather_count
	allgather_cross allgather_zero" ""
cases strict "2 4" "allreduce_chunks allgather_chunks" ", through the segment" \
	VIADUCT_MPI_COLL_DIRECT_MIN=0
# Bcast whose root takes several chunks of the segment while the others
# read directly (alone, or at 2 ranks copied by both): they follow the
# root's phases.  Zero counts take a phase too.
cases receivers "2 3 4" "bcast_chunks_direct bcast_chunks_split" ", root in chunks" \
	VIADUCT_MPI_COLL_DIRECT_MIN=100000 VIADUCT_MPI_COLL_CROWDED=no
cases receivers "2 3" "bcast_zero_root bcast_zero_others" ""
cases strict "2 3" "allreduce_zero allgather_sides allgather_short" ""
# An argument error that only one rank sees: it takes its turn refused.
cases strict "2 3" "bcast_args allgather_args allreduce_args alltoall_args" ""
# Different paths: a user op at one rank, MPI_SUM at the others.
cases strict "2 3" "allreduce_userop rs_userop" ""
cases root "2 3" "reduce_userop" ""
# Argument errors that hide the path the others take (an invalid op or
# root), or that only one member of a Reduce sees: on a node's segment
# every such call begins with a signed phase, taken refused.
cases strict "2 3" "allreduce_badop rs_args" ""
cases root "2 3" "reduce_zero reduce_args reduce_badroot" ""
# A rooted Reduce signs its first phase: whoever waits there fails (the
# root always; non-roots whose vector is one small chunk do not wait),
# and every member stops after that phase.
cases root "2 3 4" "reduce_count reduce_root" ""
cases strict "2 3 4" "reduce_cross" ""
cases strict "2 4" "reduce_chunks" ", through the segment" VIADUCT_MPI_COLL_DIRECT_MIN=0
# A rank whose staging copy cannot be allocated takes its turn refused:
# it gets MPI_ERR_NO_MEM, the others an error (but a Bcast's root, which
# does not wait), and the phases stay aligned.  The sanitizers'
# allocators must return NULL rather than abort.
nomem_env=("ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1"
	"TSAN_OPTIONS=${TSAN_OPTIONS:+$TSAN_OPTIONS:}allocator_may_return_null=1")
cases strict "2 3" "bcast_nomem_root allgather_nomem" "" "${nomem_env[@]}"
cases receivers "2 3" "bcast_nomem_member" "" "${nomem_env[@]}"
# Reductions of different lengths: each member compares the others'
# exposed lengths with its own, and every one fails the done phase.
for c in allreduce_count reduce_count; do
	for n in 2 3; do
		mt_run "mismatch $c, read directly" "$n" VIADUCT_MPI_COLL_DIRECT_MIN=1 \
			VIADUCT_MPI_COLL_CROWDED=no -- coll_mismatch "$c" strict
	done
done
for c in alltoall_small alltoall_large alltoall_zero alltoall_sides; do
	mt_run "mismatch $c, point to point" 3 VIADUCT_MPI_COLL_SHM=0 -- coll_mismatch "$c" lenient
done
# The segment off at one rank only: all fall back to point to point
# together (a rank left out had the others wait for it in the segment).
for r in 0 2; do
	mt_run "mismatch alltoall_small, segment off at rank $r" 3 MISMATCH_SHM_OFF_RANK=$r \
		-- coll_mismatch alltoall_small lenient
done
mt_done
