/* SPDX-License-Identifier: MIT */
/*
 * Group operations against a serial model on lists of world ranks:
 * translate_ranks, compare, union, intersection, difference, excl,
 * range_incl, range_excl, each result read back member by member with
 * translate_ranks into MPI_COMM_WORLD's group; and their argument errors
 * under MPI_ERRORS_RETURN.
 */
#include <stdbool.h>

#include "mpitest.h"

#define MAXR 64

static MPI_Group world_group;

/* The world ranks of g, in order; returns the size. */
static int members_of(MPI_Group g, int *out)
{
	int n = -1, idx[MAXR];

	MPI_OK(MPI_Group_size(g, &n));
	for (int i = 0; i < n && i < MAXR; i++)
		idx[i] = i;
	MPI_OK(MPI_Group_translate_ranks(g, n, idx, world_group, out));
	return n;
}

static void expect_group(MPI_Group g, const int *want, int n, const char *what)
{
	int got[MAXR], k = members_of(g, got), rank = -2, me = MPI_UNDEFINED;

	if (!CHECK(k == n, "%s: size %d, expected %d", what, k, n))
		return;
	for (int i = 0; i < n; i++) {
		CHECK(got[i] == want[i], "%s: member %d is %d, expected %d", what, i, got[i],
		      want[i]);
		if (want[i] == mt_rank)
			me = i;
	}
	MPI_OK(MPI_Group_rank(g, &rank));
	CHECK(rank == me, "%s: Group_rank %d, expected %d", what, rank, me);
}

static bool has(const int *l, int n, int x)
{
	for (int i = 0; i < n; i++)
		if (l[i] == x)
			return true;
	return false;
}

/* A = the even world ranks descending, B = ranks 1.. ascending (world
 * ranks). */
static int list_a(int *a)
{
	int n = 0;

	for (int r = mt_size - 1; r >= 0; r--)
		if (r % 2 == 0)
			a[n++] = r;
	return n;
}

static int list_b(int *b)
{
	int n = 0;

	for (int r = 1; r < mt_size; r++)
		b[n++] = r;
	return n;
}

static MPI_Group make(const int *l, int n)
{
	MPI_Group g;

	MPI_OK(MPI_Group_incl(world_group, n, l, &g));
	return g;
}

static void test_set_ops(void)
{
	int a[MAXR] = { 0 }, b[MAXR] = { 0 }, na = list_a(a), nb = list_b(b), w[2 * MAXR], n;
	MPI_Group ga = make(a, na), gb = make(b, nb), g;

	mt_phase = "set ops";
	n = 0;
	for (int i = 0; i < na; i++)
		w[n++] = a[i];
	for (int i = 0; i < nb; i++)
		if (!has(a, na, b[i]))
			w[n++] = b[i];
	MPI_OK(MPI_Group_union(ga, gb, &g));
	expect_group(g, w, n, "union");
	MPI_OK(MPI_Group_free(&g));
	n = 0;
	for (int i = 0; i < na; i++)
		if (has(b, nb, a[i]))
			w[n++] = a[i];
	MPI_OK(MPI_Group_intersection(ga, gb, &g));
	expect_group(g, w, n, "intersection");
	MPI_OK(MPI_Group_free(&g));
	n = 0;
	for (int i = 0; i < na; i++)
		if (!has(b, nb, a[i]))
			w[n++] = a[i];
	MPI_OK(MPI_Group_difference(ga, gb, &g));
	expect_group(g, w, n, "difference");
	MPI_OK(MPI_Group_free(&g));
	MPI_OK(MPI_Group_difference(ga, ga, &g));
	CHECK(g == MPI_GROUP_EMPTY, "A \\ A is not MPI_GROUP_EMPTY");
	MPI_OK(MPI_Group_free(&ga));
	MPI_OK(MPI_Group_free(&gb));
}

static void test_compare_translate(void)
{
	int a[MAXR] = { 0 }, na = list_a(a), rev[MAXR] = { 0 }, res = -1, in[3], out[3];
	MPI_Group ga = make(a, na), gr, gw2;

	mt_phase = "compare/translate";
	for (int i = 0; i < na; i++)
		rev[i] = a[na - 1 - i];
	gr = make(rev, na);
	MPI_OK(MPI_Group_compare(ga, ga, &res));
	CHECK(res == MPI_IDENT, "compare(A, A) = %d", res);
	MPI_OK(MPI_Group_compare(ga, gr, &res));
	CHECK(res == (na > 1 ? MPI_SIMILAR : MPI_IDENT), "compare(A, rev A) = %d", res);
	MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &gw2));
	MPI_OK(MPI_Group_compare(gw2, world_group, &res));
	CHECK(res == MPI_IDENT, "compare(world, world) = %d", res);
	MPI_OK(MPI_Group_compare(ga, world_group, &res));
	CHECK(res == (mt_size == 1 ? MPI_IDENT : MPI_UNEQUAL), "compare(A, world) = %d", res);
	/* World rank r is at rank na-1-i of rev when a[i] == r; odd ranks are
	 * absent. */
	in[0] = 0;
	in[1] = MPI_PROC_NULL;
	in[2] = mt_size - 1;
	MPI_OK(MPI_Group_translate_ranks(world_group, 3, in, gr, out));
	CHECK(out[0] == 0 && out[1] == MPI_PROC_NULL &&
	      out[2] == ((mt_size - 1) % 2 ? MPI_UNDEFINED : na - 1),
	      "translate: %d %d %d", out[0], out[1], out[2]);
	MPI_OK(MPI_Group_free(&ga));
	MPI_OK(MPI_Group_free(&gr));
	MPI_OK(MPI_Group_free(&gw2));
}

static void test_excl(void)
{
	int drop[MAXR], nd = 0, w[MAXR], n = 0;
	MPI_Group g;

	mt_phase = "excl";
	for (int r = mt_size - 1; r >= 0; r -= 3)
		drop[nd++] = r;
	for (int r = 0; r < mt_size; r++)
		if (!has(drop, nd, r))
			w[n++] = r;
	MPI_OK(MPI_Group_excl(world_group, nd, drop, &g));
	expect_group(g, w, n, "excl");
	MPI_OK(MPI_Group_free(&g));
	for (int r = 0; r < mt_size; r++)
		w[r] = r;
	MPI_OK(MPI_Group_excl(world_group, 0, NULL, &g));
	expect_group(g, w, mt_size, "excl none");
	MPI_OK(MPI_Group_free(&g));
}

/* The serial expansion of triplets. */
static int expand(int n, int t[][3], int *out)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		for (int r = t[i][0]; t[i][2] > 0 ? r <= t[i][1] : r >= t[i][1]; r += t[i][2])
			out[k++] = r;
	return k;
}

static void test_ranges(void)
{
	int t[2][3] = { { mt_size - 1, 0, -2 }, { 1, mt_size - 1, 4 } }, n = mt_size > 1 ? 2 : 1;
	int inc[MAXR], ni, w[MAXR], nw = 0;
	MPI_Group g;

	mt_phase = "ranges";
	/* With an even size the two triplets are disjoint (odd ranks down,
	 * then 1, 5, ...); else start the second at the other parity. */
	if (mt_size % 2)
		t[1][0] = mt_size > 1 ? 1 : 0;
	else
		t[1][0] = 0;
	ni = expand(n, t, inc);
	MPI_OK(MPI_Group_range_incl(world_group, n, t, &g));
	expect_group(g, inc, ni, "range_incl");
	MPI_OK(MPI_Group_free(&g));
	for (int r = 0; r < mt_size; r++)
		if (!has(inc, ni, r))
			w[nw++] = r;
	MPI_OK(MPI_Group_range_excl(world_group, n, t, &g));
	expect_group(g, w, nw, "range_excl");
	MPI_OK(MPI_Group_free(&g));
}

static void expect_err(int rc, int cls, const char *what)
{
	int c = -1;

	if (rc != MPI_SUCCESS)
		MPI_Error_class(rc, &c);
	CHECK(c == cls, "%s: class %d (rc %d), expected %d", what, c, rc, cls);
}

static void test_errors(void)
{
	int dup[2] = { 0, 0 }, bad[1] = { mt_size }, r[1], z[1][3] = { { 0, 0, 0 } };
	int away[1][3] = { { 0, mt_size - 1, -1 } }, out[1][3] = { { 0, mt_size, 1 } };
	int twice[2][3] = { { 0, 0, 1 }, { 0, 0, 1 } }, res;
	MPI_Group g = MPI_GROUP_NULL;

	mt_phase = "errors";
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	expect_err(MPI_Group_excl(world_group, 2, dup, &g), MPI_ERR_RANK, "excl dup");
	expect_err(MPI_Group_excl(world_group, 1, bad, &g), MPI_ERR_RANK, "excl out of range");
	expect_err(MPI_Group_translate_ranks(world_group, 1, bad, world_group, r),
		   MPI_ERR_RANK, "translate out of range");
	expect_err(MPI_Group_range_incl(world_group, 1, z, &g), MPI_ERR_ARG, "zero stride");
	expect_err(MPI_Group_range_excl(world_group, 1, out, &g), MPI_ERR_RANK, "last too big");
	expect_err(MPI_Group_range_incl(world_group, 2, twice, &g), MPI_ERR_RANK,
		   "range twice");
	if (mt_size > 1) {
		int short_away[1][3] = { { 1, 0, 2 } };

		expect_err(MPI_Group_range_incl(world_group, 1, away, &g), MPI_ERR_ARG,
			   "stride away from last");
		expect_err(MPI_Group_range_excl(world_group, 1, short_away, &g), MPI_ERR_ARG,
			   "first above last, positive stride");
	}
	expect_err(MPI_Group_union(world_group, MPI_GROUP_NULL, &g), MPI_ERR_GROUP,
		   "union with GROUP_NULL");
	expect_err(MPI_Group_compare(12345, world_group, &res), MPI_ERR_GROUP,
		   "compare invalid");
	expect_err(MPI_Group_intersection(world_group, world_group, NULL), MPI_ERR_ARG,
		   "NULL result");
	CHECK(g == MPI_GROUP_NULL, "a failed call changed the handle");
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, 60);
	if (mt_size > MAXR)
		return mt_finish("group");
	MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
	for (int i = 0; i < 3; i++) {      /* a few rounds: slots are reused */
		test_set_ops();
		test_compare_translate();
		test_excl();
		test_ranges();
	}
	test_errors();
	MPI_OK(MPI_Group_free(&world_group));
	return mt_finish("group");
}
