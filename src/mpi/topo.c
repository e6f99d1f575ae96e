/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: process topologies -- what every kind shares (the object
 * on vd_comm.topo, building a topology communicator, MPI_Topo_test),
 * MPI_Dims_create and the Cartesian functions.
 *
 * A topology communicator is a new communicator made with Comm_split
 * over the parent (so it gets fresh contexts, and ranks beyond the
 * topology get MPI_COMM_NULL), with the topology attached.  reorder is
 * ignored: rank i of the parent stays rank i, which the standard allows.
 *
 * Cartesian ranks are row-major: the last dimension varies fastest.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "topo.h"

/* ---- the topology object -------------------------------------------------- */

struct vd_topo *vd_topo_new(int kind)
{
	struct vd_topo *t = calloc(1, sizeof(*t));

	if (t)
		t->kind = kind;
	return t;
}

int *vd_topo_ints(const int *src, int n)
{
	int *p = malloc(n > 0 ? (size_t)n * sizeof(int) : 1);

	if (p && n > 0)
		memcpy(p, src, (size_t)n * sizeof(int));
	return p;
}

void vd_topo_free(struct vd_topo *t)
{
	if (!t)
		return;
	free(t->dims);
	free(t->periods);
	free(t->index);
	free(t->edges);
	free(t->sources);
	free(t->destinations);
	free(t->srcweights);
	free(t->dstweights);
	free(t);
}

/* *dst = a copy of the n ints at src; a NULL src stays NULL.  false when
 * out of memory. */
static bool copy_ints(int **dst, const int *src, int n)
{
	*dst = src ? vd_topo_ints(src, n) : NULL;
	return !src || *dst;
}

struct vd_topo *vd_topo_dup(const struct vd_topo *t)
{
	struct vd_topo *n = malloc(sizeof(*n));
	bool ok;

	if (!n)
		return NULL;
	*n = *t;
	ok = copy_ints(&n->dims, t->dims, t->ndims);
	ok &= copy_ints(&n->periods, t->periods, t->ndims);
	ok &= copy_ints(&n->index, t->index, t->nnodes);
	ok &= copy_ints(&n->edges, t->edges, t->nedges);
	ok &= copy_ints(&n->sources, t->sources, t->indegree);
	ok &= copy_ints(&n->srcweights, t->srcweights, t->indegree);
	ok &= copy_ints(&n->destinations, t->destinations, t->outdegree);
	ok &= copy_ints(&n->dstweights, t->dstweights, t->outdegree);
	if (!ok) {
		vd_topo_free(n);
		return NULL;
	}
	return n;
}

int vd_topo_comm(MPI_Comm comm, int kind, const char *fn, struct vd_comm **c)
{
	VD_MPI_CHECK_RUNNING(fn);
	if (!(*c = vd_comm_get(comm)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_COMM, fn);
	if (!(*c)->topo || (kind && (*c)->topo->kind != kind))
		return vd_mpi_raise(comm, MPI_ERR_TOPOLOGY, fn);
	return MPI_SUCCESS;
}

int vd_topo_agree(MPI_Comm parent, int err)
{
	int any = MPI_SUCCESS;
	int rc = PMPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, parent);

	return rc != MPI_SUCCESS ? rc : any;
}

int vd_topo_finish(MPI_Comm parent, int err, int color, int key, struct vd_topo *t,
		   MPI_Comm *newcomm, const char *fn)
{
	if (!err && color != MPI_UNDEFINED && !t)
		err = MPI_ERR_NO_MEM;
	err = vd_topo_agree(parent, err);
	if (!err)
		err = PMPI_Comm_split(parent, color, key, newcomm);
	if (!err && *newcomm != MPI_COMM_NULL) {
		vd_comm_get(*newcomm)->topo = t;
		return MPI_SUCCESS;
	}
	vd_topo_free(t);
	return vd_mpi_raise(parent, err, fn);
}

#pragma weak MPI_Topo_test = PMPI_Topo_test
int PMPI_Topo_test(MPI_Comm comm, int *status)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Topo_test";
	struct vd_comm *c;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_comm_get(comm)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_COMM, fn);
	if (!status)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	*status = c->topo ? c->topo->kind : MPI_UNDEFINED;
	return MPI_SUCCESS;
}

/* ---- MPI_Dims_create -------------------------------------------------------- */

/* Whether d^k >= m, without overflow. */
static bool pow_reaches(int d, int k, int m)
{
	long long p = 1;

	for (int i = 0; i < k && p < m; i++)
		p *= d;
	return p >= m;
}

/* No int has more divisors than this (2095133040 has as many), nor more
 * distinct prime factors than 9. */
#define MAX_DIVISORS 1600
#define MAX_PRIMES 9

/* What a factorisation of some m may use: its divisors, ascending, and
 * its prime factors. */
struct factors {
	int ndivs, nprimes;
	int divs[MAX_DIVISORS];
	int primes[MAX_PRIMES];
};

static void factors_of(int m, struct factors *f)
{
	int nbig = 0, big[MAX_DIVISORS / 2], rest = m;

	f->ndivs = f->nprimes = 0;
	for (int d = 1; (long long)d * d <= m; d++) {
		if (m % d)
			continue;
		f->divs[f->ndivs++] = d;
		if (d != m / d)
			big[nbig++] = m / d;
	}
	while (nbig > 0)
		f->divs[f->ndivs++] = big[--nbig];
	for (int p = 2; (long long)p * p <= rest; p++) {
		if (rest % p)
			continue;
		f->primes[f->nprimes++] = p;
		while (rest % p == 0)
			rest /= p;
	}
	if (rest > 1)
		f->primes[f->nprimes++] = rest;
}

/* Whether every prime factor of m is at most cap (else no factorisation
 * into factors <= cap exists: cuts the search short). */
static bool primes_fit(const struct factors *f, int m, int cap)
{
	for (int i = 0; i < f->nprimes; i++)
		if (f->primes[i] > cap && m % f->primes[i] == 0)
			return false;
	return true;
}

/* The most balanced way to write m as k factors, each at most cap: out[]
 * non-increasing and lexicographically smallest (so the largest factor
 * is as small as it can be, then the next ...).  f: the factors of some
 * multiple of m.  false when there is none. */
static bool balance(int m, int k, int cap, const struct factors *f, int *out)
{
	if (m == 1) {
		for (int i = 0; i < k; i++)
			out[i] = 1;
		return true;
	}
	if (!primes_fit(f, m, cap))
		return false;
	for (int i = 0; k > 0 && i < f->ndivs && f->divs[i] <= cap; i++) {
		int d = f->divs[i];

		if (d == 1 || m % d || !pow_reaches(d, k, m))
			continue;
		if (balance(m / d, k - 1, d, f, out + 1)) {
			out[0] = d;
			return true;
		}
	}
	return false;
}

/* MPI_ERR_DIMS unless the preset entries are >= 0 and divide nnodes;
 * *rest = nnodes over their product, *nfree = the zero entries. */
static int dims_check(int nnodes, int ndims, const int dims[], int *rest, int *nfree)
{
	*rest = nnodes;
	*nfree = 0;
	for (int i = 0; i < ndims; i++) {
		if (dims[i] < 0)
			return MPI_ERR_DIMS;
		if (dims[i] == 0) {
			(*nfree)++;
			continue;
		}
		if (*rest % dims[i])
			return MPI_ERR_DIMS;
		*rest /= dims[i];
	}
	return *nfree == 0 && *rest != 1 ? MPI_ERR_DIMS : MPI_SUCCESS;
}

#pragma weak MPI_Dims_create = PMPI_Dims_create
int PMPI_Dims_create(int nnodes, int ndims, int dims[])
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Dims_create";
	int rest, nfree, *out, err, j = 0;
	struct factors *f;

	VD_MPI_CHECK_RUNNING(fn);
	if (ndims < 0)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_DIMS, fn);
	if (nnodes <= 0 || (ndims > 0 && !dims))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	if ((err = dims_check(nnodes, ndims, dims, &rest, &nfree)))
		return vd_mpi_raise(MPI_COMM_WORLD, err, fn);
	if (nfree == 0)
		return MPI_SUCCESS;
	f = malloc(sizeof(*f));
	out = malloc((size_t)nfree * sizeof(int));
	if (!f || !out) {
		free(f);
		free(out);
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn);
	}
	factors_of(rest, f);
	balance(rest, nfree, rest, f, out);     /* rest x 1 x ... always fits */
	for (int i = 0; i < ndims; i++)
		if (dims[i] == 0)
			dims[i] = out[j++];
	free(f);
	free(out);
	return MPI_SUCCESS;
}

/* ---- Cartesian helpers ---------------------------------------------------------- */

void vd_cart_coords(const struct vd_topo *t, int rank, int *coords)
{
	for (int d = t->ndims - 1; d >= 0; d--) {
		coords[d] = rank % t->dims[d];
		rank /= t->dims[d];
	}
}

/* c on the ring (periodic) or line of n places; -1 when off the line. */
static int cart_place(long long c, int n, bool periodic)
{
	if (c >= 0 && c < n)
		return (int)c;
	return periodic ? (int)(((c % n) + n) % n) : -1;
}

int vd_cart_rank(const struct vd_topo *t, const int *coords)
{
	int rank = 0;

	for (int d = 0; d < t->ndims; d++) {
		int c = cart_place(coords[d], t->dims[d], t->periods[d]);

		if (c < 0)
			return MPI_PROC_NULL;
		rank = rank * t->dims[d] + c;
	}
	return rank;
}

/* The rank `delta` steps from rank (at coordinate c) along dimension dim,
 * whose steps are `stride` ranks apart. */
static int cart_step(const struct vd_topo *t, int rank, int dim, int stride, int c,
		     long long delta)
{
	int n = cart_place(c + delta, t->dims[dim], t->periods[dim]);

	return n < 0 ? MPI_PROC_NULL : rank + (n - c) * stride;
}

void vd_cart_shift(const struct vd_topo *t, int rank, int dim, int disp, int *source,
		   int *dest)
{
	int stride = 1, c;

	for (int d = dim + 1; d < t->ndims; d++)
		stride *= t->dims[d];
	c = rank / stride % t->dims[dim];
	*dest = cart_step(t, rank, dim, stride, c, disp);
	*source = cart_step(t, rank, dim, stride, c, -(long long)disp);
}

/* ---- Cartesian constructors -------------------------------------------------------- */

/* The checks of Cart_create and Cart_map; *nnodes = the grid's size. */
static int cart_args(const struct vd_comm *c, int ndims, const int dims[],
		     const int periods[], int *nnodes)
{
	long long n = 1;

	if (ndims < 0)
		return MPI_ERR_DIMS;
	if (ndims > 0 && (!dims || !periods))
		return MPI_ERR_ARG;
	for (int i = 0; i < ndims; i++) {
		if (dims[i] <= 0)
			return MPI_ERR_DIMS;
		n *= dims[i];
		if (n > c->size)
			return MPI_ERR_TOPOLOGY;
	}
	*nnodes = (int)n;
	return MPI_SUCCESS;
}

/* A Cartesian topology (periods normalised to 0 / 1), or NULL. */
static struct vd_topo *cart_topo(int ndims, const int dims[], const int periods[])
{
	struct vd_topo *t = vd_topo_new(MPI_CART);

	if (!t)
		return NULL;
	t->ndims = ndims;
	t->dims = vd_topo_ints(dims, ndims);
	t->periods = vd_topo_ints(periods, ndims);
	if (!t->dims || !t->periods) {
		vd_topo_free(t);
		return NULL;
	}
	for (int i = 0; i < ndims; i++)
		t->periods[i] = t->periods[i] != 0;
	return t;
}

#pragma weak MPI_Cart_create = PMPI_Cart_create
int PMPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
		     int reorder, MPI_Comm *comm_cart)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Cart_create";
	struct vd_topo *t = NULL;
	struct vd_comm *c;
	int nnodes = 0, err;
	bool member;

	(void)reorder;
	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_comm_get(comm_old)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_COMM, fn);
	err = comm_cart ? cart_args(c, ndims, dims, periods, &nnodes) : MPI_ERR_ARG;
	member = !err && c->rank < nnodes;
	if (member)
		t = cart_topo(ndims, dims, periods);
	return vd_topo_finish(comm_old, err, member ? 0 : MPI_UNDEFINED, c->rank, t,
			      comm_cart, fn);
}

#pragma weak MPI_Cart_map = PMPI_Cart_map
int PMPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[],
		  int *newrank)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Cart_map";
	struct vd_comm *c;
	int nnodes = 0, err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(c = vd_comm_get(comm)))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_COMM, fn);
	err = newrank ? cart_args(c, ndims, dims, periods, &nnodes) : MPI_ERR_ARG;
	if (err)
		return vd_mpi_raise(comm, err, fn);
	*newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED;
	return MPI_SUCCESS;
}

/* The subgrid of Cart_sub that holds rank: its colour numbers the
 * coordinates of the dimensions dropped (row-major); the kept
 * dimensions make its topology. */
static int cart_sub_color(const struct vd_topo *t, const int remain[], const int *coords)
{
	int color = 0;

	for (int d = 0; d < t->ndims; d++)
		if (!remain[d])
			color = color * t->dims[d] + coords[d];
	return color;
}

static struct vd_topo *cart_sub_topo(const struct vd_topo *t, const int remain[])
{
	struct vd_topo *s = cart_topo(t->ndims, t->dims, t->periods);
	int n = 0;

	for (int d = 0; s && d < t->ndims; d++) {
		if (!remain[d])
			continue;
		s->dims[n] = t->dims[d];
		s->periods[n++] = t->periods[d];
	}
	if (s)
		s->ndims = n;
	return s;
}

#pragma weak MPI_Cart_sub = PMPI_Cart_sub
int PMPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Cart_sub";
	struct vd_comm *c;
	struct vd_topo *t;
	int err, color = 0, *coords;

	if ((err = vd_topo_comm(comm, MPI_CART, fn, &c)))
		return err;
	t = c->topo;
	if (!newcomm || (t->ndims > 0 && !remain_dims))
		return vd_topo_finish(comm, MPI_ERR_ARG, MPI_UNDEFINED, 0, NULL, newcomm, fn);
	if ((coords = malloc(t->ndims > 0 ? (size_t)t->ndims * sizeof(int) : 1))) {
		vd_cart_coords(t, c->rank, coords);
		color = cart_sub_color(t, remain_dims, coords);
		free(coords);
	}
	return vd_topo_finish(comm, coords ? MPI_SUCCESS : MPI_ERR_NO_MEM, color, c->rank,
			      cart_sub_topo(t, remain_dims), newcomm, fn);
}

/* ---- Cartesian queries ----------------------------------------------------------- */

#pragma weak MPI_Cartdim_get = PMPI_Cartdim_get
int PMPI_Cartdim_get(MPI_Comm comm, int *ndims)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Cartdim_get";
	struct vd_comm *c;
	int err;

	if ((err = vd_topo_comm(comm, MPI_CART, fn, &c)))
		return err;
	if (!ndims)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	*ndims = c->topo->ndims;
	return MPI_SUCCESS;
}

#pragma weak MPI_Cart_get = PMPI_Cart_get
int PMPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[])
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Cart_get";
	const struct vd_topo *t;
	struct vd_comm *c;
	int err, n;

	if ((err = vd_topo_comm(comm, MPI_CART, fn, &c)))
		return err;
	t = c->topo;
	n = t->ndims;
	if (maxdims < n || (n > 0 && (!dims || !periods || !coords)))
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	memcpy(dims, t->dims, (size_t)n * sizeof(int));
	memcpy(periods, t->periods, (size_t)n * sizeof(int));
	vd_cart_coords(t, c->rank, coords);
	return MPI_SUCCESS;
}

#pragma weak MPI_Cart_rank = PMPI_Cart_rank
int PMPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Cart_rank";
	struct vd_comm *c;
	int err, r;

	if ((err = vd_topo_comm(comm, MPI_CART, fn, &c)))
		return err;
	if (!rank || (c->topo->ndims > 0 && !coords))
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	if ((r = vd_cart_rank(c->topo, coords)) == MPI_PROC_NULL)
		return vd_mpi_raise(comm, MPI_ERR_RANK, fn);
	*rank = r;
	return MPI_SUCCESS;
}

#pragma weak MPI_Cart_coords = PMPI_Cart_coords
int PMPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[])
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Cart_coords";
	struct vd_comm *c;
	int err, n;

	if ((err = vd_topo_comm(comm, MPI_CART, fn, &c)))
		return err;
	n = c->topo->ndims;
	if (rank < 0 || rank >= c->size)
		return vd_mpi_raise(comm, MPI_ERR_RANK, fn);
	if (maxdims < n || (n > 0 && !coords))
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	vd_cart_coords(c->topo, rank, coords);
	return MPI_SUCCESS;
}

#pragma weak MPI_Cart_shift = PMPI_Cart_shift
int PMPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source,
		    int *rank_dest)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Cart_shift";
	struct vd_comm *c;
	int err;

	if ((err = vd_topo_comm(comm, MPI_CART, fn, &c)))
		return err;
	if (direction < 0 || direction >= c->topo->ndims)
		return vd_mpi_raise(comm, MPI_ERR_DIMS, fn);
	if (!rank_source || !rank_dest)
		return vd_mpi_raise(comm, MPI_ERR_ARG, fn);
	vd_cart_shift(c->topo, c->rank, direction, disp, rank_source, rank_dest);
	return MPI_SUCCESS;
}
