/* SPDX-License-Identifier: MIT */
/*
 * Process topologies and neighbourhood collectives: Dims_create against a
 * table and a brute-force search; 2-D Cartesian grids (periodic, not, and
 * mixed; all ranks and a smaller grid that leaves ranks out) with halo
 * exchanges by Cart_shift + Sendrecv and by Neighbor_alltoall/allgather;
 * Cart_sub rows and columns with Allreduce; graphs (ring, star) and
 * distributed graphs from both constructors with Neighbor_allgather(v) and
 * Neighbor_alltoall(v,w); the error classes of bad arguments under
 * MPI_ERRORS_RETURN.  Every result is checked against a serial
 * computation of what it must be.
 */
#include "mpitest.h"

#define SENTINEL (-777)

/* ---- Dims_create ---------------------------------------------------------------- */

struct dims_case {
	int nnodes, ndims, in[4], out[4], err;
};

static const struct dims_case dims_cases[] = {
	{ 6, 2, { 0, 0 }, { 3, 2 }, 0 },
	{ 7, 2, { 0, 0 }, { 7, 1 }, 0 },
	{ 6, 3, { 0, 3, 0 }, { 2, 3, 1 }, 0 },
	{ 7, 3, { 0, 3, 0 }, { 0 }, MPI_ERR_DIMS },
	{ 1, 3, { 0, 0, 0 }, { 1, 1, 1 }, 0 },
	{ 12, 3, { 0, 0, 0 }, { 3, 2, 2 }, 0 },
	{ 16, 3, { 0, 0, 0 }, { 4, 2, 2 }, 0 },
	{ 24, 2, { 0, 0 }, { 6, 4 }, 0 },
	{ 36, 2, { 0, 0 }, { 6, 6 }, 0 },
	{ 30, 3, { 0, 0, 0 }, { 5, 3, 2 }, 0 },
	{ 64, 3, { 0, 0, 0 }, { 4, 4, 4 }, 0 },
	{ 96, 3, { 0, 0, 0 }, { 6, 4, 4 }, 0 },
	{ 120, 3, { 0, 0, 0 }, { 6, 5, 4 }, 0 },
	{ 210, 4, { 0, 0, 0, 0 }, { 7, 5, 3, 2 }, 0 },
	{ 1024, 3, { 0, 0, 0 }, { 16, 8, 8 }, 0 },
	{ 72, 2, { 0, 0 }, { 9, 8 }, 0 },
	{ 8, 2, { 0, 4 }, { 2, 4 }, 0 },
	{ 8, 2, { 2, 4 }, { 2, 4 }, 0 },
	{ 8, 2, { 4, 4 }, { 0 }, MPI_ERR_DIMS },
	{ 8, 2, { 3, 0 }, { 0 }, MPI_ERR_DIMS },
	{ 8, 2, { -1, 0 }, { 0 }, MPI_ERR_DIMS },
	{ 12, 4, { 0, 1, 0, 0 }, { 3, 1, 2, 2 }, 0 },
	{ 2147483647, 2, { 0, 0 }, { 2147483647, 1 }, 0 },
	{ 2, 4, { 0, 0, 0, 0 }, { 2, 1, 1, 1 }, 0 },
};

/* Whether a (non-increasing, n entries) is lexicographically below b. */
static int lex_less(const int *a, const int *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != b[i])
			return a[i] < b[i];
	return 0;
}

/* The smallest non-increasing factorisation of m into k factors <= cap,
 * by trying every one; best[0] = 0 until one is found. */
static void brute(int m, int k, int cap, int *cur, int depth, int *best)
{
	if (depth == k) {
		if (m == 1 && (best[0] == 0 || lex_less(cur, best, k)))
			memcpy(best, cur, sizeof(int) * (size_t)k);
		return;
	}
	for (int d = 1; d <= cap && d <= m; d++) {
		if (m % d)
			continue;
		cur[depth] = d;
		brute(m / d, k, d, cur, depth + 1, best);
	}
}

static void test_dims(void)
{
	mt_phase = "dims_create";
	for (size_t i = 0; i < sizeof(dims_cases) / sizeof(dims_cases[0]); i++) {
		const struct dims_case *c = &dims_cases[i];
		int d[4];

		memcpy(d, c->in, sizeof(d));
		int rc = MPI_Dims_create(c->nnodes, c->ndims, d);
		int cls = -1;
		MPI_Error_class(rc, &cls);
		if (!CHECK(cls == c->err, "case %zu (%d, %d): error %d, expected %d", i,
			   c->nnodes, c->ndims, cls, c->err) || c->err)
			continue;
		for (int j = 0; j < c->ndims; j++)
			CHECK(d[j] == c->out[j], "case %zu (%d, %d): dims[%d] = %d, expected %d",
			      i, c->nnodes, c->ndims, j, d[j], c->out[j]);
	}
	/* Every n up to 100 in 1 to 4 dimensions against an exhaustive search. */
	for (int n = 1; n <= 100; n++) {
		for (int k = 1; k <= 4; k++) {
			int d[4] = { 0, 0, 0, 0 }, cur[4], best[4] = { 0 };

			MPI_OK(MPI_Dims_create(n, k, d));
			brute(n, k, n, cur, 0, best);
			for (int j = 0; j < k; j++)
				CHECK(d[j] == best[j], "(%d, %d): dims[%d] = %d, expected %d", n, k,
				      j, d[j], best[j]);
		}
	}
	int none = 0;
	MPI_OK(MPI_Dims_create(1, 0, &none));
	CHECK(MPI_Dims_create(4, -1, NULL) == MPI_ERR_DIMS, "ndims -1 is not MPI_ERR_DIMS");
}

/* ---- Cartesian --------------------------------------------------------------------- */

/* The serial model of a 2-D grid. */
struct grid {
	int dims[2], periods[2];
};

static int grid_rank(const struct grid *g, int c0, int c1)
{
	int c[2] = { c0, c1 };

	for (int d = 0; d < 2; d++) {
		if (c[d] < 0 || c[d] >= g->dims[d]) {
			if (!g->periods[d])
				return MPI_PROC_NULL;
			c[d] = (c[d] % g->dims[d] + g->dims[d]) % g->dims[d];
		}
	}
	return c[0] * g->dims[1] + c[1];
}

/* The neighbour of rank r at delta along dim. */
static int grid_neighbour(const struct grid *g, int r, int dim, int delta)
{
	int c0 = r / g->dims[1], c1 = r % g->dims[1];

	return dim == 0 ? grid_rank(g, c0 + delta, c1) : grid_rank(g, c0, c1 + delta);
}

static void check_cart_queries(MPI_Comm cart, const struct grid *g, int r)
{
	int nd = -1, dims[2], per[2], coords[2], st = -1, rr = -1, cc[2];

	MPI_OK(MPI_Topo_test(cart, &st));
	CHECK(st == MPI_CART, "Topo_test = %d", st);
	MPI_OK(MPI_Cartdim_get(cart, &nd));
	CHECK(nd == 2, "Cartdim_get = %d", nd);
	MPI_OK(MPI_Cart_get(cart, 2, dims, per, coords));
	CHECK(dims[0] == g->dims[0] && dims[1] == g->dims[1] && per[0] == g->periods[0] &&
	      per[1] == g->periods[1], "Cart_get: %dx%d periods %d %d", dims[0], dims[1],
	      per[0], per[1]);
	CHECK(coords[0] == r / g->dims[1] && coords[1] == r % g->dims[1],
	      "Cart_get coords %d %d at rank %d", coords[0], coords[1], r);
	MPI_OK(MPI_Cart_rank(cart, coords, &rr));
	CHECK(rr == r, "Cart_rank(own coords) = %d, expected %d", rr, r);
	for (int q = 0; q < g->dims[0] * g->dims[1]; q++) {
		MPI_OK(MPI_Cart_coords(cart, q, 2, cc));
		CHECK(cc[0] == q / g->dims[1] && cc[1] == q % g->dims[1],
		      "Cart_coords(%d) = %d %d", q, cc[0], cc[1]);
	}
	/* Coordinates one grid away wrap in a periodic dimension. */
	int far[2] = { coords[0] - g->dims[0], coords[1] + 2 * g->dims[1] };
	int rc = MPI_Cart_rank(cart, far, &rr);
	if (g->periods[0] && g->periods[1])
		CHECK(rc == MPI_SUCCESS && rr == r, "Cart_rank(wrapped) = %d rc %d", rr, rc);
	else
		CHECK(rc == MPI_ERR_RANK, "Cart_rank(outside) rc %d", rc);
}

/* Halo exchange with Cart_shift + Sendrecv, both ways in each dimension. */
static void check_cart_shift(MPI_Comm cart, const struct grid *g, int r)
{
	for (int d = 0; d < 2; d++) {
		int src, dst, got[2] = { SENTINEL, SENTINEL }, v = 100 + r;

		MPI_OK(MPI_Cart_shift(cart, d, 1, &src, &dst));
		CHECK(src == grid_neighbour(g, r, d, -1) && dst == grid_neighbour(g, r, d, 1),
		      "Cart_shift(%d, 1) = %d %d", d, src, dst);
		MPI_OK(MPI_Sendrecv(&v, 1, MPI_INT, dst, 5, &got[0], 1, MPI_INT, src, 5, cart,
				    MPI_STATUS_IGNORE));
		MPI_OK(MPI_Sendrecv(&v, 1, MPI_INT, src, 6, &got[1], 1, MPI_INT, dst, 6, cart,
				    MPI_STATUS_IGNORE));
		CHECK(got[0] == (src == MPI_PROC_NULL ? SENTINEL : 100 + src),
		      "halo dim %d from -1 (%d): %d", d, src, got[0]);
		CHECK(got[1] == (dst == MPI_PROC_NULL ? SENTINEL : 100 + dst),
		      "halo dim %d from +1 (%d): %d", d, dst, got[1]);
		MPI_OK(MPI_Cart_shift(cart, d, -3, &src, &dst));
		CHECK(src == grid_neighbour(g, r, d, 3) && dst == grid_neighbour(g, r, d, -3),
		      "Cart_shift(%d, -3) = %d %d", d, src, dst);
	}
}

/* Neighbor_alltoall: block k of rank q is {q, k}.  Slot 2d receives from
 * the -1 neighbour what it sent to its +1 side (its block 2d + 1), slot
 * 2d + 1 from the +1 neighbour its block 2d; MPI_PROC_NULL: untouched. */
static void check_cart_neighbor(MPI_Comm cart, const struct grid *g, int r)
{
	int sb[8], rb[8], ag[4];

	for (int k = 0; k < 4; k++) {
		sb[2 * k] = r;
		sb[2 * k + 1] = k;
	}
	for (int i = 0; i < 8; i++)
		rb[i] = SENTINEL;
	for (int i = 0; i < 4; i++)
		ag[i] = SENTINEL;
	MPI_OK(MPI_Neighbor_alltoall(sb, 2, MPI_INT, rb, 2, MPI_INT, cart));
	MPI_OK(MPI_Neighbor_allgather(&r, 1, MPI_INT, ag, 1, MPI_INT, cart));
	for (int k = 0; k < 4; k++) {
		int q = grid_neighbour(g, r, k / 2, k % 2 ? 1 : -1);
		int e0 = q == MPI_PROC_NULL ? SENTINEL : q;
		int e1 = q == MPI_PROC_NULL ? SENTINEL : k ^ 1;

		CHECK(rb[2 * k] == e0 && rb[2 * k + 1] == e1,
		      "Neighbor_alltoall slot %d: {%d, %d}, expected {%d, %d}", k, rb[2 * k],
		      rb[2 * k + 1], e0, e1);
		CHECK(ag[k] == e0, "Neighbor_allgather slot %d: %d, expected %d", k, ag[k], e0);
	}
}

/* Cart_sub rows (keep dim 1) and columns (keep dim 0): Allreduce of the
 * ranks equals the serial sum over the row / column. */
static void check_cart_sub(MPI_Comm cart, const struct grid *g, int r)
{
	for (int keep = 0; keep < 2; keep++) {
		int remain[2] = { keep == 0, keep == 1 }, size = -1, rank = -1, sum = -1;
		int exp = 0, dims = -1, per = -1, coord = -1, nd = -1;
		MPI_Comm sub;

		MPI_OK(MPI_Cart_sub(cart, remain, &sub));
		MPI_OK(MPI_Comm_size(sub, &size));
		MPI_OK(MPI_Comm_rank(sub, &rank));
		int mine = keep == 0 ? r / g->dims[1] : r % g->dims[1];
		CHECK(size == g->dims[keep] && rank == mine, "Cart_sub keep %d: size %d rank %d",
		      keep, size, rank);
		for (int i = 0; i < g->dims[keep]; i++)
			exp += keep == 0 ? i * g->dims[1] + r % g->dims[1]
					 : (r / g->dims[1]) * g->dims[1] + i;
		MPI_OK(MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, sub));
		CHECK(sum == exp, "Cart_sub keep %d: Allreduce %d, expected %d", keep, sum, exp);
		MPI_OK(MPI_Cartdim_get(sub, &nd));
		MPI_OK(MPI_Cart_get(sub, 1, &dims, &per, &coord));
		CHECK(nd == 1 && dims == g->dims[keep] && per == g->periods[keep] &&
		      coord == mine, "Cart_sub keep %d: %d dims, %d periodic %d, coord %d",
		      keep, nd, dims, per, coord);
		MPI_OK(MPI_Comm_free(&sub));
	}
	int none[2] = { 0, 0 }, size = -1, nd = -1;
	MPI_Comm self;
	MPI_OK(MPI_Cart_sub(cart, none, &self));
	MPI_OK(MPI_Comm_size(self, &size));
	MPI_OK(MPI_Cartdim_get(self, &nd));
	CHECK(size == 1 && nd == 0, "Cart_sub keeping nothing: size %d, %d dims", size, nd);
	MPI_OK(MPI_Comm_free(&self));
}

static void test_cart_grid(int d0, int d1, int p0, int p1)
{
	struct grid g = { { d0, d1 }, { p0, p1 } };
	int n = d0 * d1, r = -1, size = -1, map = -1;
	MPI_Comm cart, dup;

	MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 2, g.dims, g.periods, 1, &cart));
	MPI_OK(MPI_Cart_map(MPI_COMM_WORLD, 2, g.dims, g.periods, &map));
	CHECK(map == (mt_rank < n ? mt_rank : MPI_UNDEFINED), "Cart_map = %d", map);
	if (mt_rank >= n) {
		CHECK(cart == MPI_COMM_NULL, "rank %d outside a %dx%d grid got a communicator",
		      mt_rank, d0, d1);
		return;
	}
	if (!CHECK(cart != MPI_COMM_NULL, "no communicator for a grid member"))
		return;
	MPI_OK(MPI_Comm_rank(cart, &r));
	MPI_OK(MPI_Comm_size(cart, &size));
	CHECK(r == mt_rank && size == n, "cart rank %d size %d", r, size);
	check_cart_queries(cart, &g, r);
	check_cart_shift(cart, &g, r);
	check_cart_neighbor(cart, &g, r);
	check_cart_sub(cart, &g, r);
	/* A duplicate keeps the topology. */
	MPI_OK(MPI_Comm_dup(cart, &dup));
	check_cart_queries(dup, &g, r);
	check_cart_neighbor(dup, &g, r);
	MPI_OK(MPI_Comm_free(&dup));
	MPI_OK(MPI_Comm_free(&cart));
}

/* Zero dimensions: one process (rank 0), which is its own only neighbour
 * set (none). */
static void test_cart_zero(void)
{
	MPI_Comm c0;
	int st = -1, nd = -1, size = -1, r = -1, x = 5, y = SENTINEL, a, b;

	MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 0, NULL, NULL, 0, &c0));
	if (mt_rank != 0) {
		CHECK(c0 == MPI_COMM_NULL, "0-dimensional grid: rank %d got a communicator",
		      mt_rank);
		return;
	}
	MPI_OK(MPI_Topo_test(c0, &st));
	MPI_OK(MPI_Cartdim_get(c0, &nd));
	MPI_OK(MPI_Comm_size(c0, &size));
	MPI_OK(MPI_Cart_rank(c0, NULL, &r));
	CHECK(st == MPI_CART && nd == 0 && size == 1 && r == 0,
	      "0-dimensional grid: Topo_test %d, %d dims, size %d, rank %d", st, nd, size, r);
	MPI_OK(MPI_Neighbor_allgather(&x, 1, MPI_INT, &y, 1, MPI_INT, c0));
	CHECK(y == SENTINEL, "0-dimensional grid: Neighbor_allgather wrote %d", y);
	CHECK(MPI_Cart_shift(c0, 0, 1, &a, &b) == MPI_ERR_DIMS,
	      "0-dimensional grid: Cart_shift(0) is not MPI_ERR_DIMS");
	MPI_OK(MPI_Comm_free(&c0));
}

static void test_cart(void)
{
	int d[2] = { 0, 0 };
	static const int per[4][2] = { { 1, 1 }, { 0, 0 }, { 1, 0 }, { 0, 1 } };

	mt_phase = "cart";
	MPI_OK(MPI_Dims_create(mt_size, 2, d));
	for (int p = 0; p < 4; p++) {
		/* The whole world, and a smaller 2 x k grid that leaves ranks out
		 * (with 7 ranks: 2 x 3, rank 6 gets MPI_COMM_NULL). */
		test_cart_grid(d[0], d[1], per[p][0], per[p][1]);
		test_cart_grid(mt_size >= 2 ? 2 : 1, mt_size >= 2 ? mt_size / 2 : 1, per[p][0],
			       per[p][1]);
		test_cart_grid(d[1], d[0], per[p][0], per[p][1]);
	}
	test_cart_zero();
}

/* ---- graphs ------------------------------------------------------------------------ */

/* Neighbor_allgather and _allgatherv on a graph communicator whose
 * neighbours are nb[0..n-1]: rank q sends q + 1 ints of 1000 q + i. */
static void check_gather(MPI_Comm comm, int r, const int *nb, int n, const char *what)
{
	int *ag = mt_malloc(sizeof(int) * (size_t)n), *cnt = mt_malloc(sizeof(int) * (size_t)n);
	int *dsp = mt_malloc(sizeof(int) * (size_t)n), total = 0, send[64];

	for (int i = 0; i <= r; i++)
		send[i] = 1000 * r + i;
	/* The pieces back to front, one int of gap between them. */
	for (int k = n - 1; k >= 0; k--) {
		cnt[k] = nb[k] + 1;
		dsp[k] = total;
		total += cnt[k] + 1;
	}
	int *agv = mt_malloc(sizeof(int) * (size_t)(total + 1));
	for (int i = 0; i < total; i++)
		agv[i] = SENTINEL;
	MPI_OK(MPI_Neighbor_allgather(&r, 1, MPI_INT, ag, 1, MPI_INT, comm));
	MPI_OK(MPI_Neighbor_allgatherv(send, r + 1, MPI_INT, agv, cnt, dsp, MPI_INT, comm));
	for (int k = 0; k < n; k++) {
		CHECK(ag[k] == nb[k], "%s allgather slot %d: %d, expected %d", what, k, ag[k],
		      nb[k]);
		for (int i = 0; i < cnt[k]; i++)
			CHECK(agv[dsp[k] + i] == 1000 * nb[k] + i, "%s allgatherv slot %d[%d]: %d",
			      what, k, i, agv[dsp[k] + i]);
		CHECK(agv[dsp[k] + cnt[k]] == SENTINEL, "%s allgatherv wrote into a gap", what);
	}
	free(ag);
	free(cnt);
	free(dsp);
	free(agv);
}

/* Which of p's edges to r is the dup-th (0 first): its index among p's
 * neighbours, which every member of a graph communicator can ask. */
static int edge_index(MPI_Comm comm, int p, int r, int dup)
{
	int pn = 0, pnb[64];

	MPI_OK(MPI_Graph_neighbors_count(comm, p, &pn));
	MPI_OK(MPI_Graph_neighbors(comm, p, 64, pnb));
	for (int i = 0; i < pn; i++)
		if (pnb[i] == r && dup-- == 0)
			return i;
	return -1;
}

/* Neighbor_alltoallv where rank q sends to its j-th neighbour 1 + j % 3
 * ints {q, j, j}: slot k of ours from p holds p's piece for p's edge
 * that pairs with our k-th (several edges between two ranks pair up in
 * order). */
static void check_alltoallv(MPI_Comm comm, int r, const int *nb, int n, const char *what)
{
	int sc[64], sd[64], rc[64], rd[64], ej[64], sb[192], rb[192], st = 0, rt = 0;

	for (int j = 0; j < n; j++) {
		sc[j] = 1 + j % 3;
		sd[j] = st;
		for (int i = 0; i < sc[j]; i++)
			sb[st + i] = i == 0 ? r : j;
		st += sc[j];
	}
	for (int k = 0; k < n; k++) {
		int dup = 0;

		for (int i = 0; i < k; i++)
			dup += nb[i] == nb[k];
		ej[k] = edge_index(comm, nb[k], r, dup);
		rc[k] = 1 + ej[k] % 3;
		rd[k] = rt;
		rt += rc[k];
	}
	for (int i = 0; i < rt; i++)
		rb[i] = SENTINEL;
	MPI_OK(MPI_Neighbor_alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, comm));
	for (int k = 0; k < n; k++)
		for (int i = 0; i < rc[k]; i++)
			CHECK(rb[rd[k] + i] == (i == 0 ? nb[k] : ej[k]),
			      "%s alltoallv slot %d[%d] = %d, expected %d", what, k, i,
			      rb[rd[k] + i], i == 0 ? nb[k] : ej[k]);
}

/* A graph of nnodes nodes from per-node neighbour lists; checks the
 * queries and the collectives. */
static void test_graph_one(int nnodes, const int *index, const int *edges, const char *what)
{
	MPI_Comm g;
	int st = -1, nn = -1, ne = -1, map = -1;

	MPI_OK(MPI_Graph_create(MPI_COMM_WORLD, nnodes, index, edges, 0, &g));
	MPI_OK(MPI_Graph_map(MPI_COMM_WORLD, nnodes, index, edges, &map));
	CHECK(map == (mt_rank < nnodes ? mt_rank : MPI_UNDEFINED), "Graph_map = %d", map);
	if (mt_rank >= nnodes) {
		CHECK(g == MPI_COMM_NULL, "%s: rank outside the graph got a communicator", what);
		return;
	}
	MPI_OK(MPI_Topo_test(g, &st));
	MPI_OK(MPI_Graphdims_get(g, &nn, &ne));
	CHECK(st == MPI_GRAPH && nn == nnodes && ne == index[nnodes - 1],
	      "%s: Topo_test %d, Graphdims_get %d %d", what, st, nn, ne);
	int gi[64], ge[256], cnt = -1, nb[64];
	MPI_OK(MPI_Graph_get(g, 64, 256, gi, ge));
	CHECK(!memcmp(gi, index, sizeof(int) * (size_t)nnodes) &&
	      !memcmp(ge, edges, sizeof(int) * (size_t)ne), "%s: Graph_get differs", what);
	int first = mt_rank ? index[mt_rank - 1] : 0;
	MPI_OK(MPI_Graph_neighbors_count(g, mt_rank, &cnt));
	MPI_OK(MPI_Graph_neighbors(g, mt_rank, 64, nb));
	CHECK(cnt == index[mt_rank] - first && !memcmp(nb, edges + first, sizeof(int) * (size_t)cnt),
	      "%s: Graph_neighbors (%d)", what, cnt);
	check_gather(g, mt_rank, nb, cnt, what);
	check_alltoallv(g, mt_rank, nb, cnt, what);
	MPI_OK(MPI_Comm_free(&g));
}

static void test_graph(void)
{
	int index[64], edges[256], e = 0;
	int n = mt_size > 1 ? mt_size - 1 : 1;  /* leaves the last rank out */

	mt_phase = "graph";
	/* Ring of n: with 1 node two edges to itself, with 2 two to the other. */
	for (int i = 0; i < n; i++) {
		edges[e++] = (i + n - 1) % n;
		edges[e++] = (i + 1) % n;
		index[i] = e;
	}
	test_graph_one(n, index, edges, "ring");
	/* Star over everyone: 0 is the centre. */
	e = 0;
	for (int i = 0; i < mt_size; i++) {
		if (i == 0)
			for (int j = 1; j < mt_size; j++)
				edges[e++] = j;
		else
			edges[e++] = 0;
		index[i] = e;
	}
	test_graph_one(mt_size, index, edges, "star");
	/* No nodes: MPI_COMM_NULL everywhere. */
	MPI_Comm none = MPI_COMM_WORLD;
	MPI_OK(MPI_Graph_create(MPI_COMM_WORLD, 0, NULL, NULL, 0, &none));
	CHECK(none == MPI_COMM_NULL, "a graph of no nodes gave a communicator");
}

/* ---- distributed graphs --------------------------------------------------------------- */

/* The test's graph: i -> i + 1 (weight 10 i + 1) and i -> i + 2 (10 i + 2). */
static int dg_weight(int from, int step)
{
	return 10 * from + step;
}

static int pair_cmp(const void *a, const void *b)
{
	const int *x = a, *y = b;

	return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* Whether the n (rank, weight) pairs equal the expected ones, in any order. */
static int same_pairs(const int *ranks, const int *weights, const int *exp, int n)
{
	int got[8], want[8];

	for (int i = 0; i < n; i++) {
		got[2 * i] = ranks[i];
		got[2 * i + 1] = weights ? weights[i] : 0;
		want[2 * i] = exp[2 * i];
		want[2 * i + 1] = weights ? exp[2 * i + 1] : 0;
	}
	qsort(got, (size_t)n, 2 * sizeof(int), pair_cmp);
	qsort(want, (size_t)n, 2 * sizeof(int), pair_cmp);
	return !memcmp(got, want, sizeof(int) * 2 * (size_t)n);
}

/* The queries, then Neighbor_allgather and Neighbor_alltoallw: rank q
 * sends on each out-edge {q, weight}; in-slot k must hold {source[k],
 * weight of that edge} (edges between one pair pair up in order). */
static void check_dist(MPI_Comm dg, int weighted_exp, const char *what)
{
	int n = mt_size, r = mt_rank, in = -1, out = -1, w = -1, st = -1;
	int src[2], sw[2], dst[2], dw[2];
	int exp_in[4] = { (r + n - 1) % n, dg_weight((r + n - 1) % n, 1), (r + n - 2) % n,
			  dg_weight((r + n - 2) % n, 2) };
	int exp_out[4] = { (r + 1) % n, dg_weight(r, 1), (r + 2) % n, dg_weight(r, 2) };

	MPI_OK(MPI_Topo_test(dg, &st));
	MPI_OK(MPI_Dist_graph_neighbors_count(dg, &in, &out, &w));
	CHECK(st == MPI_DIST_GRAPH && in == 2 && out == 2 && w == weighted_exp,
	      "%s: Topo_test %d, counts %d %d weighted %d", what, st, in, out, w);
	if (in != 2 || out != 2)
		return;
	MPI_OK(MPI_Dist_graph_neighbors(dg, 2, src, sw, 2, dst, dw));
	CHECK(same_pairs(src, weighted_exp ? sw : NULL, exp_in, 2), "%s: sources %d/%d %d/%d",
	      what, src[0], sw[0], src[1], sw[1]);
	CHECK(same_pairs(dst, weighted_exp ? dw : NULL, exp_out, 2), "%s: destinations %d %d",
	      what, dst[0], dst[1]);
	int ag[2] = { SENTINEL, SENTINEL };
	MPI_OK(MPI_Neighbor_allgather(&r, 1, MPI_INT, ag, 1, MPI_INT, dg));
	CHECK(ag[0] == src[0] && ag[1] == src[1], "%s allgather: %d %d", what, ag[0], ag[1]);
	if (!weighted_exp)
		return;
	/* alltoallw: send {r, weight} per out-edge; receive slot k at byte
	 * offset (1 - k) * 3 ints (back to front, with a gap). */
	int sb[4] = { r, dw[0], r, dw[1] }, rb[6];
	int cnt[2] = { 2, 2 };
	MPI_Aint sd[2] = { 0, 2 * sizeof(int) }, rd[2] = { 3 * sizeof(int), 0 };
	MPI_Datatype ty[2] = { MPI_INT, MPI_INT };
	for (int i = 0; i < 6; i++)
		rb[i] = SENTINEL;
	MPI_OK(MPI_Neighbor_alltoallw(sb, cnt, sd, ty, rb, cnt, rd, ty, dg));
	for (int k = 0; k < 2; k++) {
		int *p = rb + (1 - k) * 3;
		CHECK(p[0] == src[k] && p[1] == sw[k] && p[2] == SENTINEL,
		      "%s alltoallw slot %d: {%d, %d, %d}, expected {%d, %d}", what, k, p[0],
		      p[1], p[2], src[k], sw[k]);
	}
	/* alltoall: the same through the uniform form. */
	int ra[4] = { SENTINEL, SENTINEL, SENTINEL, SENTINEL };
	MPI_OK(MPI_Neighbor_alltoall(sb, 2, MPI_INT, ra, 2, MPI_INT, dg));
	for (int k = 0; k < 2; k++)
		CHECK(ra[2 * k] == src[k] && ra[2 * k + 1] == sw[k], "%s alltoall slot %d", what,
		      k);
}

/* Fan-out: rank 0 -> every rank (itself too), so degrees differ.  By the
 * general constructor, rank 0 naming nothing and the others each their
 * own in-edge. */
static void test_fan_out(void)
{
	int n = mt_size, r = mt_rank, zero = 0, one = 1, in = -1, out = -1, w = -1;
	int *cnt = mt_malloc(sizeof(int) * (size_t)n), *dsp = mt_malloc(sizeof(int) * (size_t)n);
	int *sb = mt_malloc(sizeof(int) * (size_t)(n * (n + 1) / 2)), rb[8], k = 0, got = SENTINEL;
	MPI_Comm fan;

	MPI_OK(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &zero, &one, &r, MPI_UNWEIGHTED,
				     MPI_INFO_NULL, 0, &fan));
	MPI_OK(MPI_Dist_graph_neighbors_count(fan, &in, &out, &w));
	CHECK(in == 1 && out == (r == 0 ? n : 0) && !w, "fan-out: degrees %d %d weighted %d",
	      in, out, w);
	if (r == 0) {
		int d[64];
		MPI_OK(MPI_Dist_graph_neighbors(fan, 1, &got, NULL, n, d, NULL));
		for (int j = 0; j < n; j++)
			CHECK(d[j] == j, "fan-out: destination %d is %d", j, d[j]);
	}
	/* Rank j gets j + 1 ints of 100 + j. */
	for (int j = 0; j < n; j++) {
		cnt[j] = j + 1;
		dsp[j] = k;
		for (int i = 0; i <= j; i++)
			sb[k++] = 100 + j;
	}
	for (int i = 0; i < 8; i++)
		rb[i] = SENTINEL;
	int rc1 = r + 1, rd = 1;
	MPI_OK(MPI_Neighbor_alltoallv(sb, cnt, dsp, MPI_INT, rb, &rc1, &rd, MPI_INT, fan));
	for (int i = 0; i < 8; i++)
		CHECK(rb[i] == (i >= 1 && i <= r + 1 ? 100 + r : SENTINEL),
		      "fan-out alltoallv [%d] = %d", i, rb[i]);
	int from0 = 42 + r;
	got = SENTINEL;
	MPI_OK(MPI_Neighbor_allgatherv(&from0, r == 0 ? 1 : 0, MPI_INT, &got, &one, &zero,
				       MPI_INT, fan));
	CHECK(got == 42, "fan-out allgatherv: %d", got);
	MPI_OK(MPI_Comm_free(&fan));
	free(cnt);
	free(dsp);
	free(sb);
}

static void test_dist_graph(void)
{
	int n = mt_size, r = mt_rank;
	int src[2] = { (r + n - 1) % n, (r + n - 2) % n };
	int sw[2] = { dg_weight(src[0], 1), dg_weight(src[1], 2) };
	int dst[2] = { (r + 1) % n, (r + 2) % n };
	int dw[2] = { dg_weight(r, 1), dg_weight(r, 2) };
	MPI_Comm dg;

	mt_phase = "dist_graph";
	MPI_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, sw, 2, dst, dw,
					      MPI_INFO_NULL, 0, &dg));
	check_dist(dg, 1, "adjacent");
	MPI_OK(MPI_Comm_free(&dg));
	MPI_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, MPI_UNWEIGHTED, 2, dst,
					      MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg));
	check_dist(dg, 0, "adjacent unweighted");
	MPI_OK(MPI_Comm_free(&dg));

	/* General: rank r names the out-edges of node r + 1, so every edge
	 * travels to both its ends. */
	int node = (r + 1) % n, deg = 2, ends[2] = { (node + 1) % n, (node + 2) % n };
	int w[2] = { dg_weight(node, 1), dg_weight(node, 2) };
	MPI_OK(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &node, &deg, ends, w, MPI_INFO_NULL, 0,
				     &dg));
	check_dist(dg, 1, "general");
	MPI_OK(MPI_Comm_free(&dg));
	MPI_OK(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &node, &deg, ends, MPI_UNWEIGHTED,
				     MPI_INFO_NULL, 0, &dg));
	check_dist(dg, 0, "general unweighted");
	MPI_OK(MPI_Comm_free(&dg));

	/* General: rank 0 names every edge, the others none. */
	int *nodes = mt_malloc(sizeof(int) * (size_t)n), *degs = mt_malloc(sizeof(int) * (size_t)n);
	int *all = mt_malloc(sizeof(int) * 2 * (size_t)n), *aw = mt_malloc(sizeof(int) * 2 * (size_t)n);
	for (int i = 0; i < n; i++) {
		nodes[i] = i;
		degs[i] = 2;
		all[2 * i] = (i + 1) % n;
		all[2 * i + 1] = (i + 2) % n;
		aw[2 * i] = dg_weight(i, 1);
		aw[2 * i + 1] = dg_weight(i, 2);
	}
	MPI_OK(MPI_Dist_graph_create(MPI_COMM_WORLD, r == 0 ? n : 0, nodes, degs, all,
				     r == 0 ? aw : MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &dg));
	check_dist(dg, 1, "general from rank 0");
	MPI_OK(MPI_Comm_free(&dg));
	free(nodes);
	free(degs);
	free(all);
	free(aw);
	test_fan_out();
}

/* ---- errors ------------------------------------------------------------------------- */

static void expect(int rc, int cls, const char *what)
{
	int got = -1;

	MPI_Error_class(rc, &got);
	CHECK(got == cls, "%s: error class %d, expected %d", what, got, cls);
}

static void test_errors(void)
{
	int a = 0, b = 0, c[2] = { 0, 0 }, st = -1, x = 1, y[8];
	int dims[2] = { mt_size + 1, 1 }, per[2] = { 0, 0 }, bad[2] = { 0, 4 };
	MPI_Comm out = MPI_COMM_NULL, cart;

	mt_phase = "errors";
	MPI_OK(MPI_Topo_test(MPI_COMM_WORLD, &st));
	CHECK(st == MPI_UNDEFINED, "Topo_test(WORLD) = %d", st);
	expect(MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &a, &b), MPI_ERR_TOPOLOGY, "Cart_shift(WORLD)");
	expect(MPI_Cart_get(MPI_COMM_WORLD, 2, c, c, c), MPI_ERR_TOPOLOGY, "Cart_get(WORLD)");
	expect(MPI_Cartdim_get(MPI_COMM_WORLD, &a), MPI_ERR_TOPOLOGY, "Cartdim_get(WORLD)");
	expect(MPI_Graphdims_get(MPI_COMM_WORLD, &a, &b), MPI_ERR_TOPOLOGY, "Graphdims_get");
	expect(MPI_Dist_graph_neighbors_count(MPI_COMM_WORLD, &a, &b, &st), MPI_ERR_TOPOLOGY,
	       "Dist_graph_neighbors_count(WORLD)");
	expect(MPI_Neighbor_allgather(&x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_WORLD),
	       MPI_ERR_TOPOLOGY, "Neighbor_allgather(WORLD)");
	expect(MPI_Cart_shift(4242, 0, 1, &a, &b), MPI_ERR_COMM, "Cart_shift(invalid comm)");
	expect(MPI_Dims_create(6, 2, bad), MPI_ERR_DIMS, "Dims_create(6, {0, 4})");
	/* Constructors: every rank passes the same bad arguments. */
	expect(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &out), MPI_ERR_TOPOLOGY,
	       "Cart_create(grid larger than the group)");
	dims[0] = 0;
	expect(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &out), MPI_ERR_DIMS,
	       "Cart_create(dims 0)");
	expect(MPI_Cart_create(MPI_COMM_WORLD, -1, dims, per, 0, &out), MPI_ERR_DIMS,
	       "Cart_create(ndims -1)");
	int bad_src = mt_size;
	expect(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &bad_src, MPI_UNWEIGHTED, 0,
					      NULL, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &out),
	       MPI_ERR_RANK, "Dist_graph_create_adjacent(source = size)");
	/* Only the last rank is wrong: all must return, nobody may hang. */
	int src0 = mt_rank == mt_size - 1 ? -5 : 0, deg = 1, one = 0;
	int rc = MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &src0, &deg, &one, MPI_UNWEIGHTED,
				       MPI_INFO_NULL, 0, &out);
	CHECK(rc != MPI_SUCCESS, "Dist_graph_create with one bad rank succeeded");
	CHECK(out == MPI_COMM_NULL, "a failed constructor returned a communicator");
	/* On a Cartesian communicator. */
	dims[0] = mt_size;
	MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &cart));
	int far[2] = { mt_size, 0 }, neg[2] = { -1, 0 };
	expect(MPI_Cart_rank(cart, far, &a), MPI_ERR_RANK, "Cart_rank(coord = dims)");
	expect(MPI_Cart_rank(cart, neg, &a), MPI_ERR_RANK, "Cart_rank(coord -1)");
	expect(MPI_Cart_coords(cart, mt_size, 2, c), MPI_ERR_RANK, "Cart_coords(rank = size)");
	expect(MPI_Cart_shift(cart, 2, 1, &a, &b), MPI_ERR_DIMS, "Cart_shift(direction 2)");
	expect(MPI_Graph_neighbors_count(cart, 0, &a), MPI_ERR_TOPOLOGY,
	       "Graph_neighbors_count(cart)");
	expect(MPI_Neighbor_alltoall(y, -1, MPI_INT, y, 1, MPI_INT, cart), MPI_ERR_COUNT,
	       "Neighbor_alltoall(count -1)");
	expect(MPI_Neighbor_alltoall(y, 1, MPI_DATATYPE_NULL, y, 1, MPI_INT, cart),
	       MPI_ERR_TYPE, "Neighbor_alltoall(MPI_DATATYPE_NULL)");
	expect(MPI_Neighbor_allgather(MPI_IN_PLACE, 1, MPI_INT, y, 1, MPI_INT, cart),
	       MPI_ERR_BUFFER, "Neighbor_allgather(MPI_IN_PLACE)");
	int cnt[4] = { 1, 1, 1, 1 }, dsp[4] = { 0, 1, 2, 3 };
	expect(MPI_Neighbor_alltoallv(y, NULL, dsp, MPI_INT, y, cnt, dsp, MPI_INT, cart),
	       MPI_ERR_ARG, "Neighbor_alltoallv(sendcounts NULL)");
	expect(MPI_Cart_coords(cart, 0, 1, c), MPI_ERR_ARG, "Cart_coords(maxdims 1 of 2)");
	int keep[2] = { 1, 0 };
	expect(MPI_Cart_sub(MPI_COMM_WORLD, keep, &out), MPI_ERR_TOPOLOGY, "Cart_sub(WORLD)");
	MPI_OK(MPI_Comm_free(&cart));
	/* A graph that is not symmetric has no neighbourhood collectives. */
	if (mt_size >= 2) {
		int index[2] = { 1, 1 }, edges[1] = { 1 };
		MPI_Comm g;
		MPI_OK(MPI_Graph_create(MPI_COMM_WORLD, 2, index, edges, 0, &g));
		if (g != MPI_COMM_NULL) {
			expect(MPI_Graph_neighbors_count(g, 2, &a), MPI_ERR_RANK,
			       "Graph_neighbors_count(rank 2 of 2)");
			expect(MPI_Neighbor_allgather(&x, 1, MPI_INT, y, 1, MPI_INT, g),
			       MPI_ERR_TOPOLOGY, "Neighbor_allgather(asymmetric graph)");
			MPI_OK(MPI_Comm_free(&g));
		}
	}
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, 60);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	test_dims();
	test_cart();
	test_graph();
	test_dist_graph();
	test_errors();
	return mt_finish("topo");
}
