/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the group operations that derive groups from groups --
 * set operations, exclusion, rank ranges -- and the comparisons.  Groups
 * are lists of world ranks (group.c); every operation here works on those
 * lists and keeps the order the standard prescribes (the first group's
 * order first).  Errors are raised on MPI_COMM_WORLD, as group.c does.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "comm_arg.h"

/* The rank of world rank w in g, or MPI_UNDEFINED. */
static int rank_in(const struct vd_group *g, int w)
{
	for (int i = 0; i < g->size; i++)
		if (g->world[i] == w)
			return i;
	return MPI_UNDEFINED;
}

/* Two valid groups and a result pointer: MPI_SUCCESS, else raised. */
static int pair_arg(MPI_Group g1, MPI_Group g2, const void *out, const char *fn,
		    struct vd_group **a, struct vd_group **b)
{
	int err = vd_group_arg(g1, out, fn, a);

	return err ? err : vd_group_arg(g2, out, fn, b);
}

/* A new group from world[0..n) and free world: MPI code, raised. */
static int publish(int *world, int n, MPI_Group *out, const char *fn)
{
	int err = vd_group_new(world, n, out);

	free(world);
	return vd_mpi_raise(MPI_COMM_WORLD, vd_mpi_errno(err), fn);
}

#pragma weak MPI_Group_translate_ranks = PMPI_Group_translate_ranks
int PMPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[],
			       MPI_Group group2, int ranks2[])
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Group_translate_ranks";
	struct vd_group *a, *b;
	int err = pair_arg(group1, group2, &n, fn, &a, &b);

	if (err)
		return err;
	if (n < 0 || (n > 0 && (!ranks1 || !ranks2)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	for (int i = 0; i < n; i++)
		if (ranks1[i] != MPI_PROC_NULL && (ranks1[i] < 0 || ranks1[i] >= a->size))
			return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_RANK, fn);
	for (int i = 0; i < n; i++)
		ranks2[i] = ranks1[i] == MPI_PROC_NULL ? MPI_PROC_NULL
						       : rank_in(b, a->world[ranks1[i]]);
	return MPI_SUCCESS;
}

#pragma weak MPI_Group_compare = PMPI_Group_compare
int PMPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result)
{
	VD_API_GUARD();
	struct vd_group *a, *b;
	int err = pair_arg(group1, group2, result, "MPI_Group_compare", &a, &b);
	bool same_order = true;

	if (err)
		return err;
	*result = MPI_UNEQUAL;
	if (a->size != b->size)
		return MPI_SUCCESS;
	for (int i = 0; i < a->size; i++) {
		int r = rank_in(b, a->world[i]);

		if (r == MPI_UNDEFINED)
			return MPI_SUCCESS;
		same_order = same_order && r == i;
	}
	*result = same_order ? MPI_IDENT : MPI_SIMILAR;
	return MPI_SUCCESS;
}

/* The members of a whose presence in b is `in_b`, in a's order, appended
 * to out[*n]. */
static void filter(const struct vd_group *a, const struct vd_group *b, bool in_b, int *out,
		   int *n)
{
	for (int i = 0; i < a->size; i++)
		if ((rank_in(b, a->world[i]) != MPI_UNDEFINED) == in_b)
			out[(*n)++] = a->world[i];
}

enum set_op { SET_UNION, SET_INTERSECTION, SET_DIFFERENCE };

static int set_op(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup, enum set_op op,
		  const char *fn)
{
	struct vd_group *a, *b;
	int err = pair_arg(group1, group2, newgroup, fn, &a, &b), n = 0;
	int *world;

	if (err)
		return err;
	world = malloc(((size_t)a->size + (size_t)b->size + 1) * sizeof(int));
	if (!world)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn);
	if (op == SET_UNION) {
		memcpy(world, a->world, (size_t)a->size * sizeof(int));
		n = a->size;
		filter(b, a, false, world, &n);
	} else {
		filter(a, b, op == SET_INTERSECTION, world, &n);
	}
	return publish(world, n, newgroup, fn);
}

#pragma weak MPI_Group_union = PMPI_Group_union
int PMPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
	VD_API_GUARD();
	return set_op(group1, group2, newgroup, SET_UNION, "MPI_Group_union");
}

#pragma weak MPI_Group_intersection = PMPI_Group_intersection
int PMPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
	VD_API_GUARD();
	return set_op(group1, group2, newgroup, SET_INTERSECTION, "MPI_Group_intersection");
}

#pragma weak MPI_Group_difference = PMPI_Group_difference
int PMPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
	VD_API_GUARD();
	return set_op(group1, group2, newgroup, SET_DIFFERENCE, "MPI_Group_difference");
}

/* The members of g whose ranks are not among ranks[0..n) (checked), in
 * g's order. */
static int excl(const struct vd_group *g, int n, const int ranks[], MPI_Group *newgroup,
		const char *fn)
{
	int code = vd_group_check_ranks(g, n, ranks), k = 0;
	bool *drop;
	int *world;

	if (code != MPI_SUCCESS)
		return vd_mpi_raise(MPI_COMM_WORLD, code, fn);
	drop = calloc((size_t)g->size + 1, sizeof(*drop));
	world = malloc(((size_t)g->size + 1) * sizeof(int));
	if (!drop || !world) {
		free(drop);
		free(world);
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn);
	}
	for (int i = 0; i < n; i++)
		drop[ranks[i]] = true;
	for (int i = 0; i < g->size; i++)
		if (!drop[i])
			world[k++] = g->world[i];
	free(drop);
	return publish(world, k, newgroup, fn);
}

/* The members of g at ranks[0..n) (checked), in that order. */
static int incl(const struct vd_group *g, int n, const int ranks[], MPI_Group *newgroup,
		const char *fn)
{
	int code = vd_group_check_ranks(g, n, ranks);
	int *world;

	if (code != MPI_SUCCESS)
		return vd_mpi_raise(MPI_COMM_WORLD, code, fn);
	if (!(world = malloc(((size_t)n + 1) * sizeof(int))))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn);
	for (int i = 0; i < n; i++)
		world[i] = g->world[ranks[i]];
	return publish(world, n, newgroup, fn);
}

#pragma weak MPI_Group_excl = PMPI_Group_excl
int PMPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Group_excl";
	struct vd_group *g;
	int err = vd_group_arg(group, newgroup, fn, &g);

	return err ? err : excl(g, n, ranks, newgroup, fn);
}

/* Ranks in the triplet (first, last, stride) of a group of `size`: the
 * count in *k, or the class.  A triplet that runs away from `last` names
 * no rank and is an argument error, as is a zero stride. */
static int triplet_count(const int t[3], int size, long *k)
{
	if (t[2] == 0)
		return MPI_ERR_ARG;
	if (t[0] < 0 || t[0] >= size || t[1] < 0 || t[1] >= size)
		return MPI_ERR_RANK;
	if (t[2] > 0 ? t[1] < t[0] : t[1] > t[0])
		return MPI_ERR_ARG;
	*k = ((long)t[1] - t[0]) / t[2] + 1;
	return MPI_SUCCESS;
}

/* The ranks of n triplets, in *out (*len of them).  More ranks than the
 * group holds must repeat one: MPI_ERR_RANK before any allocation. */
static int expand_ranges(const struct vd_group *g, int n, int ranges[][3], int **out,
			 int *len)
{
	long total = 0, k = 0;
	int code;

	if (n < 0 || (n > 0 && !ranges))
		return MPI_ERR_ARG;
	for (int i = 0; i < n; i++) {
		if ((code = triplet_count(ranges[i], g->size, &k)))
			return code;
		if ((total += k) > g->size)
			return MPI_ERR_RANK;
	}
	if (!(*out = malloc(((size_t)total + 1) * sizeof(int))))
		return MPI_ERR_NO_MEM;
	*len = 0;
	for (int i = 0; i < n; i++)
		for (long r = ranges[i][0];
		     ranges[i][2] > 0 ? r <= ranges[i][1] : r >= ranges[i][1]; r += ranges[i][2])
			(*out)[(*len)++] = (int)r;
	return MPI_SUCCESS;
}

static int range_op(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup,
		    bool include, const char *fn)
{
	struct vd_group *g;
	int err = vd_group_arg(group, newgroup, fn, &g), *ranks = NULL, len = 0, code;

	if (err)
		return err;
	code = expand_ranges(g, n, ranges, &ranks, &len);
	if (code != MPI_SUCCESS)
		return vd_mpi_raise(MPI_COMM_WORLD, code, fn);
	err = include ? incl(g, len, ranks, newgroup, fn) : excl(g, len, ranks, newgroup, fn);
	free(ranks);
	return err;
}

#pragma weak MPI_Group_range_incl = PMPI_Group_range_incl
int PMPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
	VD_API_GUARD();
	return range_op(group, n, ranges, newgroup, true, "MPI_Group_range_incl");
}

#pragma weak MPI_Group_range_excl = PMPI_Group_range_excl
int PMPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
	VD_API_GUARD();
	return range_op(group, n, ranges, newgroup, false, "MPI_Group_range_excl");
}
