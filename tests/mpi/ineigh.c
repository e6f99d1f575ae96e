/* SPDX-License-Identifier: MIT */
/*
 * The nonblocking neighbourhood collectives (MPI_Ineighbor_*) on Cartesian,
 * graph and distributed-graph communicators, checked against a serial model
 * of every rank's neighbour lists: all five outstanding at once (plus a
 * second alltoall started behind the first), completed by Waitall, by
 * Test/Testany loops and by Waitany/Waitsome.  Then the error paths.
 */
#include "mpitest.h"

#define SENTINEL (-77)
#define MAXN 64

/* The whole topology as every rank can compute it: the out- and
 * in-neighbours of each rank in the standard's order. */
struct model {
	int n;
	int nout[MAXN], nin[MAXN];
	int out[MAXN][16], in[MAXN][16];
	int cart;                       /* pairing by direction */
};

/* The out-slot of p whose message lands in r's in-slot k. */
static int edge_of(const struct model *m, int r, int k)
{
	int p = m->in[r][k], dup = 0;

	if (m->cart)
		return k ^ 1;
	for (int i = 0; i < k; i++)
		dup += m->in[r][i] == p;
	for (int j = 0; j < m->nout[p]; j++)
		if (m->out[p][j] == r && dup-- == 0)
			return j;
	return -1;
}

/* What the five collectives send and receive at rank r. */
struct bufs {
	int me;                         /* allgather's send buffer: it must live
	                                 * until the request completes */
	int ag[16], agv[128], a2a[32], a2a2[32], a2av[128], a2aw[64];
	int agv_cnt[16], agv_dsp[16];
	int a2a_send[32], a2a2_send[32];
	int sv_cnt[16], sv_dsp[16], rv_cnt[16], rv_dsp[16], a2av_send[128];
	int sw_cnt[16], rw_cnt[16];
	MPI_Aint sw_dsp[16], rw_dsp[16];
	MPI_Datatype sw_t[16], rw_t[16];
	int a2aw_send[64];
	int agv_send[4];
};

static MPI_Datatype every_other;        /* 2 ints, stride 2: not contiguous */

static void prepare_sends(const struct model *m, int r, struct bufs *b)
{
	int st = 0;

	for (int i = 0; i < 4; i++)
		b->agv_send[i] = 1000 * r + i;
	for (int j = 0; j < m->nout[r]; j++) {
		b->a2a_send[2 * j] = r;
		b->a2a_send[2 * j + 1] = j;
		b->a2a2_send[2 * j] = -r;
		b->a2a2_send[2 * j + 1] = 50 + j;
		b->sv_cnt[j] = 1 + j % 3;
		b->sv_dsp[j] = st;
		for (int i = 0; i < b->sv_cnt[j]; i++)
			b->a2av_send[st + i] = i == 0 ? r : j;
		st += b->sv_cnt[j];
		/* odd slots: 2 ints of every_other, from 4 ints at 4 * j */
		b->sw_cnt[j] = 1;
		b->sw_t[j] = j % 2 ? every_other : MPI_INT;
		b->sw_dsp[j] = (MPI_Aint)(4 * j) * (MPI_Aint)sizeof(int);
		for (int i = 0; i < 4; i++)
			b->a2aw_send[4 * j + i] = i % 2 ? -1 : 10 * r + j + i;
	}
}

static void prepare_recvs(const struct model *m, int r, struct bufs *b)
{
	int at = 0, rt = 0;

	for (int i = 0; i < 128; i++)
		b->agv[i] = b->a2av[i] = SENTINEL;
	for (int i = 0; i < 32; i++)
		b->a2a[i] = b->a2a2[i] = SENTINEL;
	for (int i = 0; i < 16; i++)
		b->ag[i] = SENTINEL;
	for (int i = 0; i < 64; i++)
		b->a2aw[i] = SENTINEL;
	/* pieces back to front with a gap of one int between them */
	for (int k = m->nin[r] - 1; k >= 0; k--) {
		int p = m->in[r][k];

		b->agv_cnt[k] = 1 + (p < 0 ? 0 : p % 3);
		b->agv_dsp[k] = at;
		at += b->agv_cnt[k] + 1;
	}
	for (int k = 0; k < m->nin[r]; k++) {
		int ej = edge_of(m, r, k);

		b->rv_cnt[k] = 1 + ej % 3;
		b->rv_dsp[k] = rt;
		rt += b->rv_cnt[k];
		b->rw_cnt[k] = ej % 2 ? 2 : 1;
		b->rw_t[k] = MPI_INT;
		b->rw_dsp[k] = (MPI_Aint)(3 * k) * (MPI_Aint)sizeof(int);
	}
}

/* Start the five (and a second alltoall) on comm. */
static void start_all(MPI_Comm comm, const struct model *m, int r, struct bufs *b,
		      MPI_Request *req)
{
	b->me = 100 * r + 7;
	MPI_OK(MPI_Ineighbor_allgather(&b->me, 1, MPI_INT, b->ag, 1, MPI_INT, comm, &req[0]));
	MPI_OK(MPI_Ineighbor_allgatherv(b->agv_send, 1 + r % 3, MPI_INT, b->agv, b->agv_cnt,
					b->agv_dsp, MPI_INT, comm, &req[1]));
	MPI_OK(MPI_Ineighbor_alltoall(b->a2a_send, 2, MPI_INT, b->a2a, 2, MPI_INT, comm,
				      &req[2]));
	MPI_OK(MPI_Ineighbor_alltoallv(b->a2av_send, b->sv_cnt, b->sv_dsp, MPI_INT, b->a2av,
				       b->rv_cnt, b->rv_dsp, MPI_INT, comm, &req[3]));
	MPI_OK(MPI_Ineighbor_alltoallw(b->a2aw_send, b->sw_cnt, b->sw_dsp, b->sw_t, b->a2aw,
				       b->rw_cnt, b->rw_dsp, b->rw_t, comm, &req[4]));
	MPI_OK(MPI_Ineighbor_alltoall(b->a2a2_send, 2, MPI_INT, b->a2a2, 2, MPI_INT, comm,
				      &req[5]));
	(void)m;
}

static void check_slot(const struct model *m, int r, int k, const struct bufs *b,
		       const char *what)
{
	int p = m->in[r][k], ej = edge_of(m, r, k);
	int null = p == MPI_PROC_NULL;

	CHECK(b->ag[k] == (null ? SENTINEL : 100 * p + 7), "%s allgather slot %d: %d (from %d)",
	      what, k, b->ag[k], p);
	for (int i = 0; !null && i < b->agv_cnt[k]; i++)
		CHECK(b->agv[b->agv_dsp[k] + i] == 1000 * p + i, "%s allgatherv slot %d[%d]: %d",
		      what, k, i, b->agv[b->agv_dsp[k] + i]);
	CHECK(b->agv[b->agv_dsp[k] + b->agv_cnt[k]] == SENTINEL, "%s allgatherv gap written",
	      what);
	CHECK(b->a2a[2 * k] == (null ? SENTINEL : p) &&
	      b->a2a[2 * k + 1] == (null ? SENTINEL : ej),
	      "%s alltoall slot %d: {%d, %d}, expected from %d slot %d", what, k, b->a2a[2 * k],
	      b->a2a[2 * k + 1], p, ej);
	CHECK(b->a2a2[2 * k] == (null ? SENTINEL : -p) &&
	      b->a2a2[2 * k + 1] == (null ? SENTINEL : 50 + ej),
	      "%s second alltoall slot %d: {%d, %d}", what, k, b->a2a2[2 * k], b->a2a2[2 * k + 1]);
	for (int i = 0; i < b->rv_cnt[k]; i++) {
		int want = null ? SENTINEL : i == 0 ? p : ej;

		CHECK(b->a2av[b->rv_dsp[k] + i] == want, "%s alltoallv slot %d[%d]: %d, want %d",
		      what, k, i, b->a2av[b->rv_dsp[k] + i], want);
	}
	for (int i = 0; i < b->rw_cnt[k]; i++) {
		int want = null ? SENTINEL : 10 * p + ej + 2 * i;

		CHECK(b->a2aw[3 * k + i] == want, "%s alltoallw slot %d[%d]: %d, want %d", what, k,
		      i, b->a2aw[3 * k + i], want);
	}
}

/* Complete the six requests in one of three ways. */
static void complete(MPI_Request *req, int how)
{
	int flag = 0, idx, left = 6, out[6], n;

	switch (how) {
	case 0:
		MPI_OK(MPI_Waitall(6, req, MPI_STATUSES_IGNORE));
		break;
	case 1:
		while (!flag)
			MPI_OK(MPI_Testall(6, req, &flag, MPI_STATUSES_IGNORE));
		break;
	default:
		MPI_OK(MPI_Waitany(6, req, &idx, MPI_STATUS_IGNORE));
		left--;
		while (left > 0) {
			MPI_OK(MPI_Waitsome(6, req, &n, out, MPI_STATUSES_IGNORE));
			left -= n;
		}
		break;
	}
	for (int i = 0; i < 6; i++)
		CHECK(req[i] == MPI_REQUEST_NULL, "request %d not freed", i);
}

static void run_model(MPI_Comm comm, const struct model *m, const char *what)
{
	int r;
	struct bufs b;
	MPI_Request req[6];

	MPI_OK(MPI_Comm_rank(comm, &r));
	prepare_sends(m, r, &b);
	for (int how = 0; how < 3; how++) {
		prepare_recvs(m, r, &b);
		start_all(comm, m, r, &b, req);
		complete(req, how);
		for (int k = 0; k < m->nin[r]; k++)
			check_slot(m, r, k, &b, what);
	}
}

/* ---- the topologies ---------------------------------------------------------------- */

static int cart_at(const int *dims, const int *periods, int c0, int c1)
{
	int c[2] = { c0, c1 };

	for (int d = 0; d < 2; d++) {
		if ((c[d] < 0 || c[d] >= dims[d]) && !periods[d])
			return MPI_PROC_NULL;
		c[d] = (c[d] % dims[d] + dims[d]) % dims[d];
	}
	return c[0] * dims[1] + c[1];
}

static void test_cart(int d0, int p0, int p1)
{
	int dims[2] = { d0, mt_size / d0 }, periods[2] = { p0, p1 };
	struct model m = { .n = mt_size, .cart = 1 };
	char what[64];
	MPI_Comm cart;

	if (mt_size % d0)
		return;
	for (int q = 0; q < mt_size; q++) {
		int c0 = q / dims[1], c1 = q % dims[1];
		int nb[4] = { cart_at(dims, periods, c0 - 1, c1),
			      cart_at(dims, periods, c0 + 1, c1),
			      cart_at(dims, periods, c0, c1 - 1),
			      cart_at(dims, periods, c0, c1 + 1) };

		m.nin[q] = m.nout[q] = 4;
		memcpy(m.in[q], nb, sizeof(nb));
		memcpy(m.out[q], nb, sizeof(nb));
	}
	snprintf(what, sizeof(what), "cart %dx%d periods %d%d", dims[0], dims[1], p0, p1);
	mt_phase = what;
	MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
	run_model(cart, &m, what);
	MPI_OK(MPI_Comm_free(&cart));
}

/* Rank q sends to q+1, q+2 and again q+1 (mod n): duplicate edges, self
 * edges at small sizes.  Sources listed by ascending source. */
static void dist_model(struct model *m)
{
	m->n = mt_size;
	for (int q = 0; q < mt_size; q++) {
		m->nout[q] = 3;
		m->out[q][0] = (q + 1) % mt_size;
		m->out[q][1] = (q + 2) % mt_size;
		m->out[q][2] = (q + 1) % mt_size;
		m->nin[q] = 0;
	}
	for (int p = 0; p < mt_size; p++)
		for (int r = 0; r < mt_size; r++)
			for (int j = 0; j < m->nout[p]; j++)
				if (m->out[p][j] == r)
					m->in[r][m->nin[r]++] = p;
}

static void test_dist_graph(void)
{
	struct model m = { 0 };
	MPI_Comm dg;

	mt_phase = "dist graph";
	dist_model(&m);
	MPI_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, m.nin[mt_rank], m.in[mt_rank],
					      MPI_UNWEIGHTED, m.nout[mt_rank], m.out[mt_rank],
					      MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg));
	run_model(dg, &m, "dist graph");
	MPI_OK(MPI_Comm_free(&dg));
}

/* A symmetric graph: a ring, each edge given twice. */
static void test_graph(void)
{
	int index[MAXN], edges[4 * MAXN], ne = 0;
	struct model m = { .n = mt_size };
	MPI_Comm g;

	mt_phase = "graph";
	for (int q = 0; q < mt_size; q++) {
		int nb[4] = { (q + 1) % mt_size, (q + mt_size - 1) % mt_size, (q + 1) % mt_size,
			      (q + mt_size - 1) % mt_size };

		memcpy(edges + ne, nb, sizeof(nb));
		ne += 4;
		index[q] = ne;
		m.nin[q] = m.nout[q] = 4;
		memcpy(m.in[q], nb, sizeof(nb));
		memcpy(m.out[q], nb, sizeof(nb));
	}
	MPI_OK(MPI_Graph_create(MPI_COMM_WORLD, mt_size, index, edges, 0, &g));
	run_model(g, &m, "graph ring");
	MPI_OK(MPI_Comm_free(&g));
}

/* ---- errors ---------------------------------------------------------------------------- */

static void expect(int rc, int cls, const char *what)
{
	int got = -1;

	MPI_Error_class(rc, &got);
	CHECK(got == cls, "%s: class %d, expected %d", what, got, cls);
}

static void test_errors(void)
{
	int dims[1] = { mt_size }, periods[1] = { 1 }, sb[4] = { 0 }, rb[4];
	int cnt[2] = { 1, 1 }, dsp[2] = { 0, 1 }, neg[2] = { -1, 1 };
	MPI_Request req = MPI_REQUEST_NULL;
	MPI_Comm ring;

	mt_phase = "errors";
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
	MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
	expect(MPI_Ineighbor_allgather(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, &req),
	       MPI_ERR_TOPOLOGY, "no topology");
	expect(MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, (MPI_Comm)12345, &req),
	       MPI_ERR_COMM, "invalid comm");
	expect(MPI_Ineighbor_alltoall(sb, -1, MPI_INT, rb, 1, MPI_INT, ring, &req),
	       MPI_ERR_COUNT, "negative count");
	expect(MPI_Ineighbor_alltoall(sb, 1, MPI_DATATYPE_NULL, rb, 1, MPI_INT, ring, &req),
	       MPI_ERR_TYPE, "null type");
	expect(MPI_Ineighbor_alltoall(MPI_IN_PLACE, 1, MPI_INT, rb, 1, MPI_INT, ring, &req),
	       MPI_ERR_BUFFER, "MPI_IN_PLACE");
	expect(MPI_Ineighbor_allgather(sb, 1, MPI_INT, rb, 1, MPI_INT, ring, NULL),
	       MPI_ERR_ARG, "NULL request");
	expect(MPI_Ineighbor_alltoallv(sb, neg, dsp, MPI_INT, rb, cnt, dsp, MPI_INT, ring, &req),
	       MPI_ERR_COUNT, "negative alltoallv count");
	expect(MPI_Ineighbor_allgatherv(sb, 1, MPI_INT, rb, NULL, dsp, MPI_INT, ring, &req),
	       MPI_ERR_ARG, "NULL recvcounts");
	CHECK(req == MPI_REQUEST_NULL, "a failed call left a request");
	MPI_OK(MPI_Comm_free(&ring));
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, 60);
	if (mt_size > MAXN) {
		if (mt_rank == 0)
			printf("ineigh: more than %d ranks, nothing tested\n", MAXN);
		MPI_Finalize();
		return 0;
	}
	MPI_Type_vector(2, 1, 2, MPI_INT, &every_other);
	MPI_Type_commit(&every_other);
	test_cart(1, 1, 1);             /* 1 x n: dimension 0 of size 1 */
	test_cart(1, 0, 1);
	test_cart(mt_size, 1, 0);
	test_cart(mt_size, 0, 0);
	test_cart(2, 1, 1);             /* size-2 dimension, periodic */
	test_dist_graph();
	test_graph();
	test_errors();
	MPI_Type_free(&every_other);
	return mt_finish("ineigh");
}
