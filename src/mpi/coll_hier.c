/* SPDX-License-Identifier: MIT */
/*
 * Collectives that know the hosts (MPICH-PM/CLUMP's cluster of SMPs).  On a
 * communicator whose members live on several nodes, with several members
 * on at least one of them, Barrier, Bcast, Reduce, Allreduce and
 * Allgather go node-local first (shared memory), then between one leader
 * per node (the fabric), then node-local again: one message crosses the
 * network per node and step instead of one per rank.
 *
 * The two levels are views of the communicator -- the members on this
 * node, and the leaders (each node's lowest-ranked member) -- run by the
 * flat algorithms of coll.c.  They have contexts of their own (comm.c
 * keeps ctx + 2 and ctx + 3 of every communicator for them), so their
 * messages never match the communicator's own.  Built on a
 * communicator's first collective from the node map every rank already
 * holds (place.c): no communication.  Reductions with a
 * non-commutative op stay flat (the two levels would combine out of rank
 * order).  VIADUCT_MPI_COLL_HIER=0 turns the whole thing off.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "typeop.h"

struct vd_hier {
	struct vd_comm node;            /* members on this node, rank order */
	struct vd_comm leaders;         /* one per node; rank -1 if not one */
	int *node_of;                   /* comm rank -> its node's leaders rank */
	int *local_rank;                /* comm rank -> its node view rank */
	int *world;                     /* storage of both views' world[] */
};

void vd_coll_hier_free(struct vd_hier *h)
{
	if (!h)
		return;
	vd_shm_free(h->node.shm);
	free(h->node_of);
	free(h->local_rank);
	free(h->world);
	free(h);
}

static bool hier_enabled(void)
{
	static int on = -1;
	uint64_t v = 1;

	if (on < 0) {
		(void)viaduct_param_uint("VIADUCT_MPI_COLL_HIER", 1, &v);   /* checked at init */
		on = v != 0;
	}
	return on;
}

/* Number the nodes of c's members in order of their lowest rank (the
 * leaders), and place every member.  Returns the number of nodes. */
static int number_nodes(struct vd_hier *h, const struct vd_comm *c, int *leader)
{
	int nn = 0;

	for (int i = 0; i < c->size; i++) {
		int node = vd_place_node(c->world[i]), k, local = 0;

		for (k = 0; k < nn && vd_place_node(c->world[leader[k]]) != node; k++)
			;
		if (k == nn)
			leader[nn++] = i;
		for (int j = 0; j < i; j++)
			local += h->node_of[j] == k;
		h->node_of[i] = k;
		h->local_rank[i] = local;
	}
	return nn;
}

/* The two views; their world[] share one allocation. */
static int make_views(struct vd_hier *h, const struct vd_comm *c, const int *leader, int nn)
{
	int mine = h->node_of[c->rank], nlocal = 0;

	h->world = malloc((size_t)(c->size + nn) * sizeof(int));
	if (!h->world)
		return -1;
	for (int i = 0; i < c->size; i++)
		if (h->node_of[i] == mine)
			h->world[nlocal++] = c->world[i];
	for (int k = 0; k < nn; k++)
		h->world[nlocal + k] = c->world[leader[k]];
	h->node = (struct vd_comm){ .refs = 1, .rank = h->local_rank[c->rank], .size = nlocal,
				    .world = h->world, .ctx = c->ctx + 1, .errh = c->errh,
				    .hier_done = true };
	h->leaders = (struct vd_comm){ .refs = 1, .rank = leader[mine] == c->rank ? mine : -1,
				       .size = nn, .world = h->world + nlocal,
				       .ctx = c->ctx + 2, .errh = c->errh, .hier_done = true };
	return 0;
}

/* VIADUCT_DEBUG=1: the shape, once per communicator. */
static void say_hier(const struct vd_hier *h, const struct vd_comm *c)
{
	uint64_t dbg = 0;

	if (viaduct_param_uint("VIADUCT_DEBUG", 0, &dbg) || !dbg)
		return;
	fprintf(stderr, "viaduct MPI: rank %d: a communicator of %d ranks: node-aware "
		"collectives over %d nodes, %d ranks on this one%s\n", vd_mpi.rank, c->size,
		h->leaders.size, h->node.size, h->leaders.rank >= 0 ? ", its leader" : "");
}

static struct vd_hier *hier_build(const struct vd_comm *c)
{
	struct vd_hier *h = calloc(1, sizeof(*h));
	int *leader = malloc((size_t)c->size * sizeof(int));
	int nn;

	if (!h || !leader || !(h->node_of = malloc((size_t)c->size * sizeof(int))) ||
	    !(h->local_rank = malloc((size_t)c->size * sizeof(int))))
		goto flat;
	nn = number_nodes(h, c, leader);
	/* One node, or one member per node: the flat algorithms are it. */
	if (nn == 1 || nn == c->size || make_views(h, c, leader, nn))
		goto flat;
	free(leader);
	say_hier(h, c);
	return h;
flat:
	free(leader);
	vd_coll_hier_free(h);
	return NULL;
}

/* c's hierarchy, or NULL: flat (also when memory ran out: correct, only
 * slower). */
struct vd_hier *vd_coll_hier(struct vd_comm *c)
{
	if (!c->hier_done) {
		c->hier_done = true;
		c->hier = hier_enabled() && c->size > 2 ? hier_build(c) : NULL;
	}
	return c->hier;
}

static bool is_leader(const struct vd_hier *h)
{
	return h->leaders.rank >= 0;
}

int vd_hier_barrier(struct vd_hier *h)
{
	int err = vd_coll_barrier(&h->node);

	if (!err && is_leader(h))
		err = vd_coll_barrier(&h->leaders);
	return err ? err : vd_coll_barrier(&h->node);
}

/* Root's node first (root to its neighbours and leader), then the
 * leaders, then every other node from its leader (node rank 0). */
int vd_hier_bcast(struct vd_hier *h, void *buf, int count, MPI_Datatype dt, int root,
		  const struct vd_comm *c)
{
	int rnode = h->node_of[root], mine = h->node_of[c->rank], err = MPI_SUCCESS;

	if (mine == rnode)
		err = vd_coll_bcast(buf, count, dt, h->local_rank[root], &h->node);
	if (!err && is_leader(h))
		err = vd_coll_bcast(buf, count, dt, rnode, &h->leaders);
	if (!err && mine != rnode)
		err = vd_coll_bcast(buf, count, dt, 0, &h->node);
	return err;
}

/* Commutative op: each node reduces to its leader, the leaders to root's
 * leader, which hands the result to root if that is another member. */
int vd_hier_reduce(struct vd_hier *h, const void *in, void *out, int count,
		   MPI_Datatype dt, MPI_Op op, int root, const struct vd_comm *c)
{
	struct vd_dtype *t = vd_dtype_get(dt);
	int rnode = h->node_of[root], err;
	bool root_leads = h->local_rank[root] == 0;
	void *m1 = NULL, *m2 = NULL;
	char *part = NULL, *sum = NULL;

	if (is_leader(h)) {
		part = vd_dtype_scratch(t, count, &m1);
		sum = c->rank == root ? out : vd_dtype_scratch(t, count, &m2);
		if (!part || !sum) {
			err = MPI_ERR_NO_MEM;   /* the others may wait: the job's error handler ends it */
			goto out;
		}
	}
	err = vd_coll_reduce(in, part, count, dt, op, 0, &h->node);
	if (!err && is_leader(h))
		err = vd_coll_reduce(part, sum, count, dt, op, rnode, &h->leaders);
	if (!err && !root_leads && h->node_of[c->rank] == rnode) {
		if (c->rank == root)
			err = vd_coll_recv(out, count, dt, 0, &h->node);
		else if (is_leader(h))
			err = vd_coll_send(sum, count, dt, h->local_rank[root], &h->node);
	}
out:
	free(m1);
	free(m2);
	return err;
}

/* Commutative op: reduce to each leader, allreduce among the leaders,
 * then each leader broadcasts on its node.  The leader's node result
 * goes straight into its output buffer and is reduced there in place:
 * no scratch of its own to allocate, which could fail before the node's
 * first phase. */
int vd_hier_allreduce(struct vd_hier *h, const void *in, void *out, int count,
		      MPI_Datatype dt, MPI_Op op)
{
	int err = vd_coll_reduce(in, out, count, dt, op, 0, &h->node);

	if (!err && is_leader(h))
		err = vd_coll_allreduce(out, out, count, dt, op, &h->leaders);
	if (!err)
		err = vd_coll_bcast(out, count, dt, 0, &h->node);
	return err;
}

/* Byte offsets of each node's block of packed pieces (node order, each
 * node's members in rank order), and the block sizes, for the leaders'
 * allgatherv. */
static void node_blocks(const struct vd_hier *h, const struct vd_comm *c, int pb,
			int *counts, int *displs)
{
	int nn = h->leaders.size;

	for (int k = 0; k < nn; k++)
		counts[k] = 0;
	for (int i = 0; i < c->size; i++)
		counts[h->node_of[i]] += pb;
	displs[0] = 0;
	for (int k = 1; k < nn; k++)
		displs[k] = displs[k - 1] + counts[k - 1];
}

/* The leader: its node's pieces, packed, into its block of all. */
static int gather_node_pieces(struct vd_hier *h, const struct vd_coll_side *R,
			      const struct vd_comm *c, char *mine, int pb)
{
	MPI_Request *req = malloc((size_t)h->node.size * sizeof(*req));
	int n = 0, err = MPI_SUCCESS, werr;

	if (!req)
		return MPI_ERR_NO_MEM;
	vd_dtype_pack(R->t, (const char *)R->buf + (MPI_Aint)c->rank * R->count * R->t->extent,
		      R->count, mine);
	for (int j = 1; j < h->node.size && !err; j++)
		if (!(err = vd_coll_irecv(mine + (size_t)j * pb, pb, MPI_BYTE, j, &h->node,
					  &req[n])))
			n++;
	werr = vd_coll_waitall(n, req);
	free(req);
	return err ? err : werr;
}

/* Allgather: each node's pieces to its leader (packed), the leaders swap
 * their nodes' blocks, each leader unpacks every piece into R and
 * broadcasts R on its node: one block per node crosses the network per
 * step instead of one piece per rank. */
int vd_hier_allgather(struct vd_hier *h, const struct vd_coll_side *R, const struct vd_comm *c)
{
	long long pb = (long long)R->count * R->t->size;
	int nn = h->leaders.size, mine = h->node_of[c->rank], err;
	char *all = NULL;
	int *counts = NULL, *displs = NULL;

	/* The same answer on every rank: it depends on the signature only. */
	if (pb * c->size > INT_MAX || (long long)R->count * c->size > INT_MAX)
		return -ENOTSUP;
	if (!is_leader(h)) {
		void *m = NULL;
		char *piece = vd_dtype_scratch(vd_dtype_get(MPI_BYTE), (int)pb, &m);
		const char *src = (const char *)R->buf + (MPI_Aint)c->rank * R->count * R->t->extent;

		if (!piece)
			return MPI_ERR_NO_MEM;
		vd_dtype_pack(R->t, src, R->count, piece);
		err = vd_coll_send(piece, (int)pb, MPI_BYTE, 0, &h->node);
		free(m);
		/* R is the receive side: writable, whatever the struct says */
		return err ? err : vd_coll_bcast((void *)R->buf, c->size * R->count, R->dt, 0, &h->node);
	}
	all = malloc((size_t)(pb * c->size) + 1);
	counts = malloc((size_t)nn * sizeof(int));
	displs = malloc((size_t)nn * sizeof(int));
	err = all && counts && displs ? MPI_SUCCESS : MPI_ERR_NO_MEM;
	if (!err) {
		node_blocks(h, c, (int)pb, counts, displs);
		err = gather_node_pieces(h, R, c, all + displs[mine], (int)pb);
	}
	if (!err) {
		struct vd_coll_side B = { .buf = all, .vec = true, .counts = counts,
					  .displs = displs, .dt = MPI_BYTE,
					  .t = vd_dtype_get(MPI_BYTE) };
		err = vd_coll_allgather_flat(&B, &h->leaders);
	}
	for (int i = 0; i < c->size && !err; i++)
		vd_dtype_unpack(R->t, all + displs[h->node_of[i]] + h->local_rank[i] * pb,
				(size_t)pb, (char *)R->buf + (MPI_Aint)i * R->count * R->t->extent);
	if (!err)
		err = vd_coll_bcast((void *)R->buf, c->size * R->count, R->dt, 0, &h->node);
	free(all);
	free(counts);
	free(displs);
	return err;
}
