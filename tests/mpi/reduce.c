/* SPDX-License-Identifier: MIT */
/*
 * Reductions: Reduce, Allreduce, Scan, Exscan, Reduce_scatter(_block) with
 * every predefined op on int, long long, float and double (logical and
 * bitwise ops on the integers), MAXLOC/MINLOC on pair types with ties, a
 * non-commutative user op (2x2 matrix product, checked against rank
 * order), a commutative user op, and the MPI_IN_PLACE forms.  Expected
 * values are folded left in rank order, as MPI defines them.
 */
#include "mpitest.h"

enum { T_INT, T_LL, T_FLOAT, T_DOUBLE, NTYPES };
static const MPI_Datatype types[NTYPES] = { MPI_INT, MPI_LONG_LONG, MPI_FLOAT, MPI_DOUBLE };
static const char *const tnames[NTYPES] = { "int", "long long", "float", "double" };
static const size_t tsizes[NTYPES] = { sizeof(int), sizeof(long long), sizeof(float),
				       sizeof(double) };

static const MPI_Op ops[] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR,
			      MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR };
static const char *const onames[] = { "SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR",
				      "BAND", "BOR", "BXOR" };
#define NOPS 10
#define NARITH 4        /* SUM PROD MIN MAX: defined on the floating types */

static void put(void *b, int t, size_t i, long long v)
{
	switch (t) {
	case T_INT: ((int *)b)[i] = (int)v; break;
	case T_LL: ((long long *)b)[i] = v; break;
	case T_FLOAT: ((float *)b)[i] = (float)v; break;
	default: ((double *)b)[i] = (double)v; break;
	}
}

/* Values are integers, exactly representable in every type used. */
static long long get(const void *b, int t, size_t i)
{
	switch (t) {
	case T_INT: return ((const int *)b)[i];
	case T_LL: return ((const long long *)b)[i];
	case T_FLOAT: return (long long)((const float *)b)[i];
	default: return (long long)((const double *)b)[i];
	}
}

/* Input of rank r, element i, for op k on type t. */
static long long input(int k, int t, int r, size_t i)
{
	long long x = (long long)i;

	switch (k) {
	case 0: return (long long)(x % 97) - 48 + r * 3;
	case 1: return (r + x) % 4 == 0 ? 2 : (r + x) % 4 == 1 ? -1 : 1;
	case 2:
	case 3: return (r * 37 + x * 11) % 101 - 50;
	case 4:
	case 5:
	case 6: /* logical: zero, one, or other non-zero values */
		return (r + x) % 3 == 0 ? 0 : mt_size > 1 ? 1 + (r + x) % 4 : 1;
	default: {
		long long v = (r * 0x1357LL + x * 0x2468LL) ^ (1LL << (r % 16));

		return t == T_LL ? (v << 24) | v : v & 0x7fffffff;
	}
	}
}

static long long combine(int k, long long a, long long b)
{
	switch (k) {
	case 0: return a + b;
	case 1: return a * b;
	case 2: return a < b ? a : b;
	case 3: return a > b ? a : b;
	case 4: return (a && b) ? 1 : 0;
	case 5: return (a || b) ? 1 : 0;
	case 6: return (!a != !b) ? 1 : 0;
	case 7: return a & b;
	case 8: return a | b;
	default: return a ^ b;
	}
}

/* Fold ranks lo..hi (inclusive) left to right. */
static long long fold(int k, int t, int lo, int hi, size_t i)
{
	long long e = input(k, t, lo, i);

	for (int r = lo + 1; r <= hi; r++)
		e = combine(k, e, input(k, t, r, i));
	return e;
}

static void *tbuf(int t, size_t n)
{
	return mt_malloc(tsizes[t] * (n ? n : 1));
}

static void fill_in(void *b, int k, int t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put(b, t, i, input(k, t, mt_rank, i));
}

/* Compare b[0..n) with the fold over ranks lo..hi. */
static int check_fold(const void *b, int k, int t, size_t n, int lo, int hi, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		long long e = fold(k, t, lo, hi, i), g = get(b, t, i);

		if (!CHECK(g == e, "%s %s on %s, count %zu: [%zu] = %lld, expected %lld", what,
			   onames[k], tnames[t], n, i, g, e))
			return 0;
	}
	return 1;
}

/* Reduce to two roots, Allreduce, Scan, Exscan for op k on type t. */
static void reduce_all_forms(int k, int t, size_t n)
{
	void *s = tbuf(t, n), *r = tbuf(t, n);
	MPI_Datatype dt = types[t];
	int roots[2] = { 0, mt_size - 1 };

	fill_in(s, k, t, n);
	for (int j = 0; j < 2; j++) {
		if (j == 1 && roots[1] == 0)
			break;
		memset(r, 0x55, tsizes[t] * n);
		MPI_OK(MPI_Reduce(s, r, (int)n, dt, ops[k], roots[j], MPI_COMM_WORLD));
		if (mt_rank == roots[j])
			check_fold(r, k, t, n, 0, mt_size - 1, "Reduce");
	}
	MPI_OK(MPI_Allreduce(s, r, (int)n, dt, ops[k], MPI_COMM_WORLD));
	check_fold(r, k, t, n, 0, mt_size - 1, "Allreduce");
	MPI_OK(MPI_Scan(s, r, (int)n, dt, ops[k], MPI_COMM_WORLD));
	check_fold(r, k, t, n, 0, mt_rank, "Scan");
	MPI_OK(MPI_Exscan(s, r, (int)n, dt, ops[k], MPI_COMM_WORLD));
	if (mt_rank > 0)        /* undefined on rank 0 */
		check_fold(r, k, t, n, 0, mt_rank - 1, "Exscan");
	free(s);
	free(r);
}

/* The MPI_IN_PLACE forms, with SUM. */
static void in_place_forms(int t, size_t n)
{
	void *r = tbuf(t, n), *s = tbuf(t, n);
	MPI_Datatype dt = types[t];
	int root = mt_size / 2;

	fill_in(r, 0, t, n);
	fill_in(s, 0, t, n);
	MPI_OK(MPI_Allreduce(MPI_IN_PLACE, r, (int)n, dt, MPI_SUM, MPI_COMM_WORLD));
	check_fold(r, 0, t, n, 0, mt_size - 1, "Allreduce IN_PLACE");
	fill_in(r, 0, t, n);
	MPI_OK(MPI_Reduce(mt_rank == root ? MPI_IN_PLACE : s, r, (int)n, dt, MPI_SUM, root,
			  MPI_COMM_WORLD));
	if (mt_rank == root)
		check_fold(r, 0, t, n, 0, mt_size - 1, "Reduce IN_PLACE");
	fill_in(r, 0, t, n);
	MPI_OK(MPI_Scan(MPI_IN_PLACE, r, (int)n, dt, MPI_SUM, MPI_COMM_WORLD));
	check_fold(r, 0, t, n, 0, mt_rank, "Scan IN_PLACE");
	fill_in(r, 0, t, n);
	MPI_OK(MPI_Exscan(MPI_IN_PLACE, r, (int)n, dt, MPI_SUM, MPI_COMM_WORLD));
	if (mt_rank > 0)
		check_fold(r, 0, t, n, 0, mt_rank - 1, "Exscan IN_PLACE");
	free(r);
	free(s);
}

static void test_predefined(void)
{
	static const size_t small[] = { 0, 1, 1000 };

	mt_phase = "predefined_ops";
	for (int t = 0; t < NTYPES; t++) {
		int nops = t == T_INT || t == T_LL ? NOPS : NARITH;

		for (int k = 0; k < nops; k++)
			for (int c = 0; c < 3; c++)
				reduce_all_forms(k, t, small[c]);
		reduce_all_forms(0, t, 100000);         /* SUM, large */
		reduce_all_forms(3, t, 100000);         /* MAX, large */
		in_place_forms(t, 1000);
		in_place_forms(t, 100000);
	}
}

/* ---- MAXLOC / MINLOC ---------------------------------------------------- */

struct dint { double v; int i; };
struct iint { int v; int i; };
struct lint { long v; int i; };

/* Few distinct values so ranks tie often; locations decrease with rank so
 * "lowest location wins" differs from "lowest rank wins". */
static int lval(int r, int i)
{
	return (r * 7 + i * 3) % 4;
}

static int lloc(int r)
{
	return 1000 - r;
}

static void expect_loc(int maxloc, int i, int *v, int *loc)
{
	*v = lval(0, i);
	*loc = lloc(0);
	for (int r = 1; r < mt_size; r++) {
		int x = lval(r, i), better = maxloc ? x > *v : x < *v;

		if (better || (x == *v && lloc(r) < *loc)) {
			*v = x;
			*loc = lloc(r);
		}
	}
}

static void test_loc(void)
{
	enum { N = 1000 };
	struct dint *ds = mt_malloc(sizeof(*ds) * N), *dr = mt_malloc(sizeof(*dr) * N);
	struct iint *is = mt_malloc(sizeof(*is) * N), *ir = mt_malloc(sizeof(*ir) * N);
	struct lint *ls = mt_malloc(sizeof(*ls) * N), *lr = mt_malloc(sizeof(*lr) * N);

	mt_phase = "maxloc_minloc";
	for (int i = 0; i < N; i++) {
		ds[i].v = lval(mt_rank, i) + 0.5;
		is[i].v = lval(mt_rank, i);
		ls[i].v = lval(mt_rank, i) * 100000L;
		ds[i].i = is[i].i = ls[i].i = lloc(mt_rank);
	}
	for (int m = 0; m < 2; m++) {
		MPI_Op op = m ? MPI_MAXLOC : MPI_MINLOC;
		const char *nm = m ? "MAXLOC" : "MINLOC";

		MPI_OK(MPI_Allreduce(ds, dr, N, MPI_DOUBLE_INT, op, MPI_COMM_WORLD));
		MPI_OK(MPI_Reduce(is, ir, N, MPI_2INT, op, mt_size - 1, MPI_COMM_WORLD));
		MPI_OK(MPI_Allreduce(ls, lr, N, MPI_LONG_INT, op, MPI_COMM_WORLD));
		for (int i = 0; i < N; i++) {
			int v, loc;

			expect_loc(m, i, &v, &loc);
			if (!CHECK(dr[i].v == v + 0.5 && dr[i].i == loc, "%s DOUBLE_INT [%d]: "
				   "(%g, %d), expected (%g, %d)", nm, i, dr[i].v, dr[i].i, v + 0.5,
				   loc))
				break;
			if (mt_rank == mt_size - 1 &&
			    !CHECK(ir[i].v == v && ir[i].i == loc, "%s 2INT [%d]: (%d, %d), "
				   "expected (%d, %d)", nm, i, ir[i].v, ir[i].i, v, loc))
				break;
			if (!CHECK(lr[i].v == v * 100000L && lr[i].i == loc, "%s LONG_INT [%d]: "
				   "(%ld, %d)", nm, i, lr[i].v, lr[i].i))
				break;
		}
	}
	/* count 1 */
	MPI_OK(MPI_Allreduce(ds, dr, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
	{
		int v, loc;

		expect_loc(1, 0, &v, &loc);
		CHECK(dr[0].v == v + 0.5 && dr[0].i == loc, "MAXLOC count 1: (%g, %d)", dr[0].v,
		      dr[0].i);
	}
	free(ds);
	free(dr);
	free(is);
	free(ir);
	free(ls);
	free(lr);
}

/* ---- user ops ------------------------------------------------------------- */

#define P 65521

struct mat { int a, b, c, d; };

/* Element k of rank r: unipotent upper or lower triangular, alternating,
 * so neighbours do not commute. */
static struct mat mat_of(int r, int k)
{
	struct mat m = { 1, 0, 0, 1 };

	if ((r + k) % 2 == 0)
		m.b = r + k + 1;
	else
		m.c = r + 2;
	return m;
}

static struct mat mat_mul(struct mat x, struct mat y)
{
	struct mat z = {
		(int)(((long long)x.a * y.a + (long long)x.b * y.c) % P),
		(int)(((long long)x.a * y.b + (long long)x.b * y.d) % P),
		(int)(((long long)x.c * y.a + (long long)x.d * y.c) % P),
		(int)(((long long)x.c * y.b + (long long)x.d * y.d) % P),
	};
	return z;
}

/* inout = in * inout: `in` holds the lower ranks' partial product. */
static void mat_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	struct mat *x = in, *y = inout;

	(void)dt;
	for (int k = 0; k < *len; k++)
		y[k] = mat_mul(x[k], y[k]);
}

static struct mat mat_fold(int lo, int hi, int k)
{
	struct mat e = mat_of(lo, k);

	for (int r = lo + 1; r <= hi; r++)
		e = mat_mul(e, mat_of(r, k));
	return e;
}

static void check_mats(const struct mat *m, int n, int lo, int hi, const char *what)
{
	for (int k = 0; k < n; k++) {
		struct mat e = mat_fold(lo, hi, k);

		if (!CHECK(m[k].a == e.a && m[k].b == e.b && m[k].c == e.c && m[k].d == e.d,
			   "%s (count %d) [%d]: [%d %d; %d %d], expected [%d %d; %d %d] "
			   "(ranks %d..%d in order)", what, n, k, m[k].a, m[k].b, m[k].c,
			   m[k].d, e.a, e.b, e.c, e.d, lo, hi))
			return;
	}
}

static void sum_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	const int *x = in;
	int *y = inout;

	(void)dt;
	for (int k = 0; k < *len; k++)
		y[k] += x[k];
}

static void test_user_ops(void)
{
	static const int ns[] = { 1, 37, 5000 };
	MPI_Datatype mt;
	MPI_Op op, sop;

	mt_phase = "user_op";
	MPI_OK(MPI_Type_contiguous(4, MPI_INT, &mt));
	MPI_OK(MPI_Type_commit(&mt));
	MPI_OK(MPI_Op_create(mat_op, 0, &op));
	for (int j = 0; j < 3; j++) {
		int n = ns[j];
		struct mat *s = mt_malloc(sizeof(*s) * (size_t)n), *r = mt_malloc(sizeof(*r) * (size_t)n);

		for (int k = 0; k < n; k++)
			s[k] = mat_of(mt_rank, k);
		for (int root = 0; root < mt_size; root += (mt_size > 2 ? mt_size - 1 : 1)) {
			MPI_OK(MPI_Reduce(s, r, n, mt, op, root, MPI_COMM_WORLD));
			if (mt_rank == root)
				check_mats(r, n, 0, mt_size - 1, "Reduce matrix op");
		}
		MPI_OK(MPI_Allreduce(s, r, n, mt, op, MPI_COMM_WORLD));
		check_mats(r, n, 0, mt_size - 1, "Allreduce matrix op");
		MPI_OK(MPI_Scan(s, r, n, mt, op, MPI_COMM_WORLD));
		check_mats(r, n, 0, mt_rank, "Scan matrix op");
		MPI_OK(MPI_Exscan(s, r, n, mt, op, MPI_COMM_WORLD));
		if (mt_rank > 0)
			check_mats(r, n, 0, mt_rank - 1, "Exscan matrix op");
		free(s);
		free(r);
	}
	MPI_OK(MPI_Op_free(&op));
	CHECK(op == MPI_OP_NULL, "Op_free did not reset the handle");
	MPI_OK(MPI_Type_free(&mt));

	/* A commutative user op on plain ints. */
	int s[1000], r[1000];
	MPI_OK(MPI_Op_create(sum_op, 1, &sop));
	for (int i = 0; i < 1000; i++)
		s[i] = i * (mt_rank + 1);
	MPI_OK(MPI_Allreduce(s, r, 1000, MPI_INT, sop, MPI_COMM_WORLD));
	for (int i = 0; i < 1000; i++)
		if (!CHECK(r[i] == i * mt_size * (mt_size + 1) / 2, "commutative user op [%d] = %d",
			   i, r[i]))
			break;
	MPI_OK(MPI_Op_free(&sop));
}

/* ---- Reduce_scatter ---------------------------------------------------------- */

static int rs_in(int r, int j)
{
	return r + 3 * j;
}

static void test_reduce_scatter(void)
{
	/* 5000: the vector spans several of the node segment's chunks, and
	 * in place each piece is written while later chunks are still read */
	static const int ms[] = { 0, 1, 300, 5000 };
	int n = mt_size;

	mt_phase = "reduce_scatter";
	for (int k = 0; k < (int)(sizeof(ms) / sizeof(ms[0])); k++) {
		int m = ms[k], *cnt = mt_malloc(sizeof(int) * (size_t)n), tot = 0, off = 0;

		for (int i = 0; i < n; i++) {
			cnt[i] = i % 3 == 1 ? 0 : (i + 1) * m;
			if (i < mt_rank)
				off += cnt[i];
			tot += cnt[i];
		}
		int *s = mt_malloc(sizeof(int) * (size_t)(tot + 1));
		int *r = mt_malloc(sizeof(int) * (size_t)(tot + 1));
		for (int j = 0; j < tot; j++)
			s[j] = rs_in(mt_rank, j);
		for (int in_place = 0; in_place < 2; in_place++) {
			memcpy(r, s, sizeof(int) * (size_t)tot);
			MPI_OK(MPI_Reduce_scatter(in_place ? MPI_IN_PLACE : s, r, cnt, MPI_INT, MPI_SUM,
						  MPI_COMM_WORLD));
			for (int i = 0; i < cnt[mt_rank]; i++) {
				int j = off + i, e = n * (n - 1) / 2 + n * 3 * j;

				if (!CHECK(r[i] == e, "Reduce_scatter%s (m %d): [%d] = %d, expected %d",
					   in_place ? " IN_PLACE" : "", m, i, r[i], e))
					break;
			}
		}
		/* _block: every rank gets m + 1 elements */
		int b = m + 1;
		int *bs = mt_malloc(sizeof(int) * (size_t)(b * n)), *br = mt_malloc(sizeof(int) * (size_t)(b * n));
		for (int j = 0; j < b * n; j++)
			bs[j] = rs_in(mt_rank, j);
		for (int in_place = 0; in_place < 2; in_place++) {
			memcpy(br, bs, sizeof(int) * (size_t)(b * n));
			MPI_OK(MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : bs, br, b, MPI_INT,
							MPI_SUM, MPI_COMM_WORLD));
			for (int i = 0; i < b; i++) {
				int j = mt_rank * b + i, e = n * (n - 1) / 2 + n * 3 * j;

				if (!CHECK(br[i] == e, "Reduce_scatter_block%s (count %d): [%d] = %d, "
					   "expected %d", in_place ? " IN_PLACE" : "", b, i, br[i], e))
					break;
			}
		}
		MPI_OK(MPI_Reduce_scatter_block(bs, br, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
		free(bs);
		free(br);
		free(s);
		free(r);
		free(cnt);
	}
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, 60);
	test_predefined();
	test_loc();
	test_user_ops();
	test_reduce_scatter();
	return mt_finish("reduce");
}
