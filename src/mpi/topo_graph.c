/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: graph and distributed graph topologies.
 *
 * A graph (MPI_Graph_create) is known whole at every member.  A
 * distributed graph keeps at each process only its own in- and out-edges;
 * MPI_Dist_graph_create, where any process may name any edge, routes each
 * edge to its two ends with an Alltoall of counts and an Alltoallv of the
 * edges.  A process's neighbours come in the order of the ranks that named
 * the edges, then the order in which each named them.
 */
#include <stdlib.h>
#include <string.h>

#include "topo.h"

/* ---- graph ------------------------------------------------------------------ */

/* The checks of Graph_create and Graph_map. */
static int graph_args(const struct vd_comm *c, int nnodes, const int index[],
		      const int edges[])
{
	if (nnodes < 0 || (nnodes > 0 && (!index || !edges)))
		return MPI_ERR_ARG;
	if (nnodes > c->size)
		return MPI_ERR_TOPOLOGY;
	for (int i = 0; i < nnodes; i++)
		if (index[i] < (i ? index[i - 1] : 0))
			return MPI_ERR_ARG;
	for (int e = 0; e < (nnodes ? index[nnodes - 1] : 0); e++)
		if (edges[e] < 0 || edges[e] >= nnodes)
			return MPI_ERR_ARG;
	return MPI_SUCCESS;
}

/* Edges from a to b in t. */
static int graph_edges(const struct vd_topo *t, int a, int b)
{
	int n = 0;

	for (int e = a ? t->index[a - 1] : 0; e < t->index[a]; e++)
		n += t->edges[e] == b;
	return n;
}

/* Whether every pair has as many edges one way as the other: the
 * neighbourhood collectives need it (a send needs a matching receive). */
static bool graph_symmetric(const struct vd_topo *t)
{
	for (int a = 0; a < t->nnodes; a++)
		for (int e = a ? t->index[a - 1] : 0; e < t->index[a]; e++)
			if (graph_edges(t, a, t->edges[e]) != graph_edges(t, t->edges[e], a))
				return false;
	return true;
}

static struct vd_topo *graph_topo(int nnodes, const int index[], const int edges[])
{
	struct vd_topo *t = vd_topo_new(MPI_GRAPH);

	if (!t)
		return NULL;
	t->nnodes = nnodes;
	t->nedges = nnodes ? index[nnodes - 1] : 0;
	t->index = vd_topo_ints(index, nnodes);
	t->edges = vd_topo_ints(edges, t->nedges);
	if (!t->index || !t->edges) {
		vd_topo_free(t);
		return NULL;
	}
	t->symmetric = graph_symmetric(t);
	return t;
}

#pragma weak MPI_Graph_create = PMPI_Graph_create
int PMPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[],
		      int reorder, MPI_Comm *comm_graph)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Graph_create";
	struct vd_topo *t = NULL;
	struct vd_comm *c;
	bool member;
	int err;

	(void)reorder;
	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_comm_get(comm_old)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_COMM, fn);
	err = comm_graph ? graph_args(c, nnodes, index, edges) : MPI_ERR_ARG;
	member = !err && c->rank < nnodes;
	if (member)
		t = graph_topo(nnodes, index, edges);
	return vd_topo_finish(comm_old, err, member ? 0 : MPI_UNDEFINED, c->rank, t,
			      comm_graph, fn);
}

#pragma weak MPI_Graph_map = PMPI_Graph_map
int PMPI_Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[],
		   int *newrank)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Graph_map";
	struct vd_comm *c;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_comm_get(comm)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_COMM, fn);
	err = newrank ? graph_args(c, nnodes, index, edges) : MPI_ERR_ARG;
	if (err)
		return vd_mpi_raise(comm, err, fn);
	*newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED;
	return MPI_SUCCESS;
}

#pragma weak MPI_Graphdims_get = PMPI_Graphdims_get
int PMPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Graphdims_get";
	struct vd_comm *c;
	int err;

	if ((err = vd_topo_comm(comm, MPI_GRAPH, fn, &c)))
		return err;
	if (!nnodes || !nedges)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	*nnodes = c->topo->nnodes;
	*nedges = c->topo->nedges;
	return MPI_SUCCESS;
}

/* Copy min(n, max) ints; NULL dst only where nothing goes. */
static int copy_out(int *dst, const int *src, int n, int max)
{
	if (max < 0)
		return MPI_ERR_ARG;
	n = n < max ? n : max;
	if (n > 0 && !dst)
		return MPI_ERR_ARG;
	if (n > 0)
		memcpy(dst, src, (size_t)n * sizeof(int));
	return MPI_SUCCESS;
}

#pragma weak MPI_Graph_get = PMPI_Graph_get
int PMPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[])
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Graph_get";
	struct vd_comm *c;
	int err;

	if ((err = vd_topo_comm(comm, MPI_GRAPH, fn, &c)))
		return err;
	err = copy_out(index, c->topo->index, c->topo->nnodes, maxindex);
	if (!err)
		err = copy_out(edges, c->topo->edges, c->topo->nedges, maxedges);
	return vd_mpi_raise(comm, err, fn);
}

#pragma weak MPI_Graph_neighbors_count = PMPI_Graph_neighbors_count
int PMPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Graph_neighbors_count";
	const struct vd_topo *t;
	struct vd_comm *c;
	int err;

	if ((err = vd_topo_comm(comm, MPI_GRAPH, fn, &c)))
		return err;
	t = c->topo;
	if (rank < 0 || rank >= t->nnodes)
		return vd_mpi_raise(comm, MPI_ERR_RANK, fn);
	if (!nneighbors)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	*nneighbors = t->index[rank] - (rank ? t->index[rank - 1] : 0);
	return MPI_SUCCESS;
}

#pragma weak MPI_Graph_neighbors = PMPI_Graph_neighbors
int PMPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[])
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Graph_neighbors";
	const struct vd_topo *t;
	struct vd_comm *c;
	int err, first;

	if ((err = vd_topo_comm(comm, MPI_GRAPH, fn, &c)))
		return err;
	t = c->topo;
	if (rank < 0 || rank >= t->nnodes)
		return vd_mpi_raise(comm, MPI_ERR_RANK, fn);
	first = rank ? t->index[rank - 1] : 0;
	err = copy_out(neighbors, t->edges + first, t->index[rank] - first, maxneighbors);
	return vd_mpi_raise(comm, err, fn);
}

/* ---- distributed graph ---------------------------------------------------------- */

/* n ranks of a communicator of `size`, and their weights (unless
 * unweighted): MPI_ERR_RANK / MPI_ERR_ARG when out of range. */
static int adjacency_args(int n, const int ranks[], const int weights[], bool weighted,
			  int size)
{
	if (n < 0 || (n > 0 && !ranks))
		return MPI_ERR_ARG;
	if (weighted && n > 0 && (!weights || weights == MPI_WEIGHTS_EMPTY))
		return MPI_ERR_ARG;
	for (int i = 0; i < n; i++) {
		if (ranks[i] < 0 || ranks[i] >= size)
			return MPI_ERR_RANK;
		if (weighted && weights[i] < 0)
			return MPI_ERR_ARG;
	}
	return MPI_SUCCESS;
}

/* A distributed graph topology owning the four arrays given (weights
 * NULL when unweighted); NULL, with the arrays freed, when any is
 * missing. */
static struct vd_topo *dist_topo(int indegree, int *sources, int *srcweights,
				 int outdegree, int *dests, int *dstweights, bool weighted)
{
	struct vd_topo *t = vd_topo_new(MPI_DIST_GRAPH);

	if (t) {
		t->indegree = indegree;
		t->outdegree = outdegree;
		t->sources = sources;
		t->destinations = dests;
		t->srcweights = srcweights;
		t->dstweights = dstweights;
		t->weighted = weighted;
	}
	if (!t || !sources || !dests || (weighted && (!srcweights || !dstweights))) {
		if (t) {
			vd_topo_free(t);
		} else {
			free(sources);
			free(srcweights);
			free(dests);
			free(dstweights);
		}
		return NULL;
	}
	return t;
}

#pragma weak MPI_Dist_graph_create_adjacent = PMPI_Dist_graph_create_adjacent
int PMPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
				    const int sourceweights[], int outdegree,
				    const int destinations[], const int destweights[],
				    MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Dist_graph_create_adjacent";
	bool weighted = sourceweights != MPI_UNWEIGHTED;
	struct vd_topo *t = NULL;
	struct vd_comm *c;
	int err;

	(void)info;
	(void)reorder;
	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_comm_get(comm_old)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_COMM, fn);
	err = comm_dist_graph ? MPI_SUCCESS : MPI_ERR_ARG;
	if (!err && weighted != (destweights != MPI_UNWEIGHTED))
		err = MPI_ERR_ARG;      /* both weighted or neither */
	if (!err)
		err = adjacency_args(indegree, sources, sourceweights, weighted, c->size);
	if (!err)
		err = adjacency_args(outdegree, destinations, destweights, weighted, c->size);
	if (!err)
		t = dist_topo(indegree, vd_topo_ints(sources, indegree),
			      weighted ? vd_topo_ints(sourceweights, indegree) : NULL,
			      outdegree, vd_topo_ints(destinations, outdegree),
			      weighted ? vd_topo_ints(destweights, outdegree) : NULL, weighted);
	return vd_topo_finish(comm_old, err, err ? MPI_UNDEFINED : 0, c->rank, t,
			      comm_dist_graph, fn);
}

/* ---- Dist_graph_create: routing the edges to their ends --------------------------------- */

/* What one process tells another: an edge (a rank, a weight) that ends
 * at the receiver, as an out-edge (to peer) or an in-edge (from peer). */
enum { EDGE_OUT = 0, EDGE_IN = 1 };
#define EDGE_INTS 3                     /* direction, peer, weight */
/* Head of the Alltoall: ints of edges following, error, unweighted. */
#define HEAD_INTS 3

struct edge_route {
	int size;
	int *head_out, *head_in;        /* [size * HEAD_INTS] */
	int *cnt_out, *dsp_out, *cnt_in, *dsp_in;   /* [size] each */
	int *edges_out, *edges_in;      /* the edges, by target rank */
};

static void route_free(struct edge_route *r)
{
	free(r->head_out);
	free(r->head_in);
	free(r->cnt_out);
	free(r->dsp_out);
	free(r->cnt_in);
	free(r->dsp_in);
	free(r->edges_out);
	free(r->edges_in);
}

static bool route_alloc(struct edge_route *r, int size)
{
	size_t n = (size_t)size;

	memset(r, 0, sizeof(*r));
	r->size = size;
	r->head_out = calloc(n * HEAD_INTS, sizeof(int));
	r->head_in = calloc(n * HEAD_INTS, sizeof(int));
	r->cnt_out = calloc(n, sizeof(int));
	r->dsp_out = calloc(n, sizeof(int));
	r->cnt_in = calloc(n, sizeof(int));
	r->dsp_in = calloc(n, sizeof(int));
	return r->head_out && r->head_in && r->cnt_out && r->dsp_out && r->cnt_in &&
	       r->dsp_in;
}

/* The checks of Dist_graph_create's edge list. */
static int dist_args(int n, const int sources[], const int degrees[],
		     const int destinations[], const int weights[], int size)
{
	bool weighted = weights != MPI_UNWEIGHTED;
	int e = 0, err;

	if (n < 0 || (n > 0 && (!sources || !degrees)))
		return MPI_ERR_ARG;
	for (int i = 0; i < n; i++) {
		if (sources[i] < 0 || sources[i] >= size)
			return MPI_ERR_RANK;
		if (degrees[i] < 0)
			return MPI_ERR_ARG;
		e += degrees[i];
	}
	return (err = adjacency_args(e, destinations, weights, weighted, size)) ? err : 0;
}

/* Each edge s -> d (weight w) goes to s as an out-edge and to d as an
 * in-edge; pass 0 counts them per target, pass 1 writes them. */
static void route_pack(struct edge_route *r, int n, const int sources[],
		       const int degrees[], const int dests[], const int weights[], int pass)
{
	bool weighted = weights != MPI_UNWEIGHTED;
	int e = 0, *fill = r->cnt_out;

	if (pass == 1)
		memset(fill, 0, (size_t)r->size * sizeof(int));
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < degrees[i]; k++, e++) {
			int ends[2] = { sources[i], dests[e] };
			int peers[2] = { dests[e], sources[i] };

			for (int j = 0; j < 2; j++) {
				if (pass == 1) {
					int *at = r->edges_out + r->dsp_out[ends[j]] +
						  fill[ends[j]];

					at[0] = j == 0 ? EDGE_OUT : EDGE_IN;
					at[1] = peers[j];
					at[2] = weighted ? weights[e] : 1;
				}
				fill[ends[j]] += EDGE_INTS;
			}
		}
	}
}

/* Lay out the send side from the counts of pass 0; false when the edges
 * do not fit in int counts or memory. */
static bool route_layout(struct edge_route *r, bool unweighted)
{
	long long total = 0;

	for (int p = 0; p < r->size; p++) {
		r->dsp_out[p] = (int)total;
		total += r->cnt_out[p];
		r->head_out[p * HEAD_INTS] = r->cnt_out[p];
		r->head_out[p * HEAD_INTS + 1] = MPI_SUCCESS;
		r->head_out[p * HEAD_INTS + 2] = unweighted;
	}
	if (total > 0x7fffffff)
		return false;
	r->edges_out = malloc(total ? (size_t)total * sizeof(int) : 1);
	return r->edges_out != NULL;
}

/* The receive side from the heads: counts, displacements, the worst
 * error any process reported, and whether any said MPI_UNWEIGHTED. */
static int route_receive_layout(struct edge_route *r, bool *unweighted)
{
	long long total = 0;
	int err = MPI_SUCCESS;

	*unweighted = false;
	for (int p = 0; p < r->size; p++) {
		const int *h = r->head_in + p * HEAD_INTS;

		r->cnt_in[p] = h[0];
		r->dsp_in[p] = (int)total;
		total += h[0];
		err = h[1] > err ? h[1] : err;
		*unweighted |= h[2] != 0;
	}
	if (err)
		return err;
	if (total > 0x7fffffff)
		return MPI_ERR_COUNT;
	r->edges_in = malloc(total ? (size_t)total * sizeof(int) : 1);
	return r->edges_in ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* The in- or out-edges received, in arrival order, as a topology. */
static struct vd_topo *route_topo(const struct edge_route *r, bool weighted)
{
	int total = r->dsp_in[r->size - 1] + r->cnt_in[r->size - 1], n[2] = { 0, 0 };
	int *peer[2], *w[2];

	for (int i = 0; i < total; i += EDGE_INTS)
		n[r->edges_in[i]]++;
	for (int j = 0; j < 2; j++) {
		peer[j] = malloc(n[j] ? (size_t)n[j] * sizeof(int) : 1);
		w[j] = weighted ? malloc(n[j] ? (size_t)n[j] * sizeof(int) : 1) : NULL;
	}
	if (peer[0] && peer[1] && (!weighted || (w[0] && w[1]))) {
		int k[2] = { 0, 0 };

		for (int i = 0; i < total; i += EDGE_INTS) {
			int j = r->edges_in[i];

			peer[j][k[j]] = r->edges_in[i + 1];
			if (weighted)
				w[j][k[j]] = r->edges_in[i + 2];
			k[j]++;
		}
	}
	return dist_topo(n[EDGE_IN], peer[EDGE_IN], w[EDGE_IN], n[EDGE_OUT], peer[EDGE_OUT],
			 w[EDGE_OUT], weighted);
}

/* Move the edges (the arguments are checked); the topology in *t.  A
 * process short of memory for the edges it sends says so in the
 * Alltoall, one short of memory for those it receives in an agreement
 * after it, so that either all go on to the Alltoallv or none.  MPI code. */
static int route_edges(MPI_Comm comm, struct edge_route *r, int n, const int sources[],
		       const int degrees[], const int dests[], const int weights[],
		       struct vd_topo **t)
{
	bool unweighted = false;
	int rc;

	route_pack(r, n, sources, degrees, dests, weights, 0);
	if (route_layout(r, weights == MPI_UNWEIGHTED)) {
		route_pack(r, n, sources, degrees, dests, weights, 1);
	} else {
		memset(r->cnt_out, 0, (size_t)r->size * sizeof(int));
		for (int p = 0; p < r->size; p++)
			r->head_out[p * HEAD_INTS + 1] = MPI_ERR_NO_MEM;
	}
	rc = PMPI_Alltoall(r->head_out, HEAD_INTS, MPI_INT, r->head_in, HEAD_INTS, MPI_INT,
			   comm);
	/* Room for the edges is local: all go on to the Alltoallv, or none. */
	if (rc == MPI_SUCCESS)
		rc = vd_topo_agree(comm, route_receive_layout(r, &unweighted));
	if (rc == MPI_SUCCESS)
		rc = PMPI_Alltoallv(r->edges_out, r->cnt_out, r->dsp_out, MPI_INT, r->edges_in,
				    r->cnt_in, r->dsp_in, MPI_INT, comm);
	if (rc == MPI_SUCCESS && !(*t = route_topo(r, !unweighted)))
		rc = MPI_ERR_NO_MEM;
	return rc;
}

#pragma weak MPI_Dist_graph_create = PMPI_Dist_graph_create
int PMPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[],
			   const int degrees[], const int destinations[],
			   const int weights[], MPI_Info info, int reorder,
			   MPI_Comm *comm_dist_graph)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Dist_graph_create";
	struct vd_topo *t = NULL;
	struct edge_route r;
	struct vd_comm *c;
	int err;

	(void)info;
	(void)reorder;
	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_comm_get(comm_old)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_COMM, fn);
	err = comm_dist_graph ? dist_args(n, sources, degrees, destinations, weights, c->size)
			      : MPI_ERR_ARG;
	if (!route_alloc(&r, c->size) && !err)
		err = MPI_ERR_NO_MEM;
	/* Bad edges anywhere: nobody starts the exchange. */
	err = vd_topo_agree(comm_old, err);
	if (!err)
		err = route_edges(comm_old, &r, n, sources, degrees, destinations, weights, &t);
	route_free(&r);
	return vd_topo_finish(comm_old, err, err ? MPI_UNDEFINED : 0, c->rank, t,
			      comm_dist_graph, fn);
}

/* ---- distributed graph queries ------------------------------------------------------ */

#pragma weak MPI_Dist_graph_neighbors_count = PMPI_Dist_graph_neighbors_count
int PMPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree,
				    int *weighted)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Dist_graph_neighbors_count";
	struct vd_comm *c;
	int err;

	if ((err = vd_topo_comm(comm, MPI_DIST_GRAPH, fn, &c)))
		return err;
	if (!indegree || !outdegree || !weighted)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	*indegree = c->topo->indegree;
	*outdegree = c->topo->outdegree;
	*weighted = c->topo->weighted;
	return MPI_SUCCESS;
}

#pragma weak MPI_Dist_graph_neighbors = PMPI_Dist_graph_neighbors
int PMPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[],
			      int sourceweights[], int maxoutdegree, int destinations[],
			      int destweights[])
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Dist_graph_neighbors";
	const struct vd_topo *t;
	struct vd_comm *c;
	int err;

	if ((err = vd_topo_comm(comm, MPI_DIST_GRAPH, fn, &c)))
		return err;
	t = c->topo;
	if (maxindegree < t->indegree || maxoutdegree < t->outdegree)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	err = copy_out(sources, t->sources, t->indegree, maxindegree);
	if (!err)
		err = copy_out(destinations, t->destinations, t->outdegree, maxoutdegree);
	if (!err && t->weighted)
		err = copy_out(sourceweights, t->srcweights, t->indegree, maxindegree);
	if (!err && t->weighted)
		err = copy_out(destweights, t->dstweights, t->outdegree, maxoutdegree);
	return vd_mpi_raise(comm, err, fn);
}
