/* SPDX-License-Identifier: MIT */
/*
 * Erroneous collective calls, and whether the communicator survives them.
 *
 *   coll_mismatch CASE strict|receivers|root|lenient
 *
 * Under MPI_ERRORS_RETURN every rank makes one erroneous call (CASE) on
 * MPI_COMM_WORLD, then a run of correct collectives on it, each result
 * checked: Alltoall (one and several steps of the node-local segment),
 * Reduce_scatter_block, Reduce_scatter, Allreduce, Bcast and Barrier,
 * twice over.  The erroneous call must return MPI_SUCCESS or one of
 * MPI_ERR_TRUNCATE, MPI_ERR_ARG, MPI_ERR_COUNT, MPI_ERR_OTHER,
 * MPI_ERR_NO_MEM, MPI_ERR_TYPE, MPI_ERR_ROOT, MPI_ERR_OP; "strict" also
 * wants an error at every rank (viaduct detects each of these mismatches
 * on a node's communicator), "receivers" at every rank but the root of a Bcast
 * whose root does not wait for the others, "root" at rank 0, the root
 * of a Reduce whose other members do not wait, "lenient" nowhere
 * (another MPI, or point to point).  The cases (rank 0 is the odd one
 * out):
 *
 *   alltoall_small   rank 0 4 ints per destination, the others 8
 *   alltoall_large   3000 ints against 6000 (a different number of steps)
 *   alltoall_zero    0 ints against 8
 *   alltoall_sides   rank 0 sends 4 ints and receives 8, the others 4 and 4
 *   alltoall_strided rank 0 8 ints in a strided type against 4 plain ints
 *   rs_total         Reduce_scatter, rank 0's recvcounts all 2, the others' 3
 *   rs_split         the same total, rank 0's counts 3, 1, 2, ...
 *   rs_large         3000 against 6000 per rank (several chunks)
 *   rs_phases        100 against 600 per rank (one phase against two)
 *   rs_zero          rank 0's recvcounts all 0, the others' 2
 *   rs_block         Reduce_scatter_block, 2 against 3
 *   allreduce_count  Allreduce, 8 ints against 16
 *   allreduce_cross  Allreduce, 8 ints (the segment) against 20000 (read
 *                    directly)
 *   allreduce_chunks Allreduce, 10000 ints against 20000 (several chunks
 *                    of the segment where nothing is read directly)
 *   allreduce_op     Allreduce of 16 ints, MPI_MAX against MPI_SUM
 *   allreduce_tiny   Allreduce, 4 ints against 8 (both stamped)
 *   allreduce_op_tiny Allreduce of 4 ints, MPI_MAX against MPI_SUM
 *   allgather_count  Allgather, 4 ints a rank against 8
 *   allgather_cross  Allgather, 4 ints (the segment) against 8000 (read
 *                    directly)
 *   allgather_zero   Allgather, 0 ints against 8
 *   allgather_chunks Allgather, 10000 ints against 20000 (several chunks
 *                    of the segment where nothing is read directly)
 *   reduce_count     Reduce to 0, the same (one small chunk: only the root
 *                    waits, so only it must fail)
 *   reduce_cross     Reduce to 0, 8 ints (the segment) against 20000 (read
 *                    directly)
 *   reduce_chunks    Reduce to 0, 10000 ints against 20000 (several chunks
 *                    of the segment where nothing is read directly)
 *   reduce_root      Reduce of 16 ints, rank 0 names root 0, the others 1
 *   reduce_tiny      Reduce to 0, 4 ints against 8 (both stamped)
 *   bcast_long       Bcast from rank 0 of 80000 ints, the others expect
 *                    20000 (at 2 ranks the root's size is copied by both
 *                    members and the others' by one: two paths)
 *   bcast_short      the root 20000 ints, the others expect 80000
 *   bcast_split      the root 100000 ints, the others expect 80000 (at 2
 *                    ranks both copied by both members)
 *   bcast_seg_long   the root 100 ints, the others 50 (through the segment)
 *   bcast_seg_short  the root 50 ints, the others 100
 *   bcast_seg_direct the root 100 ints (the segment), the others 8000
 *                    (read directly)
 *   bcast_direct_seg the root 8000 ints, the others 100
 *   bcast_chunks_direct the root 20000 ints, the others 30000 (with
 *                    VIADUCT_MPI_COLL_DIRECT_MIN=100000: the root's take
 *                    several chunks of the segment, the others' are read
 *                    directly)
 *   bcast_chunks_split the root 20000 ints, the others 80000 (the same,
 *                    at 2 ranks copied by both)
 *   bcast_tiny_long  the root 8 ints, the others 4 (both small enough to
 *                    travel stamped, each stamp signed with its size)
 *   bcast_tiny_short the root 4 ints, the others 8
 *   bcast_tiny_seg   the root 4 ints (stamped), the others 50 (not)
 *   bcast_seg_tiny   the root 50 ints, the others 4
 *   bcast_lines      the root 20 ints, the others 30 (both just past the
 *                    stamped size: the first line unstamped)
 *   bcast_edge       the root 12 ints (48 bytes, stamped), the others 13
 *                    (52: the data from the second line)
 *   bcast_zero_root  the root 0 ints, the others 100
 *   bcast_zero_others the root 100 ints, the others 0
 *   allreduce_zero   Allreduce, 0 ints against 16
 *   bcast_nomem_root the root passes 16 TiB of a strided type: its
 *                    packing copy cannot be allocated (the others: 100 ints)
 *   bcast_nomem_member the same at the others (the root: 100 ints)
 *   allgather_nomem  Allgather in place, the same at rank 0 (the others:
 *                    4 ints)
 *   allgather_sides  rank 0 sends 8 ints and receives 4 (its own piece does
 *                    not fit), the others 4 and 4
 *   allgather_short  rank 0 sends 4 ints and receives 8 (its piece is short
 *                    of what the others expect), the others 8 and 8
 *   bcast_args       rank 0 (the root) passes count -1 (an argument error
 *                    only it sees), the others 100 ints
 *   allgather_args   rank 0 receives MPI_DATATYPE_NULL, the others 4 ints
 *   allreduce_args   rank 0 passes count -1, the others 16 ints
 *   allreduce_userop Allreduce of 16 ints, rank 0 with a user op that sums
 *                    (point to point), the others MPI_SUM (the segment)
 *   reduce_userop    the same with Reduce to 0
 *   rs_userop        the same with Reduce_scatter_block, 3 ints a rank
 *   reduce_zero      Reduce to 0, 0 ints against 16
 *   reduce_args      Reduce to 0, rank 0 passes count -1
 *   reduce_badroot   Reduce, rank 0 names root -1, the others 0
 *   allreduce_badop  Allreduce, rank 0 passes MPI_OP_NULL
 *   rs_args          Reduce_scatter_block, rank 0 passes recvcount -1
 *   alltoall_args    Alltoall of 8 ints, rank 0 receives MPI_DATATYPE_NULL
 *
 * MISMATCH_SHM_OFF_RANK=R (environment): rank R runs with
 * VIADUCT_MPI_COLL_SHM=0, the others with the segment on.
 *
 * The *_nomem cases want MPI_ERR_NO_MEM at the rank that could not
 * allocate, or MPI_ERR_ARG where the kernel would lend 16 TiB and the
 * case asks for more than any address space instead (huge_call; the
 * sanitizers' allocators must return NULL: allocator_may_return_null=1).
 */
#include "mpitest.h"

#include <stdbool.h>

#define BIG 6000                /* ints per block of a multi-step Alltoall */

static int *sbuf, *rbuf;

static int error_class(int rc)
{
	int cls = MPI_SUCCESS;

	if (rc != MPI_SUCCESS)
		MPI_Error_class(rc, &cls);
	return cls;
}

static int value(int round, int from, int to, int i)
{
	return round * 1000003 + from * 10007 + to * 101 + i;
}

/* ---- the erroneous call --------------------------------------------------------- */

static int alltoall_ints(int scount, int rcount)
{
	for (int i = 0; i < mt_size * scount; i++)
		sbuf[i] = i;
	return MPI_Alltoall(sbuf, scount, MPI_INT, rbuf, rcount, MPI_INT, MPI_COMM_WORLD);
}

/* Rank 0 sends 8 ints per destination as a vector of 8 blocks of 1 with
 * stride 2; the others 4 plain ints.  Receives: 8 ints at rank 0, 4 at
 * the others, so each rank's own sides agree. */
static int alltoall_strided(void)
{
	MPI_Datatype vec, strided;
	int rc;

	if (mt_rank != 0)
		return alltoall_ints(4, 4);
	MPI_OK(MPI_Type_vector(8, 1, 2, MPI_INT, &vec));
	MPI_OK(MPI_Type_create_resized(vec, 0, 16 * (MPI_Aint)sizeof(int), &strided));
	MPI_OK(MPI_Type_commit(&strided));
	for (int i = 0; i < mt_size * 16; i++)
		sbuf[i] = i;
	rc = MPI_Alltoall(sbuf, 1, strided, rbuf, 8, MPI_INT, MPI_COMM_WORLD);
	MPI_OK(MPI_Type_free(&strided));
	MPI_OK(MPI_Type_free(&vec));
	return rc;
}

static int reduce_scatter_counts(int per_rank, int first, int second)
{
	int *counts = mt_malloc(sizeof(int) * (size_t)mt_size), total = 0, rc;

	for (int i = 0; i < mt_size; i++)
		counts[i] = per_rank;
	if (first >= 0)
		counts[0] = first;
	if (second >= 0 && mt_size > 1)
		counts[1] = second;
	for (int i = 0; i < mt_size; i++)
		total += counts[i];
	for (int i = 0; i < total; i++)
		sbuf[i] = i;
	rc = MPI_Reduce_scatter(sbuf, rbuf, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	free(counts);
	return rc;
}

/* Bcast of n ints from rank 0. */
static int bcast_ints(int n)
{
	int *b = mt_malloc(sizeof(int) * (size_t)n + 1), rc;

	for (int i = 0; i < n; i++)
		b[i] = mt_rank == 0 ? i : -1;
	rc = MPI_Bcast(b, n, MPI_INT, 0, MPI_COMM_WORLD);
	free(b);
	return rc;
}

/* The Bcast cases: ints at the root (rank 0) and at the others. */
static const struct {
	const char *name;
	int root, others;
} bcasts[] = {
	{ "bcast_split", 100000, 80000 },  { "bcast_long", 80000, 20000 },
	{ "bcast_short", 20000, 80000 },   { "bcast_seg_long", 100, 50 },
	{ "bcast_seg_short", 50, 100 },    { "bcast_seg_direct", 100, 8000 },
	{ "bcast_direct_seg", 8000, 100 },  { "bcast_chunks_direct", 20000, 30000 },
	{ "bcast_chunks_split", 20000, 80000 }, { "bcast_zero_root", 0, 100 },
	{ "bcast_zero_others", 100, 0 },   { "bcast_tiny_long", 8, 4 },
	{ "bcast_tiny_short", 4, 8 },      { "bcast_tiny_seg", 4, 50 },
	{ "bcast_seg_tiny", 50, 4 },       { "bcast_lines", 20, 30 },
	{ "bcast_edge", 12, 13 },
};

/* 2^28 elements of 64 KiB each (a strided type): 16 TiB, which no
 * staging copy gets (MPI_ERR_NO_MEM) unless the kernel lends any size
 * (vm.overcommit_memory=1); then 2^30 elements of 1 MiB, more than any
 * address space, which the library refuses as such (MPI_ERR_ARG).  The
 * buffer is never touched: the call fails first. */
static int huge_call(const char *name, MPI_Datatype *t)
{
	void *probe = malloc((size_t)1 << 44);
	int ints = probe ? 1 << 18 : 1 << 14;

	free(probe);
	MPI_OK(MPI_Type_vector(ints, 1, 2, MPI_INT, t));
	MPI_OK(MPI_Type_commit(t));
	if (!strcmp(name, "allgather_nomem"))
		return MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf,
				     probe ? 1 << 30 : 1 << 28, *t, MPI_COMM_WORLD);
	return MPI_Bcast(rbuf, probe ? 1 << 30 : 1 << 28, *t, 0, MPI_COMM_WORLD);
}

static int nomem_call(const char *name, bool odd)
{
	MPI_Datatype t = MPI_DATATYPE_NULL;
	bool mine = strcmp(name, "bcast_nomem_member") ? odd : !odd;
	int rc, cls;

	if (mine)
		rc = huge_call(name, &t);
	else if (!strcmp(name, "allgather_nomem"))
		rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, 4, MPI_INT,
				   MPI_COMM_WORLD);
	else
		rc = MPI_Bcast(rbuf, 100, MPI_INT, 0, MPI_COMM_WORLD);
	if (t != MPI_DATATYPE_NULL)
		MPI_OK(MPI_Type_free(&t));
	cls = error_class(rc);
	if (mine)
		CHECK(cls == MPI_ERR_NO_MEM || cls == MPI_ERR_ARG,
		      "%s: the rank that cannot stage its copy got %d, not MPI_ERR_NO_MEM "
		      "(or MPI_ERR_ARG)", name, rc);
	return rc;
}

/* MPI_SUM of n ints: Allreduce, or Reduce to 0. */
static int sum_ints(int n, bool all)
{
	int *in = mt_malloc(sizeof(int) * (size_t)n), *out = mt_malloc(sizeof(int) * (size_t)n);
	int rc;

	for (int i = 0; i < n; i++)
		in[i] = i;
	rc = all ? MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD)
		 : MPI_Reduce(in, out, n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	free(in);
	free(out);
	return rc;
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	for (int i = 0; i < *len; i++)
		((int *)inout)[i] += ((const int *)in)[i];
}

/* A reduction of 16 ints (Reduce_scatter_block: 3 a rank) whose op is a
 * user op that sums at rank 0, MPI_SUM at the others. */
static int userop_call(const char *name, bool odd)
{
	MPI_Op op = MPI_SUM;
	int rc;

	for (int i = 0; i < 16 + 3 * mt_size; i++)
		sbuf[i] = i;
	if (odd)
		MPI_OK(MPI_Op_create(user_sum, 1, &op));
	if (!strcmp(name, "reduce_userop"))
		rc = MPI_Reduce(sbuf, rbuf, 16, MPI_INT, op, 0, MPI_COMM_WORLD);
	else if (!strcmp(name, "rs_userop"))
		rc = MPI_Reduce_scatter_block(sbuf, rbuf, 3, MPI_INT, op, MPI_COMM_WORLD);
	else
		rc = MPI_Allreduce(sbuf, rbuf, 16, MPI_INT, op, MPI_COMM_WORLD);
	if (odd)
		MPI_OK(MPI_Op_free(&op));
	return rc;
}

/* Reductions where only rank 0's own arguments are wrong. */
static int reduce_args_call(const char *name, bool odd)
{
	for (int i = 0; i < 3 * mt_size + 16; i++)
		sbuf[i] = i;
	if (!strcmp(name, "reduce_zero"))
		return MPI_Reduce(sbuf, rbuf, odd ? 0 : 16, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (!strcmp(name, "reduce_args"))
		return MPI_Reduce(sbuf, rbuf, odd ? -1 : 16, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (!strcmp(name, "reduce_badroot"))
		return MPI_Reduce(sbuf, rbuf, 16, MPI_INT, MPI_SUM, odd ? -1 : 0, MPI_COMM_WORLD);
	if (!strcmp(name, "allreduce_badop"))
		return MPI_Allreduce(sbuf, rbuf, 16, MPI_INT, odd ? MPI_OP_NULL : MPI_SUM,
				     MPI_COMM_WORLD);
	return MPI_Reduce_scatter_block(sbuf, rbuf, odd ? -1 : 3, MPI_INT, MPI_SUM,
					MPI_COMM_WORLD);        /* rs_args */
}

static int erroneous_call(const char *name)
{
	bool odd = mt_rank == 0;

	if (!strcmp(name, "alltoall_small"))
		return odd ? alltoall_ints(4, 4) : alltoall_ints(8, 8);
	if (!strcmp(name, "allreduce_count") || !strcmp(name, "allreduce_tiny")) {
		bool tiny = name[10] == 't';

		for (int i = 0; i < 16; i++)
			sbuf[i] = i;
		return MPI_Allreduce(sbuf, rbuf, (odd ? 8 : 16) >> tiny, MPI_INT, MPI_SUM,
				     MPI_COMM_WORLD);
	}
	if (!strcmp(name, "allreduce_cross") || !strcmp(name, "reduce_cross"))
		return sum_ints(odd ? 8 : 20000, name[0] == 'a');
	if (!strcmp(name, "allreduce_chunks") || !strcmp(name, "reduce_chunks"))
		return sum_ints(odd ? 10000 : 20000, name[0] == 'a');
	if (!strcmp(name, "allreduce_zero")) {
		for (int i = 0; i < 16; i++)
			sbuf[i] = i;
		return MPI_Allreduce(sbuf, rbuf, odd ? 0 : 16, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	}
	if (strstr(name, "_nomem"))
		return nomem_call(name, odd);
	if (!strcmp(name, "allgather_sides")) {
		for (int i = 0; i < 8; i++)
			sbuf[i] = i;
		return MPI_Allgather(sbuf, odd ? 8 : 4, MPI_INT, rbuf, 4, MPI_INT, MPI_COMM_WORLD);
	}
	if (strstr(name, "_userop"))
		return userop_call(name, odd);
	if (!strcmp(name, "reduce_zero") || !strcmp(name, "reduce_args") ||
	    !strcmp(name, "reduce_badroot") || !strcmp(name, "allreduce_badop") ||
	    !strcmp(name, "rs_args"))
		return reduce_args_call(name, odd);
	if (!strcmp(name, "bcast_args"))
		return MPI_Bcast(rbuf, odd ? -1 : 100, MPI_INT, 0, MPI_COMM_WORLD);
	if (!strcmp(name, "allgather_args"))
		return MPI_Allgather(sbuf, 4, MPI_INT, rbuf, 4, odd ? MPI_DATATYPE_NULL : MPI_INT,
				     MPI_COMM_WORLD);
	if (!strcmp(name, "allreduce_args"))
		return MPI_Allreduce(sbuf, rbuf, odd ? -1 : 16, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (!strcmp(name, "allgather_short")) {
		for (int i = 0; i < 8; i++)
			sbuf[i] = i;
		return MPI_Allgather(sbuf, odd ? 4 : 8, MPI_INT, rbuf, 8, MPI_INT, MPI_COMM_WORLD);
	}
	if (!strncmp(name, "allgather_", 10)) {
		bool cross = !strcmp(name, "allgather_cross"), chunks = !strcmp(name, "allgather_chunks");
		int n = chunks ? (odd ? 10000 : 20000) : cross ? (odd ? 4 : 8000) :
			!strcmp(name, "allgather_zero") ? (odd ? 0 : 8) : (odd ? 4 : 8);
		int *in = mt_malloc(sizeof(int) * (size_t)n + 1);
		int *out = mt_malloc(sizeof(int) * (size_t)n * (size_t)mt_size + 1);
		int rc;

		for (int i = 0; i < n; i++)
			in[i] = i;
		rc = MPI_Allgather(in, n, MPI_INT, out, n, MPI_INT, MPI_COMM_WORLD);
		free(in);
		free(out);
		return rc;
	}
	if (!strcmp(name, "allreduce_op") || !strcmp(name, "allreduce_op_tiny")) {
		for (int i = 0; i < 16; i++)
			sbuf[i] = i;
		return MPI_Allreduce(sbuf, rbuf, name[12] ? 4 : 16, MPI_INT,
				     odd ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
	}
	if (!strcmp(name, "reduce_count") || !strcmp(name, "reduce_tiny")) {
		bool tiny = name[7] == 't';

		for (int i = 0; i < 16; i++)
			sbuf[i] = i;
		return MPI_Reduce(sbuf, rbuf, (odd ? 8 : 16) >> tiny, MPI_INT, MPI_SUM, 0,
				  MPI_COMM_WORLD);
	}
	if (!strcmp(name, "reduce_root")) {
		for (int i = 0; i < 16; i++)
			sbuf[i] = i;
		return MPI_Reduce(sbuf, rbuf, 16, MPI_INT, MPI_SUM, odd ? 0 : 1, MPI_COMM_WORLD);
	}
	for (size_t i = 0; i < sizeof(bcasts) / sizeof(bcasts[0]); i++)
		if (!strcmp(name, bcasts[i].name))
			return bcast_ints(odd ? bcasts[i].root : bcasts[i].others);
	if (!strcmp(name, "alltoall_large"))
		return odd ? alltoall_ints(BIG / 2, BIG / 2) : alltoall_ints(BIG, BIG);
	if (!strcmp(name, "alltoall_zero"))
		return odd ? alltoall_ints(0, 0) : alltoall_ints(8, 8);
	if (!strcmp(name, "alltoall_sides"))
		return odd ? alltoall_ints(4, 8) : alltoall_ints(4, 4);
	if (!strcmp(name, "alltoall_strided"))
		return alltoall_strided();
	if (!strcmp(name, "alltoall_args"))
		return MPI_Alltoall(sbuf, 8, MPI_INT, rbuf, 8, odd ? MPI_DATATYPE_NULL : MPI_INT,
				    MPI_COMM_WORLD);
	if (!strcmp(name, "rs_total"))
		return reduce_scatter_counts(odd ? 2 : 3, -1, -1);
	if (!strcmp(name, "rs_split"))
		return odd ? reduce_scatter_counts(2, 3, 1) : reduce_scatter_counts(2, -1, -1);
	if (!strcmp(name, "rs_large"))
		return reduce_scatter_counts(odd ? BIG / 2 : BIG, -1, -1);
	if (!strcmp(name, "rs_phases"))
		return reduce_scatter_counts(odd ? 100 : 600, -1, -1);
	if (!strcmp(name, "rs_zero"))
		return reduce_scatter_counts(odd ? 0 : 2, -1, -1);
	if (!strcmp(name, "rs_block")) {
		for (int i = 0; i < 3 * mt_size; i++)
			sbuf[i] = i;
		return MPI_Reduce_scatter_block(sbuf, rbuf, odd ? 2 : 3, MPI_INT, MPI_SUM,
						MPI_COMM_WORLD);
	}
	fprintf(stderr, "unknown case %s\n", name);
	MPI_Abort(MPI_COMM_WORLD, 2);
	return MPI_ERR_UNKNOWN;
}

/* ---- the correct calls after it ------------------------------------------------- */

static void check_alltoall(int round, int count)
{
	for (int d = 0; d < mt_size; d++)
		for (int i = 0; i < count; i++) {
			sbuf[d * count + i] = value(round, mt_rank, d, i);
			rbuf[d * count + i] = -1;
		}
	MPI_OK(MPI_Alltoall(sbuf, count, MPI_INT, rbuf, count, MPI_INT, MPI_COMM_WORLD));
	for (int s = 0; s < mt_size; s++)
		for (int i = 0; i < count; i++)
			if (!CHECK(rbuf[s * count + i] == value(round, s, mt_rank, i),
				   "Alltoall of %d: from %d element %d is %d, not %d", count, s,
				   i, rbuf[s * count + i], value(round, s, mt_rank, i)))
				return;
}

/* Reduce_scatter with counts i + 1 (varying) or count each (block). */
static void check_reduce_scatter(int round, int count, bool block)
{
	int *counts = mt_malloc(sizeof(int) * (size_t)mt_size), total = 0, before = 0, rc;

	for (int i = 0; i < mt_size; i++) {
		counts[i] = block ? count : i + 1;
		before += i < mt_rank ? counts[i] : 0;
		total += counts[i];
	}
	for (int i = 0; i < total; i++)
		sbuf[i] = value(round, mt_rank, 0, i);
	for (int i = 0; i < counts[mt_rank]; i++)
		rbuf[i] = -1;
	rc = block ? MPI_Reduce_scatter_block(sbuf, rbuf, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD)
		   : MPI_Reduce_scatter(sbuf, rbuf, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CHECK(rc == MPI_SUCCESS, "Reduce_scatter%s returned %d", block ? "_block" : "", rc);
	for (int i = 0; rc == MPI_SUCCESS && i < counts[mt_rank]; i++) {
		int want = 0;

		for (int k = 0; k < mt_size; k++)
			want += value(round, k, 0, before + i);
		if (!CHECK(rbuf[i] == want, "Reduce_scatter%s: element %d is %d, not %d",
			   block ? "_block" : "", i, rbuf[i], want))
			break;
	}
	free(counts);
}

static void check_allreduce_bcast(int round)
{
	int in[10], out[10], root = mt_size - 1;

	for (int i = 0; i < 10; i++)
		in[i] = value(round, mt_rank, 0, i);
	MPI_OK(MPI_Allreduce(in, out, 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	for (int i = 0; i < 10; i++) {
		int want = 0;

		for (int k = 0; k < mt_size; k++)
			want += value(round, k, 0, i);
		CHECK(out[i] == want, "Allreduce: element %d is %d, not %d", i, out[i], want);
	}
	for (int i = 0; i < 100; i++)
		rbuf[i] = mt_rank == root ? value(round, root, 1, i) : -1;
	MPI_OK(MPI_Bcast(rbuf, 100, MPI_INT, root, MPI_COMM_WORLD));
	for (int i = 0; i < 100; i++)
		if (!CHECK(rbuf[i] == value(round, root, 1, i), "Bcast: element %d is %d", i,
			   rbuf[i]))
			break;
}

static bool acceptable(int rc)
{
	int cls = error_class(rc);

	return cls == MPI_SUCCESS || cls == MPI_ERR_TRUNCATE || cls == MPI_ERR_ARG ||
	       cls == MPI_ERR_COUNT || cls == MPI_ERR_OTHER || cls == MPI_ERR_NO_MEM ||
	       cls == MPI_ERR_TYPE || cls == MPI_ERR_ROOT || cls == MPI_ERR_OP;
}

int main(int argc, char **argv)
{
	char msg[MPI_MAX_ERROR_STRING] = "";
	const char *off_at = getenv("MISMATCH_SHM_OFF_RANK"), *rank = getenv("PMI_RANK");
	int rc, len = 0;
	bool strict, receivers, root_only;

	/* One rank with the node's segment off, the others on: they must all
	 * fall back together (before MPI_Init, which reads the setting). */
	if (off_at && rank && !strcmp(off_at, rank))
		setenv("VIADUCT_MPI_COLL_SHM", "0", 1);
	mt_init(&argc, &argv, 20);
	if (argc != 3 || (strcmp(argv[2], "strict") && strcmp(argv[2], "receivers") &&
			  strcmp(argv[2], "root") && strcmp(argv[2], "lenient"))) {
		fprintf(stderr, "usage: %s CASE strict|receivers|root|lenient\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	strict = !strcmp(argv[2], "strict");
	receivers = !strcmp(argv[2], "receivers");
	root_only = !strcmp(argv[2], "root");
	sbuf = mt_malloc(sizeof(int) * (size_t)mt_size * BIG * 2);
	rbuf = mt_malloc(sizeof(int) * (size_t)mt_size * BIG * 2);
	MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	mt_phase = argv[1];
	rc = erroneous_call(argv[1]);
	if (rc != MPI_SUCCESS)
		MPI_Error_string(rc, msg, &len);
	printf("rank %d: %s returned %d%s%s\n", mt_rank, argv[1], rc, len ? ": " : "", msg);
	fflush(stdout);
	CHECK(acceptable(rc), "the erroneous call returned %d (%s)", rc, msg);
	CHECK(!(strict || (receivers && mt_rank != 0) || (root_only && mt_rank == 0)) ||
	      rc != MPI_SUCCESS, "the erroneous call was not detected");
	mt_phase = "after";
	for (int round = 0; round < 2; round++) {
		check_alltoall(round, 8);
		check_alltoall(round, BIG);
		check_reduce_scatter(round, 3, true);
		check_reduce_scatter(round, 0, false);
		check_reduce_scatter(round, BIG, true);
		check_allreduce_bcast(round);
		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	}
	free(sbuf);
	free(rbuf);
	return mt_finish("coll_mismatch");
}
