/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: groups.  A group is an ordered list of world ranks; handles
 * are indices into a table that grows on demand (0 = MPI_GROUP_NULL,
 * 1 = MPI_GROUP_EMPTY, which is static and never destroyed).  Freed slots
 * are reused lowest first, so a program that creates and frees groups in a
 * loop keeps a small table.
 *
 * Group errors are not tied to a communicator, so they are raised on
 * MPI_COMM_WORLD (MPI-3.1 8.3).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "comm_arg.h"

/* Called by vd_comm_finalize (comm.c); declared in the report for
 * mpi_internal.h. */

static struct vd_group group_empty = { .refs = 1, .size = 0, .world = NULL };

static struct vd_group **groups;       /* [handle] */
static int ngroups;                    /* slots in groups[] */

struct vd_group *vd_group_get(MPI_Group g)
{
	if (g == MPI_GROUP_EMPTY)
		return &group_empty;
	if (g <= MPI_GROUP_EMPTY || g >= ngroups)
		return NULL;
	return groups[g];
}

/* A free slot (>= 2), growing the table; -ENOMEM. */
static int slot_alloc(void)
{
	struct vd_group **n;
	int i, cap;

	for (i = MPI_GROUP_EMPTY + 1; i < ngroups; i++)
		if (!groups[i])
			return i;
	cap = ngroups ? 2 * ngroups : 16;
	n = realloc(groups, (size_t)cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	memset(n + ngroups, 0, (size_t)(cap - ngroups) * sizeof(*n));
	groups = n;
	i = ngroups > MPI_GROUP_EMPTY + 1 ? ngroups : MPI_GROUP_EMPTY + 1;
	ngroups = cap;
	return i;
}

int vd_group_new(const int *world, int n, MPI_Group *out)
{
	struct vd_group *g;
	int h;

	if (n == 0) {
		*out = MPI_GROUP_EMPTY;
		return 0;
	}
	g = calloc(1, sizeof(*g));
	if (!g || !(g->world = malloc((size_t)n * sizeof(int)))) {
		free(g);
		return -ENOMEM;
	}
	h = slot_alloc();
	if (h < 0) {
		free(g->world);
		free(g);
		return h;
	}
	memcpy(g->world, world, (size_t)n * sizeof(int));
	g->size = n;
	g->refs = 1;
	groups[h] = g;
	*out = h;
	return 0;
}

static void group_destroy(MPI_Group h)
{
	free(groups[h]->world);
	free(groups[h]);
	groups[h] = NULL;
}

void vd_group_finalize(void)
{
	for (int i = MPI_GROUP_EMPTY + 1; i < ngroups; i++)
		if (groups[i])
			group_destroy(i);
	free(groups);
	groups = NULL;
	ngroups = 0;
}

#pragma weak MPI_Comm_group = PMPI_Comm_group
int PMPI_Comm_group(MPI_Comm comm, MPI_Group *group)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_group";
	struct vd_comm *c;
	int err;

	if ((err = vd_comm_arg(comm, group, fn, &c)))
		return err;
	err = vd_group_new(c->local_world, c->local_size, group);
	if (err)
		return vd_mpi_raise(comm, vd_mpi_errno(err), fn);
	return MPI_SUCCESS;
}

int vd_group_arg(MPI_Group group, const void *out, const char *fn, struct vd_group **g)
{
	*g = NULL;                      /* set on every path */
	VD_MPI_CHECK_RUNNING(fn);
	if (!(*g = vd_group_get(group)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_GROUP, fn);
	if (!out)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	return MPI_SUCCESS;
}

#pragma weak MPI_Group_size = PMPI_Group_size
int PMPI_Group_size(MPI_Group group, int *size)
{
	VD_API_GUARD();
	struct vd_group *g;
	int err = vd_group_arg(group, size, "MPI_Group_size", &g);

	if (!err)
		*size = g->size;
	return err;
}

#pragma weak MPI_Group_rank = PMPI_Group_rank
int PMPI_Group_rank(MPI_Group group, int *rank)
{
	VD_API_GUARD();
	struct vd_group *g;
	int err = vd_group_arg(group, rank, "MPI_Group_rank", &g);

	if (err)
		return err;
	*rank = MPI_UNDEFINED;
	for (int i = 0; i < g->size; i++) {
		if (g->world[i] == vd_mpi.rank) {
			*rank = i;
			break;
		}
	}
	return MPI_SUCCESS;
}

int vd_group_check_ranks(const struct vd_group *g, int n, const int ranks[])
{
	bool *seen;
	int code = MPI_SUCCESS;

	/* n > size is left to the loop: some rank must then be out of range
	 * or repeated, which is MPI_ERR_RANK. */
	if (n < 0 || (n > 0 && !ranks))
		return MPI_ERR_ARG;
	seen = calloc((size_t)g->size + 1, sizeof(*seen));
	if (!seen)
		return MPI_ERR_NO_MEM;
	for (int i = 0; i < n && code == MPI_SUCCESS; i++) {
		if (ranks[i] < 0 || ranks[i] >= g->size || seen[ranks[i]])
			code = MPI_ERR_RANK;
		else
			seen[ranks[i]] = true;
	}
	free(seen);
	return code;
}

#pragma weak MPI_Group_incl = PMPI_Group_incl
int PMPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Group_incl";
	struct vd_group *g;
	int *world, code, err;

	if ((err = vd_group_arg(group, newgroup, fn, &g)))
		return err;
	code = vd_group_check_ranks(g, n, ranks);
	if (code != MPI_SUCCESS)
		return vd_mpi_raise(MPI_COMM_WORLD, code, fn);
	world = malloc((size_t)n * sizeof(int) + 1);
	if (!world)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn);
	for (int i = 0; i < n; i++)
		world[i] = g->world[ranks[i]];
	err = vd_group_new(world, n, newgroup);
	free(world);
	if (err)
		return vd_mpi_raise(MPI_COMM_WORLD, vd_mpi_errno(err), fn);
	return MPI_SUCCESS;
}

/* Freeing MPI_GROUP_EMPTY is allowed (Group_incl with n == 0 returns it,
 * and programs free what they get); it only resets the handle. */
#pragma weak MPI_Group_free = PMPI_Group_free
int PMPI_Group_free(MPI_Group *group)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Group_free";
	struct vd_group *g;

	VD_MPI_CHECK_RUNNING(fn);
	if (!group)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	g = vd_group_get(*group);
	if (!g)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_GROUP, fn);
	if (g != &group_empty && --g->refs == 0)
		group_destroy(*group);
	*group = MPI_GROUP_NULL;
	return MPI_SUCCESS;
}
