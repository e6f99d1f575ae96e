/* SPDX-License-Identifier: MIT */
/*
 * Communicators and groups: Comm_dup (isolated traffic), Comm_split by
 * parity and by rank % 3 with keys reversing the order (and MPI_UNDEFINED),
 * Comm_compare, Comm_group, Group_size/rank/incl/free, point to point and
 * collectives on split communicators, Comm_free, many dup/free cycles.
 */
#include "mpitest.h"

/* World ranks with color c under split(color = rank % mod), in new-rank
 * order (key = -rank: descending world rank).  Returns the count. */
static int members(int mod, int c, int *out)
{
	int k = 0;

	for (int r = mt_size - 1; r >= 0; r--)
		if (r % mod == c)
			out[k++] = r;
	return k;
}

static void check_split(MPI_Comm sc, int mod)
{
	int m[64], k = members(mod, mt_rank % mod, m), size = -1, rank = -1, me = -1, cmp = -1;

	for (int i = 0; i < k; i++)
		if (m[i] == mt_rank)
			me = i;
	MPI_OK(MPI_Comm_size(sc, &size));
	MPI_OK(MPI_Comm_rank(sc, &rank));
	CHECK(size == k && rank == me, "split %%%d: size %d rank %d, expected %d %d", mod, size,
	      rank, k, me);
	MPI_OK(MPI_Comm_compare(MPI_COMM_WORLD, sc, &cmp));
	CHECK(cmp == (k == mt_size ? MPI_CONGRUENT : MPI_UNEQUAL),
	      "compare(WORLD, split %%%d) = %d", mod, cmp);
	/* Allgather of world ranks: the members in new-rank order. */
	int *all = mt_malloc(sizeof(int) * (size_t)k);
	MPI_OK(MPI_Allgather(&mt_rank, 1, MPI_INT, all, 1, MPI_INT, sc));
	for (int i = 0; i < k; i++)
		CHECK(all[i] == m[i], "split %%%d: member %d is world %d, expected %d", mod, i,
		      all[i], m[i]);
	free(all);
	/* Allreduce, Bcast from new rank 0 (the highest world rank). */
	int sum = -1, exp = 0, b = mt_rank;
	for (int i = 0; i < k; i++)
		exp += m[i];
	MPI_OK(MPI_Allreduce(&mt_rank, &sum, 1, MPI_INT, MPI_SUM, sc));
	CHECK(sum == exp, "split %%%d: Allreduce %d, expected %d", mod, sum, exp);
	MPI_OK(MPI_Bcast(&b, 1, MPI_INT, 0, sc));
	CHECK(b == m[0], "split %%%d: Bcast from new rank 0 gave %d, expected %d", mod, b, m[0]);
	/* Ring in the new communicator: sources are new ranks. */
	int l = (me + k - 1) % k, rt = (me + 1) % k, got = -1;
	MPI_Status st;
	MPI_OK(MPI_Sendrecv(&mt_rank, 1, MPI_INT, rt, 9, &got, 1, MPI_INT, MPI_ANY_SOURCE, 9, sc,
			    &st));
	CHECK(got == m[l] && st.MPI_SOURCE == l, "split %%%d ring: got %d from %d, expected %d "
	      "from %d", mod, got, st.MPI_SOURCE, m[l], l);
	MPI_OK(MPI_Barrier(sc));
}

static void test_split(void)
{
	MPI_Comm p, t, u, whole;
	int cmp = -1;

	mt_phase = "split";
	MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, -mt_rank, &p));
	check_split(p, 2);
	MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 3, -mt_rank, &t));
	check_split(t, 3);
	/* Everyone, reversed: same group, other order -> SIMILAR. */
	MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, 0, -mt_rank, &whole));
	MPI_OK(MPI_Comm_compare(MPI_COMM_WORLD, whole, &cmp));
	CHECK(cmp == (mt_size == 1 ? MPI_CONGRUENT : MPI_SIMILAR),
	      "compare(WORLD, reversed split) = %d", cmp);
	/* MPI_UNDEFINED: no communicator for those ranks. */
	MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, mt_rank == mt_size - 1 ? MPI_UNDEFINED : 1, 0, &u));
	if (mt_rank == mt_size - 1) {
		CHECK(u == MPI_COMM_NULL, "split with MPI_UNDEFINED gave a communicator");
	} else {
		int s = -1;

		MPI_OK(MPI_Comm_size(u, &s));
		CHECK(s == mt_size - 1, "split without the last rank: size %d", s);
		MPI_OK(MPI_Comm_free(&u));
	}
	/* Split of a split: p (parity) by new rank % 2, key = new rank. */
	{
		MPI_Comm q;
		int pr, ps, qs = -1;

		MPI_OK(MPI_Comm_rank(p, &pr));
		MPI_OK(MPI_Comm_size(p, &ps));
		MPI_OK(MPI_Comm_split(p, pr % 2, pr, &q));
		MPI_OK(MPI_Comm_size(q, &qs));
		CHECK(qs == (ps + 1 - pr % 2) / 2, "split of split: size %d", qs);
		MPI_OK(MPI_Barrier(q));
		MPI_OK(MPI_Comm_free(&q));
	}
	MPI_OK(MPI_Comm_free(&p));
	MPI_OK(MPI_Comm_free(&t));
	MPI_OK(MPI_Comm_free(&whole));
	CHECK(p == MPI_COMM_NULL && t == MPI_COMM_NULL, "Comm_free did not reset handles");
}

/* A dup has the same group, its own context: traffic does not mix. */
static void test_dup(void)
{
	MPI_Comm d;
	int cmp = -1, s = -1, r = -1, left = (mt_rank + mt_size - 1) % mt_size;
	int a = 100 + mt_rank, b = 200 + mt_rank, x = -1, y = -1;
	MPI_Request q[2];
	MPI_Status st;

	mt_phase = "dup";
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
	MPI_OK(MPI_Comm_compare(MPI_COMM_WORLD, d, &cmp));
	CHECK(cmp == MPI_CONGRUENT, "compare(WORLD, dup) = %d", cmp);
	MPI_OK(MPI_Comm_compare(d, d, &cmp));
	CHECK(cmp == MPI_IDENT, "compare(dup, dup) = %d", cmp);
	MPI_OK(MPI_Comm_size(d, &s));
	MPI_OK(MPI_Comm_rank(d, &r));
	CHECK(s == mt_size && r == mt_rank, "dup: size %d rank %d", s, r);
	/* Same tag on both; the world message is sent first. */
	MPI_OK(MPI_Isend(&a, 1, MPI_INT, (mt_rank + 1) % mt_size, 1, MPI_COMM_WORLD, &q[0]));
	MPI_OK(MPI_Isend(&b, 1, MPI_INT, (mt_rank + 1) % mt_size, 1, d, &q[1]));
	MPI_OK(MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, d, &st));
	MPI_OK(MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
	CHECK(y == 200 + left && x == 100 + left, "dup traffic mixed: dup got %d, world %d", y, x);
	MPI_OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
	/* Collectives on both at once do not mix either. */
	int v = mt_rank, w = -1;
	MPI_OK(MPI_Allreduce(&v, &w, 1, MPI_INT, MPI_MAX, d));
	CHECK(w == mt_size - 1, "Allreduce on dup: %d", w);
	MPI_OK(MPI_Comm_free(&d));
	/* Many dup/free cycles: contexts are recycled, nothing leaks. */
	for (int i = 0; i < 200; i++) {
		MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
		if (i % 20 == 0) {
			MPI_OK(MPI_Allreduce(&v, &w, 1, MPI_INT, MPI_SUM, d));
			CHECK(w == mt_size * (mt_size - 1) / 2, "cycle %d: Allreduce %d", i, w);
		}
		MPI_OK(MPI_Comm_free(&d));
	}
	/* Many alive at once. */
	MPI_Comm many[40];
	for (int i = 0; i < 40; i++)
		MPI_OK(MPI_Comm_dup(i ? many[i - 1] : MPI_COMM_WORLD, &many[i]));
	MPI_OK(MPI_Barrier(many[39]));
	for (int i = 39; i >= 0; i--)
		MPI_OK(MPI_Comm_free(&many[i]));
}

static void test_self(void)
{
	int s = -1, r = -1, v = 5, w = 0, cmp = -1;

	mt_phase = "self";
	MPI_OK(MPI_Comm_size(MPI_COMM_SELF, &s));
	MPI_OK(MPI_Comm_rank(MPI_COMM_SELF, &r));
	CHECK(s == 1 && r == 0, "COMM_SELF: size %d rank %d", s, r);
	MPI_OK(MPI_Allreduce(&v, &w, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF));
	CHECK(w == 5, "Allreduce on COMM_SELF: %d", w);
	MPI_OK(MPI_Comm_compare(MPI_COMM_SELF, MPI_COMM_WORLD, &cmp));
	CHECK(cmp == (mt_size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "compare(SELF, WORLD) = %d",
	      cmp);
}

static void test_groups(void)
{
	MPI_Group g, rev, even, sg;
	MPI_Comm p;
	int n = mt_size, s = -1, r = -1, *ranks = mt_malloc(sizeof(int) * (size_t)n), ne = 0;

	mt_phase = "groups";
	MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &g));
	MPI_OK(MPI_Group_size(g, &s));
	MPI_OK(MPI_Group_rank(g, &r));
	CHECK(s == n && r == mt_rank, "world group: size %d rank %d", s, r);
	for (int i = 0; i < n; i++)
		ranks[i] = n - 1 - i;
	MPI_OK(MPI_Group_incl(g, n, ranks, &rev));
	MPI_OK(MPI_Group_size(rev, &s));
	MPI_OK(MPI_Group_rank(rev, &r));
	CHECK(s == n && r == n - 1 - mt_rank, "reversed group: size %d rank %d", s, r);
	for (int i = 0; i < n; i += 2)
		ranks[ne++] = i;
	MPI_OK(MPI_Group_incl(g, ne, ranks, &even));
	MPI_OK(MPI_Group_size(even, &s));
	MPI_OK(MPI_Group_rank(even, &r));
	CHECK(s == ne && r == (mt_rank % 2 ? MPI_UNDEFINED : mt_rank / 2),
	      "even group: size %d rank %d", s, r);
	/* Empty inclusion. */
	{
		MPI_Group e;

		MPI_OK(MPI_Group_incl(g, 0, ranks, &e));
		MPI_OK(MPI_Group_size(e, &s));
		MPI_OK(MPI_Group_rank(e, &r));
		CHECK(s == 0 && r == MPI_UNDEFINED, "empty group: size %d rank %d", s, r);
		if (e != MPI_GROUP_EMPTY)
			MPI_OK(MPI_Group_free(&e));
	}
	/* The group of a split communicator. */
	MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, -mt_rank, &p));
	MPI_OK(MPI_Comm_group(p, &sg));
	MPI_OK(MPI_Group_size(sg, &s));
	MPI_OK(MPI_Group_rank(sg, &r));
	{
		int m[64], k = members(2, mt_rank % 2, m), me = -1;

		for (int i = 0; i < k; i++)
			if (m[i] == mt_rank)
				me = i;
		CHECK(s == k && r == me, "split's group: size %d rank %d, expected %d %d", s, r, k,
		      me);
	}
	MPI_OK(MPI_Group_free(&sg));
	MPI_OK(MPI_Comm_free(&p));
	MPI_OK(MPI_Group_free(&rev));
	MPI_OK(MPI_Group_free(&even));
	MPI_OK(MPI_Group_free(&g));
	CHECK(g == MPI_GROUP_NULL && rev == MPI_GROUP_NULL, "Group_free did not reset handles");
	free(ranks);
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, 60);
	if (mt_size > 64) {
		fprintf(stderr, "comm: at most 64 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	test_dup();
	test_split();
	test_self();
	test_groups();
	return mt_finish("comm");
}
