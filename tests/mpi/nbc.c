/* SPDX-License-Identifier: MIT */
/*
 * Nonblocking collectives: every MPI_I* collective and Alltoallw checked
 * against a serial computation, with int/SUM, double/MAX and a
 * non-commutative user op (composition of affine maps x -> a x + b, on a
 * derived type), a non-contiguous vector type for the movers, the
 * MPI_IN_PLACE forms; several collectives outstanding at once and
 * completed out of order (Waitall, Testany, Testall, Waitsome); overlap (a
 * rank that only calls MPI_Test while the root is late; a forwarding rank
 * inside a blocking MPI_Recv); blocking and nonblocking collectives mixed
 * on one communicator; error classes under MPI_ERRORS_RETURN.
 */
#include "mpitest.h"

#define P 1009                          /* affine maps: coefficients mod P */

struct aff { int a, b; };

enum { K_INT, K_DBL, K_AFF, NKINDS };
static const char *const knames[NKINDS] = { "int/SUM", "double/MAX", "affine/user" };
static const size_t ksize[NKINDS] = { sizeof(int), sizeof(double), sizeof(struct aff) };
static MPI_Datatype ktype[NKINDS];
static MPI_Op kop[NKINDS];
static MPI_Datatype vec3;               /* 3 ints, stride 2: not contiguous */

/* inout = in o inout: apply in first, then inout. */
static void aff_compose(const struct aff *in, struct aff *io)
{
	struct aff r = { (int)((long)in->a * io->a % P),
			 (int)(((long)io->a * in->b + io->b) % P) };

	*io = r;
}

static void aff_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	for (int i = 0; i < *len; i++)
		aff_compose((struct aff *)in + i, (struct aff *)inout + i);
}

/* Input of rank r, element i, for kind k. */
static void gen(int k, int r, int i, void *e)
{
	switch (k) {
	case K_INT: *(int *)e = (r + 1) * 1000 + i * 7 - 500; break;
	case K_DBL: *(double *)e = (double)((r * 37 + i * 11) % 101) - 50.25; break;
	default: *(struct aff *)e = (struct aff){ (r * 7 + i * 3) % 13 + 2, (r * 5 + i) % 11 };
	}
}

static void comb(int k, const void *in, void *io)
{
	switch (k) {
	case K_INT: *(int *)io += *(const int *)in; break;
	case K_DBL: {
		double a = *(const double *)in, *b = io;

		*b = a > *b ? a : *b;
		break;
	}
	default: aff_compose(in, io);
	}
}

static char *elem(void *buf, int k, long i)
{
	return (char *)buf + (size_t)i * ksize[k];
}

/* Reference: ranks lo..hi folded left in rank order, element i. */
static void fold(int k, int lo, int hi, int i, void *out)
{
	char tmp[16];

	gen(k, lo, i, out);
	for (int r = lo + 1; r <= hi; r++) {
		gen(k, r, i, tmp);
		comb(k, out, tmp);      /* tmp = out op tmp */
		memcpy(out, tmp, ksize[k]);
	}
}

static void *fill(int k, int r, int count)
{
	void *b = mt_malloc((size_t)count * ksize[k]);

	for (int i = 0; i < count; i++)
		gen(k, r, i, elem(b, k, i));
	return b;
}

/* count elements of buf against fold(lo..hi), first index j0 of the
 * whole vector. */
static int check_fold(int k, const void *buf, int count, int lo, int hi, int j0,
		      const char *what)
{
	char want[16];

	for (int i = 0; i < count; i++) {
		fold(k, lo, hi, j0 + i, want);
		if (!CHECK(!memcmp(elem((void *)buf, k, i), want, ksize[k]),
			   "%s %s: element %d wrong (ranks %d..%d)", what, knames[k], i, lo, hi))
			return 0;
	}
	return 1;
}

static void wait1(MPI_Request *r)
{
	MPI_OK(MPI_Wait(r, MPI_STATUS_IGNORE));
	CHECK(*r == MPI_REQUEST_NULL, "request not reset");
}

/* ---- reductions ------------------------------------------------------------------- */

static void test_reduce(int count)
{
	mt_phase = "ireduce";
	for (int k = 0; k < NKINDS; k++)
		for (int root = 0; root < mt_size; root++)
			for (int inplace = 0; inplace < 2; inplace++) {
				void *in = fill(k, mt_rank, count);
				void *out = mt_malloc((size_t)count * ksize[k]);
				const void *sb = inplace && mt_rank == root ? MPI_IN_PLACE : in;
				MPI_Request r;

				if (inplace && mt_rank == root)
					memcpy(out, in, (size_t)count * ksize[k]);
				MPI_OK(MPI_Ireduce(sb, out, count, ktype[k], kop[k], root,
						   MPI_COMM_WORLD, &r));
				wait1(&r);
				if (mt_rank == root)
					check_fold(k, out, count, 0, mt_size - 1, 0, "reduce");
				free(in);
				free(out);
			}
}

static void test_allreduce_scan(int count)
{
	for (int k = 0; k < NKINDS; k++)
		for (int which = 0; which < 3; which++)
			for (int inplace = 0; inplace < 2; inplace++) {
				void *in = fill(k, mt_rank, count);
				void *out = fill(k, mt_rank, count);
				const void *sb = inplace ? MPI_IN_PLACE : in;
				MPI_Request r;

				mt_phase = which == 0 ? "iallreduce" : which == 1 ? "iscan" : "iexscan";
				if (which == 0)
					MPI_OK(MPI_Iallreduce(sb, out, count, ktype[k], kop[k],
							      MPI_COMM_WORLD, &r));
				else if (which == 1)
					MPI_OK(MPI_Iscan(sb, out, count, ktype[k], kop[k],
							 MPI_COMM_WORLD, &r));
				else
					MPI_OK(MPI_Iexscan(sb, out, count, ktype[k], kop[k],
							   MPI_COMM_WORLD, &r));
				wait1(&r);
				if (which == 0)
					check_fold(k, out, count, 0, mt_size - 1, 0, mt_phase);
				else if (which == 1)
					check_fold(k, out, count, 0, mt_rank, 0, mt_phase);
				else if (mt_rank > 0)
					check_fold(k, out, count, 0, mt_rank - 1, 0, mt_phase);
				free(in);
				free(out);
			}
}

/* The op and the types may be freed while the collective is pending:
 * a user op on a contiguous type, and MPI_SUM on the strided vec3 (its
 * gaps must stay untouched). */
static void test_free_pending(void)
{
	int count = 9, v[20];
	void *in = fill(K_AFF, mt_rank, count), *out = mt_malloc((size_t)count * ksize[K_AFF]);
	MPI_Datatype t2, v2;
	MPI_Op op2;
	MPI_Request r[2];

	mt_phase = "free while pending";
	MPI_OK(MPI_Op_create(aff_op, 0, &op2));
	MPI_OK(MPI_Type_contiguous(2, MPI_INT, &t2));
	MPI_OK(MPI_Type_commit(&t2));
	MPI_OK(MPI_Type_vector(3, 1, 2, MPI_INT, &v2));
	MPI_OK(MPI_Type_commit(&v2));
	/* 4 elements of vec3 (extent 5 ints: data at 0, 2, 4) */
	for (int i = 0; i < 20; i++)
		v[i] = i % 5 % 2 ? -5 : mt_rank + i;
	MPI_OK(MPI_Iallreduce(in, out, count, t2, op2, MPI_COMM_WORLD, &r[0]));
	MPI_OK(MPI_Iallreduce(MPI_IN_PLACE, v, 4, v2, MPI_SUM, MPI_COMM_WORLD, &r[1]));
	MPI_OK(MPI_Op_free(&op2));
	MPI_OK(MPI_Type_free(&t2));
	MPI_OK(MPI_Type_free(&v2));
	MPI_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
	check_fold(K_AFF, out, count, 0, mt_size - 1, 0, "freed op and type");
	for (int i = 0; i < 20; i++) {
		int w = i % 5 % 2 ? -5 : mt_size * (mt_size - 1) / 2 + mt_size * i;

		CHECK(v[i] == w, "vec3 sum v[%d] = %d, want %d", i, v[i], w);
	}
	free(in);
	free(out);
}

/* Rank i's block: i + 1 elements (vary), or `block` each. */
static void test_reduce_scatter(int block)
{
	for (int k = 0; k < NKINDS; k++)
		for (int vary = 0; vary < 2; vary++)
			for (int inplace = 0; inplace < 2; inplace++) {
				int *counts = mt_malloc((size_t)mt_size * sizeof(int)), total = 0, j0 = 0;
				MPI_Request r;

				for (int i = 0; i < mt_size; i++) {
					counts[i] = vary ? i + 1 : block;
					j0 += i < mt_rank ? counts[i] : 0;
					total += counts[i];
				}
				void *in = fill(k, mt_rank, total);
				void *out = inplace ? in : mt_malloc((size_t)total * ksize[k]);
				const void *sb = inplace ? MPI_IN_PLACE : in;

				mt_phase = vary ? "ireduce_scatter" : "ireduce_scatter_block";
				if (vary)
					MPI_OK(MPI_Ireduce_scatter(sb, out, counts, ktype[k], kop[k],
								   MPI_COMM_WORLD, &r));
				else
					MPI_OK(MPI_Ireduce_scatter_block(sb, out, block, ktype[k], kop[k],
									 MPI_COMM_WORLD, &r));
				wait1(&r);
				check_fold(k, out, counts[mt_rank], 0, mt_size - 1, j0, mt_phase);
				if (!inplace)
					free(out);
				free(in);
				free(counts);
			}
}

/* ---- data movement ------------------------------------------------------------------- */

/* Value of rank r's piece, element i (ints). */
static int val(int r, int i)
{
	return r * 10000 + i + 1;
}

static void test_bcast(void)
{
	mt_phase = "ibcast";
	for (int root = 0; root < mt_size; root++) {
		int a[9], v[6];
		MPI_Request r[2];
		MPI_Datatype gone;              /* freed while the bcast is pending */

		MPI_OK(MPI_Type_vector(3, 1, 2, MPI_INT, &gone));
		MPI_OK(MPI_Type_commit(&gone));

		for (int i = 0; i < 9; i++)
			a[i] = mt_rank == root ? val(root, i) : -1;
		for (int i = 0; i < 6; i++)     /* vec3 touches 0, 2, 4 */
			v[i] = mt_rank == root || i % 2 ? val(root, i) : -1;
		MPI_OK(MPI_Ibcast(a, 9, MPI_INT, root, MPI_COMM_WORLD, &r[0]));
		MPI_OK(MPI_Ibcast(v, 1, gone, root, MPI_COMM_WORLD, &r[1]));
		MPI_OK(MPI_Type_free(&gone));
		MPI_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
		for (int i = 0; i < 9; i++)
			CHECK(a[i] == val(root, i), "root %d a[%d] = %d", root, i, a[i]);
		for (int i = 0; i < 6; i++)
			CHECK(v[i] == val(root, i), "root %d vec v[%d] = %d", root, i, v[i]);
	}
}

/* Gather(v) and Scatter(v): rank i's piece has pc(i) ints (vector forms:
 * i % 3 + 1, placed with a gap of 2). */
static int pc(int vec, int i)
{
	return vec ? i % 3 + 1 : 4;
}

static void layout(int vec, int *counts, int *displs)
{
	for (int i = 0, d = 0; i < mt_size; i++) {
		counts[i] = pc(vec, i);
		displs[i] = d;
		d += counts[i] + (vec ? 2 : 0);
	}
}

static void test_gather(void)
{
	int n = mt_size, counts[16], displs[16], all = 0;

	for (int vec = 0; vec < 2; vec++)
		for (int root = 0; root < n; root++)
			for (int inplace = 0; inplace < 2; inplace++) {
				layout(vec, counts, displs);
				all = displs[n - 1] + counts[n - 1];
				int *rb = mt_malloc((size_t)all * sizeof(int)), mine[4];
				int me = mt_rank, in_place = inplace && me == root;
				MPI_Request r;

				mt_phase = vec ? "igatherv" : "igather";
				for (int i = 0; i < all; i++)
					rb[i] = -7;
				for (int i = 0; i < pc(vec, me); i++)
					mine[i] = val(me, i);
				if (in_place)
					memcpy(rb + displs[me], mine, (size_t)counts[me] * sizeof(int));
				if (vec)
					MPI_OK(MPI_Igatherv(in_place ? MPI_IN_PLACE : mine, pc(vec, me),
							    MPI_INT, rb, counts, displs, MPI_INT, root,
							    MPI_COMM_WORLD, &r));
				else
					MPI_OK(MPI_Igather(in_place ? MPI_IN_PLACE : mine, 4, MPI_INT, rb,
							   4, MPI_INT, root, MPI_COMM_WORLD, &r));
				wait1(&r);
				for (int q = 0; me == root && q < n; q++)
					for (int i = 0; i < counts[q]; i++)
						CHECK(rb[displs[q] + i] == val(q, i), "root %d piece %d[%d] = %d",
						      root, q, i, rb[displs[q] + i]);
				if (vec && me == root && n > 1)
					CHECK(rb[displs[0] + counts[0]] == -7, "gap written");
				free(rb);
			}
}

static void test_scatter(void)
{
	int n = mt_size, counts[16], displs[16];

	for (int vec = 0; vec < 2; vec++)
		for (int root = 0; root < n; root++)
			for (int inplace = 0; inplace < 2; inplace++) {
				layout(vec, counts, displs);
				int all = displs[n - 1] + counts[n - 1], me = mt_rank;
				int *sb = mt_malloc((size_t)all * sizeof(int)), mine[4] = { -1, -1, -1, -1 };
				int in_place = inplace && me == root;
				MPI_Request r;

				mt_phase = vec ? "iscatterv" : "iscatter";
				for (int q = 0; q < n; q++)
					for (int i = 0; i < counts[q]; i++)
						sb[displs[q] + i] = me == root ? val(q, i) : -3;
				if (vec)
					MPI_OK(MPI_Iscatterv(sb, counts, displs, MPI_INT,
							     in_place ? MPI_IN_PLACE : mine, pc(vec, me),
							     MPI_INT, root, MPI_COMM_WORLD, &r));
				else
					MPI_OK(MPI_Iscatter(sb, 4, MPI_INT, in_place ? MPI_IN_PLACE : mine,
							    4, MPI_INT, root, MPI_COMM_WORLD, &r));
				wait1(&r);
				for (int i = 0; !in_place && i < pc(vec, me); i++)
					CHECK(mine[i] == val(me, i), "root %d mine[%d] = %d", root, i, mine[i]);
				for (int i = pc(vec, me); i < 4; i++)
					CHECK(mine[i] == -1, "written past the piece");
				free(sb);
			}
}

/* Gather with the non-contiguous vec3 on the send side: inner tree
 * nodes pack it. */
static void test_gather_vec3(void)
{
	mt_phase = "igather vec3";
	for (int root = 0; root < mt_size; root++) {
		int v[6], *rb = mt_malloc((size_t)mt_size * 3 * sizeof(int));
		MPI_Request r;

		for (int i = 0; i < 6; i++)
			v[i] = val(mt_rank, i);
		MPI_OK(MPI_Igather(v, 1, vec3, rb, 3, MPI_INT, root, MPI_COMM_WORLD, &r));
		wait1(&r);
		for (int q = 0; mt_rank == root && q < mt_size; q++)
			for (int i = 0; i < 3; i++)
				CHECK(rb[3 * q + i] == val(q, 2 * i), "from %d [%d] = %d", q, i,
				      rb[3 * q + i]);
		free(rb);
	}
}

static void test_allgather(void)
{
	int n = mt_size, counts[16], displs[16];

	for (int vec = 0; vec < 2; vec++)
		for (int inplace = 0; inplace < 2; inplace++) {
			layout(vec, counts, displs);
			int all = displs[n - 1] + counts[n - 1], me = mt_rank, mine[4];
			int *rb = mt_malloc((size_t)all * sizeof(int));
			MPI_Request r;

			mt_phase = vec ? "iallgatherv" : "iallgather";
			for (int i = 0; i < all; i++)
				rb[i] = -7;
			for (int i = 0; i < pc(vec, me); i++)
				mine[i] = rb[displs[me] + i] = val(me, i);
			const void *sb = inplace ? MPI_IN_PLACE : mine;
			if (vec)
				MPI_OK(MPI_Iallgatherv(sb, pc(vec, me), MPI_INT, rb, counts, displs,
						       MPI_INT, MPI_COMM_WORLD, &r));
			else
				MPI_OK(MPI_Iallgather(sb, 4, MPI_INT, rb, 4, MPI_INT, MPI_COMM_WORLD,
						      &r));
			wait1(&r);
			for (int q = 0; q < n; q++)
				for (int i = 0; i < counts[q]; i++)
					CHECK(rb[displs[q] + i] == val(q, i), "piece %d[%d] = %d", q, i,
					      rb[displs[q] + i]);
			free(rb);
		}
}

/* What rank `from` sends rank `to` in the all-to-alls, element i. */
static int a2a(int from, int to, int i)
{
	return from * 1000 + to * 10 + i;
}

/* kind 0: Ialltoall, 1: Ialltoallv, 2: Ialltoallw, 3: Alltoallw.  The v/w
 * forms send to rank j (j % 3 + 1) ints and receive (me % 3 + 1) from
 * each, with gaps; in place ((me + j) % 3 + 1) both ways. */
static void run_a2a(int kind, int inplace)
{
	int n = mt_size, me = mt_rank, sc[16], sd[16], rc[16], rd[16], sdb[16], rdb[16];
	MPI_Datatype ts[16];
	int v = kind > 0;
	MPI_Request r;

	for (int j = 0, s = 0, d = 0; j < n; j++) {
		sc[j] = v ? (inplace ? (me + j) % 3 : j % 3) + 1 : 3;
		rc[j] = v ? (inplace ? (me + j) % 3 : me % 3) + 1 : 3;
		sd[j] = s;
		rd[j] = d;
		s += sc[j] + (v ? 1 : 0);
		d += rc[j] + (v ? 2 : 0);
		sdb[j] = sd[j] * (int)sizeof(int);
		rdb[j] = rd[j] * (int)sizeof(int);
		ts[j] = MPI_INT;
	}
	int *sb = mt_malloc(64 * sizeof(int) * 16), *rb = mt_malloc(64 * sizeof(int) * 16);

	for (int i = 0; i < 64 * 16; i++)
		rb[i] = -9;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < sc[j]; i++)
			(inplace ? rb + rd[j] : sb + sd[j])[i] = a2a(me, j, i);
	const void *s = inplace ? MPI_IN_PLACE : sb;
	if (kind == 0)
		MPI_OK(MPI_Ialltoall(s, 3, MPI_INT, rb, 3, MPI_INT, MPI_COMM_WORLD, &r));
	else if (kind == 1)
		MPI_OK(MPI_Ialltoallv(s, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD, &r));
	else if (kind == 2)
		MPI_OK(MPI_Ialltoallw(s, sc, sdb, ts, rb, rc, rdb, ts, MPI_COMM_WORLD, &r));
	else
		MPI_OK(MPI_Alltoallw(s, sc, sdb, ts, rb, rc, rdb, ts, MPI_COMM_WORLD));
	if (kind < 3)
		wait1(&r);
	for (int j = 0; j < n; j++) {
		for (int i = 0; i < rc[j]; i++)
			CHECK(rb[rd[j] + i] == a2a(j, me, i), "kind %d in place %d: from %d [%d] = %d",
			      kind, inplace, j, i, rb[rd[j] + i]);
		if (v)
			CHECK(rb[rd[j] + rc[j]] == -9, "kind %d: gap after %d written", kind, j);
	}
	free(sb);
	free(rb);
}

static void test_alltoall(void)
{
	mt_phase = "ialltoall(v,w)";
	for (int kind = 0; kind < 4; kind++)
		for (int inplace = 0; inplace < 2; inplace++)
			run_a2a(kind, inplace);
}

/* Alltoallw with different types per peer: rank j's block goes as vec3
 * (3 ints of 5) to even ranks, as 3 plain ints to odd ones; received
 * always as 3 ints. */
static void test_alltoallw_types(void)
{
	int n = mt_size, me = mt_rank, sc[16] = { 0 }, sd[16] = { 0 }, rc[16] = { 0 };
	int rd[16] = { 0 }, sb[16 * 6] = { 0 }, rb[16 * 3] = { 0 };
	MPI_Datatype st[16] = { 0 }, rt[16] = { 0 };

	mt_phase = "alltoallw types";
	for (int j = 0; j < n; j++) {
		sc[j] = j % 2 ? 3 : 1;
		st[j] = j % 2 ? MPI_INT : vec3;
		sd[j] = j * 6 * (int)sizeof(int);
		rc[j] = 3;
		rt[j] = MPI_INT;
		rd[j] = j * 3 * (int)sizeof(int);
		for (int i = 0; i < 6; i++)
			sb[j * 6 + i] = j % 2 ? (i < 3 ? a2a(me, j, i) : -1)
					      : (i % 2 ? -1 : a2a(me, j, i / 2));
	}
	MPI_Request r;

	MPI_OK(MPI_Ialltoallw(sb, sc, sd, st, rb, rc, rd, rt, MPI_COMM_WORLD, &r));
	wait1(&r);
	for (int j = 0; j < n; j++)
		for (int i = 0; i < 3; i++)
			CHECK(rb[j * 3 + i] == a2a(j, me, i), "from %d [%d] = %d", j, i, rb[j * 3 + i]);
}

/* ---- several at once, out of order ----------------------------------------------------- */

static void test_outstanding(void)
{
	int n = mt_size, me = mt_rank, x = me + 1, sum = -1, b[3] = { 0 }, *g, *a2;
	int scan = -1;
	MPI_Request r[6];

	mt_phase = "outstanding";
	g = mt_malloc((size_t)n * sizeof(int));
	a2 = mt_malloc((size_t)n * 2 * sizeof(int));
	int *a1 = mt_malloc((size_t)n * sizeof(int));
	for (int i = 0; i < n; i++)
		a1[i] = a2a(me, i, 0);
	if (me == n - 1)
		b[0] = 11, b[1] = 22, b[2] = 33;
	MPI_OK(MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]));
	MPI_OK(MPI_Ibcast(b, 3, MPI_INT, n - 1, MPI_COMM_WORLD, &r[1]));
	MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &r[2]));
	MPI_OK(MPI_Igather(&x, 1, MPI_INT, g, 1, MPI_INT, 0, MPI_COMM_WORLD, &r[3]));
	MPI_OK(MPI_Ialltoall(a1, 1, MPI_INT, a2, 1, MPI_INT, MPI_COMM_WORLD, &r[4]));
	MPI_OK(MPI_Iscan(&x, &scan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[5]));
	/* Complete them in reverse order, one by one via Testany on a
	 * shrinking view, then check. */
	int left = 6;
	while (left > 0) {
		int idx, flag;

		MPI_OK(MPI_Testany(6, r, &idx, &flag, MPI_STATUS_IGNORE));
		if (flag && idx != MPI_UNDEFINED)
			left--;
		else if (flag)
			break;
	}
	CHECK(left == 0, "Testany left %d", left);
	CHECK(sum == n * (n + 1) / 2, "allreduce %d", sum);
	CHECK(scan == (me + 1) * (me + 2) / 2, "scan %d", scan);
	CHECK(b[0] == 11 && b[1] == 22 && b[2] == 33, "bcast %d %d %d", b[0], b[1], b[2]);
	for (int i = 0; me == 0 && i < n; i++)
		CHECK(g[i] == i + 1, "gather [%d] = %d", i, g[i]);
	for (int i = 0; i < n; i++)
		CHECK(a2[i] == a2a(i, me, 0), "alltoall [%d] = %d", i, a2[i]);

	/* The same again, but waited for in reverse with Waitall over a
	 * reversed array, and Testall / Waitsome on a pair. */
	MPI_Request rev[4];
	sum = -1;
	MPI_OK(MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rev[3]));
	MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &rev[2]));
	MPI_OK(MPI_Iallgather(&x, 1, MPI_INT, g, 1, MPI_INT, MPI_COMM_WORLD, &rev[1]));
	MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &rev[0]));
	MPI_OK(MPI_Waitall(4, rev, MPI_STATUSES_IGNORE));
	CHECK(sum == n, "allreduce max %d", sum);
	for (int i = 0; i < n; i++)
		CHECK(g[i] == i + 1, "allgather [%d] = %d", i, g[i]);

	int flag = 0, outcount, idx[2];
	MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &rev[0]));
	MPI_OK(MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &rev[1]));
	MPI_OK(MPI_Waitsome(2, rev, &outcount, idx, MPI_STATUSES_IGNORE));
	CHECK(outcount >= 1, "waitsome %d", outcount);
	while (!flag)
		MPI_OK(MPI_Testall(2, rev, &flag, MPI_STATUSES_IGNORE));
	CHECK(sum == 1, "allreduce min %d", sum);
	free(g);
	free(a1);
	free(a2);
}

/* Many at once: 40 allreduces and bcasts alternating, waited for all
 * together; and a non-commutative scan on the halves of a split
 * communicator, both halves' collectives outstanding with one on the
 * world. */
static void test_many_and_split(void)
{
	int n = mt_size, me = mt_rank, x[40], y[40];
	MPI_Request r[40], q[2];
	MPI_Comm half;

	mt_phase = "many outstanding";
	for (int i = 0; i < 40; i++) {
		x[i] = me * 3 + i;
		y[i] = -1;
		if (i % 2)
			MPI_OK(MPI_Iallreduce(&x[i], &y[i], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[i]));
		else
			MPI_OK(MPI_Ibcast(&x[i], 1, MPI_INT, i % n, MPI_COMM_WORLD, &r[i]));
	}
	MPI_OK(MPI_Waitall(40, r, MPI_STATUSES_IGNORE));
	for (int i = 0; i < 40; i++) {
		int want = i % 2 ? 3 * n * (n - 1) / 2 + n * i : (i % n) * 3 + i;

		CHECK((i % 2 ? y[i] : x[i]) == want, "collective %d: %d, want %d", i,
		      i % 2 ? y[i] : x[i], want);
	}

	mt_phase = "split";
	MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &half));
	int hr, hn, sum = 0;
	MPI_OK(MPI_Comm_rank(half, &hr));
	MPI_OK(MPI_Comm_size(half, &hn));
	void *in = fill(K_AFF, hr, 5), *out = mt_malloc(5 * ksize[K_AFF]);
	MPI_OK(MPI_Iscan(in, out, 5, ktype[K_AFF], kop[K_AFF], half, &q[0]));
	MPI_OK(MPI_Iallreduce(&me, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[1]));
	MPI_OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
	check_fold(K_AFF, out, 5, 0, hr, 0, "split scan");
	CHECK(sum == n * (n - 1) / 2, "world sum %d", sum);
	CHECK(hn == (n + 1 - me % 2) / 2, "half size %d", hn);
	MPI_OK(MPI_Comm_free(&half));
	free(in);
	free(out);
}

/* ---- overlap ------------------------------------------------------------------------------- */

static double now(void)
{
	return MPI_Wtime();
}

/* The root starts late -- only once every other rank has started and
 * seen its bcast unfinished (they tell it with an Isend) -- while the
 * others only compute and call MPI_Test: no rank other than the root
 * ever blocks. */
static void test_late_root(void)
{
	int n = mt_size, b[64], root = n - 1, go = 1;
	long unfinished = 0;
	volatile double work = 0;
	MPI_Request r, told = MPI_REQUEST_NULL;

	mt_phase = "late root";
	for (int i = 0; i < 64; i++)
		b[i] = mt_rank == root ? val(root, i) : 0;
	for (int q = 0; mt_rank == root && q < n - 1; q++)
		MPI_OK(MPI_Recv(&go, 1, MPI_INT, q, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	if (mt_rank == root)
		mt_sleep_ms(50);
	MPI_OK(MPI_Ibcast(b, 64, MPI_INT, root, MPI_COMM_WORLD, &r));
	double t0 = now();
	for (;;) {
		int flag;

		for (int i = 0; i < 2000; i++)
			work += i * 0.5;
		MPI_OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
		if (flag)
			break;
		if (unfinished++ == 0 && mt_rank != root)
			MPI_OK(MPI_Isend(&go, 1, MPI_INT, root, 77, MPI_COMM_WORLD, &told));
		if (!CHECK(now() - t0 < 20, "no progress in 20 s"))
			MPI_Abort(MPI_COMM_WORLD, 3);
	}
	wait1(&told);
	for (int i = 0; i < 64; i++)
		CHECK(b[i] == val(root, i), "b[%d] = %d", i, b[i]);
	if (mt_rank != root)
		CHECK(unfinished > 0, "finished before the root started");
	/* The same for a reduction whose last rank is late, tested through
	 * Test on another request (a receive from self, sent at the end). */
	int x = mt_rank + 1, sum = 0, dummy = 0, one = 1;
	MPI_Request other;

	MPI_OK(MPI_Irecv(&dummy, 1, MPI_INT, mt_rank, 99, MPI_COMM_WORLD, &other));
	if (mt_rank == root)
		mt_sleep_ms(100);
	MPI_OK(MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
	t0 = now();
	while (sum != n * (n + 1) / 2) {        /* the schedule moves in Test(other) */
		int flag;

		MPI_OK(MPI_Test(&other, &flag, MPI_STATUS_IGNORE));
		if (!CHECK(now() - t0 < 20, "no progress through another request"))
			MPI_Abort(MPI_COMM_WORLD, 3);
	}
	wait1(&r);
	MPI_OK(MPI_Send(&one, 1, MPI_INT, mt_rank, 99, MPI_COMM_WORLD));
	wait1(&other);
}

/* A forwarding rank of the bcast tree sits in a blocking receive that is
 * satisfied only after its child has the data: the schedule must move
 * inside MPI_Recv.  Root 0: rank 2 forwards to rank 3. */
static void test_blocking_progress(void)
{
	int b[8] = { 0 }, token = 0;
	MPI_Request r;

	if (mt_size < 4)
		return;
	mt_phase = "progress in a blocking call";
	if (mt_rank == 0)
		for (int i = 0; i < 8; i++)
			b[i] = val(0, i);
	MPI_OK(MPI_Ibcast(b, 8, MPI_INT, 0, MPI_COMM_WORLD, &r));
	if (mt_rank == 2)
		MPI_OK(MPI_Recv(&token, 1, MPI_INT, 3, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	wait1(&r);
	if (mt_rank == 3) {
		token = b[7];
		MPI_OK(MPI_Send(&token, 1, MPI_INT, 2, 5, MPI_COMM_WORLD));
	}
	if (mt_rank == 2)
		CHECK(token == val(0, 7), "token %d", token);
	for (int i = 0; i < 8; i++)
		CHECK(b[i] == val(0, i), "b[%d] = %d", i, b[i]);
}

/* ---- blocking and nonblocking on one communicator --------------------------------------------- */

static void test_mixed(void)
{
	int n = mt_size, me = mt_rank, x = me + 1, s1 = 0, s2 = 0, b1[4] = { 0 }, b2[4] = { 0 };
	int pre = 0;
	MPI_Request r[3];
	MPI_Comm dup;

	mt_phase = "mixed";
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	if (me == 0)
		b1[0] = b1[3] = 41;
	if (me == n - 1)
		b2[0] = b2[3] = 42;
	MPI_OK(MPI_Iallreduce(&x, &s1, 1, MPI_INT, MPI_SUM, dup, &r[0]));
	MPI_OK(MPI_Allreduce(&x, &s2, 1, MPI_INT, MPI_MAX, dup));
	MPI_OK(MPI_Ibcast(b1, 4, MPI_INT, 0, dup, &r[1]));
	MPI_OK(MPI_Bcast(b2, 4, MPI_INT, n - 1, dup));
	MPI_OK(MPI_Ibarrier(dup, &r[2]));
	MPI_OK(MPI_Barrier(dup));
	MPI_OK(MPI_Reduce(&x, &pre, 1, MPI_INT, MPI_SUM, 0, dup));
	MPI_OK(MPI_Waitall(3, r, MPI_STATUSES_IGNORE));
	CHECK(s1 == n * (n + 1) / 2, "iallreduce %d", s1);
	CHECK(s2 == n, "allreduce %d", s2);
	CHECK(b1[0] == 41 && b1[3] == 41, "ibcast");
	CHECK(b2[0] == 42 && b2[3] == 42, "bcast");
	CHECK(me != 0 || pre == n * (n + 1) / 2, "reduce %d", pre);
	/* A neighbourhood collective (periodic ring) between a nonblocking
	 * collective's start and its completion, on the same communicator. */
	MPI_Comm ring;
	int dims[1] = { n }, periods[1] = { 1 }, nb[2] = { -1, -1 };

	MPI_OK(MPI_Cart_create(dup, 1, dims, periods, 0, &ring));
	MPI_OK(MPI_Iallreduce(&x, &s1, 1, MPI_INT, MPI_MAX, ring, &r[0]));
	MPI_OK(MPI_Neighbor_allgather(&x, 1, MPI_INT, nb, 1, MPI_INT, ring));
	wait1(&r[0]);
	CHECK(s1 == n, "iallreduce beside a neighbour collective %d", s1);
	CHECK(nb[0] == (me - 1 + n) % n + 1 && nb[1] == (me + 1) % n + 1,
	      "neighbours %d %d", nb[0], nb[1]);
	MPI_OK(MPI_Comm_free(&ring));
	/* The communicator may be freed with a collective still pending. */
	MPI_OK(MPI_Iallreduce(&x, &s1, 1, MPI_INT, MPI_MIN, dup, &r[0]));
	MPI_OK(MPI_Comm_free(&dup));
	wait1(&r[0]);
	CHECK(s1 == 1, "after Comm_free %d", s1);
}

/* ---- errors ---------------------------------------------------------------------------------------- */

#define EXPECT(call, cls)                                                      \
	do {                                                                   \
		int rc_ = (call), c_ = -1;                                     \
		MPI_Error_class(rc_, &c_);                                     \
		CHECK(c_ == (cls), "%s: class %d, want %d", #call, c_, (cls)); \
	} while (0)

static void test_errors(void)
{
	int x = 1, y = 0, cnt[16] = { 0 }, dsp[16] = { 0 };
	MPI_Request r = 12345;

	mt_phase = "errors";
	MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	EXPECT(MPI_Ibcast(&x, 1, MPI_INT, mt_size, MPI_COMM_WORLD, &r), MPI_ERR_ROOT);
	CHECK(r == MPI_REQUEST_NULL || r == 12345, "request after an error: %d", r);
	EXPECT(MPI_Ibcast(&x, -1, MPI_INT, 0, MPI_COMM_WORLD, &r), MPI_ERR_COUNT);
	EXPECT(MPI_Ibcast(&x, 1, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD, &r), MPI_ERR_TYPE);
	EXPECT(MPI_Ibarrier(MPI_COMM_NULL, &r), MPI_ERR_COMM);
	EXPECT(MPI_Ibarrier(MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
	EXPECT(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD, &r), MPI_ERR_OP);
	EXPECT(MPI_Iallreduce(&x, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r), MPI_ERR_BUFFER);
	EXPECT(MPI_Ireduce(&x, &y, 1, MPI_INT, MPI_SUM, -1, MPI_COMM_WORLD, &r), MPI_ERR_ROOT);
	EXPECT(MPI_Iscan(&x, &y, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD, &r), MPI_ERR_OP);
	EXPECT(MPI_Ireduce_scatter(&x, &y, NULL, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r),
	       MPI_ERR_ARG);
	EXPECT(MPI_Ireduce_scatter_block(&x, &y, -2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r),
	       MPI_ERR_COUNT);
	EXPECT(MPI_Igather(&x, 1, MPI_INT, &y, 1, MPI_INT, mt_size + 3, MPI_COMM_WORLD, &r),
	       MPI_ERR_ROOT);
	if (mt_rank == 0)
		EXPECT(MPI_Iscatter(&x, 1, MPI_INT, &y, 1, MPI_INT, 0, MPI_COMM_NULL, &r),
		       MPI_ERR_COMM);
	if (mt_rank != 0)               /* in place off the root */
		EXPECT(MPI_Igather(MPI_IN_PLACE, 1, MPI_INT, &y, 1, MPI_INT, 0, MPI_COMM_WORLD,
				   &r), MPI_ERR_BUFFER);
	EXPECT(MPI_Iallgather(&x, 1, MPI_INT, NULL, 1, MPI_INT, MPI_COMM_WORLD, &r),
	       MPI_ERR_BUFFER);
	EXPECT(MPI_Ialltoallv(&x, cnt, NULL, MPI_INT, &y, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &r),
	       MPI_ERR_ARG);
	EXPECT(MPI_Ialltoallw(&x, cnt, dsp, NULL, &y, cnt, dsp, NULL, MPI_COMM_WORLD, &r),
	       MPI_ERR_ARG);
	MPI_Datatype bad[16];
	for (int i = 0; i < 16; i++)
		bad[i] = MPI_DATATYPE_NULL;
	EXPECT(MPI_Alltoallw(&x, cnt, dsp, bad, &y, cnt, dsp, bad, MPI_COMM_WORLD),
	       MPI_ERR_TYPE);
	cnt[0] = -1;
	EXPECT(MPI_Ialltoallw(&x, cnt, dsp, bad, &y, cnt, dsp, bad, MPI_COMM_WORLD, &r),
	       MPI_ERR_COUNT);
	/* Cancel and Request_free of a collective request: refused, and the
	 * request still completes. */
	MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &r));
	EXPECT(MPI_Cancel(&r), MPI_ERR_REQUEST);
	EXPECT(MPI_Request_free(&r), MPI_ERR_REQUEST);
	CHECK(r != MPI_REQUEST_NULL, "request freed");
	wait1(&r);
	MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, 120);
	if (mt_size > 16) {
		if (mt_rank == 0)
			fprintf(stderr, "nbc: at most 16 ranks\n");
		MPI_Finalize();
		return 1;
	}
	MPI_OK(MPI_Type_contiguous(2, MPI_INT, &ktype[K_AFF]));
	MPI_OK(MPI_Type_commit(&ktype[K_AFF]));
	MPI_OK(MPI_Op_create(aff_op, 0, &kop[K_AFF]));
	ktype[K_INT] = MPI_INT;
	kop[K_INT] = MPI_SUM;
	ktype[K_DBL] = MPI_DOUBLE;
	kop[K_DBL] = MPI_MAX;
	MPI_OK(MPI_Type_vector(3, 1, 2, MPI_INT, &vec3));
	MPI_OK(MPI_Type_commit(&vec3));

	test_bcast();
	test_reduce(5);
	test_reduce(3000);
	test_allreduce_scan(7);
	test_allreduce_scan(2500);
	test_reduce_scatter(3);
	test_free_pending();
	test_gather();
	test_gather_vec3();
	test_scatter();
	test_allgather();
	test_alltoall();
	test_alltoallw_types();
	test_outstanding();
	test_many_and_split();
	test_late_root();
	test_blocking_progress();
	test_mixed();
	test_errors();

	MPI_Op_free(&kop[K_AFF]);
	MPI_Type_free(&ktype[K_AFF]);
	MPI_Type_free(&vec3);
	return mt_finish("nbc");
}
