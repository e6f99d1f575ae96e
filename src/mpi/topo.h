/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: process topologies, shared by topo.c (Cartesian, queries),
 * topo_graph.c (graph and distributed graph) and topo_neigh.c (the
 * neighbourhood collectives).
 */
#ifndef VIADUCT_MPI_TOPO_H
#define VIADUCT_MPI_TOPO_H

#include "mpi_internal.h"

/* What hangs off vd_comm.topo.  Only the fields of `kind` are used. */
struct vd_topo {
	int kind;                       /* MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH */
	/* MPI_CART: the grid; ranks are laid out row-major in it. */
	int ndims;
	int *dims, *periods;
	/* MPI_GRAPH: the whole graph as MPI_Graph_create took it. */
	int nnodes, nedges;
	int *index, *edges;
	bool symmetric;                 /* edges i->j as many as j->i, for
	                                 * the neighbourhood collectives */
	/* MPI_DIST_GRAPH: this process's edges only. */
	int indegree, outdegree;
	int *sources, *destinations;
	int *srcweights, *dstweights;   /* NULL when unweighted */
	bool weighted;
};

/* A zeroed topology of this kind; NULL when out of memory. */
struct vd_topo *vd_topo_new(int kind);
/* A malloc'd copy of the n ints at src (a valid pointer even for n == 0),
 * or NULL. */
int *vd_topo_ints(const int *src, int n);

/* The communicator c of handle comm, valid and with a topology of `kind`
 * (0: any): MPI_SUCCESS, else MPI_ERR_COMM / MPI_ERR_TOPOLOGY raised on
 * comm and returned. */
int vd_topo_comm(MPI_Comm comm, int kind, const char *fn, struct vd_comm **c);

/* Make every member of parent agree on err (the largest error class any
 * of them found in its arguments), so that all return together instead
 * of some waiting in a collective for the others.  MPI code. */
int vd_topo_agree(MPI_Comm parent, int err);

/* The end of every constructor, collective over parent: agree on err
 * (the worst any member found in its arguments, so that all return it
 * together rather than some waiting for the others), then make the new
 * communicator (fresh contexts) of the members of colour `color`,
 * ordered by key, carrying t; MPI_COMM_NULL where color is MPI_UNDEFINED.
 * t is consumed (NULL for a member: out of memory).  Errors are raised
 * on parent. */
int vd_topo_finish(MPI_Comm parent, int err, int color, int key, struct vd_topo *t,
		   MPI_Comm *newcomm, const char *fn);

/* Cartesian helpers: the coordinates of rank, and the rank of coords
 * (wrapped in periodic dimensions; MPI_PROC_NULL when outside a
 * non-periodic one). */
void vd_cart_coords(const struct vd_topo *t, int rank, int *coords);
int vd_cart_rank(const struct vd_topo *t, const int *coords);
/* The neighbours of rank at -disp and +disp in dimension dim. */
void vd_cart_shift(const struct vd_topo *t, int rank, int dim, int disp, int *source,
		   int *dest);

/* ---- neighbourhood collectives (topo_neigh.c, topo_ineigh.c) ---- */

/* The in- and out-neighbours of this process, in the standard's order. */
struct vd_neighbours {
	int nin, nout;
	const int *in, *out;
	bool cart;                      /* Cartesian: slot 2d is the -1 side,
	                                 * 2d + 1 the +1 side of dimension d */
	int *mem;                       /* what to free */
};

/* One neighbour's part of a buffer. */
struct vd_piece {
	char *buf;
	int count;
	MPI_Datatype dt;
};

/* How a buffer is cut into one piece per neighbour: piece k holds count
 * elements of dt at element k * count (uniform), counts[k] elements of
 * dt at element displs[k] (vector), or counts[k] elements of types[k] at
 * byte bdispls[k] (w). */
enum vd_layout_form { VD_LAYOUT_UNIFORM, VD_LAYOUT_VECTOR, VD_LAYOUT_W };

struct vd_layout {
	enum vd_layout_form form;
	const void *buf;
	int count;
	const int *counts, *displs;
	const MPI_Aint *bdispls;
	MPI_Datatype dt;
	const MPI_Datatype *types;
};

/* What moves the pieces once they are checked: deliver (NULL: the
 * blocking exchange) gets the receive pieces rp[nin] and send pieces
 * sp[nout] and returns an MPI code, not raised. */
typedef int vd_neigh_deliver_fn(struct vd_comm *c, const struct vd_neighbours *nb,
				const struct vd_piece *rp, const struct vd_piece *sp,
				void *arg);
struct vd_neigh_how {
	const char *fn;
	vd_neigh_deliver_fn *deliver;
	void *arg;
};

/* One neighbourhood collective: s to every out-neighbour (with
 * same_block: the one block s describes to each, as the allgathers send),
 * r from every in-neighbour.  MPI code, raised on comm. */
int vd_neigh_run(MPI_Comm comm, const struct vd_layout *s, const struct vd_layout *r,
		 bool same_block, const struct vd_neigh_how *how);

#endif /* VIADUCT_MPI_TOPO_H */
