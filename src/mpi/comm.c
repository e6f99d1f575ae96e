/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: communicators.  Handles are indices into a table that grows
 * on demand: 0 = MPI_COMM_NULL, 1 = MPI_COMM_WORLD, 2 = MPI_COMM_SELF;
 * freed slots are reused lowest first.
 *
 * Context ids.  Messages match on (context, source, tag), so two
 * communicators that share a pair of processes must never share a
 * context.  Each process keeps next_ctx, above every context it has ever
 * used; a new communicator takes the maximum of its parent's members'
 * next_ctx, found with a collective over the parent (on the parent's
 * collective context, so it cannot mix with user traffic), and every
 * member moves past it.  Ids go in steps of 4: p2p, collectives, and the
 * collectives of the node and leader views (coll_hier.c).  WORLD uses 0
 * (to 3), SELF 4 (to 7: 7, which no message of SELF's uses, carries
 * MPI_Init's measurement between two ranks, tune.c); user communicators
 * take multiples of 4 from 8.  Ids are never reused, so a message still in flight
 * for a freed communicator can never match a newer one.  Comm_split hands
 * the same id to every colour: different colours have no member in
 * common, so they never exchange messages.
 *
 * refs: one for the handle, plus one per user that takes it (nonblocking
 * collectives and persistent requests; the engine copies what it needs
 * from the communicator when a request starts); the handle becomes invalid at MPI_Comm_free, the memory goes
 * with the last reference (comm_release).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "comm_arg.h"
#include "errh_user.h"

#define CTX_STEP 4u
#define CTX_WORLD 0u
#define CTX_SELF 4u
#define CTX_FIRST_USER 8u
_Static_assert(VD_CTX_TUNE == CTX_SELF + CTX_STEP - 1, "tune.c's context is SELF's last");
/* Ids travel as ints through MPI_Allgather in Comm_split. */
#define CTX_MAX ((uint32_t)INT_MAX - 1u)

static struct vd_comm **comms;          /* [handle] */
static int ncomms;                      /* slots in comms[] */
static uint32_t next_ctx = CTX_FIRST_USER;

struct vd_comm *vd_comm_get(MPI_Comm comm)
{
	if (comm <= MPI_COMM_NULL || comm >= ncomms)
		return NULL;
	return comms[comm];
}

static void comm_release(struct vd_comm *c)
{
	if (c && --c->refs == 0) {
		vd_attr_discard(c);
		vd_info_release(&c->info);
		vd_errh_release(c->errh);
		vd_coll_hier_free(c->hier);
		vd_shm_free(c->shm);
		vd_topo_free(c->topo);
		if (c->inter) {
			vd_comm_drop(c->local_comm);
			free(c->local_world);
		}
		free(c->world);
		free(c);
	}
}

void vd_comm_drop(MPI_Comm h)
{
	struct vd_comm *c = vd_comm_get(h);

	if (c && h > MPI_COMM_SELF) {
		comms[h] = NULL;
		comm_release(c);
	}
}

/* A free slot (> SELF), growing the table; -ENOMEM. */
static int slot_alloc(void)
{
	struct vd_comm **n;
	int i, cap;

	for (i = MPI_COMM_SELF + 1; i < ncomms; i++)
		if (!comms[i])
			return i;
	cap = ncomms ? 2 * ncomms : 16;
	n = realloc(comms, (size_t)cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	memset(n + ncomms, 0, (size_t)(cap - ncomms) * sizeof(*n));
	comms = n;
	i = ncomms > MPI_COMM_SELF + 1 ? ncomms : MPI_COMM_SELF + 1;
	ncomms = cap;
	return i;
}

/* A communicator of the n world ranks in world[] (copied), where this
 * process is rank `rank`. */
static struct vd_comm *comm_alloc(const int *world, int n, int rank, uint32_t ctx,
				  MPI_Errhandler errh)
{
	struct vd_comm *c = calloc(1, sizeof(*c));

	if (!c || !(c->world = malloc((size_t)n * sizeof(int)))) {
		free(c);
		return NULL;
	}
	memcpy(c->world, world, (size_t)n * sizeof(int));
	c->refs = 1;
	c->rank = rank;
	c->size = n;
	c->ctx = ctx;
	c->errh = errh;
	vd_errh_retain(errh);
	c->local_size = n;
	c->local_world = c->world;
	return c;
}

int vd_comm_new(const int *world, int n, int rank, uint32_t ctx, MPI_Errhandler errh,
		MPI_Comm *out)
{
	struct vd_comm *c = comm_alloc(world, n, rank, ctx, errh);
	int h;

	if (!c)
		return -ENOMEM;
	h = slot_alloc();
	if (h < 0) {
		comm_release(c);
		return h;
	}
	comms[h] = c;
	*out = h;
	return 0;
}

int vd_comm_init(void)
{
	int self = vd_mpi.rank;
	int *ids;

	if (vd_mpi.size < 1 || vd_mpi.rank < 0 || vd_mpi.rank >= vd_mpi.size)
		return -EINVAL;
	ids = malloc((size_t)vd_mpi.size * sizeof(int));
	comms = calloc(MPI_COMM_SELF + 1, sizeof(*comms));
	if (!ids || !comms)
		goto nomem;
	ncomms = MPI_COMM_SELF + 1;
	for (int i = 0; i < vd_mpi.size; i++)
		ids[i] = i;             /* WORLD: the identity map */
	comms[MPI_COMM_WORLD] = comm_alloc(ids, vd_mpi.size, vd_mpi.rank, CTX_WORLD,
					   MPI_ERRORS_ARE_FATAL);
	comms[MPI_COMM_SELF] = comm_alloc(&self, 1, 0, CTX_SELF, MPI_ERRORS_ARE_FATAL);
	free(ids);
	if (!comms[MPI_COMM_WORLD] || !comms[MPI_COMM_SELF])
		goto nomem;
	strcpy(comms[MPI_COMM_WORLD]->name, "MPI_COMM_WORLD");
	strcpy(comms[MPI_COMM_SELF]->name, "MPI_COMM_SELF");
	next_ctx = CTX_FIRST_USER;
	return 0;
nomem:
	free(ids);
	vd_comm_finalize();
	return -ENOMEM;
}

void vd_comm_finalize(void)
{
	/* Slots empty before their release: an intercommunicator's release
	 * drops its hidden local communicator, which may come earlier. */
	for (int i = 0; i < ncomms; i++) {
		struct vd_comm *c = comms[i];

		comms[i] = NULL;
		comm_release(c);
	}
	free(comms);
	comms = NULL;
	ncomms = 0;
	vd_group_finalize();
	vd_type_attr_finalize();
	vd_attr_finalize();
	vd_info_finalize();
}

uint32_t vd_ctx_next(void)
{
	return next_ctx;
}

int vd_ctx_reserve(uint32_t max, unsigned ids, uint32_t *ctx)
{
	if (max < CTX_FIRST_USER || max % CTX_STEP || ids == 0 ||
	    max > CTX_MAX - ids * CTX_STEP)
		return -ENOSPC;
	*ctx = max;
	next_ctx = max + ids * CTX_STEP;
	return 0;
}

/* Take the agreed id `max` (the maximum of the members' next_ctx): 0, or
 * -ENOSPC once ids run out.  Every member sees the same max, so all fail
 * together. */
static int ctx_take(uint32_t max, uint32_t *ctx)
{
	return vd_ctx_reserve(max, 1, ctx);
}

int vd_ctx_agree(MPI_Comm parent, uint32_t *ctx)
{
	unsigned mine = next_ctx, max = 0;
	int rc = PMPI_Allreduce(&mine, &max, 1, MPI_UNSIGNED, MPI_MAX, parent);

	if (rc != MPI_SUCCESS)
		return rc;
	return ctx_take(max, ctx) ? MPI_ERR_INTERN : MPI_SUCCESS;
}

int vd_comm_arg(MPI_Comm comm, const void *out, const char *fn, struct vd_comm **c)
{
	*c = NULL;                      /* set on every path */
	VD_MPI_CHECK_RUNNING(fn);
	if (!(*c = vd_comm_get(comm)))
		return vd_mpi_raise(comm, MPI_ERR_COMM, fn);
	if (!out)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	return MPI_SUCCESS;
}

#pragma weak MPI_Comm_size = PMPI_Comm_size
int PMPI_Comm_size(MPI_Comm comm, int *size)
{
	VD_API_GUARD();
	struct vd_comm *c;
	int err = vd_comm_arg(comm, size, "MPI_Comm_size", &c);

	if (!err)
		*size = c->local_size;
	return err;
}

#pragma weak MPI_Comm_rank = PMPI_Comm_rank
int PMPI_Comm_rank(MPI_Comm comm, int *rank)
{
	VD_API_GUARD();
	struct vd_comm *c;
	int err = vd_comm_arg(comm, rank, "MPI_Comm_rank", &c);

	if (!err)
		*rank = c->rank;
	return err;
}

/* What a duplicate inherits beyond the group: the info hints and the
 * attributes, through their copy callbacks.  On failure the duplicate
 * goes again.  MPI code. */
static int dup_cache(MPI_Comm comm, struct vd_comm *c, MPI_Comm *newcomm)
{
	struct vd_comm *n = vd_comm_get(*newcomm);
	int rc = MPI_SUCCESS;

	if (c->info != MPI_INFO_NULL)
		rc = vd_mpi_errno(vd_info_copy(c->info, &n->info));
	if (rc == MPI_SUCCESS)
		rc = vd_attr_copy_all(comm, c, *newcomm, n);
	/* the topology comes along */
	if (rc == MPI_SUCCESS && c->topo && !(n->topo = vd_topo_dup(c->topo)))
		rc = MPI_ERR_NO_MEM;
	if (rc != MPI_SUCCESS) {
		vd_comm_drop(*newcomm);
		*newcomm = MPI_COMM_NULL;
	}
	return rc;
}

/* The new communicator inherits the parent's error handler (MPI-3.1 8.3). */
#pragma weak MPI_Comm_dup = PMPI_Comm_dup
int PMPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_dup";
	struct vd_comm *c;
	uint32_t ctx;
	int rc;

	if ((rc = vd_comm_arg(comm, newcomm, fn, &c)))
		return rc;
	if (c->inter)
		rc = vd_intercomm_dup(comm, c, newcomm);
	else if ((rc = vd_ctx_agree(comm, &ctx)) == MPI_SUCCESS)
		rc = vd_mpi_errno(vd_comm_new(c->world, c->size, c->rank, ctx, c->errh, newcomm));
	if (rc == MPI_SUCCESS)
		rc = dup_cache(comm, c, newcomm);
	return vd_mpi_raise(comm, rc, fn);
}

/* One member's contribution to Comm_split. */
struct split_entry {
	int color, key, next_ctx;
};

struct split_member {
	int key, prank;
};

static int member_cmp(const void *a, const void *b)
{
	const struct split_member *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->prank > y->prank) - (x->prank < y->prank);
}

/* Build this process's communicator of colour `color` from the gathered
 * entries of parent p: members ordered by (key, parent rank). */
static int split_build(const struct vd_comm *p, const struct split_entry *e, int color,
		       uint32_t ctx, MPI_Comm *newcomm)
{
	struct split_member *m = malloc((size_t)p->size * sizeof(*m));
	int *world = malloc((size_t)p->size * sizeof(int));
	int n = 0, rank = -1, err = -ENOMEM;

	if (!m || !world)
		goto out;
	for (int i = 0; i < p->size; i++)
		if (e[i].color == color)
			m[n++] = (struct split_member){ e[i].key, i };
	qsort(m, (size_t)n, sizeof(*m), member_cmp);
	for (int i = 0; i < n; i++) {
		world[i] = p->world[m[i].prank];
		if (m[i].prank == p->rank)
			rank = i;
	}
	err = rank < 0 ? -EINVAL : vd_comm_new(world, n, rank, ctx, p->errh, newcomm);
out:
	free(m);
	free(world);
	return err;
}

/* Gather every member's (color, key, next_ctx) and agree on the context:
 * one collective does both.  MPI code; *e is malloc'd on success. */
static int split_exchange(MPI_Comm comm, const struct vd_comm *c, int color, int key,
			  struct split_entry **e, uint32_t *ctx)
{
	struct split_entry mine = { color, key, (int)next_ctx };
	unsigned max = 0;
	int rc;

	*e = malloc((size_t)c->size * sizeof(**e));
	if (!*e)
		return MPI_ERR_NO_MEM;
	rc = PMPI_Allgather(&mine, 3, MPI_INT, *e, 3, MPI_INT, comm);
	for (int i = 0; rc == MPI_SUCCESS && i < c->size; i++) {
		if ((*e)[i].next_ctx < 0)
			rc = MPI_ERR_INTERN;
		else if ((unsigned)(*e)[i].next_ctx > max)
			max = (unsigned)(*e)[i].next_ctx;
	}
	if (rc == MPI_SUCCESS && ctx_take(max, ctx))
		rc = MPI_ERR_INTERN;
	if (rc != MPI_SUCCESS) {
		free(*e);
		*e = NULL;
	}
	return rc;
}

#pragma weak MPI_Comm_split = PMPI_Comm_split
int PMPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_split";
	struct split_entry *e;
	struct vd_comm *c;
	uint32_t ctx;
	int rc;

	if ((rc = vd_comm_arg(comm, newcomm, fn, &c)))
		return rc;
	if (c->inter)
		return vd_mpi_raise_msg(comm, MPI_ERR_COMM, fn,
					"not supported on an intercommunicator");
	if (color < 0 && color != MPI_UNDEFINED)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	/* MPI_UNDEFINED still takes part: the others wait for our entry,
	 * and our next_ctx must move with theirs. */
	rc = split_exchange(comm, c, color, key, &e, &ctx);
	if (rc != MPI_SUCCESS)
		return vd_mpi_raise(comm, rc, fn);
	*newcomm = MPI_COMM_NULL;
	if (color != MPI_UNDEFINED)
		rc = vd_mpi_errno(split_build(c, e, color, ctx, newcomm));
	free(e);
	return vd_mpi_raise(comm, rc, fn);
}

#pragma weak MPI_Comm_free = PMPI_Comm_free
int PMPI_Comm_free(MPI_Comm *comm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_free";
	struct vd_comm *c;
	int rc;

	VD_MPI_CHECK_RUNNING(fn);
	if (!comm)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	c = vd_comm_get(*comm);
	if (!c || *comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF)
		return vd_mpi_raise(*comm, MPI_ERR_COMM, fn);
	/* A delete callback that fails stops the free (MPI-4.0 7.7.2). */
	if ((rc = vd_attr_delete_all(*comm, c)) != MPI_SUCCESS)
		return vd_mpi_raise(*comm, rc, fn);
	vd_comm_drop(*comm);
	*comm = MPI_COMM_NULL;
	return MPI_SUCCESS;
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Whether a and b hold the same world ranks in any order.  -ENOMEM. */
static int same_members(const struct vd_comm *a, const struct vd_comm *b)
{
	size_t n = (size_t)a->size;
	int *x = malloc(n * sizeof(int)), *y = malloc(n * sizeof(int));
	int r = -ENOMEM;

	if (x && y) {
		memcpy(x, a->world, n * sizeof(int));
		memcpy(y, b->world, n * sizeof(int));
		qsort(x, n, sizeof(int), int_cmp);
		qsort(y, n, sizeof(int), int_cmp);
		r = !memcmp(x, y, n * sizeof(int));
	}
	free(x);
	free(y);
	return r;
}

static bool same_list(const int *x, int nx, const int *y, int ny)
{
	return nx == ny && !memcmp(x, y, (size_t)nx * sizeof(int));
}

/* Intercommunicators compare as congruent when both groups match in order;
 * any other difference reads as unequal. */
static int inter_compare(const struct vd_comm *a, const struct vd_comm *b)
{
	if (a->inter != b->inter || !same_list(a->world, a->size, b->world, b->size) ||
	    !same_list(a->local_world, a->local_size, b->local_world, b->local_size))
		return MPI_UNEQUAL;
	return MPI_CONGRUENT;
}

#pragma weak MPI_Comm_compare = PMPI_Comm_compare
int PMPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Comm_compare";
	struct vd_comm *a, *b;
	int same;

	VD_MPI_CHECK_RUNNING(fn);
	a = vd_comm_get(comm1);
	b = vd_comm_get(comm2);
	if (!a || !b)
		return vd_mpi_raise(a ? comm2 : comm1, MPI_ERR_COMM, fn);
	if (!result)
		return vd_mpi_raise(comm1, MPI_ERR_ARG, fn);
	if (comm1 == comm2) {
		*result = MPI_IDENT;
		return MPI_SUCCESS;
	}
	if (a->inter || b->inter) {
		*result = inter_compare(a, b);
		return MPI_SUCCESS;
	}
	if (a->size != b->size) {
		*result = MPI_UNEQUAL;
		return MPI_SUCCESS;
	}
	if (!memcmp(a->world, b->world, (size_t)a->size * sizeof(int))) {
		*result = MPI_CONGRUENT;
		return MPI_SUCCESS;
	}
	same = same_members(a, b);
	if (same < 0)
		return vd_mpi_raise(comm1, MPI_ERR_NO_MEM, fn);
	*result = same ? MPI_SIMILAR : MPI_UNEQUAL;
	return MPI_SUCCESS;
}

void vd_comm_release(struct vd_comm *c)
{
	comm_release(c);
}
